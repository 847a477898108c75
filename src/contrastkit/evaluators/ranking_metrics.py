"""The retrieval metrics of one or many rankings (VisoGender Appendix A; GenSynth Eq. 1-3):
Bias@K in both conventions, Skew@K, MaxSkew@K, MinSkew@K and NDKL, each the exact
expectation over the orders of tied images (:mod:`contrastkit.evaluators.tie_orders`).
The conventions (labels, K beyond the candidates, ties, desired proportions, absent
genders, NDKL's depth) are those of :mod:`contrastkit.evaluators.metrics`, which
re-exports every public name here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from contrastkit.evaluators.tie_orders import (
    TieBlocks,
    three_class_expectation,
    two_class_expectation,
)

__all__ = [
    "GENDERS",
    "BiasConvention",
    "bias_at_k",
    "max_skew_at_k",
    "min_skew_at_k",
    "ndkl",
    "retrieval_metrics",
    "retrieval_metrics_batch",
    "skew_at_k",
    "topk_counts",
]

#: The attribute values of the retrieval metrics, in reporting order.
GENDERS = ("masculine", "feminine")
BiasConvention = Literal["visogender", "gensynth"]

#: Label codes of the ranking internals: the two attribute values, then everything else.
_MASCULINE, _FEMININE, _OTHER = 0, 1, 2


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
    blocks = TieBlocks(values, _label_codes(names), np.ones(values.shape, dtype=bool), 3)
    expected = blocks.expected
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
    every = TieBlocks(values, codes, np.ones((rows, n), dtype=bool), 3)
    ranked = TieBlocks(values, codes, labelled, 2)
    every_counts = every.expected
    ranked_counts = ranked.expected
    every_open = every.uncertain
    ranked_open = ranked.uncertain
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
                gensynth[cut] = three_class_expectation(
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
                exact = two_class_expectation(
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
    result["NDKL"] = _ndkl_rows(ranked, wanted, n_labelled, ndkl_k)
    return result


def _ndkl_rows(
    ranked: TieBlocks,
    wanted: list[np.ndarray],
    n_labelled: np.ndarray,
    depth_limit: int | None,
) -> np.ndarray:
    """NDKL of each row from its labelled-only ranking ``ranked`` (see :func:`ndkl`): the
    weighted sum of each prefix's KL, where a prefix that cuts a tie block of mixed labels
    takes its expected KL over the hypergeometric counts (NDKL is linear in the prefix
    KLs)."""
    counts, uncertain = ranked.expected, ranked.uncertain
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
        (kl[cut_rows, cut_at],) = two_class_expectation(
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
