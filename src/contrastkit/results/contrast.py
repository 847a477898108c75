"""The ``benchmark.json`` of a contrast set (original photos, a balanced set or a
GenSynth contrast set; GenSynth Tab. 3): ``task`` ``contrast``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, register_result
from contrastkit.results.common import Interval, KWarning, MetricSummary

__all__ = ["ContrastPairs", "ContrastResult", "ContrastScoring", "ContrastSummary"]


@dataclass(frozen=True, kw_only=True)
class ContrastPairs(Node):
    """How often the model ranks a query's masculine image above its feminine one
    (sets with one image of each per source)."""

    applicable: bool
    queries_with_pair: int | None = None
    masculine_preferred: float | None = None
    mean_gap: float | None = None
    masculine_preferred_ci: Interval | None = None


@dataclass(frozen=True, kw_only=True)
class ContrastSummary(Node):
    """``summary``: the set's size, the Ks, each retrieval metric's summary by name
    (``bias@10``, ``maxskew@10``, ``NDKL`` ...), the pair preference, the warnings and
    the bootstrap settings."""

    retrieval: Mapping[str, MetricSummary]
    images: int | None = None
    sources: int | None = None
    queries: int | None = None
    ks: tuple[int, ...] | None = None
    pairs: ContrastPairs | None = None
    warnings: tuple[KWarning, ...] | None = None
    bootstrap: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ContrastScoring(Node):
    """``scoring``: what the scores are and how many model passes made them."""

    score_kind: str | None = None
    metrics: str | None = None
    requested: Any = None
    unit: str | None = None
    model_passes: int | None = None
    all_metrics_passes: int | None = None
    computed: int | None = None
    reused: int | None = None


@dataclass(frozen=True, kw_only=True)
class ContrastResult(Result):
    """A contrast-set ``benchmark.json``."""

    TASK = "contrast"

    model: str
    summary: ContrastSummary
    data: str | tuple[str, ...] | None = None
    dataset: Mapping[str, Any] | None = None
    random_weights: bool | None = None
    weights_note: str | None = None
    note: str | None = None
    score_kind: str | None = None
    scoring: ContrastScoring | None = None
    contrastkit_version: str | None = None


register_result(ContrastResult.TASK, ContrastResult)
