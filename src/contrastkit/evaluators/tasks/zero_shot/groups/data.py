"""What both layouts' readers share: the options of a grouping, the records they
produce (:class:`ImageRecord`, :class:`GroupedData`), and the last steps of every reading:
the concept filter (:class:`ConceptFilter`), finding the images' files
(:class:`ImageFiles`, :func:`image_records`) and the counts (:func:`count_summary`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.zero_shot.groups.tables import GROUPS
from contrastkit.records import data_file, relative_file_name

__all__ = [
    "ConceptFilter",
    "GroupedData",
    "GroupingOptions",
    "ImageFiles",
    "ImageRecord",
    "Scan",
    "concept_words",
    "count_summary",
    "image_records",
]

_SYNSET = re.compile(r"^(?P<lemma>.+)\.[a-z]\.\d+$")


def concept_words(concept: str) -> str:
    """The words a concept is prompted with: a synset's lemma with ``_`` as spaces
    (``tennis_racket.n.01`` -> ``tennis racket``), any other name as given."""
    match = _SYNSET.match(concept)
    return (match.group("lemma") if match else concept).replace("_", " ")


@dataclass(frozen=True)
class GroupingOptions:
    """How :func:`~contrastkit.evaluators.tasks.zero_shot.groups.load_grouped` reads a folder
    and which images and concepts it keeps.

    Attributes:
        layout: ``vg``, ``coco`` or ``auto`` (:func:`~contrastkit.evaluators.tasks.zero_shot.
            groups.detect_layout`).
        min_images: images per group a concept needs (default
            :data:`~.tables.DEFAULT_MIN_IMAGES` of the layout: 50 or 100).
        split: the COCO split to evaluate (default: the only one, else ``val2017``,
            ``val2014`` or ``val``).
        filter_split: the COCO split whose images decide the concept filter (the paper
            filters on train and evaluates on val); default ``split``. Its images need not
            be on disk.
        concept_map: COCO category -> synset entries over :data:`~.tables.COCO_TO_VG`.
        images_without_concepts: ``keep`` (default; the paper's reading) or ``drop``
            the single-group images that show no kept concept
            (:data:`~.tables.IMAGES_WITHOUT_CONCEPTS`).
    """

    layout: str = "auto"
    min_images: int | None = None
    split: str | None = None
    filter_split: str | None = None
    concept_map: Mapping[str, str] | None = None
    images_without_concepts: str = "keep"


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


@dataclass(frozen=True)
class Scan:
    """What reading a layout's annotations gave.

    Attributes:
        read: images read.
        kept: the single-group images as ``(image id, group, concepts)``, in the
            dataset's order.
        dropped: images dropped by reason (``both_groups``, ``no_group``);
            :func:`image_records` adds ``without_concept`` and ``no_concept``.
    """

    read: int
    kept: list[tuple[str, str, frozenset[str]]]
    dropped: Counter[str]


@dataclass(frozen=True)
class ConceptFilter:
    """The concept filter: the concepts seen in at least ``min_images`` images of each
    group.

    Attributes:
        concept_images: images per group of every concept seen.
        concepts: the concepts kept, sorted.
        split: the COCO split whose images were counted (``None`` for Visual Genome).
    """

    concept_images: dict[str, dict[str, int]]
    concepts: tuple[str, ...]
    split: str | None = None

    @classmethod
    def count(
        cls, kept: Sequence[tuple[str, str, frozenset[str]]], min_images: int, split: str | None
    ) -> ConceptFilter:
        """The filter of the single-group images ``kept`` (as :attr:`Scan.kept`)."""
        counts: dict[str, Counter[str]] = {group: Counter() for group in GROUPS}
        for _, group, concepts in kept:
            counts[group].update(concepts)
        seen = sorted(set(counts["men"]) | set(counts["women"]))
        concept_images = {c: {group: counts[group][c] for group in GROUPS} for c in seen}
        chosen = tuple(
            c for c, per in concept_images.items() if all(per[g] >= min_images for g in GROUPS)
        )
        return cls(concept_images, chosen, split)


@dataclass(frozen=True)
class ImageFiles:
    """Where a layout keeps its images' files.

    Attributes:
        root: the data folder.
        folders: the folders under ``root`` tried in order (``""``: ``root`` itself).
        name: the file name of an image id.
    """

    root: Path
    folders: tuple[str, ...]
    name: Callable[[str], str]
    source: Path | None = None

    def find(self, image_id: str) -> Path:
        """The image's file, or a DataFormatError saying where it was looked for. The file
        name an image id gives must name a file inside ``root`` (``records.data_file``:
        no ``..``, no absolute path, no link leading out of it), or it is an error
        located at ``source`` (the annotations file)."""
        name = self.name(image_id)
        data = self.source or self.root
        relative_file_name(data, None, "image_id", name)
        for folder in self.folders:
            relative = f"{folder}/{name}" if folder else name
            candidate = self.root / relative
            if candidate.is_file():
                return data_file(data, None, "image_id", relative, folder=self.root)
        where = ", ".join(f"{f}/" for f in self.folders if f)
        raise DataFormatError(
            self.root / self.folders[0] / name, None, None,
            f"image file not found (looked in {where} and the folder itself)",
        )  # fmt: skip


def image_records(
    scan: Scan, concepts: Sequence[str], files: ImageFiles, without: str
) -> list[ImageRecord]:
    """The single-group images with their files; those that show no kept concept are
    counted (``without_concept``) and, with ``without="drop"``, left out."""
    wanted = set(concepts)
    records: list[ImageRecord] = []
    for image_id, group, image_concepts in scan.kept:
        if not image_concepts & wanted:
            scan.dropped["without_concept"] += 1
            if without == "drop":
                scan.dropped["no_concept"] += 1
                continue
        records.append(ImageRecord(image_id, files.find(image_id), group, image_concepts))
    return records


class CountSummary(TypedDict):
    """What a reading read and dropped (:func:`count_summary`)."""

    images_read: int
    images: dict[str, int]
    images_kept: int
    dropped: dict[str, int]
    without_concept: int
    images_without_concepts: str
    concepts_seen: int
    concepts_kept: int
    filter_split: str | None


def count_summary(
    scan: Scan, records: Sequence[ImageRecord], concept_filter: ConceptFilter, without: str
) -> CountSummary:
    """The :attr:`GroupedData.counts` of a reading."""
    per_group = Counter(record.group for record in records)
    dropped = scan.dropped
    return {
        "images_read": scan.read,
        "images": {group: per_group[group] for group in GROUPS},
        "images_kept": len(records),
        "dropped": {key: dropped[key] for key in ("both_groups", "no_group", "no_concept")},
        "without_concept": dropped["without_concept"],
        "images_without_concepts": without,
        "concepts_seen": len(concept_filter.concept_images),
        "concepts_kept": len(concept_filter.concepts),
        "filter_split": concept_filter.split,
    }
