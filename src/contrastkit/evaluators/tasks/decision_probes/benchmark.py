"""The typed result of one model's decision probes and its files:
:func:`decisions_result` makes the :class:`~contrastkit.results.decisions.DecisionsResult`
of the paired answers (every figure of ``benchmark.json``), and
:func:`write_decisions_files` writes it with the raw answers, ``report.md`` and the plots
(re-exported by :mod:`contrastkit.evaluators.tasks.decision_probes.task`)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from contrastkit import __version__
from contrastkit.evaluators.tasks.decision_probes.metrics import (
    PairedAnswer,
    constant_answers,
    family_result,
    option_gap,
    overall_bias,
    pair_bias,
)
from contrastkit.evaluators.tasks.decision_probes.plots import flip_figure, gap_figure
from contrastkit.evaluators.tasks.decision_probes.report import MODE_TITLES, decisions_markdown
from contrastkit.io import atomic_write_text
from contrastkit.results.base import Node
from contrastkit.results.decisions import (
    DecisionFigures,
    DecisionScoring,
    DecisionsResult,
    GenderBiasVL,
    OccupationFigures,
    OccupationPair,
)
from contrastkit.templates import Questions

if TYPE_CHECKING:
    from contrastkit.evaluators.stats import LaborShare

__all__ = [
    "RAW_FILE",
    "DecisionFigureSections",
    "DecisionsRun",
    "answer_warnings",
    "benchmark_text",
    "decisions_benchmark",
    "decisions_result",
    "figure_sections",
    "finite_json",
    "raw_lines",
    "write_decisions_files",
    "write_decisions_outputs",
]

RAW_FILE = "raw_decisions.jsonl"


@dataclass(frozen=True)
class DecisionsRun:
    """What a decisions ``benchmark.json`` records about the run its answers came from.

    Attributes:
        model: the model's spec (or its name, for a harness's answers).
        data: the contrast set (or the harness export) asked.
        left_out: how many rows or answers were left out, by reason (``unpaired``,
            ``extra_versions`` of a contrast set; ``export_skipped``,
            ``missing_answers``, ``unpaired_answers`` of a harness's answers).
        resamples: bootstrap resamples behind the intervals (0: none).
        confidence: the intervals' level.
        seed: the bootstrap's seed.
        data_weights_note: the note of a set built with random-weight models (a harness
            export's key carries it), added to the model's own.
    """

    model: str
    data: str
    left_out: Mapping[str, int]
    resamples: int
    confidence: float
    seed: int
    data_weights_note: str | None = None


@dataclass(frozen=True, kw_only=True)
class DecisionFigureSections(Node):
    """The figures of a decisions ``benchmark.json`` (:func:`figure_sections`), the
    sections of :class:`~contrastkit.results.decisions.DecisionsResult` of the same
    names: ``summary`` (mode -> family -> figures), ``paired_answers`` (mode -> how many
    paired answers the figures come from, in each option order), ``occupation_pairs``
    (mode -> pair -> figures, with ``b_pair`` under log-probability scoring),
    ``genderbias_vl`` (``b_ovl``; ``ipss`` is ``None`` with its reason),
    ``occupations`` (mode -> occupation of the yes-no families), ``labour`` (mode ->
    correlation of ``yes_gap`` with the male share) and ``warnings``
    (:func:`answer_warnings`)."""

    summary: Mapping[str, Mapping[str, DecisionFigures]]
    paired_answers: Mapping[str, Mapping[str, int]]
    occupation_pairs: Mapping[str, Mapping[str, OccupationPair]]
    genderbias_vl: GenderBiasVL | None
    occupations: Mapping[str, Mapping[str, OccupationFigures]]
    labour: Mapping[str, Mapping[str, Any]]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class _Bootstrap:
    """The intervals' settings: resamples, level and seed."""

    resamples: int
    level: float
    seed: int

    def figures(self, rows: Sequence[PairedAnswer], kind: str) -> DecisionFigures:
        return family_result(rows, kind, resamples=self.resamples, level=self.level, seed=self.seed)


_K = TypeVar("_K", bound=Hashable)


def _grouped(
    pairs: Sequence[PairedAnswer], key: Callable[[PairedAnswer], _K]
) -> dict[_K, list[PairedAnswer]]:
    """``pairs`` by ``key``, in the order each key first comes."""
    groups: dict[_K, list[PairedAnswer]] = {}
    for pair in pairs:
        groups.setdefault(key(pair), []).append(pair)
    return groups


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _occupation_pair(
    rows: Sequence[PairedAnswer], family: str, pair: tuple[str, str],
    shares: Mapping[str, LaborShare], figures: DecisionFigures,
) -> OccupationPair:  # fmt: skip
    """One stereotyped occupation pair (``figures``: its paired answers' figures);
    ``b_pair`` only under log-probability scoring (``rows`` with probabilities)."""
    masculine, feminine = pair
    return OccupationPair(
        family=family, masculine_stereotyped=masculine, feminine_stereotyped=feminine,
        male_share_masculine_stereotyped=shares[masculine].male_share_percent,
        male_share_feminine_stereotyped=shares[feminine].male_share_percent,
        n=figures.n, flip_rate=figures.flip_rate, gap=figures.gap,
        b_pair=_finite(pair_bias(rows)),
    )  # fmt: skip


def _occupation(
    rows: Sequence[PairedAnswer], family: str, kind: str, share: LaborShare
) -> OccupationFigures:
    """One occupation of a yes-no family: the mean gap of answering yes, signed so that
    positive is toward the stereotype of the occupation's majority."""
    gaps = [g for g in map(option_gap, rows) if g is not None]
    yes_is_masculine = share.male_share_percent > 50
    mean = float(np.mean(gaps)) if gaps else None
    return OccupationFigures(
        family=family, male_share=share.male_share_percent,
        yes_gap=_finite(None if mean is None else (mean if yes_is_masculine else -mean)),
        flip_rate=family_result(rows, kind).flip_rate, n=len(rows),
        key_order=("family", "male_share", "yes_gap", "flip_rate", "n"),
    )  # fmt: skip


@dataclass(frozen=True)
class _ModeFigures:
    """The per-question figures of one scoring mode: the occupation pairs of the choice
    families and the occupations of the yes-no families."""

    pairs: dict[str, OccupationPair]
    occupations: dict[str, OccupationFigures]


def _mode_figures(
    paired: Sequence[PairedAnswer], questions: Questions, bootstrap: _Bootstrap, mode: str
) -> _ModeFigures:
    from contrastkit.evaluators.stats import labor_shares

    shares = labor_shares()
    out = _ModeFigures({}, {})
    for (family, question), rows in _grouped(paired, lambda p: (p.family, p.question)).items():
        kind = questions.families[family]
        if kind == "choice":
            entry = _occupation_pair(
                rows, family, questions.pairs[question], shares, bootstrap.figures(rows, kind)
            )
            if mode != "logprob":
                entry = _without_b_pair(entry)
            out.pairs[question] = entry
        elif kind == "yes-no":
            out.occupations[question] = _occupation(rows, family, kind, shares[question])
    return out


def _without_b_pair(entry: OccupationPair) -> OccupationPair:
    """A pair's figures as generation scores them: no ``b_pair`` (no probabilities)."""
    return replace(entry, b_pair=None, absent=entry.absent | {"b_pair"})


def figure_sections(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    *,
    resamples: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> DecisionFigureSections:
    """The figures of ``benchmark.json`` from the paired answers of each mode
    (:class:`DecisionFigureSections`), each family's intervals from ``resamples``
    bootstrap resamples of the sources at level ``confidence``."""
    from contrastkit.evaluators.stats import labor_comparison

    bootstrap = _Bootstrap(resamples, confidence, seed)
    summary: dict[str, dict[str, DecisionFigures]] = {}
    pairs: dict[str, dict[str, OccupationPair]] = {}
    occupations: dict[str, dict[str, OccupationFigures]] = {}
    labour: dict[str, Mapping[str, Any]] = {}
    bias: GenderBiasVL | None = None
    for mode, paired in answers.items():
        summary[mode] = {
            family: bootstrap.figures(rows, questions.families[family])
            for family, rows in _grouped(paired, lambda p: p.family).items()
        }
        figures = _mode_figures(paired, questions, bootstrap, mode)
        if figures.pairs:
            pairs[mode] = figures.pairs
        if figures.occupations:
            occupations[mode] = figures.occupations
            values = {
                name: entry.yes_gap
                for name, entry in figures.occupations.items()
                if entry.yes_gap is not None
            }
            labour[mode] = finite_json(labor_comparison(values))
        if mode == "logprob" and figures.pairs:
            b_ovl = overall_bias({k: v.b_pair for k, v in figures.pairs.items()})
            bias = GenderBiasVL(b_ovl=_finite(b_ovl), ipss=None, ipss_reason=_IPSS_REASON)
    return DecisionFigureSections(
        summary=summary,
        paired_answers={mode: _order_counts(paired) for mode, paired in answers.items()},
        occupation_pairs=pairs, genderbias_vl=bias, occupations=occupations, labour=labour,
        warnings=tuple(answer_warnings(answers)),
    )  # fmt: skip


def decisions_benchmark(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    *,
    resamples: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The figures of :func:`figure_sections` as the JSON ``benchmark.json`` holds them."""
    sections = figure_sections(
        answers, questions, resamples=resamples, confidence=confidence, seed=seed
    )
    return sections.to_json()


#: How log-probability scoring reads an answer, as ``benchmark.json`` records it.
LOGPROB_RULE = (
    "softmax over the log-probabilities of the option letters A and B as the start of the answer"
)


def _scoring(modes: Sequence[str], questions: Questions) -> DecisionScoring:
    """How the answers were scored: the modes, the templates, the decoding settings."""
    return DecisionScoring(
        modes=tuple(modes), questions=questions.source,
        answer_instruction=questions.answer_instruction, decoding=dict(questions.decoding),
        refusals=tuple(pattern.pattern for pattern in questions.refusals), logprob=LOGPROB_RULE,
        key_order=("modes", "questions", "answer_instruction", "decoding", "refusals", "logprob"),
    )  # fmt: skip


#: The keys of a decisions ``benchmark.json`` in the order it lists them.
_RESULT_ORDER = (
    "task", "schema_version", "contrastkit_version", "model", "data", "random_weights",
    "weights_note", "sources", "left_out", "scoring", "metadata", "summary",
    "paired_answers", "occupation_pairs", "genderbias_vl", "occupations", "labour",
    "warnings",
)  # fmt: skip


def decisions_result(
    answers: Mapping[str, Sequence[PairedAnswer]], questions: Questions, run: DecisionsRun
) -> DecisionsResult:
    """The typed result of one model's paired answers (mode -> paired answers): the
    run's record and every figure (:func:`figure_sections`)."""
    from contrastkit.models.registry import weights_note

    notes = [n for n in (weights_note(run.model), run.data_weights_note) if n]
    note = " ".join(notes) if notes else None
    sections = figure_sections(
        answers, questions, resamples=run.resamples, confidence=run.confidence, seed=run.seed
    )
    return DecisionsResult(
        contrastkit_version=__version__, model=run.model, data=run.data,
        random_weights=note is not None, weights_note=note,
        sources=len({pair.source for paired in answers.values() for pair in paired}),
        left_out=dict(run.left_out), scoring=_scoring(list(answers), questions),
        metadata={"bootstrap": run.resamples, "confidence": run.confidence, "seed": run.seed},
        summary=sections.summary, paired_answers=sections.paired_answers,
        occupation_pairs=sections.occupation_pairs, genderbias_vl=sections.genderbias_vl,
        occupations=sections.occupations, labour=sections.labour, warnings=sections.warnings,
        key_order=_RESULT_ORDER,
    )  # fmt: skip


def _order_counts(paired: Sequence[PairedAnswer]) -> dict[str, int]:
    """How many paired answers (both versions answered) there are, in each option order."""
    return {
        "total": len(paired),
        "options_as_listed": sum(pair.order == 0 for pair in paired),
        "options_reversed": sum(pair.order == 1 for pair in paired),
    }


def answer_warnings(answers: Mapping[str, Sequence[PairedAnswer]]) -> list[str]:
    """What a reader must know before trusting the figures, per scoring mode and family:
    answers that never change (:func:`~.metrics.constant_answers`) and answers
    with non-finite letter log-probabilities (no choice, left out of every figure)."""
    warnings = []
    for mode, paired in answers.items():
        by_family: dict[str, list[PairedAnswer]] = {}
        for pair in paired:
            by_family.setdefault(pair.family, []).append(pair)
        for family, rows in by_family.items():
            where = f"{family} ({MODE_TITLES.get(mode, mode).lower()})"
            undefined = [
                sum(getattr(pair, version).outcome == "undefined" for pair in rows)
                for version in ("masculine", "feminine")
            ]
            if sum(undefined):
                warnings.append(
                    f"{where}: {sum(undefined)} answers (masculine {undefined[0]}, feminine "
                    f"{undefined[1]}) had letter log-probabilities that are not finite numbers "
                    "(NaN, or -inf for both letters): no probability and no choice, so they "
                    "enter no figure"
                )
            constant = constant_answers(rows)
            if constant is not None:
                warnings.append(f"{where}: {constant}")
    return warnings


_IPSS_REASON = (
    "Ipss weighs B_pair by the accuracy of naming each image's true occupation; a "
    "contrast set records no occupation, so it is not computed"
)


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite float as ``None`` (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def raw_lines(
    answers: Mapping[str, Sequence[PairedAnswer]], records: Sequence[Mapping[str, Any]] | None
) -> str:
    """The text of ``raw_decisions.jsonl``: ``records`` (the keyed records of
    :func:`~contrastkit.evaluators.tasks.decision_probes.asking.decide`), one JSON line
    each, or when none are given each paired answer of ``answers`` with its mode."""
    if records is None:
        records = [
            finite_json({"mode": mode, **asdict(pair)})
            for mode, paired in answers.items()
            for pair in paired
        ]
    return "".join(json.dumps(record) + "\n" for record in records)


def benchmark_text(result: DecisionsResult) -> str:
    """The text of a decisions ``benchmark.json`` (non-finite numbers as ``null``)."""
    return json.dumps(finite_json(result.to_json()), indent=2) + "\n"


def write_decisions_files(
    result: DecisionsResult,
    answers: Mapping[str, Sequence[PairedAnswer]],
    folder: Path,
    *,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Path]:
    """Write ``raw_decisions.jsonl`` (``records``, the keyed records of
    :func:`~contrastkit.evaluators.tasks.decision_probes.asking.decide`, when given; else
    ``answers``), ``benchmark.json`` (``result``), ``report.md`` and the two plots (PNG
    and SVG) into ``folder``; return the files by name."""
    from contrastkit.evaluators.report.figures import save_formats

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "raw": folder / RAW_FILE,
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
    }
    atomic_write_text(paths["raw"], raw_lines(answers, records))
    atomic_write_text(paths["benchmark"], benchmark_text(result))
    atomic_write_text(paths["report"], decisions_markdown(result))
    plots = folder / "plots"
    for name, figure in (
        ("decision_flips", flip_figure(result)),
        ("decision_gaps", gap_figure(result, answers)),
    ):
        png, svg = save_formats(figure, plots / name)
        paths[name], paths[f"{name}_svg"] = png, svg
    return paths


def write_decisions_outputs(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    folder: Path,
    run: DecisionsRun,
    *,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Path], dict[str, Any]]:
    """:func:`decisions_result` written by :func:`write_decisions_files`; the files by
    name and the result as the JSON of ``benchmark.json`` (what a harness's report
    reads)."""
    result = decisions_result(answers, questions, run)
    return write_decisions_files(result, answers, folder, records=records), result.to_json()
