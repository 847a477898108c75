"""The typed ``disparity.json`` of one analysis (:class:`~contrastkit.results.ZeroShotResult`):
the job (:mod:`.job`) makes it from the figures (:func:`concept_rows`, :func:`group_map`)
with :func:`disparity_result`, adds the language bias (nodes of :mod:`.words`' results)
and the consistency with a second dataset (:func:`consistency_section`) with
:func:`with_sections`, and the writer
(:func:`.report.write_disparity_files`) serialises it. Its keys are written in the order
of :data:`RESULT_ORDER`, the file's order since it was first written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.zero_shot.metrics import GroupMetrics
from contrastkit.results.zero_shot import (
    ConceptDisparity,
    ConsistencyConcept,
    LanguageSource,
    PredictionsFile,
    ZeroShotBootstrap,
    ZeroShotCache,
    ZeroShotCalibration,
    ZeroShotConsistency,
    ZeroShotCounts,
    ZeroShotData,
    ZeroShotMap,
    ZeroShotResult,
)

__all__ = [
    "OPTIONAL_SECTIONS",
    "RESULT_ORDER",
    "Header",
    "Provenance",
    "concept_rows",
    "consistency_section",
    "disparity_result",
    "finite",
    "group_map",
    "required",
    "with_sections",
]

#: The keys of a ``disparity.json``, in the order they are written.
RESULT_ORDER = (
    "task", "schema_version", "contrastkit_version", "model", "predictions", "label",
    "random_weights", "weights_note", "data", "groups", "counts", "paper_counts", "prompt",
    "units", "bootstrap", "map", "calibration", "concepts", "cache", "predictions_file",
    "language", "compare_report", "consistency", "plots",
)  # fmt: skip

#: The sections only some analyses write (left out of the file when not set).
OPTIONAL_SECTIONS = frozenset(
    {"cache", "predictions_file", "language", "compare_report", "consistency", "plots"}
)

#: The fields of a concept's row that only calibration writes.
_ECE_FIELDS = frozenset({"ece_diff", "ece_diff_ci"})


_T = TypeVar("_T")


def required(value: _T | None, name: str) -> _T:
    """A section every ``disparity.json`` this analysis writes has (``name``: its dotted
    path); a result without it is a :class:`~contrastkit.errors.DataFormatError`."""
    if value is None:
        raise DataFormatError("<data>", None, name, "missing")
    return value


def finite(value: float) -> float | None:
    """The value at full precision (reports round for display; ``--compare`` and any
    later reader compute from these), or ``None`` when not finite."""
    return None if not np.isfinite(value) else float(value)


def _interval(ci: np.ndarray | None, j: int) -> tuple[float | None, ...] | None:
    return None if ci is None else (finite(ci[j, 0]), finite(ci[j, 1]))


def _pair(bounds: Sequence[float] | None) -> tuple[float | None, ...] | None:
    return None if bounds is None else tuple(finite(v) for v in bounds)


@dataclass(frozen=True)
class Provenance:
    """Where the scores came from: the embedding ``cache`` of a model, or the
    ``predictions_file`` brought instead (one of them)."""

    cache: ZeroShotCache | None = None
    predictions_file: PredictionsFile | None = None


@dataclass(frozen=True)
class _Figures:
    """What the rows of one analysis are computed from."""

    concepts: tuple[str, ...]
    truth: np.ndarray
    men: np.ndarray
    metrics: GroupMetrics


def _concept(figures: _Figures, j: int, sizes: Mapping[str, int]) -> ConceptDisparity:
    """The row of concept ``j``: positives per group, AP (and ECE) per group, their
    difference and interval, and a note where its AP is 100 by construction."""
    metrics, truth, men = figures.metrics, figures.truth, figures.men
    positives = {"men": int(truth[men, j].sum()), "women": int(truth[~men, j].sum())}
    ece: dict[str, float | None] = {}
    absent = set(_ECE_FIELDS)
    if metrics.ece_diff is not None:
        assert metrics.ece_men is not None and metrics.ece_women is not None
        ece = {"ece_men": finite(metrics.ece_men[j]), "ece_women": finite(metrics.ece_women[j])}
        absent = set()
    everywhere = [g for g in sizes if sizes[g] and positives[g] == sizes[g]]
    note = None
    if everywhere:  # no image without it: its AP is 100 whatever the model scores
        note = (
            f"in every image of {' and of '.join(everywhere)}: AP is 100 by construction "
            "there (no image without the concept to rank), not a reading of the model"
        )
    else:
        absent.add("note")
    return ConceptDisparity(
        concept=figures.concepts[j], positives=positives,
        ap={"ap_men": finite(metrics.ap_men[j]), "ap_women": finite(metrics.ap_women[j])},
        ap_diff=finite(metrics.ap_diff[j]), ap_diff_ci=_interval(metrics.ap_diff_ci, j),
        ece=ece,
        ece_diff=finite(metrics.ece_diff[j]) if metrics.ece_diff is not None else None,
        ece_diff_ci=_interval(metrics.ece_diff_ci, j), note=note, absent=frozenset(absent),
    )  # fmt: skip


def concept_rows(
    concepts: tuple[str, ...], truth: np.ndarray, men: np.ndarray, metrics: GroupMetrics
) -> tuple[ConceptDisparity, ...]:
    """One row per concept, largest ``|AP_men - AP_women|`` first (then by name)."""
    sizes = {"men": int(men.sum()), "women": int((~men).sum())}
    figures = _Figures(concepts, truth, men, metrics)
    rows = [_concept(figures, j, sizes) for j in range(len(concepts))]
    rows.sort(key=lambda r: (-abs(r.ap_diff or 0.0), r.concept))
    return tuple(rows)


def group_map(metrics: GroupMetrics) -> ZeroShotMap:
    """The mAP of each group, their difference, and their intervals."""
    map_ci = metrics.map_ci or {}
    return ZeroShotMap(
        men=finite(metrics.map_men), women=finite(metrics.map_women),
        difference=finite(metrics.map_men - metrics.map_women),
        men_ci=_pair(map_ci.get("men")), women_ci=_pair(map_ci.get("women")),
        difference_ci=_pair(map_ci.get("difference")),
    )  # fmt: skip


@dataclass(frozen=True)
class Header:
    """What a ``disparity.json`` says before its figures: who was analysed, on what,
    how.

    Attributes:
        model / predictions / label: the model spec, the predictions file, the label.
        weights_note: the random-weights note of the model (``None``: trained weights).
        data: the folder read.
        counts: the images and concepts read and kept.
        paper_counts: the paper's counts for the layout.
        prompt: the prompt per concept (a model's).
        bootstrap: the intervals' resamples.
    """

    model: str | None
    predictions: str | None
    label: str | None
    weights_note: str | None
    data: ZeroShotData
    counts: ZeroShotCounts
    paper_counts: Mapping[str, int]
    prompt: str | None
    bootstrap: ZeroShotBootstrap


def disparity_result(
    header: Header,
    rows: tuple[ConceptDisparity, ...],
    mapped: ZeroShotMap,
    calibration: ZeroShotCalibration,
    provenance: Provenance,
) -> ZeroShotResult:
    """The ``disparity.json`` of an analysis before its language bias, consistency and
    plots (:func:`with_sections` adds them)."""
    from contrastkit import __version__
    from contrastkit.evaluators.tasks.zero_shot.config import TASK
    from contrastkit.evaluators.tasks.zero_shot.groups import GROUPS
    from contrastkit.results import SCHEMA_VERSION

    present = {"cache": provenance.cache, "predictions_file": provenance.predictions_file}
    return ZeroShotResult(
        task=TASK, schema_version=SCHEMA_VERSION, contrastkit_version=__version__,
        model=header.model, predictions=header.predictions, label=header.label,
        random_weights=header.weights_note is not None, weights_note=header.weights_note,
        data=header.data, groups=tuple(GROUPS), counts=header.counts,
        paper_counts=header.paper_counts, prompt=header.prompt, units="points (x 100)",
        bootstrap=header.bootstrap, map=mapped, calibration=calibration, concepts=rows,
        cache=provenance.cache, predictions_file=provenance.predictions_file,
        absent=OPTIONAL_SECTIONS - {k for k, v in present.items() if v is not None},
        key_order=RESULT_ORDER,
    )  # fmt: skip


def with_sections(
    result: ZeroShotResult,
    *,
    language: Mapping[str, LanguageSource] | None = None,
    compare_report: str | None = None,
    consistency: ZeroShotConsistency | None = None,
    plots: Mapping[str, str] | None = None,
) -> ZeroShotResult:
    """``result`` with the sections given (those left ``None`` as they were)."""
    given = {
        "language": language, "compare_report": compare_report,
        "consistency": consistency, "plots": plots,
    }  # fmt: skip
    return replace(
        result,
        language=result.language if language is None else language,
        compare_report=result.compare_report if compare_report is None else compare_report,
        consistency=result.consistency if consistency is None else consistency,
        plots=result.plots if plots is None else plots,
        absent=result.absent - {name for name, value in given.items() if value is not None},
    )


def consistency_section(
    diff: Mapping[str, float],
    other: ZeroShotResult,
    where: str,
    threshold: float,
) -> ZeroShotConsistency:
    """Fig. 3-4: each concept of both datasets green, red or yellow."""
    from contrastkit.evaluators.tasks.zero_shot.consistency import consistency_colours

    other_diff = {c.concept: c.ap_diff for c in other.concepts if c.ap_diff is not None}
    colours = consistency_colours(diff, other_diff, threshold)
    return ZeroShotConsistency(
        other=where, other_data=other.data.path, other_label=other.label, threshold=threshold,
        concepts=tuple(
            ConsistencyConcept(
                concept=c, ap_diff=diff[c], other_ap_diff=other_diff[c], colour=colours[c]
            )
            for c in sorted(colours)
        ),
        counts={k: sum(v == k for v in colours.values()) for k in ("green", "red", "yellow")},
    )  # fmt: skip
