"""Composition: how many images carry each caption gender label (GenSynth Sec. 3.2).

The label of an image is ``g`` of Sec. 3.2: all its captions joined into one paragraph,
``masculine`` when it holds only masculine Tab. 4 words, ``feminine`` when only feminine
ones, ``undefined`` for both or neither
(:func:`contrastkit.gender_words.image_label`). By that rule the paper counts,
for COCO 2017 (:data:`PAPER_COUNTS`):

* val2017, 5,000 images: 1,275 masculine (25.5%), 539 feminine (10.8%), 3,186 undefined
  (63.7%);
* train2017, 118,287 images: 30,541 masculine (25.8%), 11,781 feminine (9.9%), 75,965
  undefined (64.2%).

:func:`composition` is the function that produces those figures from a COCO folder
(tested on COCO-format fixtures; the real annotations are not shipped).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final, TypedDict

from typing_extensions import NotRequired

from contrastkit.audit.data import LABELS

__all__ = ["PAPER_COUNTS", "CellCount", "LabelComposition", "cell_composition", "composition"]

#: GenSynth Sec. 3.2: image counts per label on COCO 2017.
PAPER_COUNTS: Final[dict[str, dict[str, int]]] = {
    "val2017": {"masculine": 1275, "feminine": 539, "undefined": 3186},
    "train2017": {"masculine": 30541, "feminine": 11781, "undefined": 75965},
}


class CellCount(TypedDict):
    """The images of each gender in one VisoGender cell (:func:`cell_composition`)."""

    context: str
    occupation: str
    other: str
    masculine: int
    feminine: int
    balanced: bool


class LabelComposition(TypedDict):
    """The ``composition`` section of an audit (:func:`composition`); the audit adds the
    paper's counts of a COCO split and a VisoGender set's cells."""

    images: int
    captions: int | None
    counts: dict[str, int]
    shares: dict[str, float]
    masculine_share_of_labelled: float
    masculine_to_feminine: float
    paper_counts: NotRequired[dict[str, int]]
    cells: NotRequired[list[CellCount]]


def cell_composition(cells: Sequence[tuple[str, ...]], labels: Sequence[str]) -> list[CellCount]:
    """Images per label in every VisoGender cell ``(context, occupation, participant
    gender or object)``, in first-seen order; ``balanced`` when both genders of the
    occupation have the same count (VisoGender Sec. 3.2 balances each cell)."""
    counts: dict[tuple[str, ...], Counter[str]] = {}
    for cell, label in zip(cells, labels, strict=True):
        counts.setdefault(tuple(cell), Counter())[label] += 1
    return [
        {
            "context": cell[0],
            "occupation": cell[1],
            "other": cell[2] if len(cell) > 2 else "",
            "masculine": found["masculine"],
            "feminine": found["feminine"],
            "balanced": found["masculine"] == found["feminine"],
        }
        for cell, found in counts.items()
    ]


def composition(labels: Sequence[str], captions: int | None = None) -> LabelComposition:
    """Counts and shares of each label.

    Args:
        labels: one label per image (``masculine``, ``feminine``, ``undefined``).
        captions: the number of captions, reported as is.

    Returns:
        ``images``; ``captions``; ``counts`` and ``shares`` (of all images) per label;
        ``masculine_share_of_labelled``, ``N_m / (N_m + N_f)`` (``nan`` without
        labelled images), the share Skew@K compares retrievals with; and
        ``masculine_to_feminine``, ``N_m / N_f`` (``nan`` without feminine images).
    """
    counts = Counter(labels)
    total = len(labels)
    labelled = counts["masculine"] + counts["feminine"]
    return {
        "images": total,
        "captions": captions,
        "counts": {label: counts.get(label, 0) for label in LABELS},
        "shares": {
            label: counts.get(label, 0) / total if total else float("nan") for label in LABELS
        },
        "masculine_share_of_labelled": counts["masculine"] / labelled if labelled else float("nan"),
        "masculine_to_feminine": (
            counts["masculine"] / counts["feminine"] if counts["feminine"] else float("nan")
        ),
    }
