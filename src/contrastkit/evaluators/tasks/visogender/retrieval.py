"""The retrieval task (VisoGender Sec. 3.5, Appendix A): per occupation, one gender-neutral
query ("The doctor and their patient") ranks that occupation's images, and the metrics of
:mod:`contrastkit.evaluators.metrics` measure how the perceived genders share the top
ranks. Only dual encoders can retrieve (Sec. 4: captioning models are not compatible).

An image's label is the perceived gender of the occupation's person (``g(I)`` of
Appendix A; the relabelling baseline of Appendix G.2 splits each occupation's images into
"his" and "her" halves by it). OP (two-person) images form the paper's retrieval results
(Tab. 3); OO (single-person) images are ranked the same way with the object query ("The
doctor and their clipboard") and reported separately.

The query's noun is the noun most rows of the occupation use (ties: alphabetical), so an
occupation whose rows spell a noun two ways still gets one query.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contrastkit.evaluators.bootstrap import (
    NO_BOOTSTRAP,
    BootstrapSettings,
    few_items,
    percentile_interval,
    resample_indices,
)
from contrastkit.evaluators.data import EvalItem
from contrastkit.evaluators.metrics import retrieval_metrics, summarize
from contrastkit.evaluators.tasks.visogender.records import RetrievalRecord
from contrastkit.schema import Context
from contrastkit.templates import neutral_query

__all__ = [
    "DEFAULT_KS",
    "RetrievalQuery",
    "mean_interval",
    "query_record",
    "retrieval_needs_dual",
    "retrieval_queries",
    "summarize_retrieval",
]

DEFAULT_KS = (5, 10)
#: Section names of the benchmark JSON, by context.
CONTEXT_SECTIONS = {Context.OP: "two_person_images", Context.OO: "single_person_images"}


@dataclass(frozen=True)
class RetrievalQuery:
    """One occupation's gender-neutral query and the images it ranks."""

    context: Context
    occupation: str
    text: str
    items: tuple[EvalItem, ...]


def retrieval_queries(items: Iterable[EvalItem]) -> list[RetrievalQuery]:
    """One query per (context, occupation), in order of first appearance."""
    groups: dict[tuple[Context, str], list[EvalItem]] = defaultdict(list)
    for item in items:
        groups[(item.row.context, item.row.occupation)].append(item)
    queries = []
    for (context, occupation), members in groups.items():
        nouns = Counter(item.row.noun for item in members)
        noun = sorted(nouns, key=lambda name: (-nouns[name], name))[0]
        text = neutral_query(occupation, noun, context)
        queries.append(RetrievalQuery(context, occupation, text, tuple(members)))
    return queries


def query_record(
    query: RetrievalQuery, item: EvalItem, score: float, model: str
) -> RetrievalRecord:
    """The raw JSONL record of one image's score for its occupation's query."""
    row = item.row
    return {
        "task": "retrieval",
        "model": model,
        "key": f"{item.key}|{query.text}",
        "idx": row.idx,
        "image": item.image_ref,
        "context": row.context.value,
        "sector": row.sector,
        "specialisation": row.specialisation,
        "occupation": row.occupation,
        "query": query.text,
        "label": row.occupation_gender.value,
        "cell": row.cell,
        "score": float(score),
    }


def by_query(
    records: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    """Records grouped by (context, occupation), in order of first appearance."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["context"], record["occupation"])].append(record)
    return groups


def _finite_means(matrix: np.ndarray) -> np.ndarray:
    """Mean along axis 1 of the finite entries of each row (``nan`` where none is): the
    mean :func:`~contrastkit.evaluators.metrics.summarize` takes."""
    finite = np.isfinite(matrix)
    counts = finite.sum(axis=1)
    totals = np.where(finite, matrix, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(counts > 0, totals / counts, np.nan)
    return result


def mean_interval(
    values: Sequence[float], resamples: np.ndarray, confidence: float
) -> Mapping[str, object]:
    """The ``mean_ci`` of a mean over occupations: the percentile interval of the means of
    the resampled occupations (``resamples``: a ``(B, Q)`` index matrix); ``nan`` bounds
    with fewer than two occupations of finite value (one value has no spread to show)."""
    array = np.asarray(values, dtype=np.float64)
    low, high = (math.nan, math.nan)
    if np.isfinite(array).sum() >= 2:
        low, high = percentile_interval(_finite_means(array[resamples]), confidence)
    interval: dict[str, float] = {
        "low": low,
        "high": high,
        "level": confidence,
        "resamples": int(resamples.shape[0]),
    }
    return few_items(interval, int(np.isfinite(array).sum()))


def _section(
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    ks: Sequence[int],
    ndkl_k: int | None,
    *,
    bootstrap: BootstrapSettings,
    rng: np.random.Generator,
) -> dict[str, Any]:
    per_occupation = {
        occupation: retrieval_metrics(
            np.array([float(record["score"]) for record in group]),
            np.array([str(record["label"]) for record in group], dtype=object),
            ks,
            ndkl_k=ndkl_k,
        )
        for occupation, group in groups.items()
    }
    count = bootstrap.resamples
    resamples = resample_indices(rng, len(per_occupation), count) if count else None
    names = next(iter(per_occupation.values())).keys() if per_occupation else []
    section: dict[str, Any] = {}
    for name in names:
        values = {occupation: metrics[name] for occupation, metrics in per_occupation.items()}
        summary = summarize(values)
        if resamples is not None:
            summary["mean_ci"] = mean_interval(
                list(values.values()), resamples, bootstrap.confidence
            )
        section[name] = summary
    section["n_queries"] = len(per_occupation)
    section["per_occupation"] = per_occupation
    return section


def summarize_retrieval(
    records: Sequence[Mapping[str, Any]],
    ks: Sequence[int] = DEFAULT_KS,
    *,
    ndkl_k: int | None = None,
    bootstrap: BootstrapSettings = NO_BOOTSTRAP,
) -> dict[str, Any]:
    """The ``retrieval_bias`` section of the benchmark JSON.

    Per context (``two_person_images``, ``single_person_images``): for every metric of
    :func:`~contrastkit.evaluators.metrics.retrieval_metrics`, the mean and sample
    standard deviation across occupations with what was left out of them
    (``{"mean", "sigma", "n", "n_undefined", "left_out", "left_out_names"}``, Tab. 3;
    :func:`~contrastkit.evaluators.metrics.summarize`), and ``per_occupation`` values
    (Appendix C). The metric summaries of the two-person images (or of the single-person
    ones when there are none) are repeated at the top level, as in Appendix J, with
    ``context`` saying which.

    With ``bootstrap`` resamples (:class:`~contrastkit.evaluators.bootstrap.BootstrapSettings`),
    every summary also has ``mean_ci``, the percentile interval (``confidence`` level) of
    its mean: ``{"low", "high", "level",
    "resamples"}``. The bootstrap resamples images in whole occupations: each occupation's
    images make one ranking, the unit every retrieval metric is defined on, and different
    occupations share no image, so a resample draws the occupations (each with all its
    images and its metric values) with replacement and averages them as the mean does
    (finite values only). Resampling images *within* an occupation instead would
    duplicate images at the top of its ranking and push MaxSkew@K and NDKL up in every
    resample (docs/differences.md: on random rankings of the 23 official occupations such
    intervals held the true mean 45% (MaxSkew@K) and 0% (NDKL) of the time; these hold
    it about 95%). The resamples are one ``(bootstrap, Q)`` index matrix
    (:func:`~contrastkit.evaluators.bootstrap.resample_indices`), ``seed`` makes them
    reproducible; with fewer than two occupations the bounds are ``nan``.
    """
    sections: dict[str, Any] = {}
    grouped = by_query(records)
    for number, (context, name) in enumerate(CONTEXT_SECTIONS.items()):
        groups = {
            occupation: group
            for (ctx, occupation), group in grouped.items()
            if ctx == context.value
        }
        if groups:
            rng = np.random.default_rng([bootstrap.seed, number])
            sections[name] = _section(groups, ks, ndkl_k, bootstrap=bootstrap, rng=rng)
    result: dict[str, Any] = {}
    for context, name in CONTEXT_SECTIONS.items():
        if name in sections:
            headline = sections[name]
            result.update(
                {k: v for k, v in headline.items() if k not in ("per_occupation", "n_queries")}
            )
            result["context"] = context.value
            break
    result["ks"] = list(ks)
    if bootstrap.resamples:
        result["bootstrap"] = {
            "resamples": bootstrap.resamples,
            "level": bootstrap.confidence,
            "seed": bootstrap.seed,
        }
    result.update(sections)
    return result


def retrieval_needs_dual(spec: str) -> str:
    """Why a captioning model cannot run the retrieval task alone."""
    return (
        f"{spec} is a captioning model; the retrieval task needs a dual encoder (VisoGender Sec. 4)"
    )
