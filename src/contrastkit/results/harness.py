"""A harness's answers read back (``contrastkit report --harness-predictions``): the
``harness`` section that a VisoGender or stereotype ``benchmark.json`` written from them
carries, and the ``harness_results.json`` of a contrast set (``task``
``harness-<set kind>``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, register_result

__all__ = ["HarnessCounts", "HarnessResult", "HarnessSection"]


@dataclass(frozen=True, kw_only=True)
class HarnessCounts(Node):
    """The items of one split and what became of them."""

    items: int
    answered: int
    unparseable: int
    missing: int


@dataclass(frozen=True, kw_only=True)
class HarnessSection(Node):
    """``harness``: which harness answered which export, the counts per split, the
    answers no option letter could be read from, position bias and the option-swap
    check, and the set's own figures."""

    harness: str
    set_kind: str
    counts: Mapping[str, HarnessCounts]
    export: str | None = None
    datasets: Mapping[str, str] | None = None
    predictions: tuple[str, ...] | None = None
    option_seed: int | None = None
    question: str | None = None
    answer_rule: str | None = None
    unparseable: tuple[Mapping[str, Any], ...] | None = None
    export_skipped_rows: tuple[Any, ...] | None = None
    position_bias: Mapping[str, Any] | None = None
    reversed_options: Mapping[str, Any] | None = None
    resolution_by_split: Mapping[str, Any] | None = None
    stereotype_by_split: Mapping[str, Any] | None = None
    figures: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class HarnessResult(Result):
    """``harness_results.json``: a contrast set's harness answers (``task``
    ``harness-contrast``)."""

    TASK = "harness-contrast"
    TASK_PATTERN = r"harness-[\w-]+"

    model: str
    harness: HarnessSection
    random_weights: bool | None = None
    weights_note: str | None = None
    contrastkit_version: str | None = None
    created: str | None = None


register_result(HarnessResult.TASK, HarnessResult)
