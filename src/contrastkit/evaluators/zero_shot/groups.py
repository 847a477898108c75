"""Images grouped by perceived gender, and the concepts each group shows (zero-shot
disparities, Sec. 2.2 and Appendix A.1).

Two layouts are read, each from a folder:

* **Visual Genome** (``layout="vg"``): ``image_data.json`` (a list of ``{"image_id",
  "url", "width", "height", ...}``) and ``objects.json`` (a list of ``{"image_id",
  "objects": [{"names": [...], "synsets": [...]}, ...]}``); images as
  ``VG_100K/<image_id>.jpg``, ``VG_100K_2/<image_id>.jpg`` or ``images/<image_id>.jpg``.
  An image's perceived-gender group comes from its object synsets: the man-related and
  woman-related WordNet synsets of the paper's Table 1 (:data:`VG_MAN_SYNSETS`,
  :data:`VG_WOMAN_SYNSETS`). Its concepts are all its other synsets. Both JSON files
  are read one entry at a time (:mod:`.jsonstream`): the full ``objects.json`` is
  several GB.
* **COCO** (``layout="coco"``): ``annotations/instances_<split>.json`` (``images``,
  ``annotations`` with ``image_id`` and ``category_id``, ``categories``) and
  ``annotations/captions_<split>.json``; images as ``images/<file_name>``,
  ``images/<split>/<file_name>`` or ``<split>/<file_name>``. The group comes from the
  words of the image's captions: the paper's caption terms (:data:`COCO_MAN_TERMS`,
  :data:`COCO_WOMAN_TERMS`; captions are lower-cased, apostrophes dropped — "man's" is
  "mans" — and split into runs of letters). Its concepts are its object categories,
  mapped to Visual Genome synsets through :data:`COCO_TO_VG` (extended or overridden
  by a two-column TSV, :func:`read_concept_map`), so the two datasets can be compared
  concept by concept (Fig. 3-4). A category without an entry keeps its COCO name.

Then, as in the paper: an image is kept only when all its gendered labels (synsets or
caption terms) belong to one group (images with both groups, or none, are counted and
left out), and a concept is kept only when it occurs in at least ``min_images`` images of
*each* group (the paper: 50 on Visual Genome, 100 on COCO train;
:data:`DEFAULT_MIN_IMAGES`). The group-defining synsets are never concepts. The paper
reports 25,215 images and 408 concepts for Visual Genome, 1,412 images and 76 classes for
COCO (:data:`PAPER_COUNTS`).

The concept filter removes concepts, not images (Sec. 2.1-2.2: every image with a single
perceived-gender label is in the analysis, with the set of classes it shows): a kept image
that shows no kept concept stays, as a negative of every concept
(``images_without_concepts="keep"``, the default). ``"drop"`` leaves such images out
instead (what contrastkit did before issue 31). docs/zero_shot.md shows both readings
on an example.

These labels are annotators' perceptions, binary and reductive (the paper's
Limitations): they approximate nobody's gender identity.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.zero_shot.jsonstream import iter_json_array
from contrastkit.records import read_json, relative_file_name

__all__ = [
    "COCO_MAN_TERMS",
    "COCO_TO_VG",
    "COCO_WOMAN_TERMS",
    "DEFAULT_MIN_IMAGES",
    "GROUPS",
    "IMAGES_WITHOUT_CONCEPTS",
    "LAYOUTS",
    "PAPER_COUNTS",
    "VG_MAN_SYNSETS",
    "VG_WOMAN_SYNSETS",
    "GroupedData",
    "ImageRecord",
    "caption_group",
    "concept_words",
    "detect_layout",
    "load_grouped",
    "read_concept_map",
]

#: The two perceived-gender groups, in the order every report uses (men first, as the
#: paper's differences AP_men - AP_women).
GROUPS: tuple[str, str] = ("men", "women")

#: Data layouts :func:`load_grouped` reads; ``auto`` picks one by the files present.
LAYOUTS: tuple[str, ...] = ("auto", "vg", "coco")

#: What becomes of a single-group image that shows no kept concept: ``keep`` (the
#: paper's reading: a negative of every concept) or ``drop`` (left out of the analysis).
IMAGES_WITHOUT_CONCEPTS: tuple[str, ...] = ("keep", "drop")

#: Man-related WordNet synsets of Visual Genome (the paper's Table 1).
VG_MAN_SYNSETS: tuple[str, ...] = (
    "man.n.01", "male_child.n.01", "guy.n.01", "male.n.01", "groom.n.01", "husband.n.01",
    "grandfather.n.01", "son.n.01", "boyfriend.n.01", "brother.n.01", "grandson.n.01",
    "groomsman.n.01", "ex-husband.n.01", "uncle.n.01", "godfather.n.01",
)  # fmt: skip

#: Woman-related WordNet synsets of Visual Genome (the paper's Table 1).
VG_WOMAN_SYNSETS: tuple[str, ...] = (
    "maid.n.02", "woman.n.01", "girl.n.01", "lady.n.01", "female.n.01", "mother.n.01",
    "lass.n.01", "ma.n.01", "widow.n.01", "bride.n.01", "daughter.n.01", "grandma.n.01",
    "granddaughter.n.01", "bridesmaid.n.01", "girlfriend.n.01", "sister.n.01", "wife.n.01",
    "female_child.n.01", "white_woman.n.01", "dame.n.01", "matriarch.n.01",
    "mother_figure.n.01", "dame.n.02", "great-aunt.n.01", "donna.n.01",
)  # fmt: skip

#: Man-related caption terms of COCO (the paper's Table 1).
COCO_MAN_TERMS: tuple[str, ...] = (
    "man", "mans", "men", "boy", "boys", "father", "fathers", "son", "sons", "he", "his",
    "him",
)  # fmt: skip

#: Woman-related caption terms of COCO (the paper's Table 1).
COCO_WOMAN_TERMS: tuple[str, ...] = (
    "woman", "womans", "women", "girl", "girls", "lady", "ladies", "mother", "mothers",
    "daughter", "daughters", "she", "her", "hers",
)  # fmt: skip

#: Minimum images per group a concept needs, by layout (the paper's Sec. 2.2).
DEFAULT_MIN_IMAGES: Mapping[str, int] = {"vg": 50, "coco": 100}

#: What the paper reports after filtering (Sec. 2.2), for the reports' comparison.
PAPER_COUNTS: Mapping[str, Mapping[str, int]] = {
    "vg": {"images": 25215, "concepts": 408},
    "coco": {"images": 1412, "concepts": 76},
}

#: COCO category -> Visual Genome synset. The paper picked, for each COCO object, the
#: synset "with the same or similar name" whose definition best matches the object's
#: COCO images, by visual inspection, and did not publish its table; this one is ours,
#: chosen the same way from WordNet definitions. Extend or override it with
#: ``--concept-map FILE`` (:func:`read_concept_map`).
COCO_TO_VG: Mapping[str, str] = {
    "person": "person.n.01", "bicycle": "bicycle.n.01", "car": "car.n.01",
    "motorcycle": "motorcycle.n.01", "airplane": "airplane.n.01", "bus": "bus.n.01",
    "train": "train.n.01", "truck": "truck.n.01", "boat": "boat.n.01",
    "traffic light": "traffic_light.n.01", "fire hydrant": "hydrant.n.01",
    "stop sign": "street_sign.n.01", "parking meter": "parking_meter.n.01",
    "bench": "bench.n.01", "bird": "bird.n.01", "cat": "cat.n.01", "dog": "dog.n.01",
    "horse": "horse.n.01", "sheep": "sheep.n.01", "cow": "cow.n.01",
    "elephant": "elephant.n.01", "bear": "bear.n.01", "zebra": "zebra.n.01",
    "giraffe": "giraffe.n.01", "backpack": "backpack.n.01", "umbrella": "umbrella.n.01",
    "handbag": "bag.n.04", "tie": "necktie.n.01", "suitcase": "bag.n.06",
    "frisbee": "frisbee.n.01", "skis": "ski.n.01", "snowboard": "snowboard.n.01",
    "sports ball": "ball.n.01", "kite": "kite.n.03", "baseball bat": "baseball_bat.n.01",
    "baseball glove": "baseball_glove.n.01", "skateboard": "skateboard.n.01",
    "surfboard": "surfboard.n.01", "tennis racket": "tennis_racket.n.01",
    "bottle": "bottle.n.01", "wine glass": "wineglass.n.01", "cup": "cup.n.01",
    "fork": "fork.n.01", "knife": "knife.n.01", "spoon": "spoon.n.01", "bowl": "bowl.n.01",
    "banana": "banana.n.02", "apple": "apple.n.01", "sandwich": "sandwich.n.01",
    "orange": "orange.n.01", "broccoli": "broccoli.n.02", "carrot": "carrot.n.03",
    "hot dog": "hotdog.n.02", "pizza": "pizza.n.01", "donut": "doughnut.n.02",
    "cake": "cake.n.03", "chair": "chair.n.01", "couch": "sofa.n.01",
    "potted plant": "pot.n.04", "bed": "bed.n.01", "dining table": "table.n.02",
    "toilet": "toilet.n.02", "tv": "television_receiver.n.01", "laptop": "laptop.n.01",
    "mouse": "mouse.n.04", "remote": "remote_control.n.01", "keyboard": "keyboard.n.01",
    "cell phone": "cellular_telephone.n.01", "microwave": "microwave.n.02",
    "oven": "oven.n.01", "toaster": "toaster.n.02", "sink": "sink.n.01",
    "refrigerator": "electric_refrigerator.n.01", "book": "book.n.01", "clock": "clock.n.01",
    "vase": "vase.n.01", "scissors": "scissors.n.01", "teddy bear": "teddy.n.01",
    "hair drier": "hand_blower.n.01", "toothbrush": "toothbrush.n.01",
}  # fmt: skip

_SYNSET = re.compile(r"^(?P<lemma>.+)\.[a-z]\.\d+$")
_WORD = re.compile(r"[a-z]+")


def concept_words(concept: str) -> str:
    """The words a concept is prompted with: a synset's lemma with ``_`` as spaces
    (``tennis_racket.n.01`` -> ``tennis racket``), any other name as given."""
    match = _SYNSET.match(concept)
    return (match.group("lemma") if match else concept).replace("_", " ")


@dataclass(frozen=True)
class ImageRecord:
    """One image kept for the analysis.

    Attributes:
        image_id: the dataset's image id, as a string.
        path: the image file.
        group: ``men`` or ``women`` (:data:`GROUPS`).
        concepts: the concepts annotated in the image (all of them, before the filter).
    """

    image_id: str
    path: Path
    group: str
    concepts: frozenset[str]


@dataclass(frozen=True)
class GroupedData:
    """A dataset's images of a single perceived-gender group and the concepts kept.

    Attributes:
        root: the data folder.
        layout: ``vg`` or ``coco``.
        split: the COCO split evaluated (``None`` for Visual Genome).
        images: the kept images, in the dataset's order.
        concepts: the kept concepts (at least ``min_images`` images in each group), sorted.
        min_images: the threshold used.
        counts: what was read and dropped: ``images_read``, ``images`` (per group),
            ``dropped`` (``both_groups``, ``no_group``, ``no_concept``: the last only
            with ``images_without_concepts="drop"``), ``without_concept`` (single-group
            images that show no kept concept, kept or dropped),
            ``images_without_concepts`` (``keep`` or ``drop``), ``concepts_seen``,
            ``concepts_kept``, and the ``filter_split`` (COCO) whose counts decided the
            concept filter.
        concept_images: images per group of every concept seen (of the filter split).
    """

    root: Path
    layout: str
    split: str | None
    images: tuple[ImageRecord, ...]
    concepts: tuple[str, ...]
    min_images: int
    counts: Mapping[str, Any] = field(default_factory=dict)
    concept_images: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def labels(self) -> Any:
        """The ``(images, concepts)`` 0/1 matrix of ground truth (numpy, uint8)."""
        import numpy as np

        index = {concept: j for j, concept in enumerate(self.concepts)}
        truth = np.zeros((len(self.images), len(self.concepts)), dtype=np.uint8)
        for i, record in enumerate(self.images):
            for concept in record.concepts:
                j = index.get(concept)
                if j is not None:
                    truth[i, j] = 1
        return truth

    def group_mask(self, group: str) -> Any:
        """Boolean numpy mask of the images of ``group``."""
        import numpy as np

        return np.array([record.group == group for record in self.images], dtype=bool)


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    return read_json(path)


def detect_layout(root: Path) -> str:
    """``vg`` when ``root`` holds ``objects.json``, ``coco`` when it holds
    ``annotations/instances_*.json``.

    Raises:
        ConfigError: neither, or both (then pass ``layout``).
    """
    vg = (root / "objects.json").is_file()
    coco = bool(sorted((root / "annotations").glob("instances_*.json")))
    if vg and coco:
        raise ConfigError(f"layout: {root} holds both Visual Genome and COCO files; pass it")
    if vg:
        return "vg"
    if coco:
        return "coco"
    raise ConfigError(
        f"data: {root} is neither a Visual Genome folder (objects.json and image_data.json) "
        "nor a COCO folder (annotations/instances_<split>.json and captions_<split>.json)"
    )


def caption_group(captions: Iterable[str]) -> set[str]:
    """The groups whose caption terms (:data:`COCO_MAN_TERMS`, :data:`COCO_WOMAN_TERMS`)
    occur in ``captions``."""
    man, woman = set(COCO_MAN_TERMS), set(COCO_WOMAN_TERMS)
    found: set[str] = set()
    for caption in captions:
        words = set(_WORD.findall(caption.lower().replace("'", "").replace("’", "")))
        if words & man:
            found.add("men")
        if words & woman:
            found.add("women")
    return found


def read_concept_map(path: Path) -> dict[str, str]:
    """A COCO category -> synset table from a TSV: one ``category<TAB>synset`` per line;
    blank lines and lines starting with ``#`` are skipped, a ``category<TAB>synset``
    header line is allowed. Entries extend :data:`COCO_TO_VG` and override its entries
    of the same category.

    Raises:
        DataFormatError: a missing file or a line without exactly two non-empty fields.
    """
    if not path.is_file():
        raise DataFormatError(path, None, None, "concept map not found")
    table: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [part.strip() for part in line.split("\t")]
        if len(parts) != 2 or not all(parts):
            raise DataFormatError(
                path, number, None, "expected two tab-separated fields: COCO category, synset"
            )
        if number == 1 and parts[0].lower() == "category":
            continue
        table[parts[0]] = parts[1]
    return table


def _counts_by_group(
    entries: Sequence[tuple[str, frozenset[str]]],
) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[str]] = {group: Counter() for group in GROUPS}
    for group, concepts in entries:
        counts[group].update(concepts)
    seen = sorted(set(counts["men"]) | set(counts["women"]))
    return {c: {group: counts[group][c] for group in GROUPS} for c in seen}


def _keep(concept_images: Mapping[str, Mapping[str, int]], min_images: int) -> tuple[str, ...]:
    return tuple(
        c for c, per in concept_images.items() if all(per[g] >= min_images for g in GROUPS)
    )


def _find_image(root: Path, name: str, folders: Sequence[str]) -> Path | None:
    for folder in folders:
        candidate = root / folder / name if folder else root / name
        if candidate.is_file():
            return candidate
    return None


def _load_vg(root: Path, min_images: int, without: str) -> GroupedData:
    man, woman = set(VG_MAN_SYNSETS), set(VG_WOMAN_SYNSETS)
    objects_path = root / "objects.json"
    image_data_path = root / "image_data.json"
    known: set[str] | None = None
    if image_data_path.is_file():
        known = set()
        for number, entry in enumerate(iter_json_array(image_data_path, "images")):
            image_id = entry.get("image_id", entry.get("id")) if isinstance(entry, dict) else None
            if image_id is None:
                raise DataFormatError(
                    image_data_path, None, "image_id", f"entry {number} has no image_id"
                )
            known.add(str(image_id))
    dropped = Counter[str]()
    kept: list[tuple[str, str, frozenset[str]]] = []
    read = 0
    first_entry: dict[str, int] = {}
    # one entry at a time: the full objects.json is several GB (:mod:`.jsonstream`)
    for number, entry in enumerate(iter_json_array(objects_path, "images")):
        read += 1
        if not isinstance(entry, dict) or "image_id" not in entry:
            raise DataFormatError(objects_path, None, "image_id", f"entry {number} has no image_id")
        image_id = str(entry["image_id"])
        if image_id in first_entry:
            raise DataFormatError(
                objects_path, None, "image_id",
                f"entry {number}: image {image_id} is listed twice (first as entry "
                f"{first_entry[image_id]})",
            )  # fmt: skip
        first_entry[image_id] = number
        if known is not None and image_id not in known:
            raise DataFormatError(
                objects_path, None, "image_id",
                f"entry {number}: image {image_id} is not in image_data.json",
            )  # fmt: skip
        synsets: set[str] = set()
        if not isinstance(entry.get("objects") or [], list):
            raise DataFormatError(
                objects_path, None, "objects", f"entry {number}: expected a list of objects"
            )
        for obj in entry.get("objects") or ():
            names = obj.get("synsets") if isinstance(obj, dict) else None
            if not isinstance(names, list):
                raise DataFormatError(
                    objects_path, None, "synsets",
                    f"entry {number} (image {image_id}): every object needs a synsets list",
                )  # fmt: skip
            synsets.update(str(name) for name in names)
        groups = {"men"} if synsets & man else set()
        groups |= {"women"} if synsets & woman else set()
        if len(groups) != 1:
            dropped["both_groups" if groups else "no_group"] += 1
            continue
        kept.append((image_id, groups.pop(), frozenset(synsets - man - woman)))
    concept_images = _counts_by_group([(g, c) for _, g, c in kept])
    concepts = _keep(concept_images, min_images)
    folders = ("VG_100K", "VG_100K_2", "images", "")
    records = _records(root, kept, concepts, folders, dropped, lambda i: f"{i}.jpg", without)
    return GroupedData(
        root, "vg", None, tuple(records), concepts, min_images,
        _count_summary(read, records, dropped, concept_images, concepts, None, without),
        concept_images,
    )  # fmt: skip


def _records(
    root: Path,
    kept: Sequence[tuple[str, str, frozenset[str]]],
    concepts: Sequence[str],
    folders: Sequence[str],
    dropped: Counter[str],
    file_name: Any,
    without: str,
) -> list[ImageRecord]:
    """The single-group images with their files; those that show no kept concept are
    counted (``without_concept``) and, with ``without="drop"``, left out."""
    wanted = set(concepts)
    records: list[ImageRecord] = []
    for image_id, group, image_concepts in kept:
        if not image_concepts & wanted:
            dropped["without_concept"] += 1
            if without == "drop":
                dropped["no_concept"] += 1
                continue
        name = file_name(image_id)
        path = _find_image(root, name, folders)
        if path is None:
            where = ", ".join(f"{f}/" for f in folders if f)
            raise DataFormatError(
                root / folders[0] / name, None, None,
                f"image file not found (looked in {where} and the folder itself)",
            )  # fmt: skip
        records.append(ImageRecord(image_id, path, group, image_concepts))
    return records


def _count_summary(
    read: int,
    records: Sequence[ImageRecord],
    dropped: Counter[str],
    concept_images: Mapping[str, Mapping[str, int]],
    concepts: Sequence[str],
    filter_split: str | None,
    without: str,
) -> dict[str, Any]:
    per_group = Counter(record.group for record in records)
    return {
        "images_read": read,
        "images": {group: per_group[group] for group in GROUPS},
        "images_kept": len(records),
        "dropped": {key: dropped[key] for key in ("both_groups", "no_group", "no_concept")},
        "without_concept": dropped["without_concept"],
        "images_without_concepts": without,
        "concepts_seen": len(concept_images),
        "concepts_kept": len(concepts),
        "filter_split": filter_split,
    }


def _coco_split(root: Path, split: str | None) -> str:
    splits = sorted(
        p.name[len("instances_") : -len(".json")]
        for p in (root / "annotations").glob("instances_*.json")
    )
    if split is not None:
        if split not in splits:
            raise ConfigError(
                f"split: {root}/annotations has no instances_{split}.json "
                f"(splits: {', '.join(splits) or 'none'})"
            )
        return split
    if len(splits) == 1:
        return splits[0]
    for preferred in ("val2017", "val2014", "val"):
        if preferred in splits:
            return preferred
    raise ConfigError(f"split: {root} has several COCO splits ({', '.join(splits)}); pick one")


def _coco_entries(
    root: Path, split: str, table: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[tuple[str, str, frozenset[str]]], Counter[str]]:
    """The split's image entries, its single-group images (id, group, concepts) and the
    counts of images dropped."""
    instances_path = root / "annotations" / f"instances_{split}.json"
    captions_path = root / "annotations" / f"captions_{split}.json"
    instances = _read_json(instances_path)
    captions = _read_json(captions_path)
    for path, value, keys in (
        (instances_path, instances, ("images", "annotations", "categories")),
        (captions_path, captions, ("annotations",)),
    ):
        if not isinstance(value, dict):
            raise DataFormatError(path, None, None, "expected a JSON object")
        for key in keys:
            entries = value.get(key)
            if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
                raise DataFormatError(path, None, key, f"expected a list of objects under {key!r}")
    names: dict[Any, str] = {}
    for category in instances["categories"]:
        name = str(category.get("name", ""))
        names[category.get("id")] = table.get(name, name)
    objects: dict[str, set[str]] = {}
    for number, annotation in enumerate(instances["annotations"]):
        category = annotation.get("category_id")
        if category not in names:
            raise DataFormatError(
                instances_path, None, "category_id",
                f"annotation {number}: unknown category {category!r}",
            )  # fmt: skip
        image_id = _coco_id(instances_path, f"annotations[{number}].image_id", annotation)
        objects.setdefault(image_id, set()).add(names[category])
    texts: dict[str, list[str]] = {}
    for number, annotation in enumerate(captions["annotations"]):
        image_id = _coco_id(captions_path, f"annotations[{number}].image_id", annotation)
        texts.setdefault(image_id, []).append(str(annotation.get("caption", "")))
    dropped = Counter[str]()
    kept: list[tuple[str, str, frozenset[str]]] = []
    images = instances["images"]
    seen: set[str] = set()
    for number, image in enumerate(images):
        image_id = _coco_id(instances_path, f"images[{number}].id", image)
        if image_id in seen:
            raise DataFormatError(
                instances_path, None, f"images[{number}].id", f"image {image_id} listed twice"
            )
        seen.add(image_id)
        groups = caption_group(texts.get(image_id, ()))
        if len(groups) != 1:
            dropped["both_groups" if groups else "no_group"] += 1
            continue
        kept.append((image_id, groups.pop(), frozenset(objects.get(image_id, ()))))
    return images, kept, dropped


def _coco_id(path: Path, field: str, entry: Mapping[str, Any]) -> str:
    """A COCO image id (an integer, as COCO writes them) as text, or a located error: an
    id of another type would silently match nothing, or the wrong image."""
    value = entry.get(field.rsplit(".", 1)[-1])
    if not isinstance(value, int) or isinstance(value, bool):
        found = "missing" if value is None else f"{type(value).__name__} {value!r}"
        raise DataFormatError(path, None, field, f"expected an integer id, found {found}")
    return str(value)


def _load_coco(
    root: Path,
    min_images: int,
    split: str | None,
    filter_split: str | None,
    concept_map: Mapping[str, str],
    without: str,
) -> GroupedData:
    table = {**COCO_TO_VG, **concept_map}
    split = _coco_split(root, split)
    images, kept, dropped = _coco_entries(root, split, table)
    concept_images = _counts_by_group([(g, c) for _, g, c in kept])
    if filter_split is not None and filter_split != split:
        _, filter_kept, _ = _coco_entries(root, _coco_split(root, filter_split), table)
        concept_images = _counts_by_group([(g, c) for _, g, c in filter_kept])
    concepts = _keep(concept_images, min_images)
    instances_path = root / "annotations" / f"instances_{split}.json"
    files = {
        str(image.get("id")): relative_file_name(
            instances_path, None, f"images[{n}].file_name", str(image.get("file_name", ""))
        )
        for n, image in enumerate(images)
    }
    folders = ("images", f"images/{split}", split, "")
    records = _records(root, kept, concepts, folders, dropped, lambda i: files[i], without)
    summary = _count_summary(
        len(images), records, dropped, concept_images, concepts, filter_split or split, without
    )
    return GroupedData(
        root, "coco", split, tuple(records), concepts, min_images, summary, concept_images
    )


def load_grouped(
    root: Path,
    *,
    layout: str = "auto",
    min_images: int | None = None,
    split: str | None = None,
    filter_split: str | None = None,
    concept_map: Mapping[str, str] | None = None,
    images_without_concepts: str = "keep",
) -> GroupedData:
    """Read a Visual Genome or COCO folder, assign each image its perceived-gender group
    and keep the concepts seen in at least ``min_images`` images of each group (see the
    module docstring for both layouts).

    Args:
        root: the data folder.
        layout: ``vg``, ``coco`` or ``auto`` (:func:`detect_layout`).
        min_images: images per group a concept needs (default
            :data:`DEFAULT_MIN_IMAGES` of the layout: 50 or 100).
        split: the COCO split to evaluate (default: the only one, else ``val2017``,
            ``val2014`` or ``val``).
        filter_split: the COCO split whose images decide the concept filter (the paper
            filters on train and evaluates on val); default ``split``. Its images need not
            be on disk.
        concept_map: COCO category -> synset entries over :data:`COCO_TO_VG`.
        images_without_concepts: ``keep`` (default; the paper's reading) or ``drop``
            the single-group images that show no kept concept
            (:data:`IMAGES_WITHOUT_CONCEPTS`).

    Returns:
        The kept images (those with a single group; with ``drop``, only those showing at
        least one kept concept) and concepts, with the counts of everything read and
        dropped.

    Raises:
        ConfigError: an unknown layout or ``images_without_concepts``, a folder of
            neither layout, a missing split, ``min_images`` below 1, a Visual Genome
            option given with COCO-only options.
        DataFormatError: a missing or malformed annotation file, a kept image whose
            file is missing.
    """
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"data: {root} is not a folder")
    if layout not in LAYOUTS:
        raise ConfigError(f"layout: unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    if images_without_concepts not in IMAGES_WITHOUT_CONCEPTS:
        raise ConfigError(
            f"images_without_concepts: unknown value {images_without_concepts!r}; choose "
            f"from {', '.join(IMAGES_WITHOUT_CONCEPTS)}"
        )
    resolved = detect_layout(root) if layout == "auto" else layout
    threshold = DEFAULT_MIN_IMAGES[resolved] if min_images is None else min_images
    if threshold < 1:
        raise ConfigError(f"min_images: must be at least 1, not {threshold}")
    if resolved == "vg":
        if split is not None or filter_split is not None:
            raise ConfigError("split: Visual Genome has no splits; give split only for COCO")
        return _load_vg(root, threshold, images_without_concepts)
    return _load_coco(
        root, threshold, split, filter_split, concept_map or {}, images_without_concepts
    )
