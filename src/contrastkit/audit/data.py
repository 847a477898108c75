"""The images, captions and gender labels an audit reads.

Two kinds of data:

* a **contrast set** exported by ``contrastkit export contrast`` (or a saved dataset with
  its columns ``source_id``, ``gender``, ``image``, ``neutral_captions``; read by
  :func:`contrastkit.evaluators.tasks.contrast_sets.data.load_contrast`): each image's
  label is its ``gender`` column (the edit's target), its captions the gender-adjusted ``captions``
  and its neutral captions the export's ``neutral_captions``; the two versions of a
  source photo form one *group*;
* a **VisoGender-style set** (official-format TSVs, a folder of them, or a
  ``contrastkit export visogender`` folder; read by
  :func:`contrastkit.evaluators.data.load_items`): one image per row, labelled by its
  ``occupation_gender``, in the cell ``(context, occupation, participant gender or
  object)``; it has no captions, so only its composition can be audited;
* a COCO folder (the official layout, ``DIR/annotations/captions_<split>.json`` with an
optional ``instances_<split>.json`` and the image folder ``DIR/<split>/``, or the JSON
files side by side). With the instances file the split is read by
:func:`contrastkit.builders.coco.read_coco` (captions, person boxes); without it only
the captions are read, which is all the caption-based analyses need.

Every image gets the caption label ``g`` of GenSynth Sec. 3.2
(:func:`contrastkit.gender_words.image_label`: all its captions joined, only
masculine Tab. 4 words -> masculine, only feminine -> feminine, both or neither ->
undefined) and its gender-neutral captions
(:func:`contrastkit.gender_words.neutralize`, Tab. 4 / Tab. 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.gender_words import image_label, neutralize
from contrastkit.records import read_coco_json, relative_file_name

__all__ = [
    "LABELS",
    "UNDEFINED",
    "AuditData",
    "AuditImage",
    "load_audit_data",
    "read_coco_captions",
    "read_contrast_set",
    "read_visogender",
]

#: The label of an image whose captions hold both or neither gender's words.
UNDEFINED = "undefined"
#: Every label, in reporting order.
LABELS = ("masculine", "feminine", UNDEFINED)


@dataclass(frozen=True)
class AuditImage:
    """One image: its id, captions, caption label, neutral captions and file.

    Attributes:
        image_id: the id in the data (COCO ``image_id`` as text).
        captions: the captions as written.
        neutral_captions: the same captions made gender-neutral (Tab. 4).
        label: ``masculine``, ``feminine`` or ``undefined`` (Sec. 3.2).
        path: the image file, ``None`` when the data has none.
        person_boxes: COCO person boxes ``[x, y, w, h]`` (empty without instances).
        group: images that share captions (the versions of one contrast-set source);
            default the image itself. The TF-IDF baseline leaves a query's whole group
            out of its candidates.
        source: an image source for the pipeline other than ``path`` (a dataset row).
        cell: a VisoGender row's ``(context, occupation, participant gender or object)``.
    """

    image_id: str
    captions: tuple[str, ...]
    neutral_captions: tuple[str, ...]
    label: str
    path: Path | None = None
    person_boxes: tuple[tuple[float, float, float, float], ...] = ()
    group: str = ""
    source: Any = None
    cell: tuple[str, ...] = ()

    @property
    def group_key(self) -> str:
        """``group``, or the image id when the image is a group of its own."""
        return self.group or self.image_id

    @property
    def image_source(self) -> Any:
        """What the image pipeline reads: ``source``, else ``path``."""
        return self.source if self.source is not None else self.path

    @classmethod
    def from_captions(
        cls,
        image_id: str,
        captions: Sequence[str],
        path: Path | None = None,
        person_boxes: Sequence[tuple[float, float, float, float]] = (),
    ) -> AuditImage:
        """An image labelled and neutralised from its captions."""
        label = image_label(captions)
        return cls(
            image_id=image_id,
            captions=tuple(captions),
            neutral_captions=tuple(neutralize(c) for c in captions),
            label=label.value if label is not None else UNDEFINED,
            path=path,
            person_boxes=tuple(person_boxes),
        )


@dataclass(frozen=True)
class AuditData:
    """A data set to audit: where it came from and its captioned images (those with at
    least one caption), in id order."""

    source: Path
    format: str
    split: str | None
    images: tuple[AuditImage, ...]
    has_instances: bool = False
    label_source: str = "captions"

    @property
    def labels(self) -> list[str]:
        """Each image's label, in image order."""
        return [image.label for image in self.images]


def _field(path: Path, item: Any, where: str, name: str, kind: type) -> Any:
    value = item.get(name) if isinstance(item, dict) else None
    if not isinstance(item, dict):
        raise DataFormatError(path, None, where, "expected an object")
    if not isinstance(value, kind) or isinstance(value, bool):
        found = "missing" if value is None else f"{type(value).__name__} {value!r}"
        raise DataFormatError(
            path, None, f"{where}.{name}", f"expected {kind.__name__}, found {found}"
        )
    return value


def read_coco_captions(root: str | Path, split: str | None = None) -> AuditData:
    """The captioned images of one split of a COCO folder, labelled (Sec. 3.2).

    Uses :func:`contrastkit.builders.coco.read_coco` when the split has an instances
    file (person boxes come with it); otherwise reads the captions file alone.

    Raises:
        DataFormatError: no captions file, several splits and no ``split``, or a malformed
            entry (the file and the field, e.g. ``annotations[3].caption``).
    """
    from contrastkit.builders.coco import coco_file, find_split, read_coco

    root = Path(root)
    split, ann = find_split(root, split, kinds=("captions",))  # instances are optional
    image_dir = root / split if (root / split).is_dir() else ann.parent / split
    if (ann / f"instances_{split}.json").is_file():
        coco = read_coco(root, split)
        images = tuple(
            AuditImage.from_captions(
                str(image.image_id),
                image.captions,
                coco.image_path(image),
                [tuple(box.as_list()) for box in image.person_boxes],  # type: ignore[misc]
            )
            for image in coco.images.values()
            if image.captions
        )
        return AuditData(root, "coco", split, images, has_instances=True)
    path = ann / f"captions_{split}.json"
    data = read_coco_json(path)
    entries = data.get("images")
    notes = data.get("annotations")
    if not isinstance(entries, list):
        raise DataFormatError(path, None, "images", "missing or not a list")
    if not isinstance(notes, list):
        raise DataFormatError(path, None, "annotations", "missing or not a list")
    files: dict[int, str] = {}
    for i, item in enumerate(entries):
        image_id = _field(path, item, f"images[{i}]", "id", int)
        files[image_id] = relative_file_name(
            path,
            None,
            f"images[{i}].file_name",
            _field(path, item, f"images[{i}]", "file_name", str),
        )
    captions: dict[int, list[str]] = {}
    for i, item in enumerate(notes):
        image_id = _field(path, item, f"annotations[{i}]", "image_id", int)
        if image_id not in files:
            raise DataFormatError(
                path, None, f"annotations[{i}].image_id", f"unknown image id {image_id}"
            )
        captions.setdefault(image_id, []).append(
            _field(path, item, f"annotations[{i}]", "caption", str)
        )
    images = tuple(
        AuditImage.from_captions(
            str(image_id),
            captions[image_id],
            coco_file(image_dir.parent, f"{image_dir.name}/{files[image_id]}"),
        )
        for image_id in sorted(captions)
    )
    return AuditData(root, "coco", split, images)


def read_contrast_set(path: str | Path, split: str | None = None) -> AuditData:
    """A contrast-set export (module docstring), read lazily: images stay in the dataset.

    Raises:
        DataFormatError: as
            :func:`contrastkit.evaluators.tasks.contrast_sets.data.load_contrast`.
    """
    from contrastkit.evaluators.tasks.contrast_sets.data import load_contrast
    from contrastkit.pipeline import DatasetImage

    dataset = load_contrast(Path(path), split)
    feature = dataset.features["gender"]
    genders = [
        feature.int2str(value) if hasattr(feature, "int2str") else str(value)
        for value in dataset["gender"]
    ]
    sources = [str(value) for value in dataset["source_id"]]
    neutral = dataset["neutral_captions"]
    captions = dataset["captions"] if "captions" in dataset.column_names else neutral
    pictures = DatasetImage.column_of(dataset.select_columns(["image"]), "image")
    images = tuple(
        AuditImage(
            image_id=f"{source}:{gender}",
            captions=tuple(texts),
            neutral_captions=tuple(plain),
            label=gender if gender in LABELS[:2] else UNDEFINED,
            group=source,
            source=picture,
        )
        for source, gender, texts, plain, picture in zip(
            sources, genders, captions, neutral, pictures, strict=True
        )
        if plain
    )
    return AuditData(Path(path), "contrast", split, images, label_source="gender column")


def read_visogender(path: str | Path, split: str | None = None) -> AuditData:
    """A VisoGender-style set (module docstring): every row, no captions.

    Raises:
        DataFormatError: as :func:`contrastkit.evaluators.data.load_items`.
    """
    from contrastkit.evaluators.data import load_items

    images = tuple(
        AuditImage(
            image_id=f"{item.row.context.value}:{item.row.idx}",
            captions=(),
            neutral_captions=(),
            label=item.row.occupation_gender.value,
            cell=(
                item.row.context.value,
                item.row.occupation,
                item.row.participant_gender.value
                if item.row.participant_gender is not None
                else f"object: {item.row.object}",
            ),
        )
        for item in load_items([path], split=split)
    )
    return AuditData(Path(path), "visogender", split, images, label_source="occupation_gender")


def _visogender_like(path: Path) -> bool:
    """A folder of TSVs, or an export folder with a saved dataset under ``saved/``."""
    return any(path.glob("*.tsv")) or any(
        (p / "dataset_info.json").is_file() or (p / "dataset_dict.json").is_file()
        for p in (path / "saved").glob("*")
    )


def _is_coco(path: Path) -> bool:
    ann = path / "annotations" if (path / "annotations").is_dir() else path
    return path.is_dir() and any(ann.glob("captions_*.json"))


def load_audit_data(path: str | Path, split: str | None = None) -> AuditData:
    """The data at ``path``: a contrast-set export (:func:`read_contrast_set`), a COCO
    folder (:func:`read_coco_captions`) or a VisoGender-style set
    (:func:`read_visogender`: a TSV, a folder of them, an export).

    Raises:
        DataFormatError: ``path`` is not a folder of a known kind, or is malformed.
    """
    from contrastkit.evaluators.tasks.contrast_sets.data import is_contrast_dataset

    path = Path(path)
    if (
        is_contrast_dataset(path)
        or (path / "dataset_info.json").is_file()
        or (path / "dataset_dict.json").is_file()
    ):
        data = read_contrast_set(path, split)
    elif path.is_file() or (path.is_dir() and not _is_coco(path) and _visogender_like(path)):
        data = read_visogender(path, split)
    elif path.is_dir() and not _is_coco(path) and (path / "contrast_set.jsonl").is_file():
        raise DataFormatError(
            path, None, None,
            "a GenSynth / GenSwap build folder: export it first (`contrastkit export "
            "contrast BUILD --out EXPORT`) and audit the export; audit takes an export, a "
            "COCO folder or a VisoGender-style set",
        )  # fmt: skip
    else:
        data = read_coco_captions(path, split)
    if not data.images:
        raise DataFormatError(path, None, None, "no images to audit")
    return data
