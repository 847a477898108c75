"""Retrieval bias of models that know nothing about gender (GenSynth Sec. 3.4, Tab. 1).

Every gender-neutralised caption of the set (Tab. 4 / Tab. 5) is a text-to-image query
over the set's images; each query's ranking gives

* **Bias@K** (K = 5, 10), GenSynth Eq. 1: ``(N_m - N_f) / (N_m + N_f)`` over the top K,
  0 when it holds no labelled image (undefined images take ranks but are not counted);
  this is ``bias_gensynth@K`` of :func:`contrastkit.evaluators.metrics.retrieval_metrics_batch`;
* **MaxSkew@K** (K = 25, 100), GenSynth Eq. 2-3: ``max_A ln(p_{R_K,A} / p_{d,A})`` over
  the top K *labelled* images, ``p_d`` the labelled candidates' own gender shares;

averaged over the queries (:func:`contrastkit.evaluators.metrics.summarize`). Tied
scores take each metric's exact expectation over the orders of the tied images (the
TF-IDF model ties every image that shares no word with the query).

The models:

* ``random``: a score drawn uniformly in ``[0, 1)`` for every (query, image) pair from
  ``numpy.random.default_rng(seed)``, query by query in caption order, i.e. the matrix
  ``default_rng(seed).random((queries, images))``. (GenSynth's code draws random
  512-d text and image vectors and ranks by their cosine; both give uniformly random
  rankings.)
* ``tfidf``: caption-to-caption retrieval on the neutral captions. The TF-IDF weights
  (:class:`contrastkit.audit.text.Tfidf`, scikit-learn's defaults, as the GenSynth code
  uses) are fitted on every neutral caption of the set; an image's score for a query is
  the cosine similarity of the query with the image's most similar caption, and the
  query's own image is left out of its candidates (its captions would match
  themselves); in a contrast set, both versions of the query's source photo, which
  carry the same captions. GenSynth's code ranks the captions themselves, so one image can fill
  several of its top K; here each image is ranked once, as in the caption-to-image
  retrieval the metrics are defined for.
* any dual encoder of the registry (``--model``): cosine similarity of the query's text
  embedding and the image embedding; the query's own image stays in (it is the match).

**Balanced sets** (Tab. 1, right): the more frequent gender is subsampled to the size of
the other, and undefined images are subsampled so that their share of the set stays the
original one (``floor(u * 2n / (1 - u))`` images for an undefined share ``u`` and ``n``
images of each gender, as the GenSynth code does); run ``r`` draws its subsample with
``default_rng((seed, r))`` and its random model with ``default_rng((seed, r, 1))``. Each
figure is reported as the mean and sample standard deviation (``ddof=1``) of the run
means.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike

from contrastkit.audit.data import UNDEFINED
from contrastkit.audit.text import Tfidf
from contrastkit.errors import ConfigError
from contrastkit.evaluators.metrics import Summary, retrieval_metrics_batch, summarize

__all__ = [
    "BalancedSet",
    "Baselines",
    "Cutoffs",
    "ModelBaselines",
    "QueryOwners",
    "RunStatistics",
    "balanced_subsample",
    "bias_and_maxskew",
    "metric_names",
    "random_scores",
    "retrieval_bias",
    "run_statistics",
    "tfidf_scores",
]

#: Scores of queries ``start:stop`` against every image: ``(stop - start, images)``.
ScoreBlock = Callable[[int, int], np.ndarray]


def metric_names(ks_bias: Sequence[int], ks_skew: Sequence[int]) -> list[str]:
    """The table's columns: ``bias@K`` for each Bias@K cut-off, then ``maxskew@K``."""
    return [f"bias@{k}" for k in ks_bias] + [f"maxskew@{k}" for k in ks_skew]


@dataclass(frozen=True)
class Cutoffs:
    """The cut-offs K of the two metrics.

    Attributes:
        bias: the cut-offs of Bias@K (Tab. 1: 5, 10).
        skew: the cut-offs of MaxSkew@K (Tab. 1: 25, 100).
    """

    bias: Sequence[int] = (5, 10)
    skew: Sequence[int] = (25, 100)


@dataclass(frozen=True)
class QueryOwners:
    """Which images each query caption belongs to, and whether they are candidates.

    Attributes:
        query_groups: the group each query caption belongs to: with ``image_groups``
            ``None``, the index of its image.
        image_groups: each image's group (integers); default ``0 .. images - 1``.
        exclude_own: leave the images of each query's own group out of its candidates
            (they take the last ranks, unlabelled).
    """

    query_groups: ArrayLike
    image_groups: ArrayLike | None = None
    exclude_own: bool = False


def retrieval_bias(
    scores: ScoreBlock,
    labels: Sequence[str],
    owners: QueryOwners,
    cutoffs: Cutoffs | None = None,
    block: int | None = None,
) -> dict[str, Summary]:
    """Bias@K and MaxSkew@K of one model on one set, per query and summarised.

    Args:
        scores: the scores of a block of queries against every image.
        labels: each image's label (``masculine``, ``feminine``, anything else undefined).
        owners: each query's own images and whether they are left out of its candidates.
        cutoffs: the cut-offs of Bias@K and of MaxSkew@K (default: :class:`Cutoffs`).
        block: queries per call of ``scores`` (default: about 524,288 scores a block).

    Returns:
        ``{metric: summarize(per-query values)}`` for :func:`metric_names`: ``mean``,
        ``sigma`` over queries, ``n`` and what was left out.
    """
    cutoffs = cutoffs or Cutoffs()
    names = np.asarray(labels, dtype=object)
    queries = np.asarray(owners.query_groups, dtype=np.int64)
    n = names.size
    image_groups = np.arange(n) if owners.image_groups is None else owners.image_groups
    groups = np.asarray(image_groups, dtype=np.int64)
    if n == 0 or queries.size == 0:
        raise ConfigError("retrieval needs at least one image and one query")
    block = block or max(1, min(1024, 2**19 // n))
    is_m = names == "masculine"
    is_f = names == "feminine"
    values: dict[str, list[float]] = {name: [] for name in metric_names(cutoffs.bias, cutoffs.skew)}
    for start in range(0, queries.size, block):
        stop = min(queries.size, start + block)
        matrix = np.array(scores(start, stop), dtype=np.float64)
        masculine = np.broadcast_to(is_m, matrix.shape)
        feminine = np.broadcast_to(is_f, matrix.shape)
        if owners.exclude_own:
            own = groups[None, :] == queries[start:stop, None]
            masculine = masculine & ~own
            feminine = feminine & ~own
            matrix[own] = -np.inf
        metrics = _bias_and_maxskew(matrix, masculine, feminine, cutoffs)
        for name, per_query in metrics.items():
            values[name].extend(per_query.tolist())
    return {name: summarize(per_query) for name, per_query in values.items()}


def _top(matrix: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``depth`` highest scores of each row in descending order and their columns
    (``depth <= columns``), by a partial sort."""
    if depth < matrix.shape[1]:
        part = np.argpartition(-matrix, depth - 1, axis=1)[:, :depth]
    else:
        part = np.broadcast_to(np.arange(matrix.shape[1]), matrix.shape).copy()
    values = np.take_along_axis(matrix, part, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")
    return np.take_along_axis(values, order, axis=1), np.take_along_axis(part, order, axis=1)


def bias_and_maxskew(
    matrix: np.ndarray, labels: np.ndarray, ks_bias: Sequence[int], ks_skew: Sequence[int]
) -> dict[str, np.ndarray]:
    """GenSynth Bias@K (Eq. 1) and MaxSkew@K (Eq. 2-3) of each row's ranking: the values
    of :func:`contrastkit.evaluators.metrics.retrieval_metrics_batch` (``bias_gensynth@K``,
    ``maxskew@K``), keyed ``bias@K`` and ``maxskew@K``.

    Rows whose top K is decided without looking past a partial sort, i.e. whose K-th and
    (K+1)-th scores differ, are computed from the top K directly; a row where a tie
    crosses a cut-off goes to ``retrieval_metrics_batch``, which takes the exact
    expectation over the orders of the tied images. The results are the same; the
    partial sort makes the common, untied case cheap on large sets.
    """
    names = np.asarray(labels, dtype=object)
    return _bias_and_maxskew(
        matrix, names == "masculine", names == "feminine", Cutoffs(ks_bias, ks_skew), names
    )


def _bias_and_maxskew(
    matrix: np.ndarray,
    masculine: np.ndarray,
    feminine: np.ndarray,
    cutoffs: Cutoffs,
    labels: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """:func:`bias_and_maxskew` from boolean ``(rows, n)`` gender masks (``labels``, if
    given, only serve the tied rows)."""
    ks_bias, ks_skew = cutoffs.bias, cutoffs.skew
    rows, n = matrix.shape
    labelled = masculine | feminine
    n_labelled = labelled.sum(axis=1)
    result: dict[str, np.ndarray] = {}
    tied = np.zeros(rows, dtype=bool)
    deepest = min(n, max(ks_bias, default=0) + 1)
    if ks_bias and deepest:
        values, columns = _top(matrix, deepest)
        is_m = np.take_along_axis(masculine, columns, axis=1).cumsum(axis=1)
        is_f = np.take_along_axis(feminine, columns, axis=1).cumsum(axis=1)
        for k in ks_bias:
            at = min(k, n) - 1
            if k < n:
                tied |= values[:, at] == values[:, at + 1]
            total = is_m[:, at] + is_f[:, at]
            with np.errstate(divide="ignore", invalid="ignore"):
                result[f"bias@{k}"] = np.where(total > 0, (is_m[:, at] - is_f[:, at]) / total, 0.0)
    deepest = min(n, max(ks_skew, default=0) + 1)
    if ks_skew and deepest:
        ranked = np.where(labelled, matrix, -np.inf)
        values, columns = _top(ranked, deepest)
        is_m = np.take_along_axis(masculine, columns, axis=1).cumsum(axis=1)
        is_f = np.take_along_axis(feminine, columns, axis=1).cumsum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            wanted_m = masculine.sum(axis=1) / n_labelled
            wanted_f = feminine.sum(axis=1) / n_labelled
        for k in ks_skew:
            depth = np.minimum(k, n_labelled)
            at = np.maximum(depth - 1, 0)
            cut = depth < n_labelled
            after = np.minimum(at + 1, deepest - 1)
            row = np.arange(rows)
            tied |= cut & (values[row, at] == values[row, after])
            skews = []
            for counts, wanted in ((is_m[row, at], wanted_m), (is_f[row, at], wanted_f)):
                with np.errstate(divide="ignore", invalid="ignore"):
                    value = np.log(counts / np.maximum(depth, 1) / wanted)
                value = np.where(counts == 0, -np.inf, value)
                skews.append(np.where((wanted > 0) & np.isfinite(wanted), value, np.nan))
            stacked = np.stack(skews)
            defined = ~np.isnan(stacked)
            best = np.max(np.where(defined, stacked, -np.inf), axis=0)
            result[f"maxskew@{k}"] = np.where(defined.any(axis=0) & (depth > 0), best, np.nan)
    redo = np.flatnonzero(tied)
    if redo.size:
        ks = sorted(set(ks_bias) | set(ks_skew))
        if labels is None:
            labels = np.where(masculine, "masculine", np.where(feminine, "feminine", UNDEFINED))
        # NDKL (not reported) ranks every image; depth 1 keeps its cost out of the way
        exact = retrieval_metrics_batch(matrix[redo], labels[redo], ks, ndkl_k=1)
        for k in ks_bias:
            result[f"bias@{k}"][redo] = exact[f"bias_gensynth@{k}"]
        for k in ks_skew:
            result[f"maxskew@{k}"][redo] = exact[f"maxskew@{k}"]
    return result


def random_scores(rng: np.random.Generator, images: int) -> ScoreBlock:
    """The random model: ``rng.random((stop - start, images))`` per block, drawn in
    query order, so the blocks together are ``rng.random((queries, images))``."""

    def block(start: int, stop: int) -> np.ndarray:
        return rng.random((stop - start, images))

    return block


def tfidf_scores(
    captions: Sequence[str], caption_images: ArrayLike, queries: Sequence[str] | None = None
) -> ScoreBlock:
    """The TF-IDF model on ``captions``: query ``q``'s score of image ``i`` is ``max``
    over ``i``'s captions ``c`` of ``cos(tfidf(q), tfidf(c))``; TF-IDF fitted on
    ``captions``. The queries are ``queries``, default ``captions`` themselves, in order.

    ``caption_images`` must be non-decreasing and cover ``0 .. images - 1`` (every image
    has a caption), as :func:`contrastkit.audit.job.audit` builds them.
    """
    owners = np.asarray(caption_images, dtype=np.int64)
    if owners.size and (np.any(np.diff(owners) < 0) or owners[0] != 0):
        raise ValueError("captions must be grouped by image, images in order from 0")
    starts = np.flatnonzero(np.r_[True, np.diff(owners) != 0]) if owners.size else owners
    if owners.size and starts.size != owners[-1] + 1:
        raise ValueError("every image needs at least one caption")
    vectorizer = Tfidf.fit(captions)
    transposed = vectorizer.transform(captions).T.tocsc()
    matrix = vectorizer.transform(captions if queries is None else queries)

    def block(start: int, stop: int) -> np.ndarray:
        similarity = np.asarray((matrix[start:stop] @ transposed).toarray())
        result: np.ndarray = np.maximum.reduceat(similarity, starts, axis=1)
        return result

    return block


def balanced_subsample(labels: Sequence[str], rng: np.random.Generator) -> np.ndarray:
    """Indices (sorted) of a gender-balanced subsample (GenSynth Sec. 3.4, Tab. 1).

    Every image of the rarer gender, as many drawn without replacement from the other,
    and ``floor(u * 2n / (1 - u))`` undefined images (``u`` their share of ``labels``,
    ``n`` images per gender), so the undefined share stays ``u`` up to rounding.
    """
    names = np.asarray(labels, dtype=object)
    masculine = np.flatnonzero(names == "masculine")
    feminine = np.flatnonzero(names == "feminine")
    undefined = np.flatnonzero((names != "masculine") & (names != "feminine"))
    n = min(masculine.size, feminine.size)
    labelled = names.size - undefined.size
    # floor(u * 2n / (1 - u)) with u = undefined / all, in exact integer arithmetic
    keep_undefined = undefined.size if labelled == 0 else (undefined.size * 2 * n) // labelled
    keep_undefined = min(keep_undefined, undefined.size)
    chosen = [
        rng.choice(masculine, n, replace=False),
        rng.choice(feminine, n, replace=False),
        rng.choice(undefined, keep_undefined, replace=False),
    ]
    return np.sort(np.concatenate(chosen)).astype(np.int64)


class RunStatistics(TypedDict):
    """A metric over the balanced runs: the mean and sample standard deviation of its
    finite run means (``nan`` without enough of them), and every run's mean."""

    mean: float
    std: float
    runs: list[float]


class _ModelOriginal(TypedDict):
    original: dict[str, Summary]


class ModelBaselines(_ModelOriginal, total=False):
    """One model's baselines: each metric on the data as is (``original``) and, with
    balanced subsamples, over them (``balanced``)."""

    balanced: dict[str, RunStatistics]


class BalancedSet(TypedDict):
    """One balanced subsample: its number, its images and how many of each label."""

    run: int
    images: int
    masculine: int
    feminine: int
    undefined: int


class _BaselineSets(TypedDict):
    ks_bias: list[int]
    ks_skew: list[int]
    queries: int
    labelled_images: int
    ranked_images: int
    models: dict[str, ModelBaselines]


class Baselines(_BaselineSets, total=False):
    """The ``baselines`` section of ``audit.json``: the cut-offs, what was ranked and
    each model's figures; the weights notes and fitted CLIP-clip files where there are
    any, and the balanced subsamples where the audit drew them."""

    weights_notes: dict[str, str]
    clip_clip_files: dict[str, str]
    balanced_sets: list[BalancedSet]


def run_statistics(runs: Sequence[Mapping[str, Summary]]) -> dict[str, RunStatistics]:
    """Mean and sample standard deviation (``ddof=1``) of each metric's run means."""
    if not runs:
        return {}
    result: dict[str, RunStatistics] = {}
    for name in runs[0]:
        means = np.array([run[name]["mean"] for run in runs], dtype=np.float64)
        finite = means[np.isfinite(means)]
        result[name] = {
            "mean": float(finite.mean()) if finite.size else math.nan,
            "std": float(finite.std(ddof=1)) if finite.size > 1 else math.nan,
            "runs": means.tolist(),
        }
    return result
