"""The ``benchmark.json`` of counterfactual decision probes (``evaluate --task
decisions``, :mod:`contrastkit.evaluators.tasks.decision_probes`): ``task`` ``decisions``.
The task makes this result itself
(:func:`~contrastkit.evaluators.tasks.decision_probes.benchmark.decisions_result`) and its
reports and plots read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contrastkit.results.base import Node, Result, matching, register_result
from contrastkit.results.common import Interval

__all__ = [
    "DecisionFigures",
    "DecisionScoring",
    "DecisionsResult",
    "GenderBiasVL",
    "OccupationFigures",
    "OccupationPair",
]


@dataclass(frozen=True, kw_only=True)
class DecisionFigures(Node):
    """One question family under one scoring mode
    (:func:`contrastkit.evaluators.decision_metrics.family_figures`), each figure's
    interval by its name + ``_ci``."""

    kind: str
    n: int
    n_sources: int
    n_compared: int
    n_flips: int
    n_refusals_masculine: int
    n_refusals_feminine: int
    n_unparseable_masculine: int
    n_unparseable_feminine: int
    n_undefined_masculine: int | None = None
    n_undefined_feminine: int | None = None
    flip_rate: float | None = None
    stereotyped_flip_share: float | None = None
    gap: float | None = None
    abs_gap: float | None = None
    first_position_rate: float | None = None
    refusal_rate_masculine: float | None = None
    refusal_rate_feminine: float | None = None
    unparseable_rate_masculine: float | None = None
    unparseable_rate_feminine: float | None = None
    mean_masculine: float | None = None
    mean_feminine: float | None = None
    intervals: Mapping[str, Interval | None] = matching(r"\w+_ci")


@dataclass(frozen=True, kw_only=True)
class OccupationPair(Node):
    """One stereotyped occupation pair: its figures, and GenderBias-VL's ``B_pair``
    under log-probability scoring."""

    family: str
    masculine_stereotyped: str
    feminine_stereotyped: str
    male_share_masculine_stereotyped: float
    male_share_feminine_stereotyped: float
    n: int
    flip_rate: float | None = None
    gap: float | None = None
    b_pair: float | None = None


@dataclass(frozen=True, kw_only=True)
class OccupationFigures(Node):
    """One occupation of a yes-no family: the signed gap of answering yes (masculine
    minus feminine), its flip rate and the labour statistics' share of men."""

    family: str
    male_share: float
    n: int
    yes_gap: float | None = None
    flip_rate: float | None = None


@dataclass(frozen=True, kw_only=True)
class GenderBiasVL(Node):
    """GenderBias-VL's overall bias ``B_ovl``; ``ipss`` with the reason it is absent."""

    b_ovl: float | None = None
    ipss: float | None = None
    ipss_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class DecisionScoring(Node):
    """How the answers were scored: the modes, the templates, the decoding settings."""

    modes: tuple[str, ...]
    questions: str
    decoding: Mapping[str, Any]
    answer_instruction: str | None = None
    refusals: tuple[str, ...] | None = None
    logprob: str | None = None


@dataclass(frozen=True, kw_only=True)
class DecisionsResult(Result):
    """A decisions ``benchmark.json``: per scoring mode and question family the
    figures (``summary``), the occupation pairs, the occupations and their correlation
    with labour statistics; ``paired_answers`` (mode -> how many paired answers the
    figures come from, per option order) and ``warnings`` (answers that never change,
    answers with no probability) where the file has them."""

    TASK = "decisions"

    model: str
    data: str
    sources: int
    scoring: DecisionScoring
    summary: Mapping[str, Mapping[str, DecisionFigures]]
    occupation_pairs: Mapping[str, Mapping[str, OccupationPair]]
    occupations: Mapping[str, Mapping[str, OccupationFigures]]
    labour: Mapping[str, Mapping[str, Any]]
    genderbias_vl: GenderBiasVL | None = None
    paired_answers: Mapping[str, Mapping[str, int]] | None = None
    warnings: tuple[str, ...] | None = None
    left_out: Mapping[str, int] | None = None
    random_weights: bool | None = None
    weights_note: str | None = None
    metadata: Mapping[str, Any] | None = None
    contrastkit_version: str | None = None


register_result(DecisionsResult.TASK, DecisionsResult)
