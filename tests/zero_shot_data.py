"""Small constructed Visual Genome and COCO folders for the zero-shot disparity tests,
with real (tiny) JPEG files, and predictions with planted disparities."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

#: VG fixture: (image id, group, concepts). 30 images of men, 24 of women, plus images
#: that must be dropped. With min_images=5: necktie (10 / 6), dress (5 / 9), hair
#: (14 / 12) and chair (5 / 5: exactly at the threshold) are kept; table (8 / 4) and
#: shoe (4 / 9) are not.
VG_KEPT = ("chair.n.01", "dress.n.01", "hair.n.01", "necktie.n.01")
VG_DROPPED = ("shoe.n.01", "table.n.02")


def _counts_plan() -> dict[str, dict[str, int]]:
    return {
        "necktie.n.01": {"men": 10, "women": 6},
        "dress.n.01": {"men": 5, "women": 9},
        "hair.n.01": {"men": 14, "women": 12},
        "chair.n.01": {"men": 5, "women": 5},
        "table.n.02": {"men": 8, "women": 4},
        "shoe.n.01": {"men": 4, "women": 9},
    }


def vg_images() -> list[tuple[str, str, frozenset[str]]]:
    """The single-group images of the VG fixture: (id, group, concepts); some show no
    kept concept (they are dropped as ``no_concept``)."""
    plan = _counts_plan()
    sizes = {"men": 30, "women": 24}
    images: list[tuple[str, str, frozenset[str]]] = []
    rng = np.random.default_rng(3)
    for group, n in sizes.items():
        concepts: list[set[str]] = [set() for _ in range(n)]
        for concept, counts in plan.items():
            for i in rng.choice(n, counts[group], replace=False):
                concepts[int(i)].add(concept)
        base = 1000 if group == "men" else 2000
        images += [(str(base + i), group, frozenset(c)) for i, c in enumerate(concepts)]
    return images


#: The VG fixture's image of one group whose only concept is filtered out (table): the
#: paper keeps it, as a negative of every concept.
VG_WITHOUT_CONCEPT = ("500", "men", frozenset({"table.n.02"}))


def vg_single_group() -> list[tuple[str, str, frozenset[str]]]:
    """Every single-group image of the VG fixture: :func:`vg_images` and
    :data:`VG_WITHOUT_CONCEPT`."""
    return [*vg_images(), VG_WITHOUT_CONCEPT]


def _jpeg(path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(path, "JPEG")


def write_vg(root: Path, *, folder: str = "VG_100K") -> Path:
    """A Visual Genome folder: the :func:`vg_images` plus 3 images of both groups, 2 of
    neither and 1 whose only concept is filtered out (table)."""
    man_labels = ("man.n.01", "groom.n.01", "male_child.n.01")
    woman_labels = ("woman.n.01", "lady.n.01", "bride.n.01")
    entries: list[tuple[str, list[str]]] = []
    for n, (image_id, group, concepts) in enumerate(vg_images()):
        person = (man_labels if group == "men" else woman_labels)[n % 3]
        entries.append((image_id, [person, *sorted(concepts)]))
    entries += [(f"30{i}", ["man.n.01", "woman.n.01", "necktie.n.01"]) for i in range(3)]
    entries += [(f"40{i}", ["dog.n.01", "necktie.n.01"]) for i in range(2)]
    image_id, _, concepts = VG_WITHOUT_CONCEPT
    entries.append((image_id, ["man.n.01", *sorted(concepts)]))
    return write_vg_entries(root, entries, folder=folder)


def write_vg_entries(
    root: Path, entries: Sequence[tuple[str, Sequence[str]]], *, folder: str = "VG_100K"
) -> Path:
    """A Visual Genome folder of the given (image id, synsets) entries, with a tiny JPEG
    per image."""
    root.mkdir(parents=True, exist_ok=True)
    image_data = [{"image_id": int(i), "url": f"https://example.org/{i}.jpg", "width": 24,
                   "height": 24} for i, _ in entries]  # fmt: skip
    objects = [
        {"image_id": int(i), "objects": [{"names": [s.split(".")[0]], "synsets": [s]}
                                         for s in synsets]}
        for i, synsets in entries
    ]  # fmt: skip
    (root / "image_data.json").write_text(json.dumps(image_data), encoding="utf-8")
    (root / "objects.json").write_text(json.dumps(objects), encoding="utf-8")
    for n, (image_id, _) in enumerate(entries):
        _jpeg(root / folder / f"{image_id}.jpg", n)
    return root


#: COCO fixture categories and what they map to.
COCO_CATEGORIES = {1: "person", 2: "tie", 3: "handbag", 4: "cup", 5: "kite"}


def write_coco(root: Path, *, split: str = "val2017", images_dir: str = "images") -> Path:
    """A COCO folder: 12 images of men and 10 of women by their captions, 2 with both,
    1 with neither. Categories: tie (8 / 4), handbag (4 / 7), cup (6 / 5), kite (1 / 2)."""
    plan = {2: {"men": 8, "women": 4}, 3: {"men": 4, "women": 7}, 4: {"men": 6, "women": 5},
            5: {"men": 1, "women": 2}}  # fmt: skip
    captions_by_group = {
        "men": ["A man wearing his tie.", "The boy's jacket is red.", "A father and son."],
        "women": ["A woman holding her bag.", "Two girls at the table.", "A lady's hat."],
    }
    images, annotations, captions = [], [], []
    next_id = 1
    for group, n in (("men", 12), ("women", 10)):
        for i in range(n):
            image_id = next_id
            next_id += 1
            images.append({"id": image_id, "file_name": f"{image_id:012d}.jpg"})
            annotations.append({"image_id": image_id, "category_id": 1})
            for category, counts in plan.items():
                if i < counts[group]:
                    annotations.append({"image_id": image_id, "category_id": category})
            for text in captions_by_group[group]:
                captions.append({"image_id": image_id, "caption": text})
    for caption_set in (["A man and a woman with a tie."], ["A dog on a tie."]):
        for _ in range(2 if "woman" in caption_set[0] else 1):
            image_id = next_id
            next_id += 1
            images.append({"id": image_id, "file_name": f"{image_id:012d}.jpg"})
            annotations.append({"image_id": image_id, "category_id": 2})
            captions += [{"image_id": image_id, "caption": t} for t in caption_set]
    annotations_dir = root / "annotations"
    annotations_dir.mkdir(parents=True, exist_ok=True)
    categories = [{"id": k, "name": v} for k, v in COCO_CATEGORIES.items()]
    (annotations_dir / f"instances_{split}.json").write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": categories}),
        encoding="utf-8",
    )
    (annotations_dir / f"captions_{split}.json").write_text(
        json.dumps({"images": images, "annotations": captions}), encoding="utf-8"
    )
    for n, image in enumerate(images):
        _jpeg(root / images_dir / image["file_name"], 100 + n)
    return root


def planted_rows(
    truth: dict[str, dict[str, bool]],
    groups: dict[str, str],
    *,
    favoured: dict[str, str],
    seed: int = 0,
) -> list[dict[str, object]]:
    """Score rows: for each concept, images of its ``favoured`` group get a perfect score
    (positives 0.9, negatives 0.1) and the other group uninformative random scores;
    concepts not in ``favoured`` get perfect scores in both groups (no disparity)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for image_id in sorted(truth):
        for concept, present in sorted(truth[image_id].items()):
            fav = favoured.get(concept)
            if fav is None or groups[image_id] == fav:
                score = 0.9 if present else 0.1
            else:
                score = float(rng.uniform(0.05, 0.95))
            rows.append({"image_id": image_id, "concept": concept, "score": score})
    return rows


def write_jsonl(path: Path, rows: Iterable[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def truth_of(images: Sequence[tuple[str, str, frozenset[str]]], concepts: Sequence[str]
             ) -> tuple[dict[str, dict[str, bool]], dict[str, str]]:  # fmt: skip
    """Ground truth per image and concept, and each image's group."""
    truth = {i: {c: c in cs for c in concepts} for i, _, cs in images}
    return truth, {i: g for i, g, _ in images}
