"""The report toolkit's table helpers, shared by every markdown report of the evaluators
(one model, several side by side, template flipping, contrast sets, zero-shot
disparity, stereotypes): numbers and intervals as table cells, the note under a table
with intervals, and the markdown table itself.

The layer-independent pieces (:func:`~contrastkit.text.format_number`,
:func:`~contrastkit.text.format_p`,
:func:`~contrastkit.text.escape_cell`, :func:`~contrastkit.text.markdown_table`,
:func:`~contrastkit.text.table_header`, :func:`~contrastkit.text.table_row`) are
defined in :mod:`contrastkit.text`, where the dataset builders and curation reports
below the evaluators can use them too, and are importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking
from contrastkit.text import (
    MISSING,
    UNDEFINED,
    escape_cell,
    format_number,
    format_p,
    markdown_table,
    table_header,
    table_row,
)

__all__ = [
    "MISSING",
    "RANDOM_WEIGHTS_CELL",
    "comparison_notes",
    "cutoff_cell",
    "escape_cell",
    "format_interval",
    "format_number",
    "format_p",
    "interval_note",
    "k_of",
    "markdown_table",
    "mean_sigma",
    "metric_names",
    "model_cell",
    "occupation_cell",
    "result_ks",
    "table",
    "table_header",
    "table_row",
]

#: What a model's cell in a side-by-side table adds when its weights are random.
RANDOM_WEIGHTS_CELL = " (random weights)"


def format_interval(values: Mapping[str, Any], key: str, digits: int = 2) -> str:
    """``values[key]`` for a table cell, followed by its interval ``values[key + "_ci"]``
    as ``[low, high]`` when there is one, ``[n/a: reason]`` when the bootstrap ran but the
    interval is undefined for a stated reason (one item: ``bootstrap.few_items``), and
    ``–`` alone when the figure is missing."""
    text = format_number(values.get(key), digits)
    ci = values.get(f"{key}_ci")
    bounds = [ci.get("low"), ci.get("high")] if isinstance(ci, Mapping) else []
    numbers = [float(b) for b in bounds if isinstance(b, int | float) and math.isfinite(b)]
    if len(numbers) == 2:
        low, high = (format_number(number, digits) for number in numbers)
        return f"{text} [{low}, {high}]"
    if isinstance(ci, Mapping) and ci.get("reason") and text != MISSING:
        return f"{text} [{UNDEFINED}: {ci['reason']}]"
    return text


def interval_note(entries: Sequence[Mapping[str, Any]], what: str) -> list[str]:
    """A line saying what ``[low, high]`` means (level, ``what`` it is an interval of,
    resamples) and a blank line, when any entry has an interval; nothing otherwise."""
    for entry in entries:
        for key, value in entry.items():
            if key.endswith("_ci") and isinstance(value, Mapping) and "level" in value:
                level = round(100 * float(value["level"]), 1)
                return [
                    f"[low, high]: {level:g}% percentile bootstrap interval {what} "
                    f"({value.get('resamples')} resamples).",
                    "",
                ]
    return []


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A report table as lines and a blank line: every column ``---``, each cell through
    :func:`format_number` (2 places, ``–`` for undefined) and
    :func:`escape_cell` (:func:`~contrastkit.text.markdown_table`)."""
    return markdown_table(header, rows)


def metric_names(retrieval: Mapping[str, Any]) -> list[str]:
    """The retrieval metrics of a section with K cutoffs ``ks`` (default 5 and 10), in
    report order: ``bias@K`` for each K, ``maxskew@K`` for each K, ``NDKL``."""
    ks = retrieval.get("ks", [5, 10])
    return [f"bias@{k}" for k in ks] + [f"maxskew@{k}" for k in ks] + ["NDKL"]


def mean_sigma(values: Mapping[str, Any]) -> str:
    """``mean ± sigma``, with the mean's interval ``[low, high]`` when there is one."""
    text = format_interval(values, "mean")
    mean, _, interval = text.partition(" ")
    sigma = f"{mean} ± {format_number(values.get('sigma'))}"
    return f"{sigma} {interval}" if interval else sigma


def model_cell(results: Mapping[str, Any], name: Any = None) -> str:
    """A model's name in a comparison table (``metadata.model_name`` of a results file,
    or ``name`` when given), marked when its weights are random."""
    text = str(results["metadata"]["model_name"] if name is None else name)
    return text + RANDOM_WEIGHTS_CELL if results.get("random_weights") else text


def k_of(name: str) -> int | None:
    """The K of a metric name (``bias@10``, ``bias_gensynth@10``), or ``None``."""
    k = name.partition("@")[2].partition("_")[0]
    return int(k) if k.isdigit() else None


def cutoff_cell(text: str, name: str, cutoffs: Mapping[int, Mapping[str, Any]]) -> str:
    """A table cell of metric ``name``: its marking in place of ``text`` when its K
    covers every query's candidates, beside it when it covers some queries' only
    (:func:`~contrastkit.evaluators.metrics.cutoff_marking`, the same predicate as the
    report's warnings)."""
    k = k_of(name)
    warning = cutoffs.get(k) if k is not None else None
    if warning is None:
        return text
    if covers_every_query(warning):
        return cutoff_marking(warning)
    return f"{text} ({cutoff_marking(warning)})"


def occupation_cell(
    retrieved: Mapping[str, Any], name: str, k: int, cutoffs: Mapping[int, Mapping[str, Any]]
) -> Any:
    """An occupation's Bias@``k``, or n/a with the reason when ``k`` covers its images."""
    warning = cutoffs.get(k)
    if warning is not None and name in (warning.get("queries") or []):
        return cutoff_marking(warning) if covers_every_query(warning) else (
            f"{UNDEFINED}: K covers all its candidates"
        )  # fmt: skip
    return retrieved.get(name, {}).get(f"bias@{k}")


def result_ks(result: Mapping[str, Any]) -> list[int]:
    """The retrieval cut-offs K a result was evaluated at (a VisoGender result's
    ``retrieval_bias.ks`` or ``metadata.ks``, a contrast set's ``summary.ks``)."""
    found = (
        (result.get("retrieval_bias") or {}).get("ks")
        or (result.get("summary") or {}).get("ks")
        or (result.get("metadata") or {}).get("ks")
        or []
    )
    return [int(k) for k in found]


def comparison_notes(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The notes above a side-by-side table: when any of its models has random weights,
    and when its results were evaluated at different K (with no K in common, none of
    their @K figures can be compared; with some, only those)."""
    lines: list[str] = []
    if any(r.get("random_weights") for r in results):
        lines += [
            "> **Random weights.** Models marked *(random weights)* are tiny test models or "
            "architectures without trained weights: their figures are a pipeline check, not "
            "a measurement.",
            "",
        ]
    sets = [result_ks(r) for r in results if result_ks(r)]
    if len(sets) > 1 and len({tuple(sorted(ks)) for ks in sets}) > 1:
        shared = sorted(set.intersection(*(set(ks) for ks in sets)))
        listed = "; ".join(
            f"{r.get('model') or (r.get('metadata') or {}).get('model_name', 'model')}: K = "
            f"{', '.join(map(str, result_ks(r)))}"
            for r in results
            if result_ks(r)
        )
        lines += [
            "> **Different K.** These results were evaluated at different cut-offs "
            f"({listed}). "
            + (
                f"Only K = {', '.join(map(str, shared))} is in every result: compare "
                "those columns only; a result lacks the others (–)."
                if shared
                else "They share no K: none of their Bias@K or MaxSkew@K figures can be "
                "compared side by side. Evaluate them with the same --k."
            ),
            "",
        ]
    return lines
