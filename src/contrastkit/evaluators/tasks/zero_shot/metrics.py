"""Pure metric functions of the zero-shot disparity analysis (the zero-shot disparities
paper, Sec. 3.1-3.2).

Every figure is reported in points (x 100), as the paper's figures and its 5-point
threshold are.

* **AP** (Experiment 1): per concept and group, scikit-learn's
  ``average_precision_score`` of the concept's ground truth against the scores
  (:func:`average_precision`), ``AP = sum_n (R_n - R_{n-1}) P_n`` over the distinct score
  thresholds, without interpolation. The disparity is ``AP_men - AP_women``: positive
  means the model does better on the concept in images of men. The mAP per group is the
  mean AP over the kept concepts (the aggregate that masks the per-concept gaps, Fig. 2).
* **ECE** (Experiment 2, Naeini et al. 2015): per concept and group, over the images'
  predicted probabilities ``p_i`` that the concept is present and the outcomes ``y_i``
  (1 when it is), with ``M`` equal-width bins ``B_m = ((m-1)/M, m/M]`` (``p = 0`` in the
  first)::

      ECE = sum_m |B_m| / n * | mean_{i in B_m} y_i - mean_{i in B_m} p_i |

  (:func:`expected_calibration_error`). The disparity is ``ECE_women - ECE_men``, signed
  like the AP difference: positive means the model is better calibrated (smaller error)
  for images of men, as the paper's Sec. 3.2 reads its ECE differences.
* **Intervals**: percentile bootstrap over images, resampled *within each group* (the
  group sizes stay fixed), all concepts from the same resamples
  (:mod:`contrastkit.evaluators.bootstrap`); resampled AP and ECE are computed with
  weights (how often each image was drawn) by vectorised code that equals
  scikit-learn's weighted AP and the weighted ECE exactly (:func:`weighted_ap`,
  :func:`weighted_ece`): one sparse product per concept and group for a block of
  resamples, ``O(images x resamples)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import average_precision_score

from contrastkit.errors import ConfigError
from contrastkit.evaluators.bootstrap import percentile_interval, resample_indices

__all__ = [
    "DEFAULT_BINS",
    "GroupMetrics",
    "MetricSettings",
    "average_precision",
    "bootstrap_counts",
    "expected_calibration_error",
    "group_metrics",
    "weighted_ap",
    "weighted_ece",
]

#: Equal-width ECE bins by default (Guo et al. 2017 and most of the literature after).
DEFAULT_BINS = 15


def average_precision(truth: np.ndarray, scores: np.ndarray) -> float:
    """scikit-learn's AP of ``scores`` for the 0/1 ``truth``, in points (0-100); NaN when
    ``truth`` has no positive (AP is undefined)."""
    truth = np.asarray(truth)
    if not truth.any():
        return float("nan")
    return 100.0 * float(average_precision_score(truth, np.asarray(scores, dtype=np.float64)))


def _bin_index(probabilities: np.ndarray, bins: int) -> np.ndarray:
    """Equal-width bin of each probability: ``((m-1)/M, m/M]`` -> ``m - 1``, 0 in bin 0."""
    index = np.ceil(np.asarray(probabilities, dtype=np.float64) * bins).astype(np.int64) - 1
    return np.clip(index, 0, bins - 1)


def _check_probabilities(probabilities: np.ndarray, bins: int) -> np.ndarray:
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 1:
        raise ConfigError(f"bins: must be a whole number >= 1, not {bins!r}")
    p = np.asarray(probabilities, dtype=np.float64)
    if p.size and (not np.isfinite(p).all() or p.min() < 0.0 or p.max() > 1.0):
        raise ConfigError("calibration needs probabilities in [0, 1]")
    return p


def expected_calibration_error(
    probabilities: np.ndarray, outcomes: np.ndarray, bins: int = DEFAULT_BINS
) -> float:
    """Expected calibration error (Naeini et al. 2015) in points (0-100): the
    bin-size-weighted mean of ``|accuracy - confidence|`` over ``bins`` equal-width bins
    of the predicted probabilities (see the module docstring); NaN for no predictions.

    Raises:
        ConfigError: ``bins`` below 1, probabilities outside [0, 1].
    """
    p = _check_probabilities(probabilities, bins)
    y = np.asarray(outcomes, dtype=np.float64)
    if not p.size:
        return float("nan")
    index = _bin_index(p, bins)
    # sum_m |B_m|/n * |mean y - mean p| = sum_m |sum_{B_m} y - sum_{B_m} p| / n
    gap = np.abs(np.bincount(index, y, bins) - np.bincount(index, p, bins))
    return 100.0 * float(gap.sum() / p.size)


def _transposed(weights: np.ndarray) -> np.ndarray:
    """``(B, n)`` weights as the ``(n, B)`` float64 matrix the sparse products take."""
    return np.ascontiguousarray(np.asarray(weights).T, dtype=np.float64)


def _ap_columns(truth: np.ndarray, scores: np.ndarray, weights_t: np.ndarray) -> np.ndarray:
    """:func:`weighted_ap` of the ``(n, B)`` weights ``weights_t``, one per column.

    Only the tie groups of scores that hold a positive move the recall, so the sum runs
    over those ``G`` groups: at the ``k``-th, ``tp`` is the weight of the positives scored
    at or above it and ``seen`` the weight of all images there. Both come from one sparse
    ``(2G, n) @ (n, B)`` product (each image adds its weight to the first such group at
    or below its rank, positives a second time) and cumulative sums over the groups, so
    the cost is ``O(n B)`` with no ``(B, n)`` temporaries.
    """
    from scipy import sparse

    y = np.asarray(truth).astype(bool)
    s = np.asarray(scores, dtype=np.float64)
    n, resamples = weights_t.shape
    if not y.any():
        return np.full(resamples, np.nan)
    order = np.argsort(-s, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    ends = np.r_[np.flatnonzero(np.diff(s[order])), n - 1]  # last rank of each tie group
    marks = np.unique(ends[np.searchsorted(ends, rank[y])])  # those holding a positive
    groups = marks.size
    segment = np.searchsorted(marks, rank)  # == groups: ranked below every positive
    every = np.flatnonzero(segment < groups)
    positive = np.flatnonzero(y)
    rows = np.r_[segment[every], groups + segment[positive]]
    columns = np.r_[every, positive]
    matrix = sparse.csr_matrix((np.ones(rows.size), (rows, columns)), shape=(2 * groups, n))
    sums = np.asarray(matrix @ weights_t)
    seen = np.cumsum(sums[:groups], axis=0)
    tp = np.cumsum(sums[groups:], axis=0)
    total = tp[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(seen > 0, tp / np.where(seen > 0, seen, 1.0), 0.0)
        recall_step = np.diff(tp, axis=0, prepend=0.0) / total
        ap = (recall_step * precision).sum(axis=0)
    return np.where(total > 0, 100.0 * ap, np.nan)


def weighted_ap(truth: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AP in points of one concept under each row of ``weights`` (``(B, n)``: how often
    each image counts), equal to ``average_precision_score(truth, scores,
    sample_weight=row)``; NaN where a row leaves no positive."""
    return _ap_columns(truth, scores, _transposed(weights))


def _ece_columns(
    probabilities: np.ndarray, outcomes: np.ndarray, weights_t: np.ndarray, bins: int
) -> np.ndarray:
    """:func:`weighted_ece` of the ``(n, B)`` weights ``weights_t``, one per column: the
    per-bin sums of outcomes and probabilities from one sparse product."""
    from scipy import sparse

    p = _check_probabilities(probabilities, bins)
    y = np.asarray(outcomes, dtype=np.float64)
    index = _bin_index(p, bins)
    images = np.arange(p.size)
    matrix = sparse.csr_matrix(
        (np.r_[y, p], (np.r_[index, bins + index], np.r_[images, images])),
        shape=(2 * bins, p.size),
    )
    sums = np.asarray(matrix @ weights_t)
    gap = np.abs(sums[:bins] - sums[bins:]).sum(axis=0)
    n = weights_t.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, 100.0 * gap / n, np.nan)


def weighted_ece(
    probabilities: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, bins: int
) -> np.ndarray:
    """ECE in points of one concept under each row of ``weights`` (``(B, n)``), equal to
    :func:`expected_calibration_error` of the images repeated as often as weighted."""
    return _ece_columns(probabilities, outcomes, _transposed(weights), bins)


def bootstrap_counts(
    rng: np.random.Generator, n: int, resamples: int, chunk: int = 100
) -> Iterator[np.ndarray]:
    """The bootstrap resamples of ``n`` items as ``(≤chunk, n)`` int32 count matrices (how
    often each item was drawn), ``chunk`` resamples at a time so memory stays bounded."""
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        draws = resample_indices(rng, n, size)
        done += size
        yield np.stack([np.bincount(row, minlength=n).astype(np.int32) for row in draws])


@dataclass(frozen=True)
class GroupMetrics:
    """AP (and ECE) of every concept in both groups, their differences and intervals.

    Arrays are indexed by concept; figures are in points. ``*_ci`` arrays are
    ``(concepts, 2)`` (low, high); all ``None`` without a bootstrap, the ECE ones also
    without probabilities.
    """

    ap_men: np.ndarray
    ap_women: np.ndarray
    ap_diff: np.ndarray
    map_men: float
    map_women: float
    ap_diff_ci: np.ndarray | None = None
    map_ci: dict[str, tuple[float, float]] | None = None
    ece_men: np.ndarray | None = None
    ece_women: np.ndarray | None = None
    ece_diff: np.ndarray | None = None
    ece_diff_ci: np.ndarray | None = None


@dataclass(frozen=True)
class MetricSettings:
    """How :func:`group_metrics` computes: the ECE bins and the bootstrap of the intervals.

    Attributes:
        bins: ECE bins (equal width).
        bootstrap: resamples (0: no intervals).
        confidence: the intervals' level.
        seed: the resamples' seed.
    """

    bins: int = DEFAULT_BINS
    bootstrap: int = 0
    confidence: float = 0.95
    seed: int = 0


def group_metrics(
    truth: np.ndarray,
    scores: np.ndarray,
    men: np.ndarray,
    *,
    probabilities: np.ndarray | None = None,
    settings: MetricSettings = MetricSettings(),
) -> GroupMetrics:
    """AP per concept per group (scikit-learn), ``AP_men - AP_women``, the mAP per group,
    and with ``probabilities`` the ECE per concept per group and ``ECE_women - ECE_men``;
    with ``bootstrap`` resamples, percentile intervals of the differences and the mAPs
    (images resampled within each group).

    Args:
        truth: ``(images, concepts)`` 0/1 ground truth.
        scores: ``(images, concepts)`` scores (higher: more likely present).
        men: boolean mask of the images of men; the others are the images of women.
        probabilities: ``(images, concepts)`` probabilities that each concept is present.
        settings: the ECE bins and the bootstrap (default: 15 bins, no intervals).

    Raises:
        ConfigError: mismatched shapes, a group without images, ``bootstrap`` below 0,
            ``confidence`` outside (0, 1), bad ``bins`` or probabilities.
    """
    bins, bootstrap = settings.bins, settings.bootstrap
    confidence, seed = settings.confidence, settings.seed
    truth = np.asarray(truth)
    scores = np.asarray(scores, dtype=np.float64)
    men = np.asarray(men, dtype=bool)
    if truth.shape != scores.shape or truth.ndim != 2 or men.shape != (truth.shape[0],):
        raise ConfigError(
            f"scores {scores.shape}, truth {truth.shape} and groups {men.shape} do not match"
        )
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise ConfigError(f"bootstrap: must be a whole number >= 0, not {bootstrap!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence: must be in (0, 1), not {confidence!r}")
    masks = {"men": men, "women": ~men}
    if not men.any() or men.all():
        raise ConfigError("both groups need images: one group has none")
    concepts = truth.shape[1]
    ap = {
        group: np.array([average_precision(truth[m, j], scores[m, j]) for j in range(concepts)])
        for group, m in masks.items()
    }
    ece: dict[str, np.ndarray] | None = None
    if probabilities is not None:
        probabilities = np.asarray(probabilities, dtype=np.float64)
        if probabilities.shape != truth.shape:
            raise ConfigError(f"probabilities {probabilities.shape} do not match {truth.shape}")
        ece = {
            group: np.array([
                expected_calibration_error(probabilities[m, j], truth[m, j], bins)
                for j in range(concepts)
            ])
            for group, m in masks.items()
        }  # fmt: skip
    result = GroupMetrics(
        ap_men=ap["men"], ap_women=ap["women"], ap_diff=ap["men"] - ap["women"],
        map_men=float(np.nanmean(ap["men"])) if concepts else float("nan"),
        map_women=float(np.nanmean(ap["women"])) if concepts else float("nan"),
        ece_men=None if ece is None else ece["men"],
        ece_women=None if ece is None else ece["women"],
        ece_diff=None if ece is None else ece["women"] - ece["men"],
    )  # fmt: skip
    if not bootstrap or not concepts:
        return result
    rng = np.random.default_rng(seed)
    boot_ap = {g: np.empty((bootstrap, concepts)) for g in masks}
    boot_ece = {g: np.empty((bootstrap, concepts)) for g in masks}
    for group, mask in masks.items():
        start = 0
        for counts in bootstrap_counts(rng, int(mask.sum()), bootstrap, chunk=250):
            rows = slice(start, start + counts.shape[0])
            weights_t = _transposed(counts)
            for j in range(concepts):
                boot_ap[group][rows, j] = _ap_columns(truth[mask, j], scores[mask, j], weights_t)
                if probabilities is not None:
                    boot_ece[group][rows, j] = _ece_columns(
                        probabilities[mask, j], truth[mask, j], weights_t, bins
                    )
            start += counts.shape[0]
    diff = boot_ap["men"] - boot_ap["women"]
    ap_ci = np.array([percentile_interval(diff[:, j], confidence) for j in range(concepts)])
    with np.errstate(invalid="ignore"):
        map_ci = {g: percentile_interval(np.nanmean(boot_ap[g], axis=1), confidence) for g in masks}
        map_ci["difference"] = percentile_interval(
            np.nanmean(boot_ap["men"], axis=1) - np.nanmean(boot_ap["women"], axis=1),
            confidence,
        )
    ece_ci = None
    if probabilities is not None:
        ece_diff = boot_ece["women"] - boot_ece["men"]
        ece_ci = np.array(
            [percentile_interval(ece_diff[:, j], confidence) for j in range(concepts)]
        )
    return GroupMetrics(
        ap_men=result.ap_men, ap_women=result.ap_women, ap_diff=result.ap_diff,
        map_men=result.map_men, map_women=result.map_women, ap_diff_ci=ap_ci, map_ci=map_ci,
        ece_men=result.ece_men, ece_women=result.ece_women, ece_diff=result.ece_diff,
        ece_diff_ci=ece_ci,
    )  # fmt: skip
