"""The zero-shot disparity analysis's ``disparity.json``: ``task``
``zero-shot-disparity``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, matching, register_result

__all__ = ["ConceptDisparity", "ZeroShotCounts", "ZeroShotData", "ZeroShotResult"]

#: An interval written as ``[low, high]``.
Pair = tuple[float | None, ...]


@dataclass(frozen=True, kw_only=True)
class ZeroShotData(Node):
    """``data``: the folder read, its layout and split, and the concept map."""

    path: str
    layout: str | None = None
    split: str | None = None
    concept_map: str | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotCounts(Node):
    """``counts``: the images read, kept and dropped, and the concepts."""

    images_read: int | None = None
    images: Mapping[str, int] | None = None
    images_kept: int | None = None
    dropped: Mapping[str, int] | None = None
    without_concept: int | None = None
    images_without_concepts: str | None = None
    concepts_seen: int | None = None
    concepts_kept: int | None = None
    filter_split: str | None = None
    min_images: int | None = None


@dataclass(frozen=True, kw_only=True)
class ConceptDisparity(Node):
    """One concept: its positive images per group, the AP of each group by
    ``ap_<group>`` (``ap``), their difference and its interval; where calibration was
    computed the same for ECE (``ece_<group>``, ``ece_diff``: women - men); a ``note``
    where its AP is 100 by construction in a group."""

    concept: str
    positives: Mapping[str, int] | None = None
    ap: Mapping[str, float | None] = matching(r"ap_(?!diff$|diff_ci$)\w+")
    ap_diff: float | None = None
    ap_diff_ci: Pair | None = None
    ece: Mapping[str, float | None] = matching(r"ece_(?!diff$|diff_ci$)\w+")
    ece_diff: float | None = None
    ece_diff_ci: Pair | None = None
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotResult(Result):
    """A ``disparity.json``."""

    TASK = "zero-shot-disparity"

    data: ZeroShotData
    groups: tuple[str, ...]
    concepts: tuple[ConceptDisparity, ...]
    model: str | None = None
    predictions: str | None = None
    label: str | None = None
    random_weights: bool | None = None
    weights_note: str | None = None
    counts: ZeroShotCounts | None = None
    paper_counts: Mapping[str, int] | None = None
    prompt: str | None = None
    units: str | None = None
    bootstrap: Mapping[str, Any] | None = None
    map: Mapping[str, float | Pair | None] | None = None
    calibration: Mapping[str, Any] | None = None
    cache: Mapping[str, Any] | None = None
    plots: Mapping[str, str] | None = None
    contrastkit_version: str | None = None


register_result(ZeroShotResult.TASK, ZeroShotResult)
