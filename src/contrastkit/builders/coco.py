"""COCO source images for GenSynth: one person, a defined caption gender label.

GenSynth (seeds/001, Sec. 4.1) edits COCO images that "(i) contain only one person,
inferred from the number of person bounding boxes; and (ii) have a defined gender label"
(Sec. 3.2, :func:`contrastkit.gender_words.image_label`). :func:`read_coco`
reads a COCO folder's ``captions_<split>.json`` and ``instances_<split>.json``;
:func:`select_sources` keeps the images with exactly one person box (a crowd box
counts as several people) at least ``min_box_side`` pixels wide and tall, and a defined
label, and counts what it left out. By the paper's word list, train2017 holds 30,541
masculine, 11,781 feminine and 75,965 undefined images (Sec. 3.2).

Folder layout (the official one, or the two JSON files and the image folder side by
side)::

    DIR/annotations/captions_train2017.json
    DIR/annotations/instances_train2017.json
    DIR/train2017/000000000009.jpg ...
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contrastkit.builders.coco_records import SourceRecord
from contrastkit.builders.coco_splits import no_split
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.gender_words import image_label
from contrastkit.records import data_file, read_coco_json, relative_file_name
from contrastkit.schema import Gender

__all__ = [
    "SOURCE_TABLE",
    "Box",
    "CocoDataset",
    "CocoImage",
    "SourceImage",
    "SourceSelection",
    "find_split",
    "read_coco",
    "read_coco_cached",
    "select_sources",
]


@dataclass(frozen=True)
class Box:
    """A COCO box: left, top, width, height in pixels (floats, as in the JSON)."""

    x: float
    y: float
    w: float
    h: float

    def xyxy(self, width: int, height: int) -> tuple[int, int, int, int]:
        """Integer (left, top, right, bottom) covering the box, clipped to the image."""
        left = max(0, int(self.x))
        top = max(0, int(self.y))
        right = min(width, int(-(-(self.x + self.w) // 1)))
        bottom = min(height, int(-(-(self.y + self.h) // 1)))
        return left, top, right, bottom

    def as_list(self) -> list[float]:
        """``[x, y, w, h]`` as in COCO."""
        return [self.x, self.y, self.w, self.h]


@dataclass(frozen=True)
class CocoImage:
    """One image of a COCO split with its captions and person boxes."""

    image_id: int
    file_name: str
    width: int
    height: int
    captions: tuple[str, ...] = ()
    person_boxes: tuple[Box, ...] = ()
    crowd: bool = False
    #: Each person box's COCO ``segmentation`` (polygons or RLE, as in the JSON), or
    #: ``None`` where the annotation has none; parallel to :attr:`person_boxes`.
    person_segmentations: tuple[Any, ...] = ()

    @property
    def label(self) -> Gender | None:
        """The caption gender label of Sec. 3.2 (``None``: undefined)."""
        return image_label(self.captions)


@dataclass(frozen=True)
class CocoDataset:
    """A COCO split: where its images are and what they hold."""

    root: Path
    split: str
    image_dir: Path
    images: dict[int, CocoImage]

    def image_path(self, image: CocoImage) -> Path:
        """The file of ``image``, checked to lie inside the COCO folder (the folder of
        the image folder), links resolved (:func:`contrastkit.records.data_file`).

        Raises:
            DataFormatError: the file leads out of the COCO folder.
        """
        return coco_file(self.image_dir.parent, f"{self.image_dir.name}/{image.file_name}")


@dataclass(frozen=True)
class SourceImage:
    """A selected source: a COCO image with one person box and a defined label.

    ``segmentation`` is the person's COCO segmentation (polygons or RLE, as in the
    JSON; :func:`contrastkit.curation.masks.decode_segmentation`), ``None`` where the
    annotation has none (and in builds made before it was recorded). ``sha256`` is the
    SHA-256 of the photo file's bytes, recorded by the edit stage
    (:mod:`contrastkit.builders.source_photos`; ``None`` before that, and in builds made
    before it was recorded).
    """

    source_id: str
    path: Path
    width: int
    height: int
    box: Box
    captions: tuple[str, ...]
    label: Gender
    segmentation: Any = None
    sha256: str | None = None

    def to_json(self) -> SourceRecord:
        """The fields as JSON-ready values (``segmentation`` and ``sha256`` only when
        there is one)."""
        data: SourceRecord = {
            "source_id": self.source_id,
            "path": str(self.path),
            "width": self.width,
            "height": self.height,
            "box": self.box.as_list(),
            "captions": list(self.captions),
            "label": self.label.value,
        }
        if self.segmentation is not None:
            data["segmentation"] = self.segmentation
        if self.sha256 is not None:
            data["sha256"] = self.sha256
        return data


@dataclass(frozen=True)
class SourceSelection:
    """The selected sources (in image-id order) and the counts behind them.

    ``counts`` holds: ``images``; ``masculine`` / ``feminine`` / ``undefined`` (labels of
    all images, the paper's Sec. 3.2 figures); ``one_person``; ``box_too_small``;
    ``one_person_undefined``; ``selected``; ``selected_masculine``;
    ``selected_feminine``; ``limited_to`` (when ``limit`` was given); ``empty_mask``
    (persons left out for a segmentation that covers no pixel, when a mask is needed).
    """

    sources: list[SourceImage]
    counts: dict[str, int] = field(default_factory=dict)


def find_split(
    root: str | Path,
    split: str | None = None,
    *,
    kinds: tuple[str, ...] = ("captions", "instances"),
) -> tuple[str, Path]:
    """Find the annotations folder and the split of a COCO folder.

    Args:
        root: the COCO folder (with ``annotations/``) or the annotations folder itself.
        split: ``train2017``, ``val2017`` ...; when ``None``, the only split present.
        kinds: the annotation files ``<kind>_<split>.json`` that must be there.

    Returns:
        ``(split, annotations_dir)``.

    Raises:
        DataFormatError: when no ``captions_*.json`` is there, or several and no split,
            or a file of ``kinds`` is missing.
    """
    root = Path(root)
    if not root.is_dir():
        raise DataFormatError(root, None, None, "no such folder (expected a COCO folder)")
    ann = root / "annotations" if (root / "annotations").is_dir() else root
    if split is None:
        found = sorted(p.name[len("captions_") : -5] for p in ann.glob("captions_*.json"))
        if not found:
            raise DataFormatError(
                ann, None, None, "no captions_<split>.json here (expected a COCO folder)"
            )
        if len(found) > 1:
            raise DataFormatError(
                ann, None, None, f"several splits ({', '.join(found)}): choose one with --split"
            )
        split = found[0]
    for kind in kinds:
        if not (ann / f"{kind}_{split}.json").is_file():
            raise DataFormatError(ann / f"{kind}_{split}.json", None, None, no_split(ann, kind))
        here = ann.absolute()  # a name even for "."
        coco_file(here.parent, f"{here.name}/{kind}_{split}.json")
    return split, ann


def coco_file(folder: Path, name: str) -> Path:
    """``folder / name``, a file of the COCO folder ``folder`` (an annotations file, an
    image), checked to lie inside it with every link resolved: the path rule of every
    reader (:func:`contrastkit.records.data_file`; SECURITY.md).

    Raises:
        DataFormatError: naming the file: it leads out of ``folder``.
    """
    return data_file(Path(folder) / name, None, None, name, folder=Path(folder))


def _items(path: Path, data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = data.get(key)
    if not isinstance(items, list):
        raise DataFormatError(path, None, key, "missing or not a list")
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise DataFormatError(path, None, f"{key}[{position}]", "expected an object")
    return items


def _get(
    path: Path, item: dict[str, Any], where: str, name: str, kind: type | tuple[type, ...]
) -> Any:
    value = item.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        found = "missing" if value is None else f"{type(value).__name__} {value!r}"
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DataFormatError(path, None, f"{where}.{name}", f"expected {names}, found {found}")
    return value


def _finite(value: float) -> bool:
    """Whether ``value`` is a finite number a float holds (an integer of 400 digits is
    not: it cannot be turned into one)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _positive(path: Path, where: str, name: str, value: int) -> int:
    if value <= 0:
        raise DataFormatError(path, None, f"{where}.{name}", f"must be > 0, not {value}")
    return value


def read_coco(root: str | Path, split: str | None = None) -> CocoDataset:
    """Read one split of a COCO folder: captions, person boxes, image sizes.

    Images come from the captions file; the person category is the one named
    ``person`` in the instances file.

    Raises:
        DataFormatError: naming the file and the field (``annotations[12].bbox``) of the
            first malformed entry.
    """
    split, ann = find_split(root, split)
    root = Path(root)
    image_dir = root / split if (root / split).is_dir() else ann.parent / split
    captions_path = ann / f"captions_{split}.json"
    captions = read_coco_json(captions_path)
    images: dict[int, dict[str, Any]] = {}
    for i, item in enumerate(_items(captions_path, captions, "images")):
        where = f"images[{i}]"
        image_id = _get(captions_path, item, where, "id", int)
        images[image_id] = {
            "image_id": image_id,
            "file_name": relative_file_name(
                captions_path,
                None,
                f"{where}.file_name",
                _get(captions_path, item, where, "file_name", str),
            ),
            "width": _positive(
                captions_path, where, "width", _get(captions_path, item, where, "width", int)
            ),
            "height": _positive(
                captions_path, where, "height", _get(captions_path, item, where, "height", int)
            ),
            "captions": [],
            "person_boxes": [],
            "person_segmentations": [],
            "crowd": False,
        }
    for i, item in enumerate(_items(captions_path, captions, "annotations")):
        where = f"annotations[{i}]"
        image_id = _get(captions_path, item, where, "image_id", int)
        if image_id not in images:
            raise DataFormatError(
                captions_path, None, f"{where}.image_id", f"unknown image id {image_id}"
            )
        images[image_id]["captions"].append(_get(captions_path, item, where, "caption", str))

    instances_path = ann / f"instances_{split}.json"
    instances = read_coco_json(instances_path)
    person_ids = {
        _get(instances_path, c, f"categories[{i}]", "id", int)
        for i, c in enumerate(_items(instances_path, instances, "categories"))
        if c.get("name") == "person"
    }
    if not person_ids:
        raise DataFormatError(instances_path, None, "categories", "no category named 'person'")
    for i, item in enumerate(_items(instances_path, instances, "annotations")):
        where = f"annotations[{i}]"
        if _get(instances_path, item, where, "category_id", int) not in person_ids:
            continue
        image_id = _get(instances_path, item, where, "image_id", int)
        if image_id not in images:
            continue  # an image without captions is not in the captioned split
        bbox = _get(instances_path, item, where, "bbox", list)
        if len(bbox) != 4 or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in bbox
        ):
            raise DataFormatError(
                instances_path, None, f"{where}.bbox", f"expected [x, y, w, h], found {bbox!r}"
            )
        if not all(_finite(v) for v in bbox):
            raise DataFormatError(
                instances_path, None, f"{where}.bbox", f"not a finite number in {bbox}"
            )
        if bbox[2] <= 0 or bbox[3] <= 0:
            raise DataFormatError(
                instances_path, None, f"{where}.bbox", f"width and height must be > 0: {bbox}"
            )
        entry = images[image_id]
        # inside its image, to a pixel of rounding (checked here, before any model loads)
        if (
            bbox[0] < -1
            or bbox[1] < -1
            or bbox[0] + bbox[2] > entry["width"] + 1
            or bbox[1] + bbox[3] > entry["height"] + 1
        ):
            raise DataFormatError(
                instances_path, None, f"{where}.bbox",
                f"{bbox} is not inside its {entry['width']}x{entry['height']} image",
            )  # fmt: skip
        entry["person_boxes"].append(Box(*(float(v) for v in bbox)))
        entry["person_segmentations"].append(
            _segmentation(instances_path, f"{where}.segmentation", item.get("segmentation"),
                          entry["width"], entry["height"])
        )  # fmt: skip
        if item.get("iscrowd", 0):
            entry["crowd"] = True
    return CocoDataset(
        root=root,
        split=split,
        image_dir=image_dir,
        images={
            key: CocoImage(
                image_id=value["image_id"],
                file_name=value["file_name"],
                width=value["width"],
                height=value["height"],
                captions=tuple(value["captions"]),
                person_boxes=tuple(value["person_boxes"]),
                crowd=value["crowd"],
                person_segmentations=tuple(value["person_segmentations"]),
            )
            for key, value in sorted(images.items())
        },
    )


def _segmentation(path: Path, where: str, value: Any, width: int, height: int) -> Any:
    """A person annotation's ``segmentation``, checked against its image's declared size
    before anything is rasterised (:func:`~contrastkit.curation.masks.check_segmentation`):
    a list of polygons (each a flat ``[x1, y1, x2, y2, ...]`` list of at least 3 points
    inside the image) or an RLE object (``size`` ``[height, width]`` of the image and
    ``counts``, run lengths or COCO's compressed string, that cover it exactly); ``None``
    when missing or empty."""
    from contrastkit.curation.masks import SegmentationError, check_segmentation

    if value is None or value == []:
        return None
    try:
        check_segmentation(value, width, height)
    except SegmentationError as error:
        raise DataFormatError(path, None, f"{where}{error.part}", error.reason) from error
    if isinstance(value, dict):
        return {"counts": value["counts"], "size": value["size"]}
    return value


def select_sources(
    coco: CocoDataset,
    *,
    min_box_side: float = 0.0,
    limit: int | None = None,
    image_ids: Sequence[int] | None = None,
    needs_mask: bool = False,
) -> SourceSelection:
    """Select GenSynth source images (Sec. 4.1): exactly one person box, not a crowd,
    both box sides at least ``min_box_side`` pixels, and a defined caption label. With
    ``needs_mask`` (an edit confined to the person mask), a person whose segmentation
    covers no pixel (an all-background RLE, a polygon without area) is left out and
    counted (``empty_mask``): its edits would be the photo itself.

    Args:
        coco: the split, from :func:`read_coco`.
        min_box_side: smallest accepted box width and height, in pixels (the paper sets
            none: 0).
        limit: keep only the first ``limit`` selected sources (by image id).
        image_ids: consider only these images.
        needs_mask: leave out the persons whose segmentation is empty.

    Returns:
        The sources in image-id order, and the counts (:class:`SourceSelection`).
    """
    if min_box_side < 0:
        raise ConfigError(f"min_box_side must be >= 0, not {min_box_side}")
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be >= 1, not {limit}")
    wanted = None if image_ids is None else set(image_ids)
    counts: Counter[str] = Counter()
    sources: list[SourceImage] = []
    for image in coco.images.values():
        if wanted is not None and image.image_id not in wanted:
            continue
        counts["images"] += 1
        label = image.label
        counts[label.value if label else "undefined"] += 1
        if len(image.person_boxes) != 1 or image.crowd:
            continue
        counts["one_person"] += 1
        box = image.person_boxes[0]
        if box.w < min_box_side or box.h < min_box_side:
            counts["box_too_small"] += 1
            continue
        if label is None:
            counts["one_person_undefined"] += 1
            continue
        segmentation = image.person_segmentations[0] if image.person_segmentations else None
        if needs_mask and _empty(coco, image, segmentation):
            counts["empty_mask"] += 1
            continue
        counts["selected"] += 1
        counts[f"selected_{label.value}"] += 1
        sources.append(
            SourceImage(
                source_id=str(image.image_id),
                path=coco.image_path(image),
                width=image.width,
                height=image.height,
                box=box,
                captions=image.captions,
                label=label,
                segmentation=segmentation,
            )
        )
    result = {key: counts.get(key, 0) for key in _COUNT_KEYS}
    if needs_mask:
        result["empty_mask"] = counts.get("empty_mask", 0)
    if limit is not None and len(sources) > limit:
        sources = sources[:limit]
        result["limited_to"] = limit
    return SourceSelection(sources=sources, counts=result)


def _empty(coco: CocoDataset, image: CocoImage, segmentation: Any) -> bool:
    """Whether the person's segmentation covers no pixel of its image (``False`` without
    one: the edit stage refuses those)."""
    from contrastkit.curation.masks import segmentation_area

    if segmentation is None:
        return False
    try:
        return segmentation_area(segmentation, image.width, image.height) == 0
    except ValueError as error:  # read_coco checked it: a table written otherwise
        path = coco.image_path(image)
        raise DataFormatError(path, None, "segmentation", str(error)) from error


_COUNT_KEYS = (
    "images",
    "masculine",
    "feminine",
    "undefined",
    "one_person",
    "box_too_small",
    "one_person_undefined",
    "selected",
    "selected_masculine",
    "selected_feminine",
)


#: The parsed split a build folder keeps, so a resumed run does not parse the COCO JSON
#: again (instances_train2017.json is about 450 MB).
SOURCE_TABLE = "coco_table.parquet"
#: The version of the checks :func:`read_coco` makes (2: segmentations against the
#: image, issue 44).
_TABLE_CHECKS = "checks-2"


def _fingerprint(root: Path, split: str) -> str:
    """Identifies the annotation files a table was made from: names, sizes, times."""
    _, ann = find_split(root, split)
    parts = []
    for name in (f"captions_{split}.json", f"instances_{split}.json"):
        stat = (ann / name).stat()
        parts.append(f"{(ann / name).resolve()}:{stat.st_size}:{stat.st_mtime_ns}")
    # the checks a table's rows passed: a table of earlier, looser checks is read again
    return "|".join([_TABLE_CHECKS, *parts])


def read_coco_cached(root: str | Path, cache: str | Path, split: str | None = None) -> CocoDataset:
    """:func:`read_coco`, keeping the parsed split in ``cache/coco_table.parquet``: a
    compact table (one row per image: id, file name, size, captions, person boxes and
    segmentations, crowd)
    that later calls read instead of the JSON while the annotation files are unchanged
    (same paths, sizes and modification times).

    Raises:
        DataFormatError: as :func:`read_coco`.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from contrastkit.io import atomic_path

    root = Path(root)
    split, _ = find_split(root, split)
    fingerprint = _fingerprint(root, split)
    path = Path(cache) / SOURCE_TABLE
    if path.is_file():
        try:
            table = pq.read_table(path)
            meta = table.schema.metadata or {}
            if meta.get(b"fingerprint", b"").decode() == fingerprint:
                return _from_table(root, split, meta, table.to_pylist())
        except (OSError, ValueError, KeyError, pa.ArrowException):
            pass  # unreadable or of another layout: parse again and replace it
    coco = read_coco(root, split)
    rows = [
        {
            "image_id": image.image_id,
            "file_name": image.file_name,
            "width": image.width,
            "height": image.height,
            "captions": list(image.captions),
            "person_boxes": [box.as_list() for box in image.person_boxes],
            "crowd": image.crowd,
            "person_segmentations": [
                "" if seg is None else json.dumps(seg, separators=(",", ":"))
                for seg in image.person_segmentations
            ],
        }
        for image in coco.images.values()
    ]
    schema = pa.schema(
        [
            ("image_id", pa.int64()),
            ("file_name", pa.string()),
            ("width", pa.int32()),
            ("height", pa.int32()),
            ("captions", pa.list_(pa.string())),
            ("person_boxes", pa.list_(pa.list_(pa.float64()))),
            ("crowd", pa.bool_()),
            ("person_segmentations", pa.list_(pa.string())),
        ],
        metadata={"fingerprint": fingerprint, "image_dir": str(coco.image_dir)},
    )
    Path(cache).mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), temporary)
    return coco


def _from_table(
    root: Path, split: str, meta: dict[bytes, bytes], rows: list[dict[str, Any]]
) -> CocoDataset:
    images = {
        row["image_id"]: CocoImage(
            image_id=row["image_id"],
            file_name=row["file_name"],
            width=row["width"],
            height=row["height"],
            captions=tuple(row["captions"]),
            person_boxes=tuple(Box(*box) for box in row["person_boxes"]),
            crowd=row["crowd"],
            # a table of an older layout has no such column: KeyError, parsed again
            person_segmentations=tuple(
                json.loads(seg) if seg else None for seg in row["person_segmentations"]
            ),
        )
        for row in rows
    }
    return CocoDataset(root, split, Path(meta[b"image_dir"].decode()), images)
