"""The COCO layout of the perceived-gender grouping (``layout="coco"``):
``annotations/instances_<split>.json`` and ``annotations/captions_<split>.json``. An
image's group comes from the words of its captions (:func:`caption_group`); its concepts
are its object categories mapped to Visual Genome synsets (:data:`~.tables.COCO_TO_VG`,
extended by :func:`read_concept_map`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.tasks.zero_shot.groups.data import (
    ConceptFilter,
    GroupedData,
    GroupingOptions,
    ImageFiles,
    Scan,
    count_summary,
    image_records,
)
from contrastkit.evaluators.tasks.zero_shot.groups.tables import (
    COCO_MAN_TERMS,
    COCO_TO_VG,
    COCO_WOMAN_TERMS,
)
from contrastkit.records import MAX_ANNOTATION_BYTES, data_file, read_json, relative_file_name

__all__ = ["caption_group", "load_coco", "read_concept_map"]

_WORD = re.compile(r"[a-z]+")


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


def load_coco(root: Path, min_images: int, options: GroupingOptions) -> GroupedData:
    """Read the COCO folder ``root``: the single-group images of ``options.split``, the
    concepts seen in at least ``min_images`` images of each group of
    ``options.filter_split``, and the counts."""
    table = {**COCO_TO_VG, **(options.concept_map or {})}
    split = _coco_split(root, options.split)
    images, scan = _coco_entries(root, split, table)
    counted = scan.kept
    filter_split = options.filter_split
    if filter_split is not None and filter_split != split:
        counted = _coco_entries(root, _coco_split(root, filter_split), table)[1].kept
    concept_filter = ConceptFilter.count(counted, min_images, filter_split or split)
    instances_path = root / "annotations" / f"instances_{split}.json"
    names = {
        str(image.get("id")): relative_file_name(
            instances_path, None, f"images[{n}].file_name", str(image.get("file_name", ""))
        )
        for n, image in enumerate(images)
    }
    folders = ("images", f"images/{split}", split, "")
    files = ImageFiles(root, folders, lambda i: names[i], instances_path)
    without = options.images_without_concepts
    records = image_records(scan, concept_filter.concepts, files, without)
    return GroupedData(
        root, "coco", split, tuple(records), concept_filter.concepts, min_images,
        count_summary(scan, records, concept_filter, without), concept_filter.concept_images,
    )  # fmt: skip


def _read_json(path: Path) -> Any:
    """An annotations file (``ROOT/annotations/NAME``), inside the data folder ``ROOT``
    with every link resolved (:func:`contrastkit.records.data_file`)."""
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    data_file(path, None, None, f"{path.parent.name}/{path.name}", folder=path.parent.parent)
    return read_json(path, max_bytes=MAX_ANNOTATION_BYTES)


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
) -> tuple[list[dict[str, Any]], Scan]:
    """The split's image entries, and its single-group images (id, group, concepts) with
    the counts of images dropped."""
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
    names: dict[str, str] = {}
    for number, category in enumerate(instances["categories"]):
        name = str(category.get("name", ""))
        names[_coco_id(instances_path, f"categories[{number}].id", category)] = table.get(
            name, name
        )
    objects: dict[str, set[str]] = {}
    for number, annotation in enumerate(instances["annotations"]):
        field = f"annotations[{number}].category_id"
        category = _coco_id(instances_path, field, annotation)
        if category not in names:
            raise DataFormatError(
                instances_path, None, field,
                f"annotation {number}: unknown category {category}",
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
    return images, Scan(len(images), kept, dropped)


def _coco_id(path: Path, field: str, entry: Mapping[str, Any]) -> str:
    """A COCO image or category id (an integer, as COCO writes them) as text, or a
    located error: an id of another type (a list, an object) would silently match
    nothing, or the wrong image."""
    value = entry.get(field.rsplit(".", 1)[-1])
    if not isinstance(value, int) or isinstance(value, bool):
        found = "missing" if value is None else f"{type(value).__name__} {value!r}"
        raise DataFormatError(path, None, field, f"expected an integer id, found {found}")
    return str(value)
