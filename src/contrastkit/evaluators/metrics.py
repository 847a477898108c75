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

The retrieval metrics are computed in :mod:`contrastkit.evaluators.ranking_metrics` (the
expectations over tie orders in :mod:`contrastkit.evaluators.tie_orders`) and re-exported
here; this module holds the resolution figures and the summaries over queries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from contrastkit.evaluators.ranking_metrics import (
    GENDERS,
    BiasConvention,
    bias_at_k,
    max_skew_at_k,
    min_skew_at_k,
    ndkl,
    retrieval_metrics,
    retrieval_metrics_batch,
    skew_at_k,
    topk_counts,
)

__all__ = [
    "GENDERS",
    "LEFT_OUT_REASONS",
    "BiasConvention",
    "CutoffWarning",
    "Summary",
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


class _SummaryFigures(TypedDict):
    mean: float
    sigma: float
    n: int
    n_undefined: int
    left_out: dict[str, int]


class Summary(_SummaryFigures, total=False):
    """A :func:`summarize`: mean and sigma across queries, how many entered and how many
    were left out (by reason); of a mapping the names ``left_out_names``; where the
    caller bootstraps the queries, the interval of the mean ``mean_ci``."""

    left_out_names: dict[str, list[str]]
    mean_ci: Mapping[str, object]


def summarize(values: Iterable[float] | Mapping[str, float]) -> Summary:
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
    result: Summary = {
        "mean": float(finite.mean()) if finite.size else math.nan,
        "sigma": float(finite.std(ddof=1)) if finite.size > 1 else math.nan,
        "n": int(finite.size),
        "n_undefined": int(array.size - finite.size),
        "left_out": left_out,
    }
    if named:
        result["left_out_names"] = left_out_names
    return result


class CutoffWarning(TypedDict):
    """A :func:`cutoff_warnings` entry: a K at or above the candidates of some queries."""

    kind: str
    section: str
    k: int
    queries: list[str]
    n_queries: int
    every_query: bool
    candidates: int
    candidates_max: int
    message: str


def cutoff_warnings(
    ks: Iterable[int], pools: Mapping[str, int], *, section: str, label: str
) -> list[CutoffWarning]:
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
    found: list[CutoffWarning] = []
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
