"""The dataset audit's ``audit.json`` (``contrastkit audit``): ``task`` ``audit``
(files written before that field are recognised by their ``composition`` and
``analyses``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, key, register_result

__all__ = ["AuditReport", "ClusterMember", "Composition", "ContextCluster", "ContextClusters"]


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
class ClusterMember(Node):
    """One image of a context cluster: its id, its label and its file (relative to the
    audited data's folder; ``None`` where the image has no file of its own, as a
    contrast set's, whose id ``source:gender`` names its row)."""

    image: str
    label: str
    file: str | None = None


@dataclass(frozen=True, kw_only=True)
class ContextCluster(Node):
    """One context cluster: its size, labels, ``ΔM`` (``factor_pp``), salient words and
    its first members in data order (at most the section's ``members_per_cluster``;
    ``size`` counts them all; absent in audits written before members were listed)."""

    cluster: int
    size: int
    masculine: int
    feminine: int
    masculine_share: float
    factor_pp: float
    words: tuple[str, ...]
    members: tuple[ClusterMember, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class ContextClusters(Node):
    """``clusters``: the context clusters of the neutral captions (GenSynth Tab. 6), or
    ``{"skipped": reason}`` where the set cannot have them (then only ``skipped``)."""

    skipped: str | None = None
    embedding: str | None = None
    m: int | None = key("M", default=None)
    images: int | None = None
    masculine_share: float | None = None
    members_per_cluster: int | None = None
    clusters: tuple[ContextCluster, ...] | None = None


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
    clusters: ContextClusters | None = None
    context: Mapping[str, Any] | None = None
    random_weights: bool | None = None
    weights_notes: Mapping[str, str] | None = None
    analyses: tuple[str, ...] | None = None
    plots: tuple[str, ...] | None = None


register_result(AuditReport.TASK, AuditReport)
