"""Audit test fixtures: COCO-format folders with gender planted in the context words.

Masculine images are described at a skateboard park, feminine images in a kitchen, and
a share of both at a beach; undefined images (no gendered word, or both genders) show
either context. With ``shuffled=True`` every image's context is drawn independently of
its gender, so the captions say nothing about it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SPLIT = "val2017"

CONTEXTS = {
    "skate": (
        "{a} {person} rides a skateboard down the ramp.",
        "{a} {person} doing a trick on {their} skateboard.",
        "A skateboarder on a ramp at the skate park.",
        "{a} {person} jumping with a skateboard in the air.",
        "{a} young {person} skateboarding on a concrete ramp.",
    ),
    "kitchen": (
        "{a} {person} cooking dinner in the kitchen.",
        "{a} {person} standing next to the oven in {their} kitchen.",
        "A kitchen with a stove, an oven and a counter.",
        "{a} {person} preparing food on the kitchen counter.",
        "{a} {person} slicing vegetables near the refrigerator.",
    ),
    "beach": (
        "{a} {person} walking on the beach with a kite.",
        "{a} {person} flying a kite near the ocean.",
        "A sandy beach with waves and a kite in the sky.",
        "{a} {person} standing on the sand by the water.",
        "{a} {person} holding a kite string on the shore.",
    ),
}
WORDS = {
    "masculine": {"person": ("man", "boy", "gentleman"), "their": "his"},
    "feminine": {"person": ("woman", "girl", "lady"), "their": "her"},
    "undefined": {"person": ("person", "child", "skater"), "their": "their"},
}


def planted_captions(
    *,
    masculine: int = 60,
    feminine: int = 40,
    undefined: int = 50,
    shuffled: bool = False,
    beach_share: float = 0.2,
    seed: int = 0,
) -> list[tuple[str, str, list[str]]]:
    """``(label, context, captions)`` per image: masculine images first, then feminine,
    then undefined."""
    rng = np.random.default_rng(seed)
    images = []
    plan = [("masculine", masculine), ("feminine", feminine), ("undefined", undefined)]
    for label, count in plan:
        for _ in range(count):
            if shuffled or label == "undefined":
                context = str(rng.choice(["skate", "kitchen", "beach"]))
            elif rng.random() < beach_share:
                context = "beach"
            else:
                context = "skate" if label == "masculine" else "kitchen"
            words = WORDS[label]
            captions = []
            for template in CONTEXTS[context]:
                person = str(rng.choice(words["person"]))
                a = "An" if person[0] in "aeiou" else "A"
                captions.append(template.format(a=a, person=person, their=words["their"]))
            images.append((label, context, captions))
    return images


#: The person box of every planted image, ``[x, y, w, h]``.
BOX = [20.0, 16.0, 24.0, 32.0]


def write_planted_coco(
    root: Path,
    images: list[tuple[str, str, list[str]]],
    *,
    with_files: bool = False,
    with_boxes: bool = False,
) -> Path:
    """Write ``root/annotations/captions_val2017.json``; with ``with_files``, a PNG per
    image under ``root/val2017/``, its background coloured by context and its person
    box (:data:`BOX`) by gender; with ``with_boxes``, ``instances_val2017.json`` with
    that box. Return ``root``."""
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    entries = []
    notes = []
    boxes = []
    colours = {"skate": (200, 120, 40), "kitchen": (40, 160, 200), "beach": (230, 210, 120)}
    people = {"masculine": (250, 0, 0), "feminine": (0, 0, 250), "undefined": (0, 250, 0)}
    for number, (label, context, captions) in enumerate(images, start=1):
        file_name = f"{number:012d}.png"
        entries.append({"id": number, "file_name": file_name, "width": 64, "height": 64})
        for caption in captions:
            notes.append({"id": len(notes) + 1, "image_id": number, "caption": caption})
        boxes.append(
            {"id": number, "image_id": number, "category_id": 1, "bbox": BOX,
             "area": BOX[2] * BOX[3], "iscrowd": 0}
        )  # fmt: skip
        if with_files:
            from PIL import Image, ImageDraw

            (root / SPLIT).mkdir(exist_ok=True)
            picture = Image.new("RGB", (64, 64), colours[context])
            x, y, w, h = BOX
            ImageDraw.Draw(picture).rectangle([x, y, x + w - 1, y + h - 1], fill=people[label])
            picture.save(root / SPLIT / file_name)
    (root / "annotations" / f"captions_{SPLIT}.json").write_text(
        json.dumps({"images": entries, "annotations": notes}), encoding="utf-8"
    )
    if with_boxes:
        categories = [{"id": 1, "name": "person", "supercategory": "person"}]
        (root / "annotations" / f"instances_{SPLIT}.json").write_text(
            json.dumps({"images": entries, "annotations": boxes, "categories": categories}),
            encoding="utf-8",
        )
    return root


class PlantedCoco:
    """Writes planted COCO folders under a test's temporary folder."""

    def __init__(self, base: Path):
        self.base = base
        self.count = 0

    def __call__(
        self, *, with_files: bool = False, with_boxes: bool = False, **options: object
    ) -> Path:
        """A new COCO folder of :func:`planted_captions` (``options``) images."""
        self.count += 1
        images = planted_captions(**options)  # type: ignore[arg-type]
        return write_planted_coco(
            self.base / f"coco{self.count}", images, with_files=with_files, with_boxes=with_boxes
        )


@pytest.fixture
def planted_coco(tmp_path: Path) -> PlantedCoco:
    """``planted_coco(masculine=60, feminine=40, undefined=50, shuffled=False, ...)``
    writes a planted COCO folder and returns it."""
    return PlantedCoco(tmp_path)


@pytest.fixture
def planted() -> Any:
    """:func:`planted_captions` itself, for tests that build other kinds of sets."""
    return planted_captions
