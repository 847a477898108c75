"""VisoGender's statistics around its benchmark numbers (Appendix G).

* :func:`resolution_subsamples` — Appendix G.1: keep ``k`` random images of every
  (occupation, gender cell) group, recompute ``RA_avg`` and the gap of every split, repeat
  (500 times in the paper); report the mean and standard deviation over the runs.
* :func:`retrieval_random_baseline` — Appendix G.2: shuffle the gender labels of each
  occupation's images (keeping how many of each there are: "10 relabelled as his and 10 as
  her"), recompute every retrieval metric with the model's own scores, repeat (3000
  times); report the baseline's mean and standard deviation and how many standard
  deviations the real value lies from it (``z = (real - mean) / sigma``,
  :func:`baseline_z`: undefined, with a reason, where the baseline does not vary).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from contrastkit.evaluators.metrics import retrieval_metrics_batch, summarize
from contrastkit.evaluators.tasks.visogender.resolution import MAIN_TEMPLATES, SPLITS
from contrastkit.evaluators.tasks.visogender.retrieval import CONTEXT_SECTIONS, by_query

__all__ = [
    "Z_REASONS",
    "Z_RELATIVE_TOLERANCE",
    "BaselineMetric",
    "baseline_z",
    "resolution_subsamples",
    "retrieval_random_baseline",
]


#: A baseline standard deviation at or below ``Z_RELATIVE_TOLERANCE * max(1, |mean|)`` is
#: taken as zero (float noise: every relabelling gives the same value, as Bias@K does
#: when K covers the whole pool), and no z is computed from it.
Z_RELATIVE_TOLERANCE = 1e-12

#: Why a z-score is undefined (``z_reason`` beside ``z: null`` in the benchmark JSON).
Z_REASONS = {
    "flat": "baseline spread ~0",
    "undefined": "baseline undefined",
}


class _BaselineFigures(TypedDict):
    real: float
    baseline_mean: float
    baseline_sigma: float
    baseline_mean_sigma: float
    baseline_sigma_sigma: float
    z: float


class BaselineMetric(_BaselineFigures, total=False):
    """One metric of :func:`retrieval_random_baseline`: the real value, the baseline's
    four cells of Tab. 9 and ``z``, with a ``z_reason`` where ``z`` is undefined."""

    z_reason: str


def baseline_z(real: float, mean: float, sigma: float) -> tuple[float, str | None]:
    """``z = (real - mean) / sigma`` of a value against a random baseline (Appendix G.2),
    with the reason when there is none: ``(nan, "baseline spread ~0")`` where ``sigma``
    is at most :data:`Z_RELATIVE_TOLERANCE` times ``max(1, |mean|)`` (a z from float
    noise such as 1e-16 would be meaningless), ``(nan, "baseline undefined")`` where a
    figure is not finite."""
    if not all(math.isfinite(v) for v in (real, mean, sigma)):
        return math.nan, Z_REASONS["undefined"]
    if sigma <= Z_RELATIVE_TOLERANCE * max(1.0, abs(mean)):
        return math.nan, Z_REASONS["flat"]
    return (real - mean) / sigma, None


def resolution_subsamples(
    records: Sequence[Mapping[str, Any]],
    k: int = 1,
    *,
    runs: int = 500,
    seed: int = 0,
) -> dict[str, dict[str, dict[str, float]]]:
    """Appendix G.1: random subsamples of ``k`` images per (occupation, cell) group.

    Uses the records of the main templates (OO and OP occupation-first). A group with
    fewer than ``k`` images keeps all of them.

    Returns:
        ``{split: {metric: {"mean", "sigma"}}}`` for the :data:`SPLITS` and the metrics
        ``RA_avg``, ``gender_gap`` and ``pooled_accuracy`` (correct / total of the split);
        ``all_images`` also has ``overall_accuracy``, the paper's "Overall" (Tab. 2 and
        Tab. 8: the mean of the single-person and two-person RA_avg, computed per run),
        and its ``RA_avg`` and ``gender_gap`` are the same mean of the two contexts, as in
        the main results. ``sigma`` is the standard deviation over runs.
    """
    if k < 1 or runs < 1:
        raise ValueError("k and runs must be at least 1")
    main = [record for record in records if record["template"] in MAIN_TEMPLATES]
    n = len(main)
    rng = np.random.default_rng(seed)
    keep = np.zeros((runs, n), dtype=bool)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for index, record in enumerate(main):
        groups[(record["context"], record["occupation"], record["cell"])].append(index)
    for members in groups.values():
        order = np.argsort(rng.random((runs, len(members))), axis=1)[:, :k]
        keep[np.arange(runs)[:, None], np.asarray(members)[order]] = True
    correct = np.array([record["predicted"] == record["target"] for record in main])
    masculine = np.array([record["target"] == "masculine" for record in main])
    per_run: dict[str, dict[str, np.ndarray]] = {}
    for name, (context, cells) in SPLITS.items():
        inside = np.array(
            [
                (context is None or record["context"] == context.value)
                and (cells is None or record["cell"] in cells)
                for record in main
            ],
            dtype=bool,
        )
        chosen = keep & inside
        with np.errstate(invalid="ignore", divide="ignore"):
            ra_m = (chosen & correct & masculine).sum(1) / (chosen & masculine).sum(1)
            ra_f = (chosen & correct & ~masculine).sum(1) / (chosen & ~masculine).sum(1)
            overall = (chosen & correct).sum(1) / chosen.sum(1)
        per_run[name] = {
            "RA_avg": (ra_m + ra_f) / 2,
            "gender_gap": ra_m - ra_f,
            "pooled_accuracy": overall,
        }
    single, two = per_run["single_person_images"], per_run["two_person_images"]
    both = {metric: np.vstack([single[metric], two[metric]]) for metric in ("RA_avg", "gender_gap")}
    if np.isfinite(both["RA_avg"]).all(axis=0).any():  # both contexts present
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = {metric: np.nanmean(values, axis=0) for metric, values in both.items()}
        mean["RA_avg"] = np.where(np.isfinite(both["RA_avg"]).all(axis=0), mean["RA_avg"], np.nan)
        per_run["all_images"].update(
            RA_avg=mean["RA_avg"], gender_gap=mean["gender_gap"], overall_accuracy=mean["RA_avg"]
        )
    else:  # one context only: its figures are the overall ones
        per_run["all_images"]["overall_accuracy"] = per_run["all_images"]["RA_avg"]
    return {
        name: {
            metric: {
                "mean": float(np.nanmean(v)) if np.isfinite(v).any() else math.nan,
                "sigma": float(np.nanstd(v)) if np.isfinite(v).any() else math.nan,
            }
            for metric, v in metrics.items()
        }
        for name, metrics in per_run.items()
    }


def _finite_mean(matrix: np.ndarray) -> np.ndarray:
    """Mean over axis 0 of the finite entries (``nan`` where there is none)."""
    finite = np.isfinite(matrix)
    counts = finite.sum(axis=0)
    totals = np.where(finite, matrix, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(counts > 0, totals / counts, np.nan)
    return result


def _finite_sigma(matrix: np.ndarray) -> np.ndarray:
    """Sample standard deviation over axis 0 of the finite entries (``nan`` with fewer
    than two)."""
    finite = np.isfinite(matrix)
    counts = finite.sum(axis=0)
    mean = _finite_mean(matrix)
    squares = np.where(finite, (matrix - mean) ** 2, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(counts > 1, np.sqrt(squares / (counts - 1)), np.nan)
    return result


def _spread(values: np.ndarray) -> float:
    """Sample standard deviation of the finite values (``nan`` with fewer than two)."""
    finite = values[np.isfinite(values)]
    return float(finite.std(ddof=1)) if finite.size > 1 else math.nan


def _center(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def retrieval_random_baseline(
    records: Sequence[Mapping[str, Any]],
    ks: Sequence[int] = (5, 10),
    *,
    runs: int = 3000,
    seed: int = 0,
    ndkl_k: int | None = None,
) -> dict[str, dict[str, BaselineMetric]]:
    """Appendix G.2: the retrieval metrics under random relabelling, per context.

    Returns:
        ``{section: {metric: {...}}}`` (sections as in the benchmark JSON) where each
        metric has ``real`` (the mean across occupations of the real values) and the four
        cells of Tab. 9 for it: ``baseline_mean`` and ``baseline_sigma`` (mean and
        standard deviation over runs of the across-occupation mean; Tab. 9's "Mean"
        column), ``baseline_mean_sigma`` and ``baseline_sigma_sigma`` (mean and standard
        deviation over runs of the across-occupation standard deviation; Tab. 9's "σ"
        column), and ``z``: how many baseline standard deviations the real value lies
        from the baseline mean (:func:`baseline_z`; ``nan`` with a ``z_reason`` where the
        baseline's spread is ~0 or undefined, e.g. Bias@K with K at least the images of
        every occupation).

    On the official OP rows (23 occupations of 10 + 10 images) and any untied scores,
    3000 runs reproduce Tab. 9 within sampling error
    (``tests/evaluators/test_retrieval_fidelity.py``).
    """
    if runs < 2:
        raise ValueError("runs must be at least 2 for a standard deviation")
    rng = np.random.default_rng(seed)
    result: dict[str, dict[str, BaselineMetric]] = {}
    groups = by_query(records)
    for context, section in CONTEXT_SECTIONS.items():
        queries = [group for (ctx, _), group in groups.items() if ctx == context.value]
        if not queries:
            continue
        real: dict[str, list[float]] = defaultdict(list)
        shuffled: dict[str, list[np.ndarray]] = defaultdict(list)
        for group in queries:
            scores = np.array([record["score"] for record in group])
            labels = np.array([record["label"] for record in group], dtype=object)
            rows = np.array([rng.permutation(labels) for _ in range(runs)], dtype=object)
            for name, values in retrieval_metrics_batch(scores, labels, ks, ndkl_k=ndkl_k).items():
                real[name].append(float(values[0]))
            for name, values in retrieval_metrics_batch(scores, rows, ks, ndkl_k=ndkl_k).items():
                shuffled[name].append(values)
        metrics: dict[str, BaselineMetric] = {}
        for name, per_query in shuffled.items():
            matrix = np.stack(per_query)  # (queries, runs)
            run_means = _finite_mean(matrix)
            run_sigmas = _finite_sigma(matrix)
            value = summarize(real[name])["mean"]
            center = _center(run_means)
            spread = _spread(run_means)
            z, reason = baseline_z(float(value), center, spread)
            metrics[name] = {
                "real": float(value),
                "baseline_mean": center,
                "baseline_sigma": spread,
                "baseline_mean_sigma": _center(run_sigmas),
                "baseline_sigma_sigma": _spread(run_sigmas),
                "z": z,
            }
            if reason:
                metrics[name]["z_reason"] = reason
        result[section] = metrics
    return result
