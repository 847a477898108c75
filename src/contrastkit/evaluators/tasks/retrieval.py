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

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contrastkit.evaluators.data import EvalItem
from contrastkit.evaluators.metrics import retrieval_metrics, summarize
from contrastkit.schema import Context
from contrastkit.templates import neutral_query

__all__ = [
    "DEFAULT_KS",
    "RetrievalQuery",
    "query_record",
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


def query_record(query: RetrievalQuery, item: EvalItem, score: float, model: str) -> dict[str, Any]:
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


def _section(
    groups: Mapping[str, Sequence[Mapping[str, Any]]], ks: Sequence[int], ndkl_k: int | None
) -> dict[str, Any]:
    per_occupation = {
        occupation: retrieval_metrics(
            np.array([record["score"] for record in group]),
            np.array([record["label"] for record in group], dtype=object),
            ks,
            ndkl_k=ndkl_k,
        )
        for occupation, group in groups.items()
    }
    names = next(iter(per_occupation.values())).keys() if per_occupation else []
    section: dict[str, Any] = {
        name: summarize(values[name] for values in per_occupation.values()) for name in names
    }
    section["n_queries"] = len(per_occupation)
    section["per_occupation"] = per_occupation
    return section


def summarize_retrieval(
    records: Sequence[Mapping[str, Any]],
    ks: Sequence[int] = DEFAULT_KS,
    *,
    ndkl_k: int | None = None,
) -> dict[str, Any]:
    """The ``retrieval_bias`` section of the benchmark JSON.

    Per context (``two_person_images``, ``single_person_images``): for every metric of
    :func:`~contrastkit.evaluators.metrics.retrieval_metrics`, the mean and sample
    standard deviation across occupations (``{"mean", "sigma", "n", "n_undefined"}``,
    Tab. 3), and ``per_occupation`` values (Appendix C). The metric summaries of the
    two-person images (or of the single-person ones when there are none) are repeated at
    the top level, as in Appendix J, with ``context`` saying which.
    """
    sections: dict[str, Any] = {}
    for context, name in CONTEXT_SECTIONS.items():
        groups = {
            occupation: group
            for (ctx, occupation), group in by_query(records).items()
            if ctx == context.value
        }
        if groups:
            sections[name] = _section(groups, ks, ndkl_k)
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
    result.update(sections)
    return result
