"""The dataset audit's ``audit.json`` (``contrastkit audit``): ``task`` ``audit``
(files written before that field are recognised by their ``composition`` and
``analyses``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, register_result

__all__ = ["AuditReport", "Composition"]


@dataclass(frozen=True, kw_only=True)
class Composition(Node):
    """``composition``: images and captions per perceived gender label."""

    images: int
    captions: int | None = None
    counts: Mapping[str, int] | None = None
    shares: Mapping[str, float | None] | None = None
    masculine_share_of_labelled: float | None = None
    masculine_to_feminine: float | None = None
    paper_counts: Mapping[str, int] | None = None
    cells: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True, kw_only=True)
class AuditReport(Result):
    """An ``audit.json`` (the ``report`` of :class:`contrastkit.audit.job.AuditResult`).
    Each analysis section is an object (or ``{"skipped":
    reason}`` where the set cannot have it)."""

    TASK = "audit"
    LEGACY = True

    data: str
    composition: Composition
    format: str | None = None
    split: str | None = None
    label_source: str | None = None
    config: Mapping[str, Any] | None = None
    baselines: Mapping[str, Any] | None = None
    caption_classifier: Mapping[str, Any] | None = None
    image_probe: Mapping[str, Any] | None = None
    clusters: Mapping[str, Any] | None = None
    context: Mapping[str, Any] | None = None
    random_weights: bool | None = None
    weights_notes: Mapping[str, str] | None = None
    analyses: tuple[str, ...] | None = None
    plots: tuple[str, ...] | None = None


register_result(AuditReport.TASK, AuditReport)
