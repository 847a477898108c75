"""Pieces every task's markdown report is built from, besides the tables
(:mod:`.tables`): the random-weights note, a result's warnings, the warnings of a
side-by-side report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contrastkit.evaluators.metrics import cutoffs_by_k

__all__ = ["comparison_warnings", "warnings_section", "weights_lines"]


def comparison_warnings(labelled: Sequence[tuple[str, Sequence[Any]]]) -> list[str]:
    """A ``## Warnings`` section of a side-by-side report: each row's warnings (K at or
    above a query's candidates), prefixed with what the row is; nothing without any."""
    lines = []
    for label, warnings in labelled:
        for warning in cutoffs_by_k(warnings).values():
            lines.append(f"- {label}: {str(warning.get('message', '')).rstrip('.')}.")
    return ["## Warnings", "", *lines, ""] if lines else []


def weights_lines(results: Mapping[str, Any]) -> list[str]:
    """The note at the top of a report of a model with random weights (the results'
    ``weights_note``), as a markdown quote and a blank line; nothing for trained
    weights."""
    if not results.get("random_weights"):
        return []
    note = results.get("weights_note") or (
        "This model has random weights: these figures are a pipeline check, not a measurement."
    )
    return [f"> **Random weights.** {note}", ""]


def warnings_section(warnings: Sequence[Any]) -> list[str]:
    """A ``## Warnings`` section listing each warning (a string, or an entry with a
    ``message``) of a result; nothing when there is none."""
    if not warnings:
        return []
    lines = ["## Warnings", ""]
    for warning in warnings:
        text = warning.get("message", "") if isinstance(warning, Mapping) else str(warning)
        lines.append(f"- {text.rstrip('.')}.")
    return [*lines, ""]
