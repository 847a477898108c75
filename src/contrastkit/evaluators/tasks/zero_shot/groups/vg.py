"""The Visual Genome layout of the perceived-gender grouping (``layout="vg"``):
``image_data.json`` and ``objects.json``, both read one entry at a time
(:mod:`~contrastkit.evaluators.tasks.zero_shot.jsonstream`: the full ``objects.json`` is
several GB). An image's group comes from its object synsets (:data:`~.tables.
VG_MAN_SYNSETS`, :data:`~.tables.VG_WOMAN_SYNSETS`); its concepts are all its other
synsets."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.zero_shot.groups.data import (
    ConceptFilter,
    GroupedData,
    ImageFiles,
    Scan,
    count_summary,
    image_records,
)
from contrastkit.evaluators.tasks.zero_shot.groups.tables import VG_MAN_SYNSETS, VG_WOMAN_SYNSETS
from contrastkit.evaluators.tasks.zero_shot.jsonstream import iter_json_array
from contrastkit.records import data_file

__all__ = ["load_vg"]

#: Where Visual Genome's images are looked for, under the data folder, in order.
_FOLDERS = ("VG_100K", "VG_100K_2", "images", "")


def load_vg(root: Path, min_images: int, without: str) -> GroupedData:
    """Read the Visual Genome folder ``root``: its single-group images, the concepts seen
    in at least ``min_images`` images of each group, and the counts; ``without`` is
    :attr:`~.data.GroupingOptions.images_without_concepts`."""
    scan = _scan(root)
    concept_filter = ConceptFilter.count(scan.kept, min_images, None)
    files = ImageFiles(root, _FOLDERS, lambda image_id: f"{image_id}.jpg", root / "objects.json")
    records = image_records(scan, concept_filter.concepts, files, without)
    return GroupedData(
        root, "vg", None, tuple(records), concept_filter.concepts, min_images,
        count_summary(scan, records, concept_filter, without), concept_filter.concept_images,
    )  # fmt: skip


def _known_ids(image_data_path: Path) -> set[str] | None:
    """The image ids of ``image_data.json``, or ``None`` when there is none."""
    if not image_data_path.is_file():
        return None
    known: set[str] = set()
    for number, entry in enumerate(iter_json_array(image_data_path, "images")):
        image_id = entry.get("image_id", entry.get("id")) if isinstance(entry, dict) else None
        if image_id is None:
            raise DataFormatError(
                image_data_path, None, "image_id", f"entry {number} has no image_id"
            )
        known.add(str(image_id))
    return known


def _scan(root: Path) -> Scan:
    """Every ``objects.json`` entry's group and concepts: the single-group images kept,
    the others counted."""
    man, woman = set(VG_MAN_SYNSETS), set(VG_WOMAN_SYNSETS)
    # the annotations are files of the data folder too: no link leading out of it
    objects_path = data_file(root / "objects.json", None, None, "objects.json", folder=root)
    known = _known_ids(
        data_file(root / "image_data.json", None, None, "image_data.json", folder=root)
    )
    dropped = Counter[str]()
    kept: list[tuple[str, str, frozenset[str]]] = []
    read = 0
    first_entry: dict[str, int] = {}
    # one entry at a time: the full objects.json is several GB (:mod:`.jsonstream`)
    for number, entry in enumerate(iter_json_array(objects_path, "images")):
        read += 1
        image_id = _image_id(objects_path, number, entry, known, first_entry)
        synsets = _synsets(objects_path, number, image_id, entry)
        groups = {"men"} if synsets & man else set()
        groups |= {"women"} if synsets & woman else set()
        if len(groups) != 1:
            dropped["both_groups" if groups else "no_group"] += 1
            continue
        kept.append((image_id, groups.pop(), frozenset(synsets - man - woman)))
    return Scan(read, kept, dropped)


def _image_id(
    objects_path: Path, number: int, entry: Any, known: set[str] | None, first: dict[str, int]
) -> str:
    """The entry's image id, checked: present, listed once (``first``: the entry where
    each id was seen) and in ``image_data.json`` (``known``) when there is one."""
    if not isinstance(entry, dict) or "image_id" not in entry:
        raise DataFormatError(objects_path, None, "image_id", f"entry {number} has no image_id")
    image_id = str(entry["image_id"])
    if image_id in first:
        raise DataFormatError(
            objects_path, None, "image_id",
            f"entry {number}: image {image_id} is listed twice (first as entry "
            f"{first[image_id]})",
        )  # fmt: skip
    first[image_id] = number
    if known is not None and image_id not in known:
        raise DataFormatError(
            objects_path, None, "image_id",
            f"entry {number}: image {image_id} is not in image_data.json",
        )  # fmt: skip
    return image_id


def _synsets(
    objects_path: Path, number: int, image_id: str, entry: Mapping[str, object]
) -> set[str]:
    """The synsets of the entry's objects."""
    synsets: set[str] = set()
    objects = entry.get("objects") or []
    if not isinstance(objects, list):
        raise DataFormatError(
            objects_path, None, "objects", f"entry {number}: expected a list of objects"
        )
    for obj in objects:
        names = obj.get("synsets") if isinstance(obj, dict) else None
        if not isinstance(names, list):
            raise DataFormatError(
                objects_path, None, "synsets",
                f"entry {number} (image {image_id}): every object needs a synsets list",
            )  # fmt: skip
        synsets.update(str(name) for name in names)
    return synsets
