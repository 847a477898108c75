"""Bias metrics as pure functions over arrays (no model, no I/O).

Resolution (VisoGender, Hall et al. 2023, Sec. 3.5 and Appendix D):

* :func:`resolution_summary` — resolution accuracy per perceived gender
  ``RA_g = correct_g / total_g``, the gap ``Δ = RA_m - RA_f`` (Eq. 1), their mean
  ``RA_avg`` (Tab. 2) and the pooled accuracy of one set of images (the paper's
  "Overall" of Tab. 2 / Appendix J is the mean of the single- and two-person ``RA_avg``:
  :func:`contrastkit.evaluators.tasks.resolution.summarize_resolution`).
* :func:`neutral_summary` — the rate of images resolved to the neutral pronoun and its
  gap ``Δ_N = R_neutral(masculine) - R_neutral(feminine)`` (Appendix D.1, Tab. 4).

Retrieval (VisoGender Appendix A; GenSynth, Smith et al., Eq. 1-3):

* :func:`bias_at_k` — Bias@K in both conventions: ``"visogender"``, the mean of
  ``g(I) = +1`` (masculine) / ``-1`` (feminine) over the top K; ``"gensynth"``,
  ``(N_m - N_f) / (N_m + N_f)``, 0 when no labelled image is in the top K.
* :func:`skew_at_k`, :func:`max_skew_at_k`, :func:`min_skew_at_k` —
  ``Skew_A@K = ln(p_{R_K,A} / p_{d,A})`` and its maximum / minimum over the genders.
* :func:`ndkl` — ``NDKL = (1/Z) sum_{i=1}^{K} D_KL(D_{R_i} || D) / log2(i + 1)`` with
  ``Z = sum_{i=1}^{K} 1/log2(i + 1)``.

Conventions, chosen so that every case has one documented value:

* **Labels.** ``masculine`` and ``feminine`` are the attribute values; any other label
  (``""``, ``neutral``, ``unknown``) is *undefined*. Undefined images still occupy ranks
  for the VisoGender Bias@K (``g(I) = 0``: they add nothing to the sum), and are dropped
  before ranking for Skew, MaxSkew, MinSkew and NDKL (GenSynth Sec. 3: "We ignore all
  images with undefined attribute labels"). The GenSynth Bias@K counts only labelled
  images.
* **K larger than the number of candidates.** The whole ranking is the top K; the
  VisoGender Bias@K divides by the number of images retrieved, ``min(K, n)``.
* **Ties.** Images with equal scores have no order, so every metric is its *exact
  expectation* over the uniformly random orders of the tied images; the result does not
  depend on the order of the input (the official code's stable sort favours whichever
  gender comes first in the file, and VisoGender files list masculine images first).
  A prefix of length ``i`` takes everything ranked above the tie block at rank ``i``
  and ``s`` of the block's ``t`` images; the genders it takes from the block are
  hypergeometric, ``P(x) = C(t_m, x) C(t_f, s - x) / C(t, s)`` (multivariate, with a
  third class, for the undefined images the GenSynth Bias@K skips), and each metric is
  summed over that distribution. Bias@K (VisoGender) is linear in the counts, so it is
  the expected counts' value; NDKL is a weighted sum over prefixes, so it is the
  weighted sum of each prefix's expected KL; Skew, MaxSkew and MinSkew are not linear,
  so the metric of the expected counts is not their expectation (shared counts look
  more balanced than any actual order: MaxSkew and NDKL come out too low). A Skew or
  MinSkew is ``-inf`` as soon as some order of the ties leaves a gender out of the top
  K. Untied rankings need no sum and give the plain formula's values.
* **Desired proportions.** ``p_{d,A}`` defaults to gender A's share among the labelled
  candidates (GenSynth: the dataset's own distribution); on a balanced VisoGender
  occupation this is 0.5 for both, as in Appendix A. Pass ``desired`` to fix them.
* **A gender absent from the top K.** ``Skew_A@K = ln(0) = -inf`` (the formula's value);
  MaxSkew is then ``ln(1 / p_d)`` of the other gender and MinSkew is ``-inf``.
  :func:`summarize` reports the mean and standard deviation over finite values and
  says how many values it left out, why, and (given names) which. The official code
  replaces a share of 0 by ``1/K`` inside the log instead (its ``src/metrics.py``: "no
  log of 0"), so its MinSkew is finite; that value is reported beside, as
  ``minskew@K_official_smoothed``. A gender absent from the candidates
  (``p_{d,A} = 0``) has an undefined skew: ``nan``.
* **NDKL's K.** ``None`` (the default) ranks every candidate, which reproduces the
  paper's random-split baseline (Appendix G, Tab. 9: mean 0.167 over 20 images). The
  paper's formula writes ``D_{R_K}`` inside the sum; the cited definition (Geyik et al.,
  2019) and that baseline use the top-``i`` distribution ``D_{R_i}``, as here. KL uses
  the natural logarithm, like Skew.
* **Empty groups.** An accuracy over no images is ``nan``; a gap with a ``nan`` side is
  ``nan``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "GENDERS",
    "LEFT_OUT_REASONS",
    "accuracy_figures",
    "accuracy_from_sums",
    "bias_at_k",
    "covers_every_query",
    "cutoff_marking",
    "cutoff_warnings",
    "cutoffs_by_k",
    "indicator_columns",
    "max_skew_at_k",
    "min_skew_at_k",
    "ndkl",
    "neutral_figures",
    "neutral_from_sums",
    "neutral_summary",
    "resolution_summary",
    "retrieval_metrics",
    "retrieval_metrics_batch",
    "skew_at_k",
    "summarize",
    "topk_counts",
]

#: The attribute values of the retrieval metrics, in reporting order.
GENDERS = ("masculine", "feminine")
BiasConvention = Literal["visogender", "gensynth"]


def _ratios(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator``, ``nan`` where the denominator is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        result: np.ndarray = np.where(denominator > 0, numerator / denominator, np.nan)
    return result


def accuracy_from_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`accuracy_figures` from the weighted sums of its four columns."""
    ra_m = _ratios(sums[:, 0], sums[:, 1])
    ra_f = _ratios(sums[:, 2], sums[:, 3])
    return {
        "RA_masculine": ra_m,
        "RA_feminine": ra_f,
        "RA_avg": (ra_m + ra_f) / 2,
        "gender_gap": ra_m - ra_f,
        "pooled_accuracy": _ratios(sums[:, 0] + sums[:, 2], sums[:, 1] + sums[:, 3]),
    }


def neutral_from_sums(sums: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`neutral_figures` from the weighted sums of its four columns."""
    rate_m = _ratios(sums[:, 0], sums[:, 1])
    rate_f = _ratios(sums[:, 2], sums[:, 3])
    return {
        "R_neutral": _ratios(sums[:, 0] + sums[:, 2], sums[:, 1] + sums[:, 3]),
        "R_neutral_masculine": rate_m,
        "R_neutral_feminine": rate_f,
        "neutral_gap": rate_m - rate_f,
    }


def indicator_columns(
    hit: np.ndarray, masculine: np.ndarray, feminine: np.ndarray
) -> list[np.ndarray]:
    """The four count columns of the figures below: hits among masculine referents,
    masculine referents, hits among feminine referents, feminine referents."""
    return [masculine & hit, masculine, feminine & hit, feminine]


def accuracy_figures(
    weights: np.ndarray, correct: np.ndarray, masculine: np.ndarray, feminine: np.ndarray
) -> dict[str, np.ndarray]:
    """Resolution accuracy per perceived gender, its mean, its gap and the pooled accuracy
    of weighted cases, for every row of ``weights`` at once.

    VisoGender Sec. 3.5: ``RA_g = (correctly resolved pronouns of gender g) / (pronouns of
    gender g)``; Eq. 1: ``Δ = RA_m - RA_f``; Tab. 2: ``RA_avg = (RA_m + RA_f) / 2``; and
    ``pooled_accuracy = correct / total``. A case of weight ``w`` counts ``w`` times (a
    bootstrap resample's multiplicity; all ones for the figures themselves).

    Args:
        weights: ``(B, n)`` case weights.
        correct, masculine, feminine: ``(n,)`` booleans: resolved correctly, the
            referent's perceived gender.

    Returns:
        ``RA_masculine``, ``RA_feminine``, ``RA_avg``, ``gender_gap``, ``pooled_accuracy``,
        each ``(B,)``; ``nan`` where a gender (or everything) has weight 0.
    """
    matrix = np.stack(indicator_columns(correct, masculine, feminine), axis=1).astype(np.float64)
    return accuracy_from_sums(np.asarray(weights, dtype=np.float64) @ matrix)


def neutral_figures(
    weights: np.ndarray, neutral: np.ndarray, masculine: np.ndarray, feminine: np.ndarray
) -> dict[str, np.ndarray]:
    """The neutral-pronoun resolution rate and its gap (VisoGender Appendix D.1, Tab. 4)
    of weighted cases, for every row of ``weights``: ``R_neutral`` is the share of cases
    (his / her / their) resolved to "their"; ``Δ_N = R_neutral(masculine) -
    R_neutral(feminine)`` by the referent's perceived gender."""
    matrix = np.stack(indicator_columns(neutral, masculine, feminine), axis=1).astype(np.float64)
    return neutral_from_sums(np.asarray(weights, dtype=np.float64) @ matrix)


def resolution_summary(correct: ArrayLike, target: ArrayLike) -> dict[str, float | int]:
    """Resolution accuracy per perceived gender, the gap, their mean and overall accuracy.

    VisoGender Sec. 3.5: ``RA_g = (correctly resolved pronouns of gender g) / (pronouns of
    gender g)``; Eq. 1: ``Δ = RA_m - RA_f`` (positive: masculine-presenting subjects are
    resolved more accurately); Tab. 2 ``RA_avg = (RA_m + RA_f) / 2``; and the pooled
    ``correct / total`` of these images. (The paper's overall accuracy, Tab. 2 and
    Appendix J ``overall_accuracy``, is not this pooled share but the mean of the
    single-person and two-person ``RA_avg``; see
    :func:`contrastkit.evaluators.tasks.resolution.summarize_resolution`.)

    Args:
        correct: one boolean per scored caption set.
        target: the gender of the correct pronoun for each (``masculine``/``feminine``).

    Returns:
        ``RA_masculine``, ``RA_feminine``, ``RA_avg``, ``gender_gap``,
        ``pooled_accuracy``, ``n``, ``n_masculine``, ``n_feminine``; accuracies over no
        images are ``nan``.

    Raises:
        ValueError: arrays of different lengths, or a target other than the two genders.
    """
    hits = np.asarray(correct, dtype=bool).ravel()
    labels = np.asarray(target, dtype=object).ravel()
    if hits.shape != labels.shape:
        raise ValueError(f"{hits.size} correctness values but {labels.size} targets")
    unknown = sorted({str(label) for label in labels} - set(GENDERS))
    if unknown:
        raise ValueError(f"resolution targets must be masculine or feminine, found {unknown}")
    masculine = labels == "masculine"
    feminine = labels == "feminine"
    figures = accuracy_figures(np.ones((1, hits.size)), hits, masculine, feminine)
    return {name: float(value[0]) for name, value in figures.items()} | {
        "n": int(hits.size),
        "n_masculine": int(masculine.sum()),
        "n_feminine": int(feminine.sum()),
    }


def neutral_summary(predicted: ArrayLike, target: ArrayLike) -> dict[str, float | int]:
    """The neutral-pronoun resolution rate and its gap (VisoGender Appendix D.1, Tab. 4).

    ``R_neutral`` is the share of caption sets (his/her/their) resolved to the neutral
    pronoun; ``Δ_N = R_neutral(masculine) - R_neutral(feminine)``, where the gender is the
    perceived gender of the person the pronoun refers to (positive: masculine-presenting
    subjects are resolved as "their" more often).

    Returns:
        ``R_neutral``, ``R_neutral_masculine``, ``R_neutral_feminine``, ``neutral_gap``,
        ``n``; ``nan`` for empty groups.
    """
    chosen = np.asarray(predicted, dtype=object).ravel()
    labels = np.asarray(target, dtype=object).ravel()
    if chosen.shape != labels.shape:
        raise ValueError(f"{chosen.size} predictions but {labels.size} targets")
    neutral = chosen == "neutral"
    masculine = labels == "masculine"
    feminine = labels == "feminine"
    figures = neutral_figures(np.ones((1, neutral.size)), neutral, masculine, feminine)
    return {name: float(value[0]) for name, value in figures.items()} | {"n": int(neutral.size)}


#: Label codes of the ranking internals: the two attribute values, then everything else.
_MASCULINE, _FEMININE, _OTHER = 0, 1, 2
#: Grid cells evaluated at once when taking expectations over tie orders (bounds memory).
_GRID_CELLS = 1 << 21


def _ranking_inputs(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Scores as float64 and labels as an object array, both ``(rows, n)``.

    ``scores`` is ``(n,)`` or ``(rows, n)``, ``labels`` is ``(n,)`` or ``(rows, n)``; a
    single row of either is repeated for every row of the other.
    """
    values = np.asarray(scores, dtype=np.float64)
    names = np.asarray(labels, dtype=object)
    values = values.reshape(1, -1) if values.ndim <= 1 else values
    names = names.reshape(1, -1) if names.ndim <= 1 else names
    if values.ndim != 2 or names.ndim != 2 or names.shape[1] != values.shape[1]:
        raise ValueError(f"{values.shape[-1]} scores but {names.shape[-1]} labels")
    rows = max(values.shape[0], names.shape[0])
    if {values.shape[0], names.shape[0]} - {1, rows}:
        raise ValueError(f"{values.shape[0]} rows of scores but {names.shape[0]} of labels")
    if np.isnan(values).any():
        raise ValueError("scores contain NaN; a ranking needs comparable scores")
    shape = (rows, values.shape[1])
    return np.broadcast_to(values, shape), np.broadcast_to(names, shape)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"K must be a positive integer, not {k!r}")


def _label_codes(names: np.ndarray) -> np.ndarray:
    """``_MASCULINE`` / ``_FEMININE`` / ``_OTHER`` for each label, int64 ``(rows, n)``."""
    codes = np.full(names.shape, _OTHER, dtype=np.int64)
    codes[names == GENDERS[0]] = _MASCULINE
    codes[names == GENDERS[1]] = _FEMININE
    return codes


class _TieBlocks:
    """Where every prefix of each row's ranking cuts its tie blocks.

    The images are sorted by descending score (images outside ``valid`` after all valid
    ones, never tied with them). For the prefix of length ``i`` (array position ``i - 1``)
    the *block* is the group of equal scores holding its ``i``-th image; ``above[c]``
    counts the class-``c`` images ranked strictly above the block, ``inside[c]`` the
    class-``c`` images of the block, ``size`` the block's size and ``slots`` how many of
    its images the prefix takes. Under a uniformly random order of tied images the
    class counts the prefix takes from its block are multivariate hypergeometric
    (``slots`` draws from ``inside``); everything above is certain.
    """

    def __init__(self, scores: np.ndarray, codes: np.ndarray, valid: np.ndarray, classes: int):
        rows, n = scores.shape
        order = np.lexsort((-scores, ~valid), axis=-1)
        ranked = np.take_along_axis(scores, order, axis=1)
        ranked_valid = np.take_along_axis(valid, order, axis=1)
        ranked_codes = np.where(ranked_valid, np.take_along_axis(codes, order, axis=1), classes)
        position = np.broadcast_to(np.arange(n), (rows, n))
        starts = np.ones((rows, n), dtype=bool)
        starts[:, 1:] = (ranked[:, 1:] != ranked[:, :-1]) | (
            ranked_valid[:, 1:] != ranked_valid[:, :-1]
        )
        ends = np.ones((rows, n), dtype=bool)
        ends[:, :-1] = starts[:, 1:]
        first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
        last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
        self.size = last - first + 1
        self.slots = position - first + 1
        self.above = np.zeros((classes, rows, n), dtype=np.int64)
        self.inside = np.zeros((classes, rows, n), dtype=np.int64)
        for c in range(classes):
            running = np.cumsum(ranked_codes == c, axis=1)
            before = np.where(
                first > 0, np.take_along_axis(running, np.maximum(first - 1, 0), axis=1), 0
            )
            self.above[c] = before
            self.inside[c] = np.take_along_axis(running, last, axis=1) - before

    def expected(self) -> np.ndarray:
        """``(classes, rows, n)``: the expected count of each class among the top ``i``
        (exact integers where the prefix does not cut a block of mixed classes)."""
        result: np.ndarray = self.above + self.slots * self.inside / self.size
        return result

    def uncertain(self) -> np.ndarray:
        """``(rows, n)``: prefixes whose class counts depend on the order of tied images:
        they take part of a block holding more than one class."""
        counted = self.inside.sum(axis=0) == self.size  # not the block of invalid images
        mixed = self.inside.max(axis=0) < self.size
        result: np.ndarray = (self.slots < self.size) & counted & mixed
        return result


def _log_choose(table: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``ln C(n, k)`` from a table of ``ln m!``; ``-inf`` outside ``0 <= k <= n``."""
    inside = (k >= 0) & (k <= n)
    n_safe = np.where(inside, n, 0)
    k_safe = np.where(inside, k, 0)
    value = table[n_safe] - table[k_safe] - table[n_safe - k_safe]
    result: np.ndarray = np.where(inside, value, -np.inf)
    return result


def _log_factorials(largest: int) -> np.ndarray:
    """``ln m!`` for ``m = 0 .. largest`` (``math.lgamma``: accurate, and no SciPy import)."""
    return np.array([math.lgamma(m + 1.0) for m in range(largest + 1)], dtype=np.float64)


def _expect(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum(weights * values)`` over the last axes, over cells with positive weight only
    (so ``-inf`` values of impossible outcomes do not enter)."""
    with np.errstate(invalid="ignore"):
        terms = np.where(weights > 0, weights * values, 0.0)
    result: np.ndarray = terms.reshape(terms.shape[0], -1).sum(axis=1)
    return result


def _two_class_expectation(
    metric: Callable[..., tuple[np.ndarray, ...]],
    above: tuple[np.ndarray, np.ndarray],
    inside: tuple[np.ndarray, np.ndarray],
    slots: np.ndarray,
    *params: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Expectations of ``metric(count_m, count_f, *params)`` (each output) over the
    hypergeometric number ``x`` of masculine images among ``slots`` drawn from a block of
    ``inside = (t_m, t_f)``: ``P(x) = C(t_m, x) C(t_f, slots - x) / C(t_m + t_f, slots)``,
    counts ``above_m + x`` and ``above_f + slots - x``. All arguments are ``(E,)``.

    Cost: ``O(E * X)`` with ``X`` the widest support, ``min(slots, t_m, t_f) + 1``,
    evaluated in chunks of at most :data:`_GRID_CELLS` cells.
    """
    t_m, t_f = inside
    low = np.maximum(0, slots - t_f)
    high = np.minimum(slots, t_m)
    width = int((high - low).max(initial=0)) + 1
    table = _log_factorials(int((t_m + t_f).max(initial=0)))
    outputs: list[list[np.ndarray]] = []
    step = max(1, _GRID_CELLS // width)
    for start in range(0, slots.size, step):
        part = slice(start, start + step)
        x = low[part, None] + np.arange(width)[None, :]
        s = slots[part, None]
        log_p = (
            _log_choose(table, t_m[part, None], x)
            + _log_choose(table, t_f[part, None], s - x)
            - _log_choose(table, t_m[part, None] + t_f[part, None], s)
        )
        weights = np.where(x <= high[part, None], np.exp(log_p), 0.0)
        counts_m = (above[0][part, None] + x).astype(np.float64)
        counts_f = (above[1][part, None] + s - x).astype(np.float64)
        values = metric(counts_m, counts_f, *(p[part, None] for p in params))
        outputs.append([_expect(v, weights) for v in values])
    return tuple(np.concatenate(column) for column in zip(*outputs, strict=True))


def _three_class_expectation(
    metric: Callable[[np.ndarray, np.ndarray], np.ndarray],
    above: tuple[np.ndarray, np.ndarray],
    inside: tuple[np.ndarray, np.ndarray, np.ndarray],
    slots: np.ndarray,
) -> np.ndarray:
    """Expectation of ``metric(count_m, count_f)`` when the block also holds ``t_o``
    images of other labels: ``(x_m, x_f, slots - x_m - x_f)`` is multivariate
    hypergeometric, ``P = C(t_m, x_m) C(t_f, x_f) C(t_o, x_o) / C(t, slots)``. One
    ``(X_m, X_f)`` grid per entry: ``O(E * X_m * X_f)``."""
    t_m, t_f, t_o = inside
    width_m = int(np.minimum(slots, t_m).max(initial=0)) + 1
    width_f = int(np.minimum(slots, t_f).max(initial=0)) + 1
    table = _log_factorials(int((t_m + t_f + t_o).max(initial=0)))
    results = []
    step = max(1, _GRID_CELLS // (width_m * width_f))
    for start in range(0, slots.size, step):
        part = slice(start, start + step)
        x_m = np.arange(width_m)[None, :, None]
        x_f = np.arange(width_f)[None, None, :]
        s = slots[part, None, None]
        log_p = (
            _log_choose(table, t_m[part, None, None], x_m)
            + _log_choose(table, t_f[part, None, None], x_f)
            + _log_choose(table, t_o[part, None, None], s - x_m - x_f)
            - _log_choose(table, (t_m + t_f + t_o)[part, None, None], s)
        )
        weights = np.exp(log_p)
        counts_m = (above[0][part, None, None] + x_m).astype(np.float64)
        counts_f = (above[1][part, None, None] + x_f).astype(np.float64)
        results.append(_expect(metric(counts_m, counts_f), weights))
    return np.concatenate(results) if results else np.zeros(0)


def topk_counts(scores: ArrayLike, labels: ArrayLike, k: int) -> dict[str, float]:
    """Expected number of masculine and feminine images among the ``k`` highest scores
    under a uniformly random order of tied images (module docstring), and ``"k"``: the
    number of images retrieved, ``min(k, n)``."""
    _check_k(k)
    values, names = _ranking_inputs(scores, labels)
    values, names = values[:1], names[:1]
    retrieved = min(k, values.shape[1])
    if retrieved == 0:
        return {**{gender: 0.0 for gender in GENDERS}, "k": 0.0}
    blocks = _TieBlocks(values, _label_codes(names), np.ones(values.shape, dtype=bool), 3)
    expected = blocks.expected()
    counts = {g: float(expected[c, 0, retrieved - 1]) for c, g in enumerate(GENDERS)}
    return {**counts, "k": float(retrieved)}


def _log_ratio(share: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``ln(share / wanted)``: ``-inf`` where share is 0, ``nan`` where wanted is 0/nan."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.log(share / wanted)
    value = np.where(share == 0, -np.inf, value)
    result: np.ndarray = np.where((wanted > 0) & np.isfinite(wanted), value, np.nan)
    return result


def _skews(
    count_m: np.ndarray,
    count_f: np.ndarray,
    depth: np.ndarray,
    wanted_m: np.ndarray,
    wanted_f: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Skew of each gender, MaxSkew, MinSkew and the official smoothed MinSkew of a top
    ``depth`` holding the given counts (``depth >= 1``; arrays broadcast)."""
    skews = []
    smoothed = []
    for count, wanted in ((count_m, wanted_m), (count_f, wanted_f)):
        with np.errstate(divide="ignore", invalid="ignore"):
            share = count / depth
        skews.append(_log_ratio(share, wanted))
        smoothed.append(_log_ratio(np.where(share == 0, 1.0 / depth, share), wanted))
    stacked = np.stack(np.broadcast_arrays(*skews))
    defined = ~np.isnan(stacked)
    any_defined = defined.any(axis=0)
    maximum = np.where(any_defined, np.max(np.where(defined, stacked, -np.inf), axis=0), np.nan)
    minimum = np.where(any_defined, np.min(np.where(defined, stacked, np.inf), axis=0), np.nan)
    soft = np.stack(np.broadcast_arrays(*smoothed))
    soft_min = np.where(any_defined, np.min(np.where(defined, soft, np.inf), axis=0), np.nan)
    return skews[0], skews[1], maximum, minimum, soft_min


def _kl(
    count_m: np.ndarray,
    count_f: np.ndarray,
    i: np.ndarray,
    wanted_m: np.ndarray,
    wanted_f: np.ndarray,
) -> tuple[np.ndarray]:
    """``D_KL(D_{R_i} || D)`` (natural log) of a top ``i`` holding the given counts; a
    share of 0 adds nothing; a positive share with a desired share of 0 is ``inf``."""
    kl = np.zeros(np.broadcast_shapes(count_m.shape, count_f.shape, i.shape))
    for count, wanted in ((count_m, wanted_m), (count_f, wanted_f)):
        p = count / i
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.where(p > 0, p * np.log(p / wanted), 0.0)
        kl = kl + np.where((p > 0) & ~(wanted > 0), np.inf, term)
    return (kl,)


def _gensynth_bias(count_m: np.ndarray, count_f: np.ndarray) -> np.ndarray:
    """GenSynth Eq. 1 per query: ``(N_m - N_f) / (N_m + N_f)``, 0 when both are 0."""
    total = count_m + count_f
    with np.errstate(divide="ignore", invalid="ignore"):
        result: np.ndarray = np.where(total > 0, (count_m - count_f) / total, 0.0)
    return result


def retrieval_metrics_batch(
    scores: ArrayLike,
    labels: ArrayLike,
    ks: Iterable[int] = (5, 10),
    *,
    desired: Mapping[str, float] | None = None,
    ndkl_k: int | None = None,
) -> dict[str, np.ndarray]:
    """Every retrieval metric of many rankings at once.

    Args:
        scores: ``(n,)`` scores of the candidate images for the query, or ``(rows, n)``:
            one scoring per row.
        labels: ``(n,)`` labels, or ``(rows, n)``: one labelling per row (the random
            relabelling baseline of Appendix G.2 scores thousands at once). A single row
            of scores or labels is used for every row of the other.
        ks: the cut-offs K.
        desired: fixed desired proportions; default each row's labelled shares.
        ndkl_k: depth of NDKL; default every labelled candidate.

    Returns:
        ``{metric: (rows,) array}`` with the keys of :func:`retrieval_metrics`: the exact
        expectation of each metric over uniformly random orders of tied images.

    Complexity: sorting, ``O(rows * n log n)``; the metrics of prefixes that do not cut
    a tie block of mixed labels, ``O(rows * n)``. Each prefix that does (only with
    ties) costs the size of its hypergeometric support, at most ``min(t_m, t_f) + 1``
    for a block of ``t_m`` masculine and ``t_f`` feminine images, so NDKL costs
    ``O(sum over blocks of t * min(t_m, t_f))`` more per row; the GenSynth Bias@K with
    images of other labels in the block at K, ``O(min(K, t_m) * min(K, t_f))`` per row.
    """
    ks = list(ks)
    for k in ks:
        _check_k(k)
    if ndkl_k is not None:
        _check_k(ndkl_k)
    values, names = _ranking_inputs(scores, labels)
    rows, n = names.shape
    codes = _label_codes(names)
    labelled = codes != _OTHER
    n_labelled = labelled.sum(axis=1)
    if desired is not None:
        missing = [gender for gender in GENDERS if gender not in desired]
        if missing:
            raise ValueError(f"desired proportions need a value for {missing}")
        wanted = [np.full(rows, float(desired[g])) for g in GENDERS]
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            wanted = [(codes == c).sum(axis=1) / n_labelled for c in (_MASCULINE, _FEMININE)]
    every = _TieBlocks(values, codes, np.ones((rows, n), dtype=bool), 3)
    ranked = _TieBlocks(values, codes, labelled, 2)
    every_counts = every.expected()
    ranked_counts = ranked.expected()
    every_open = every.uncertain()
    ranked_open = ranked.uncertain()
    row = np.arange(rows)
    result: dict[str, np.ndarray] = {}
    for k in ks:
        retrieved = min(k, n)
        if retrieved == 0:
            result[f"bias@{k}"] = np.zeros(rows)
            result[f"bias_gensynth@{k}"] = np.zeros(rows)
        else:
            at = retrieved - 1
            n_m, n_f = every_counts[_MASCULINE, :, at], every_counts[_FEMININE, :, at]
            result[f"bias@{k}"] = (n_m - n_f) / retrieved  # linear: exact expectation
            gensynth = _gensynth_bias(n_m, n_f)
            cut = np.flatnonzero(every_open[:, at])
            if cut.size:
                gensynth[cut] = _three_class_expectation(
                    _gensynth_bias,
                    (every.above[_MASCULINE][cut, at], every.above[_FEMININE][cut, at]),
                    (
                        every.inside[_MASCULINE][cut, at],
                        every.inside[_FEMININE][cut, at],
                        every.inside[_OTHER][cut, at],
                    ),
                    every.slots[cut, at],
                )
            result[f"bias_gensynth@{k}"] = gensynth
        depth = np.minimum(k, n_labelled)
        index = np.maximum(depth - 1, 0)
        if n:
            counts = ranked_counts[:, row, index]
            skews = _skews(counts[0], counts[1], np.maximum(depth, 1), *wanted)
            cut = np.flatnonzero(ranked_open[row, index] & (depth > 0))
            if cut.size:
                at = index[cut]
                exact = _two_class_expectation(
                    _skews,
                    (ranked.above[_MASCULINE][cut, at], ranked.above[_FEMININE][cut, at]),
                    (ranked.inside[_MASCULINE][cut, at], ranked.inside[_FEMININE][cut, at]),
                    ranked.slots[cut, at],
                    depth[cut],
                    wanted[0][cut],
                    wanted[1][cut],
                )
                for values_, expectation in zip(skews, exact, strict=True):
                    values_[cut] = expectation
        else:
            skews = tuple(np.full(rows, np.nan) for _ in range(5))
        names_k = (
            f"skew_{GENDERS[0]}@{k}",
            f"skew_{GENDERS[1]}@{k}",
            f"maxskew@{k}",
            f"minskew@{k}",
            f"minskew@{k}_official_smoothed",
        )
        for name, metric in zip(names_k, skews, strict=True):
            result[name] = np.where(depth > 0, metric, np.nan)
    result["NDKL"] = _ndkl_rows(ranked, ranked_counts, ranked_open, wanted, n_labelled, ndkl_k)
    return result


def _ndkl_rows(
    ranked: _TieBlocks,
    counts: np.ndarray,
    uncertain: np.ndarray,
    wanted: list[np.ndarray],
    n_labelled: np.ndarray,
    depth_limit: int | None,
) -> np.ndarray:
    """NDKL of each row from its labelled-only ranking (see :func:`ndkl`): the weighted
    sum of each prefix's KL, where a prefix that cuts a tie block of mixed labels takes
    its expected KL over the hypergeometric counts (NDKL is linear in the prefix KLs)."""
    _, rows, n = counts.shape
    if n == 0:
        return np.full(rows, np.nan)
    depth = n_labelled if depth_limit is None else np.minimum(n_labelled, depth_limit)
    i = np.arange(1, n + 1)
    inside_depth = i[None, :] <= depth[:, None]
    weights = np.where(inside_depth, 1.0 / np.log2(i + 1)[None, :], 0.0)
    (kl,) = _kl(counts[0], counts[1], i[None, :], wanted[0][:, None], wanted[1][:, None])
    cut_rows, cut_at = np.nonzero(uncertain & inside_depth)
    if cut_rows.size:
        (kl[cut_rows, cut_at],) = _two_class_expectation(
            _kl,
            (ranked.above[0][cut_rows, cut_at], ranked.above[1][cut_rows, cut_at]),
            (ranked.inside[0][cut_rows, cut_at], ranked.inside[1][cut_rows, cut_at]),
            ranked.slots[cut_rows, cut_at],
            cut_at + 1,
            wanted[0][cut_rows],
            wanted[1][cut_rows],
        )
    normaliser = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(weights > 0, weights * kl, 0.0).sum(axis=1) / normaliser
    result: np.ndarray = np.where(depth > 0, total, np.nan)
    return result


def retrieval_metrics(
    scores: ArrayLike,
    labels: ArrayLike,
    ks: Iterable[int] = (5, 10),
    *,
    desired: Mapping[str, float] | None = None,
    ndkl_k: int | None = None,
) -> dict[str, float]:
    """Every retrieval metric of one query, keyed as in the benchmark JSON:
    ``bias@K`` (VisoGender), ``bias_gensynth@K``, ``skew_masculine@K``,
    ``skew_feminine@K``, ``maxskew@K``, ``minskew@K`` and
    ``minskew@K_official_smoothed`` for each K, and ``NDKL``; with tied scores, each is
    its exact expectation over the random orders of the tied images (module docstring).

    ``minskew@K_official_smoothed`` is MinSkew as the official VisoGender code computes
    it (``src/metrics.py``, ``calculate_retrieval_bias``: "no log of 0", a share of 0 is
    replaced by ``1/K`` inside the log), so it is never ``-inf``; ``minskew@K`` keeps the
    formula's ``-inf`` (docs/differences.md).
    """
    if np.ndim(scores) > 1 or np.ndim(labels) > 1:
        raise ValueError("retrieval_metrics takes one ranking; use retrieval_metrics_batch")
    batch = retrieval_metrics_batch(scores, labels, ks, desired=desired, ndkl_k=ndkl_k)
    return {name: float(values[0]) for name, values in batch.items()}


def bias_at_k(
    scores: ArrayLike,
    labels: ArrayLike,
    k: int,
    convention: BiasConvention = "visogender",
) -> float:
    """Bias@K of one query's ranking; positive when masculine images dominate the top K.

    * ``"visogender"`` (VisoGender Appendix A): ``(1/K) sum_{I in R_K} g(I)`` with
      ``g = +1`` masculine, ``-1`` feminine, 0 undefined; ``K = min(k, n)``.
    * ``"gensynth"`` (GenSynth Eq. 1, per query ``δ_K(q)``):
      ``(N_m - N_f) / (N_m + N_f)``, and 0 when ``N_m + N_f = 0``.

    Ties at the cut-off are shared (module docstring). Averaging over queries (the
    paper's Bias@K) is :func:`summarize`'s mean.
    """
    if convention not in ("visogender", "gensynth"):
        raise ValueError(f"unknown Bias@K convention {convention!r}; use visogender or gensynth")
    metrics = retrieval_metrics(scores, labels, (k,))
    return metrics[f"bias@{k}" if convention == "visogender" else f"bias_gensynth@{k}"]


def skew_at_k(
    scores: ArrayLike,
    labels: ArrayLike,
    k: int,
    *,
    desired: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """``Skew_A@K = ln(p_{R_K,A} / p_{d,A})`` for A in masculine, feminine (VisoGender
    Appendix A; GenSynth Eq. 2). Undefined labels are dropped first; an absent gender's
    skew is ``-inf``; a gender with ``p_d = 0`` has ``nan`` (module docstring)."""
    metrics = retrieval_metrics(scores, labels, (k,), desired=desired)
    return {gender: metrics[f"skew_{gender}@{k}"] for gender in GENDERS}


def max_skew_at_k(
    scores: ArrayLike, labels: ArrayLike, k: int, *, desired: Mapping[str, float] | None = None
) -> float:
    """``MaxSkew@K = max_A Skew_A@K`` (VisoGender Appendix A; GenSynth Eq. 3): the largest
    unfair advantage. ``nan`` genders are left out; ``nan`` if all are."""
    return retrieval_metrics(scores, labels, (k,), desired=desired)[f"maxskew@{k}"]


def min_skew_at_k(
    scores: ArrayLike, labels: ArrayLike, k: int, *, desired: Mapping[str, float] | None = None
) -> float:
    """``MinSkew@K = min_A Skew_A@K``: the largest disadvantage; ``-inf`` when a gender is
    absent from the top K."""
    return retrieval_metrics(scores, labels, (k,), desired=desired)[f"minskew@{k}"]


def ndkl(
    scores: ArrayLike,
    labels: ArrayLike,
    k: int | None = None,
    *,
    desired: Mapping[str, float] | None = None,
) -> float:
    """Normalised discounted cumulative KL divergence (VisoGender Appendix A, after Geyik
    et al. 2019): ``(1/Z) sum_{i=1}^{K} D_KL(D_{R_i} || D) / log2(i + 1)``.

    ``D_{R_i}`` is the gender distribution of the top ``i`` labelled images (ties shared),
    ``D`` the desired one; ``K`` defaults to every labelled candidate. 0 means every
    prefix of the ranking has the desired distribution. ``nan`` without labelled images.
    """
    return retrieval_metrics(scores, labels, (), desired=desired, ndkl_k=k)["NDKL"]


#: Why :func:`summarize` leaves a value out of the mean, by the kind of value.
LEFT_OUT_REASONS: dict[str, str] = {
    "gender_absent_from_top_k": (
        "-inf: a gender has no image in the top K (in at least one order of tied images), "
        "so its Skew@K and the MinSkew@K are ln(0)"
    ),
    "desired_share_zero": "+inf: a gender was retrieved whose desired share is 0 (KL divergence)",
    "undefined": (
        "nan: no labelled candidate image, or (Skew@K of one gender) the gender has no "
        "desired share because it is absent from the candidates"
    ),
}


def _left_out_reason(value: float) -> str:
    if math.isnan(value):
        return "undefined"
    return "gender_absent_from_top_k" if value < 0 else "desired_share_zero"


def summarize(values: Iterable[float] | Mapping[str, float]) -> dict[str, Any]:
    """Mean and standard deviation across queries (occupations), as in VisoGender Tab. 3,
    and what was left out of them.

    ``sigma`` is the sample standard deviation (``ddof=1``; ``nan`` for fewer than two
    values). Only finite values enter; ``n`` counts them and ``n_undefined`` counts the
    others, which ``left_out`` splits by reason (:data:`LEFT_OUT_REASONS`; e.g.
    ``{"gender_absent_from_top_k": 3}`` for MinSkew@K where a gender is absent from the
    top K). When ``values`` is a mapping (occupation -> value), ``left_out_names`` names
    them: ``{"gender_absent_from_top_k": ["plumber", ...]}``.

    The official VisoGender code never leaves an occupation out of its MinSkew@K mean:
    it replaces a share of 0 by ``1/K`` inside the log (``src/metrics.py``,
    ``calculate_retrieval_bias``, "no log of 0"); that value is
    ``minskew@K_official_smoothed`` (:func:`retrieval_metrics`), whose summary has no
    left-out occupations.
    """
    named = isinstance(values, Mapping)
    items = list(values.items()) if isinstance(values, Mapping) else list(enumerate(values))
    array = np.array([float(value) for _, value in items], dtype=np.float64)
    finite = array[np.isfinite(array)]
    left_out: dict[str, int] = {}
    left_out_names: dict[str, list[str]] = {}
    for (name, _), value in zip(items, array.tolist(), strict=True):
        if not math.isfinite(value):
            reason = _left_out_reason(value)
            left_out[reason] = left_out.get(reason, 0) + 1
            left_out_names.setdefault(reason, []).append(str(name))
    result: dict[str, Any] = {
        "mean": float(finite.mean()) if finite.size else math.nan,
        "sigma": float(finite.std(ddof=1)) if finite.size > 1 else math.nan,
        "n": int(finite.size),
        "n_undefined": int(array.size - finite.size),
        "left_out": left_out,
    }
    if named:
        result["left_out_names"] = left_out_names
    return result


def cutoff_warnings(
    ks: Iterable[int], pools: Mapping[str, int], *, section: str, label: str
) -> list[dict[str, Any]]:
    """A warning for every K at or above the number of candidates of some query.

    Such a query's top K is its whole pool, so its @K metrics do not depend on the
    model's ranking: Bias@K is the pool's own gender balance (0 on a balanced pool, as
    Bias@10 on VisoGender's 10 single-person images per occupation) and Skew, MaxSkew
    and MinSkew@K compare the pool with itself (0). A report of them is trivial, not a
    measurement.

    Args:
        ks: The cut-offs K reported.
        pools: Each query's number of candidates (query name -> images ranked).
        section: Where the metrics are reported (``two_person_images``, ``contrast``).
        label: ``section`` in words, for the message.

    Returns:
        One entry per such K: ``{"kind": "k_at_least_candidates", "section", "k",
        "queries"`` (the names of the queries concerned), ``"n_queries"`` (all queries),
        ``"every_query"`` (whether K covers the pool of every query: no query's @K
        figure is then a reading), ``"candidates"`` and ``"candidates_max"`` (the
        smallest and the largest pool among them) and ``"message"`` (one sentence).
        :func:`cutoff_marking` gives the short marking the consoles, tables and plots
        show in place of (or beside) such a figure.
    """
    found: list[dict[str, Any]] = []
    for k in ks:
        small = {name: n for name, n in pools.items() if n <= k}
        if not small:
            continue
        low, high = min(small.values()), max(small.values())
        size = f"{low} candidates each" if low == high else f"{low} to {high} candidates"
        share = "every query" if len(small) == len(pools) else (
            f"{len(small)} of {len(pools)} queries"
        )  # fmt: skip
        found.append(
            {
                "kind": "k_at_least_candidates",
                "section": section,
                "k": int(k),
                "queries": sorted(small),
                "n_queries": len(pools),
                "every_query": len(small) == len(pools),
                "candidates": low,
                "candidates_max": high,
                "message": (
                    f"{label}: K = {k} is at least the number of candidates of {share} "
                    f"({size}); the top {k} is then the whole pool, so Bias@{k} and the "
                    f"skews @{k} do not depend on the model's ranking (Bias@{k} is the "
                    "pool's own gender balance, 0 on a balanced pool; the skews are 0)"
                ),
            }
        )
    return found


def _every_query(warning: Mapping[str, Any]) -> bool:
    """Whether a :func:`cutoff_warnings` entry covers the pool of every query (read
    from the entry's fields where an older file has no ``every_query``)."""
    if "every_query" in warning:
        return bool(warning["every_query"])
    queries = list(warning.get("queries") or [])
    return queries == ["every query"] or len(queries) >= int(warning.get("n_queries") or 0)


def cutoffs_by_k(
    warnings: Iterable[Any], section: str | None = None
) -> dict[int, Mapping[str, Any]]:
    """The :func:`cutoff_warnings` entries among a result's ``warnings``, by K (those of
    ``section`` only, when given): the one predicate every report, console line and plot
    uses to tell a K at or above the candidates of a query."""
    found: dict[int, Mapping[str, Any]] = {}
    for warning in warnings or []:
        if not isinstance(warning, Mapping) or "k" not in warning:
            continue
        if warning.get("kind", "k_at_least_candidates") != "k_at_least_candidates":
            continue
        if section is None or warning.get("section") == section:
            found[int(warning["k"])] = warning
    return found


def cutoff_marking(warning: Mapping[str, Any]) -> str:
    """The short marking of a K that :func:`cutoff_warnings` flagged, shown in place of a
    figure when K covers every query's pool (``n/a: K covers all 6 candidates``: the
    figure is the pool's own balance, not a reading) and beside it when K covers some
    queries' pools only (``K covers all candidates of 3 of 20 queries``)."""
    low = int(warning.get("candidates") or 0)
    high = int(warning.get("candidates_max") or low)
    if _every_query(warning):
        pool = f"all {low} candidates" if low == high else f"all {low} to {high} candidates"
        return f"n/a: K covers {pool}"
    queries = len(warning.get("queries") or [])
    return f"K covers all candidates of {queries} of {warning.get('n_queries')} queries"


def covers_every_query(warning: Mapping[str, Any] | None) -> bool:
    """Whether ``warning`` (a :func:`cutoff_warnings` entry, or ``None``) covers every
    query's pool, so that the figures @K are no reading at all."""
    return warning is not None and _every_query(warning)
