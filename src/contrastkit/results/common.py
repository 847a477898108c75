"""Pieces shared by several task trees: intervals, per-metric summaries, warnings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node

__all__ = ["METRIC_KEY", "Interval", "KWarning", "MetricSummary", "SkippedRows"]

#: The keys of per-metric summaries beside a retrieval section's fixed keys:
#: ``bias@5``, ``skew_masculine@10``, ``minskew@5_official_smoothed``, ``NDKL``.
METRIC_KEY = r"\w+@\d+\w*|NDKL\w*"


@dataclass(frozen=True, kw_only=True)
class Interval(Node):
    """A bootstrap confidence interval, the ``x_ci`` sibling of a figure ``x``;
    ``reason`` says why its bounds are ``null`` (fewer than two items to resample)."""

    low: float | None
    high: float | None
    level: float | None = None
    resamples: int | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class MetricSummary(Node):
    """One retrieval metric over the queries: the mean and standard deviation across
    them, how many queries gave a value, and why the others did not."""

    mean: float | None
    sigma: float | None = None
    n: int | None = None
    n_undefined: int | None = None
    left_out: Mapping[str, int] | None = None
    left_out_names: Mapping[str, Any] | None = None
    mean_ci: Interval | None = None


@dataclass(frozen=True, kw_only=True)
class KWarning(Node):
    """A retrieval K at or above the candidates of some queries (its @K figures are
    then no reading of the model)."""

    kind: str | None = None
    section: str | None = None
    k: int | None = None
    queries: tuple[Any, ...] | None = None
    n_queries: int | None = None
    every_query: bool | None = None
    candidates: int | None = None
    candidates_max: int | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class SkippedRows(Node):
    """The rows an evaluation left out (``--skip-missing``): how many, and each one."""

    count: int
    rows: tuple[Mapping[str, Any], ...] = ()
