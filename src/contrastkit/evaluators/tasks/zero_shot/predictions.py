"""Bring-your-own predictions for the zero-shot disparity analysis (the zero-shot
disparities paper, Sec. 2.1: Detic's boxes and LSeg's pixels used as binary indicators
per concept).

A file of rows, one per (image, concept) the model predicted, as JSON Lines (``.jsonl``,
one JSON object per line) or Parquet (``.parquet``, the same columns). Two kinds of rows:

* **scores**: ``{"image_id": "2345", "concept": "necktie.n.01", "score": 0.83}`` — any
  real number, higher meaning more likely present (a classifier's logit or
  probability);
* **hits**: ``{"image_id": "2345", "concept": "necktie.n.01", "hit": 1, "confidence":
  0.91}`` — ``hit`` is 0 or 1 (the detector found the concept in the image, or not);
  the optional ``confidence`` in [0, 1] is the model's probability that the concept is
  present (for a detector, its highest box score for the concept), whatever ``hit``
  says.

One file holds one kind. ``image_id`` is the dataset's image id (Visual Genome
``image_id``, COCO image ``id``), as a string or a number; ``concept`` is the concept as
the data names it (a Visual Genome synset such as ``necktie.n.01``; for COCO the synset
its category maps to, see :data:`~contrastkit.evaluators.tasks.zero_shot.groups.COCO_TO_VG`).

What is not in the file counts as absent: a missing (image, concept) pair is score 0 /
no hit with confidence 0. Several rows for one pair (one per box) are merged: the
highest score or confidence, and a hit if any row hits. Rows of images or concepts
outside the analysis (filtered out, or unknown) are counted and otherwise ignored.

AP ranks the images by ``score``, or by ``hit`` (the paper's binary indicators). ECE
(Experiment 2) needs probabilities: the ``confidence`` of hit rows (every row must carry
one), or scores that all lie in [0, 1], which are then read as probabilities.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contrastkit.errors import DataFormatError
from contrastkit.records import json_lines
from contrastkit.results.zero_shot import PredictionsFile

__all__ = ["Predictions", "load_predictions"]


@dataclass(frozen=True)
class Predictions:
    """Predictions laid out over the analysis' images and concepts.

    Attributes:
        path: the file.
        kind: ``score`` or ``hit``.
        scores: ``(images, concepts)`` float64: what AP ranks by (the score, or the hit).
        probabilities: ``(images, concepts)`` probabilities for ECE, or ``None`` when the
            file carries none (``why_no_probabilities`` says why).
        rows: rows read.
        used: rows of the analysis' images and concepts.
        unknown_images: distinct image ids outside the analysis.
        unknown_concepts: distinct concepts outside the analysis (the first few are in
            ``unknown_concept_examples``).
        why_no_probabilities: why ECE cannot be computed from the file, or ``None``.
        probability_source: where the probabilities come from, in words.
    """

    path: Path
    kind: str
    scores: np.ndarray
    probabilities: np.ndarray | None
    rows: int
    used: int
    unknown_images: int
    unknown_concepts: int
    unknown_concept_examples: tuple[str, ...] = ()
    why_no_probabilities: str | None = None
    probability_source: str | None = None

    def described(self) -> PredictionsFile:
        """The description the reports carry (``disparity.json``'s
        ``predictions_file``)."""
        return PredictionsFile(
            file=str(self.path), kind=self.kind, rows=self.rows, rows_used=self.used,
            unknown_images=self.unknown_images, unknown_concepts=self.unknown_concepts,
            unknown_concept_examples=tuple(self.unknown_concept_examples),
            probabilities=self.probabilities is not None,
            why_no_probabilities=self.why_no_probabilities,
        )  # fmt: skip

    def summary(self) -> dict[str, Any]:
        """The JSON-ready description the reports carry (:meth:`described`'s JSON)."""
        return self.described().to_json()


def _parquet_rows(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:
        raise DataFormatError(path, None, None, f"not a readable Parquet file ({error})") from error
    for number, row in enumerate(table.to_pylist(), 1):
        yield number, {k: v for k, v in row.items() if v is not None}


def _number(path: Path, line: int | None, field: str, value: Any) -> float:
    number = math.nan
    if not isinstance(value, bool) and isinstance(value, int | float):
        with contextlib.suppress(OverflowError):  # an integer beyond float range
            number = float(value)
    if not math.isfinite(number):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise DataFormatError(path, line, field, f"must be a finite number, not {shown}")
    return number


def _numbered_rows(path: Path) -> tuple[Iterator[tuple[int, Any]], bool]:
    """The file's rows, numbered, and whether the numbers are lines (JSON Lines) rather
    than Parquet rows."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return json_lines(path), True
    if suffix in (".parquet", ".pq"):
        return _parquet_rows(path), False
    raise DataFormatError(
        path, None, None, "expected a .jsonl (JSON Lines) or .parquet predictions file"
    )


class _Grid:
    """The rows read so far, laid out over the analysis' ``(images, concepts)`` grid;
    each row is checked as it is added (``line`` and ``where`` locate its errors)."""

    def __init__(self, path: Path, image_ids: Sequence[str], concepts: Sequence[str]) -> None:
        self.path = path
        self.image_index = {str(image_id): i for i, image_id in enumerate(image_ids)}
        self.concept_index = {concept: j for j, concept in enumerate(concepts)}
        shape = (len(self.image_index), len(self.concept_index))
        self.scores = np.zeros(shape)
        self.confidence = np.zeros(shape)
        self.seen = np.zeros(shape, dtype=bool)
        self.has_confidence = True
        self.kind: str | None = None
        self.count = self.used = 0
        self.lowest, self.highest = math.inf, -math.inf
        self.unknown_images: set[str] = set()
        self.unknown_concepts: dict[str, None] = {}

    def add(self, row: Any, line: int | None, where: str) -> None:
        """Check one row and merge it into its cell (the highest score or confidence, a
        hit if any row hits); a row outside the grid is only counted."""
        self.count += 1
        value, conf = self._checked(row, line, where)
        image = str(row["image_id"]).strip()
        concept = str(row["concept"]).strip()
        i, j = self.image_index.get(image), self.concept_index.get(concept)
        if i is None:
            self.unknown_images.add(image)
        if j is None:
            self.unknown_concepts.setdefault(concept)
        if i is None or j is None:
            return
        self.used += 1
        self.lowest, self.highest = min(self.lowest, value), max(self.highest, value)
        self.scores[i, j] = max(self.scores[i, j], value) if self.seen[i, j] else value
        self.seen[i, j] = True
        if conf is not None:
            self.confidence[i, j] = max(self.confidence[i, j], conf)

    def _checked(self, row: Any, line: int | None, where: str) -> tuple[float, float | None]:
        """The row's value (its score or hit) and its confidence, or a located error."""
        path = self.path
        if not isinstance(row, dict):
            raise DataFormatError(path, line, None, f"{where}expected a JSON object")
        for key in ("image_id", "concept"):
            value = row.get(key)
            if value is None or (isinstance(value, str) and not value.strip()):
                raise DataFormatError(path, line, key, f"{where}missing")
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise DataFormatError(path, line, key, f"{where}must be a string, not {value!r}")
        kind = self._row_kind(row, line, where)
        number = _number(path, line, kind, row[kind])
        if kind == "hit" and number not in (0.0, 1.0):
            raise DataFormatError(path, line, "hit", f"{where}must be 0 or 1, not {row['hit']!r}")
        conf: float | None = None
        if row.get("confidence") is not None:
            conf = _number(path, line, "confidence", row["confidence"])
            if not 0.0 <= conf <= 1.0:
                raise DataFormatError(
                    path, line, "confidence", f"{where}must be in [0, 1], not {conf!r}"
                )
        elif kind == "hit":
            self.has_confidence = False
        return number, conf

    def _row_kind(self, row: Mapping[str, Any], line: int | None, where: str) -> str:
        """``score`` or ``hit``: the row's kind, which must be the file's."""
        row_kind = [k for k in ("score", "hit") if row.get(k) is not None]
        if len(row_kind) != 1:
            raise DataFormatError(
                self.path, line, None, f"{where}give exactly one of 'score' and 'hit'"
            )
        if self.kind is None:
            self.kind = row_kind[0]
        elif row_kind[0] != self.kind:
            raise DataFormatError(
                self.path, line, row_kind[0],
                f"{where}the file mixes '{self.kind}' and '{row_kind[0]}' rows; use one kind",
            )  # fmt: skip
        return self.kind

    def predictions(self) -> Predictions:
        """The grid as :class:`Predictions`, with the probabilities it carries (the hit
        rows' confidence, or scores all in [0, 1]) or why it carries none."""
        kind = self.kind
        if kind is None:
            raise DataFormatError(self.path, None, None, "the predictions file has no rows")
        probabilities: np.ndarray | None = None
        why: str | None = None
        described = None
        if kind == "hit":
            if self.has_confidence:
                probabilities = self.confidence
                described = "the hit rows' confidence"
            else:
                why = "hit rows without 'confidence' carry no probabilities"
        elif self.used and self.lowest >= 0.0 and self.highest <= 1.0:
            probabilities = self.scores
            described = "the scores, all in [0, 1], read as probabilities"
        else:
            why = "the scores are not all in [0, 1], so they are not probabilities"
        return Predictions(
            self.path, kind, self.scores, probabilities, self.count, self.used,
            len(self.unknown_images), len(self.unknown_concepts),
            tuple(list(self.unknown_concepts)[:5]), why, described,
        )  # fmt: skip


def load_predictions(path: Path, image_ids: Sequence[str], concepts: Sequence[str]) -> Predictions:
    """Read a predictions file (see the module docstring) onto the ``(images, concepts)``
    grid of the analysis.

    Args:
        path: a ``.jsonl`` or ``.parquet`` file.
        image_ids: the analysis' image ids, in its order.
        concepts: the analysis' concepts, in its order.

    Raises:
        DataFormatError: located (file, line or Parquet row, field): a missing file, an
            unknown suffix, a row that is not an object, a missing ``image_id`` or
            ``concept``, a row with neither or both of ``score`` and ``hit``, a file
            mixing the two kinds, a ``hit`` other than 0/1, a ``confidence`` outside
            [0, 1], a non-finite number, a file without rows.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "predictions file not found")
    rows, line_of = _numbered_rows(path)
    grid = _Grid(path, image_ids, concepts)
    for number, row in rows:
        grid.add(row, number if line_of else None, "" if line_of else f"row {number}: ")
    return grid.predictions()
