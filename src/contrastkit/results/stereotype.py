"""The ``benchmark.json`` of a stereotype probe set (VLStereoSet): ``task``
``stereotype``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, matching, register_result
from contrastkit.results.common import Interval, SkippedRows
from contrastkit.results.harness import HarnessSection

__all__ = [
    "BlankImage",
    "ShiftInstance",
    "ShiftStats",
    "Shifting",
    "StereotypeMetadata",
    "StereotypeResult",
    "StereotypeScores",
    "StereotypeSummary",
]


@dataclass(frozen=True, kw_only=True)
class StereotypeScores(Node):
    """vlrs, vlbs and ivlas (VLStereoSet Sec. 3.4) over some probes, with their
    intervals by the figure's name + ``_ci``."""

    n: int
    n_stereotype: int | None = None
    n_anti_stereotype: int | None = None
    vlrs: float | None = None
    vlbs: float | None = None
    ivlas: float | None = None
    intervals: Mapping[str, Interval | None] = matching(r"\w+_ci")


@dataclass(frozen=True, kw_only=True)
class StereotypeSummary(Node):
    """The scores overall and per category (gender, profession, race, religion)."""

    overall: StereotypeScores
    categories: Mapping[str, StereotypeScores] | None = None


@dataclass(frozen=True, kw_only=True)
class ShiftStats(Node):
    """lmss or vlss (Sec. 3.5) over the probes that have them."""

    n: int
    mean: float | None = None
    median: float | None = None
    share_positive: float | None = None
    min: float | None = None
    max: float | None = None
    mean_ci: Interval | None = None


@dataclass(frozen=True, kw_only=True)
class ShiftInstance(Node):
    """One probe's lmss and vlss."""

    id: str
    category: str | None = None
    lmss: float | None = None
    vlss: float | None = None


@dataclass(frozen=True, kw_only=True)
class Shifting(Node):
    """``shifting``: intra- and inter-modal bias (lmss, vlss)."""

    candidates: int | None = None
    without_neutral: int | None = None
    lmss: ShiftStats | None = None
    vlss: ShiftStats | None = None
    categories: Mapping[str, Mapping[str, Any]] | None = None
    instances: tuple[ShiftInstance, ...] | None = None
    available: bool | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class StereotypeMetadata(Node):
    """``metadata``: the probes read and the bootstrap settings."""

    rows: int | None = None
    bootstrap: int | None = None
    confidence: float | None = None
    seed: int | None = None
    skip_missing: bool | None = None
    experiment_desc: str | None = None
    n_unparseable: int | None = None


@dataclass(frozen=True, kw_only=True)
class BlankImage(Node):
    """The blank image of vlss (its size and colour)."""

    size: tuple[int, ...]
    colour: str


@dataclass(frozen=True, kw_only=True)
class StereotypeResult(Result):
    """A stereotype ``benchmark.json`` (``contrastkit evaluate`` on a probe set, or a
    harness's answers to its export: then with ``harness``)."""

    TASK = "stereotype"

    model: str
    summary: StereotypeSummary
    reference_models: Mapping[str, StereotypeSummary]
    shifting: Shifting
    data: tuple[str, ...] | None = None
    random_weights: bool | None = None
    weights_note: str | None = None
    score_kind: str | None = None
    softmax_scale: float | None = None
    blank_image: BlankImage | None = None
    metadata: StereotypeMetadata | None = None
    skipped_rows: SkippedRows | None = None
    harness: HarnessSection | None = None
    contrastkit_version: str | None = None


register_result(StereotypeResult.TASK, StereotypeResult)
