"""Sample data from public-domain photos that installed packages ship, for demos and tests.

matplotlib's ``grace_hopper.jpg`` (Grace Hopper, US Navy photo, public domain),
scikit-image's ``astronaut`` (Eileen Collins, NASA, public domain) and ``camera`` (the
"cameraman", CC0 by Lav Varshney). :func:`write_coco` lays them out as a small COCO-format
folder (``annotations/captions_train2017.json``, ``annotations/instances_train2017.json``,
``train2017/*.jpg``): person boxes drawn by hand around each person with a polygon
outline of the person (:data:`OUTLINES`), captions written in COCO's style, plus images
that the GenSynth source filter must reject (two people, an undefined caption label, a
box too small). ``contrastkit quickstart`` builds its contrast
set from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import numpy as np
import skimage.data
from PIL import Image

SPLIT = "train2017"

#: image id -> (photo, person boxes [x, y, w, h], captions)
IMAGES: dict[int, tuple[str, list[list[float]], list[str]]] = {
    1: ("camera", [[0, 60, 335, 452]], [
        "A man takes a picture with a camera on a tripod.",
        "A young man in a dark coat looks through his camera.",
        "A photographer standing in a field with his equipment.",
    ]),
    2: ("astronaut", [[18, 14, 350, 498]], [
        "A woman in an orange space suit smiles for her portrait.",
        "An astronaut poses next to a model of the shuttle.",
        "She is wearing a flight suit with a helmet beside her.",
    ]),
    3: ("grace_hopper", [[10, 20, 500, 580]], [
        "An older lady in a navy uniform and glasses.",
        "A woman wearing a uniform with medals on her jacket.",
    ]),
    4: ("camera", [[0, 60, 335, 452], [400, 150, 40, 90]], [
        "A man with a camera and a man in the distance.",
    ]),
    5: ("astronaut", [[18, 14, 350, 498]], ["An astronaut in a suit next to a rocket."]),
    6: ("camera", [[0, 60, 335, 452]], ["A man and a woman near a tripod."]),
    7: ("grace_hopper", [[200, 100, 30, 40]], ["A tiny man far away."]),
}  # fmt: skip

#: photo -> the person's outline, drawn by hand ([x1, y1, x2, y2, ...], COCO's polygon
#: form); a box without one gets its rectangle as its segmentation.
OUTLINES: dict[str, list[float]] = {
    "camera": [160, 75, 210, 62, 265, 85, 270, 140, 330, 175, 330, 215, 290, 240, 260, 300,
               180, 360, 150, 420, 150, 511, 0, 511, 0, 200, 60, 140, 130, 110, 155, 100],
    "astronaut": [160, 60, 190, 20, 260, 15, 300, 60, 295, 130, 300, 150, 330, 220, 360, 300,
                  365, 420, 300, 511, 20, 511, 25, 330, 60, 230, 120, 160, 160, 140, 155, 110],
    "grace_hopper": [150, 100, 180, 35, 260, 20, 350, 40, 370, 110, 365, 200, 350, 290, 330,
                     320, 420, 350, 500, 380, 505, 580, 15, 580, 30, 400, 80, 340, 190, 310,
                     160, 250, 150, 180],
}  # fmt: skip


def _segmentation(name: str, box: list[float]) -> list[list[float]]:
    """The photo's outline when it lies in ``box`` (to a pixel), else the box itself."""
    x, y, w, h = box
    outline = OUTLINES.get(name)
    if outline is not None and (
        min(outline[0::2]) >= x - 1 and max(outline[0::2]) <= x + w + 1
        and min(outline[1::2]) >= y - 1 and max(outline[1::2]) <= y + h + 1
    ):  # fmt: skip
        return [list(outline)]
    return [[x, y, x + w, y, x + w, y + h, x, y + h]]


def photo(name: str) -> Image.Image:
    """One of the shipped photos as an RGB image."""
    if name == "grace_hopper":
        path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
        with Image.open(path) as image:
            return image.convert("RGB")
    array = getattr(skimage.data, name)()
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=-1)
    return Image.fromarray(array).convert("RGB")


def write_coco(root: Path, image_ids: tuple[int, ...] = tuple(IMAGES)) -> Path:
    """Write ``root/annotations/{captions,instances}_train2017.json`` and
    ``root/train2017/*.jpg`` for ``image_ids``; return ``root``.

    Selected sources (one person, defined label, box >= 64 px): 1 (masculine),
    2 and 3 (feminine). 4 has two people, 5 and 6 have undefined labels, 7 a small box.
    """
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / SPLIT).mkdir(exist_ok=True)
    images: list[dict[str, object]] = []
    captions: list[dict[str, object]] = []
    instances: list[dict[str, object]] = []
    for image_id in image_ids:
        name, boxes, texts = IMAGES[image_id]
        image = photo(name)
        file_name = f"{image_id:012d}.jpg"
        image.save(root / SPLIT / file_name, quality=92)
        images.append(
            {"id": image_id, "file_name": file_name, "width": image.width,
             "height": image.height}
        )  # fmt: skip
        for text in texts:
            captions.append({"id": len(captions) + 1, "image_id": image_id, "caption": text})
        for box in boxes:
            instances.append(
                {"id": len(instances) + 1, "image_id": image_id, "category_id": 1,
                 "bbox": box, "area": box[2] * box[3], "iscrowd": 0,
                 "segmentation": _segmentation(name, box)}
            )  # fmt: skip
    categories = [{"id": 1, "name": "person", "supercategory": "person"},
                  {"id": 18, "name": "dog", "supercategory": "animal"}]  # fmt: skip
    (root / "annotations" / f"captions_{SPLIT}.json").write_text(
        json.dumps({"images": images, "annotations": captions})
    )
    (root / "annotations" / f"instances_{SPLIT}.json").write_text(
        json.dumps({"images": images, "annotations": instances, "categories": categories})
    )
    return root


def photo_crops(
    folder: Path, n: int, *, size: tuple[int, int] = (320, 240), seed: int = 0
) -> list[Path]:
    """Write ``n`` distinct JPEG crops (quality 90) of the shipped photos into ``folder``,
    cycling through Grace Hopper, the astronaut, coffee and the cat (``folder`` is created
    if need be); return their paths.
    The benchmarks' and the pipeline tests' workload: real photographs at the size of
    VisoGender images and COCO person crops."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    photos = [photo(name) for name in ("grace_hopper", "astronaut", "coffee", "chelsea")]
    width, height = size
    paths = []
    for i in range(n):
        source = photos[i % len(photos)]
        x = int(rng.integers(0, source.width - width + 1))
        y = int(rng.integers(0, source.height - height + 1))
        path = folder / f"{i:06d}.jpg"
        source.crop((x, y, x + width, y + height)).save(path, quality=90)
        paths.append(path)
    return paths


def write_visogender_workload(
    folder: Path, tsvs: list[Path], *, per_occupation: dict[str, int] | None = None
) -> list[Path]:
    """Copies of official-format VisoGender TSVs whose every row points to its own local
    JPEG (:func:`photo_crops`), written into ``folder``; return the new TSVs.

    Args:
        folder: where the TSVs and images go.
        tsvs: official-format annotation files (the official files: 460 OP + 230 OO rows).
        per_occupation: keep at most this many rows per occupation, by context name
            (``{"OP": 4, "OO": 2}``); default every row.
    """
    from dataclasses import replace

    from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv

    tables = [read_visogender_tsv(path) for path in tsvs]
    kept = []
    for table in tables:
        limit = (per_occupation or {}).get(table.context.value)
        seen: dict[str, int] = {}
        rows = []
        for row in table.rows:
            seen[row.occupation] = seen.get(row.occupation, 0) + 1
            if limit is None or seen[row.occupation] <= limit:
                rows.append(row)
        kept.append(rows)
    images = iter(photo_crops(folder, sum(len(rows) for rows in kept)))
    written = []
    for path, table, rows in zip(tsvs, tables, kept, strict=True):
        new_rows = [replace(row, url=next(images).name) for row in rows]
        target = folder / Path(path).name
        write_visogender_tsv(target, new_rows, table.context)
        written.append(target)
    return written
