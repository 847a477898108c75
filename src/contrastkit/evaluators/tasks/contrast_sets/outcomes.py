"""The summary of a contrast-set evaluation (GenSynth Sec. 5): the per-query outcomes
(:class:`QueryOutcomes`) summarised over queries with the set's size
(:func:`contrast_summary`), and percentile bootstrap intervals over queries
(:func:`query_intervals`). The scoring that gives the outcomes is
:func:`contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contrastkit.evaluators.metrics import summarize
from contrastkit.evaluators.tasks.contrast_sets.data import (
    INTERVAL_METRICS,
    PAIRS_NOT_APPLICABLE,
    RETRIEVAL_NOT_COMPUTED,
)

__all__ = ["ContrastCounts", "QueryOutcomes", "contrast_summary", "query_intervals"]

_BOOTSTRAP_CELLS = 1 << 22
"""Resampled values held at once while bootstrapping (about 32 MB of float64)."""


def query_intervals(
    per_query: dict[str, list[float]],
    resamples: int,
    confidence: float,
    seed: int,
    names: Sequence[str] | None = None,
) -> dict[str, dict[str, float | int]]:
    """Percentile bootstrap intervals of the mean over queries (Efron and Tibshirani
    1993, ch. 13), for each metric in ``names`` (default: those starting with
    :data:`INTERVAL_METRICS`): ``{"low", "high", "level", "resamples"}``, the
    ``mean_ci`` of the VisoGender results. Queries are resampled with replacement, the
    same resamples for every metric (drawn with ``seed``); each resample's mean takes
    the finite values only, as :func:`~contrastkit.evaluators.metrics.summarize` does.
    The bounds are undefined with fewer than two finite values, with their ``reason``
    (:func:`~contrastkit.evaluators.bootstrap.few_items`). Memory stays bounded by
    :data:`_BOOTSTRAP_CELLS`, not by ``resamples x queries``.
    """
    from contrastkit.evaluators.bootstrap import few_items, percentile_interval, resample_indices

    chosen = [n for n in per_query if n.startswith(INTERVAL_METRICS)] if names is None else names
    arrays = {name: np.asarray(per_query[name], dtype=np.float64) for name in chosen}
    n = len(next(iter(arrays.values()))) if arrays else 0
    means = {name: np.empty(resamples) for name in arrays}
    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOTSTRAP_CELLS // max(n, 1))
    if n:
        for start in range(0, resamples, chunk):
            rows = resample_indices(rng, n, min(chunk, resamples - start))
            for name, array in arrays.items():
                picked = array[rows]
                finite = np.isfinite(picked)
                counts = finite.sum(axis=1)
                totals = np.where(finite, picked, 0.0).sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    means[name][start : start + len(rows)] = np.where(
                        counts > 0, totals / counts, np.nan
                    )
    intervals: dict[str, dict[str, float | int]] = {}
    for name, array in arrays.items():
        low, high = float("nan"), float("nan")
        if np.isfinite(array).sum() >= 2:
            low, high = percentile_interval(means[name], confidence)
        interval = {"low": low, "high": high, "level": confidence, "resamples": resamples}
        intervals[name] = few_items(interval, int(np.isfinite(array).sum()))
    return intervals


@dataclass(frozen=True)
class ContrastCounts:
    """The size of a scored contrast set (:func:`contrast_summary`).

    Attributes:
        images: Images in the set.
        sources: Distinct source photos.
        queries: Neutral-caption queries scored.
    """

    images: int
    sources: int
    queries: int


@dataclass(frozen=True)
class QueryOutcomes:
    """What the queries of a contrast set gave, in query order
    (:func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`, summarised by
    :func:`contrast_summary`).

    Attributes:
        per_query: Each retrieval metric's values, one per query (empty without the
            retrieval metrics).
        gaps: ``s(q, masculine) - s(q, feminine)`` of each query whose source has both
            versions.
        preferred: For the same queries, 1 where the masculine version scores higher,
            0.5 on a tie, 0 otherwise.
    """

    per_query: dict[str, list[float]] = field(default_factory=dict)
    gaps: list[float] = field(default_factory=list)
    preferred: list[float] = field(default_factory=list)

    def add_metrics(self, values: Mapping[str, float]) -> None:
        """Append one query's retrieval metrics."""
        for name, value in values.items():
            self.per_query.setdefault(name, []).append(value)

    def add_pair(self, masculine: float, feminine: float) -> dict[str, float]:
        """Append one query's own-pair scores (its source's masculine and feminine
        versions) to ``gaps`` and ``preferred``; return them as its record's
        ``score_masculine`` and ``score_feminine``."""
        masculine, feminine = float(masculine), float(feminine)
        self.gaps.append(masculine - feminine)
        self.preferred.append(
            1.0 if masculine > feminine else 0.5 if masculine == feminine else 0.0
        )
        return {"score_masculine": masculine, "score_feminine": feminine}


def contrast_summary(
    counts: ContrastCounts,
    ks: Sequence[int],
    outcomes: QueryOutcomes,
    *,
    retrieval: bool = True,
    scoring: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``summary`` of a contrast-set evaluation
    (:func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`).

    Args:
        counts: The images, sources and queries of the set (:class:`ContrastCounts`).
        ks: The retrieval cut-offs K, as reported.
        outcomes: The queries' retrieval metrics and own-pair preferences
            (:class:`QueryOutcomes`).
        retrieval: Whether the retrieval metrics were computed (false: pair preference
            only, ``outcomes.per_query`` empty).
        scoring: What the scores are and what they cost
            (:func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`).

    Returns:
        ``{"images", "sources", "queries", "ks", "retrieval", "pairs", "warnings",
        "scoring"}``: ``retrieval``
        maps each metric to its :func:`~contrastkit.evaluators.metrics.summarize` over the
        queries (empty without the retrieval metrics, and ``retrieval_note`` then says
        why: :data:`RETRIEVAL_NOT_COMPUTED`); ``pairs`` holds ``queries_with_pair``,
        ``masculine_preferred`` (the mean
        of ``preferred``) and ``mean_gap`` (the mean of ``gaps``), both ``nan`` without
        pairs, and ``applicable`` (false without pairs, with a ``note`` saying so:
        :data:`PAIRS_NOT_APPLICABLE`); ``warnings`` has one entry per K at or above the
        number of images (every query ranks them all, so its @K metrics are then trivial;
        :func:`~contrastkit.evaluators.metrics.cutoff_warnings`); ``scoring`` as given,
        when given (:func:`~contrastkit.evaluators.tasks.contrast_sets.report.contrast_scoring`
        fills it in for a dual encoder's summary).
    """
    from contrastkit.evaluators.metrics import cutoff_warnings

    images, queries = counts.images, counts.queries
    gaps, preferred = outcomes.gaps, outcomes.preferred
    warnings = (
        cutoff_warnings(ks, {"every query": images}, section="contrast",
                        label="Contrast-set retrieval")
        if retrieval else []
    )  # fmt: skip
    for warning in warnings:  # every query ranks the same pool: say so once
        warning["queries"] = ["every query"]
        warning["n_queries"] = queries
    return {
        "images": images,
        "sources": counts.sources,
        "queries": queries,
        "ks": ks,
        "retrieval": {name: summarize(values) for name, values in outcomes.per_query.items()},
        "pairs": {
            "applicable": bool(gaps),
            "queries_with_pair": len(gaps),
            "masculine_preferred": float(np.mean(preferred)) if preferred else float("nan"),
            "mean_gap": float(np.mean(gaps)) if gaps else float("nan"),
            **({} if gaps else {"note": PAIRS_NOT_APPLICABLE}),
        },
        **({} if retrieval else {"retrieval_note": RETRIEVAL_NOT_COMPUTED}),
        "warnings": warnings,
        **({} if scoring is None else {"scoring": dict(scoring)}),
    }
