"""The files of one model's decision probes: the figures of ``benchmark.json``
(:func:`decisions_benchmark`) and :func:`write_decisions_outputs`, which writes them
with the raw answers, ``report.md`` and the plots (re-exported by
:mod:`contrastkit.evaluators.tasks.decision_probes.task`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contrastkit import __version__
from contrastkit.evaluators.tasks.decision_probes.metrics import (
    PairedAnswer,
    constant_answers,
    family_figures,
    option_gap,
    overall_bias,
    pair_bias,
)
from contrastkit.evaluators.tasks.decision_probes.plots import flip_figure, gap_figure
from contrastkit.evaluators.tasks.decision_probes.report import (
    MODE_TITLES,
    TASK,
    decisions_markdown,
)
from contrastkit.io import atomic_write_text
from contrastkit.templates import Questions

__all__ = [
    "RAW_FILE",
    "DecisionsRun",
    "answer_warnings",
    "decisions_benchmark",
    "finite_json",
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


def decisions_benchmark(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    *,
    resamples: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The figures of ``benchmark.json`` from the paired answers of each mode:
    ``summary`` (mode -> family -> :func:`~.metrics.family_figures` and
    ``kind``), ``occupation_pairs`` (mode -> pair -> figures, with ``b_pair`` under
    log-probability scoring), ``genderbias_vl`` (``b_ovl``; ``ipss`` is ``None`` with
    its reason), ``occupations`` (mode -> occupation of the yes-no families -> ``yes_gap``,
    ``flip_rate``, ``n``, ``male_share``), ``labour`` (mode -> correlation of
    ``yes_gap`` with the male share), ``paired_answers`` (mode -> how many paired answers
    the figures come from, in each option order) and ``warnings``
    (:func:`answer_warnings`)."""
    from contrastkit.evaluators.stats import labor_comparison, labor_shares

    shares = labor_shares()
    settings: dict[str, Any] = {"resamples": resamples, "level": confidence, "seed": seed}
    summary: dict[str, Any] = {}
    pairs_out: dict[str, Any] = {}
    occupations: dict[str, Any] = {}
    labour: dict[str, Any] = {}
    bias: dict[str, Any] = {}
    for mode, paired in answers.items():
        by_family: dict[str, list[PairedAnswer]] = {}
        for pair in paired:
            by_family.setdefault(pair.family, []).append(pair)
        summary[mode] = {
            family: {"kind": questions.families[family], **family_figures(rows, **settings)}
            for family, rows in by_family.items()
        }
        by_question: dict[tuple[str, str], list[PairedAnswer]] = {}
        for pair in paired:
            by_question.setdefault((pair.family, pair.question), []).append(pair)
        mode_pairs: dict[str, Any] = {}
        mode_occupations: dict[str, Any] = {}
        for (family, question), rows in by_question.items():
            kind = questions.families[family]
            if kind == "choice":
                tm, tf = questions.pairs[question]
                figures = family_figures(rows, **settings)
                entry = {
                    "family": family, "masculine_stereotyped": tm, "feminine_stereotyped": tf,
                    "male_share_masculine_stereotyped": shares[tm].male_share_percent,
                    "male_share_feminine_stereotyped": shares[tf].male_share_percent,
                    "n": figures["n"], "flip_rate": figures["flip_rate"], "gap": figures["gap"],
                }  # fmt: skip
                if mode == "logprob":
                    entry["b_pair"] = pair_bias(rows)
                mode_pairs[question] = entry
            elif kind == "yes-no":
                gaps = [g for g in map(option_gap, rows) if g is not None]
                yes_is_masculine = shares[question].male_share_percent > 50
                mean = float(np.mean(gaps)) if gaps else None
                mode_occupations[question] = {
                    "family": family,
                    "male_share": shares[question].male_share_percent,
                    "yes_gap": None if mean is None else (mean if yes_is_masculine else -mean),
                    "flip_rate": family_figures(rows)["flip_rate"],
                    "n": len(rows),
                }
        if mode_pairs:
            pairs_out[mode] = mode_pairs
        if mode_occupations:
            occupations[mode] = mode_occupations
            values = {
                name: entry["yes_gap"]
                for name, entry in mode_occupations.items()
                if entry["yes_gap"] is not None
            }
            labour[mode] = labor_comparison(values)
        if mode == "logprob" and mode_pairs:
            bias = {
                "b_ovl": overall_bias({k: v["b_pair"] for k, v in mode_pairs.items()}),
                "ipss": None,
                "ipss_reason": _IPSS_REASON,
            }
    return {
        "summary": summary,
        "paired_answers": {mode: _order_counts(paired) for mode, paired in answers.items()},
        "occupation_pairs": pairs_out,
        "genderbias_vl": bias or None,
        "occupations": occupations,
        "labour": labour,
        "warnings": answer_warnings(answers),
    }


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


def _raw_lines(
    answers: Mapping[str, Sequence[PairedAnswer]], records: Sequence[Mapping[str, Any]] | None
) -> str:
    if records is None:
        records = [
            finite_json({"mode": mode, **asdict(pair)})
            for mode, paired in answers.items()
            for pair in paired
        ]
    return "".join(json.dumps(record) + "\n" for record in records)


def write_decisions_outputs(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    folder: Path,
    run: DecisionsRun,
    *,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Write ``raw_decisions.jsonl`` (``records``, the keyed records of
    :func:`~contrastkit.evaluators.tasks.decision_probes.asking.decide`, when given),
    ``benchmark.json``, ``report.md`` and the two plots (PNG and SVG) into ``folder``;
    return the files by name and the benchmark."""
    from contrastkit.evaluators.report.figures import save_formats
    from contrastkit.models.registry import weights_note
    from contrastkit.results import SCHEMA_VERSION

    folder.mkdir(parents=True, exist_ok=True)
    notes = [n for n in (weights_note(run.model), run.data_weights_note) if n]
    note = " ".join(notes) if notes else None
    figures = decisions_benchmark(
        answers, questions, resamples=run.resamples, confidence=run.confidence, seed=run.seed
    )
    sources = {pair.source for paired in answers.values() for pair in paired}
    benchmark = finite_json({
        "task": TASK,
        "schema_version": SCHEMA_VERSION,
        "contrastkit_version": __version__,
        "model": run.model,
        "data": run.data,
        "random_weights": note is not None,
        "weights_note": note,
        "sources": len(sources),
        "left_out": dict(run.left_out),
        "scoring": {
            "modes": list(answers),
            "questions": questions.source,
            "answer_instruction": questions.answer_instruction,
            "decoding": dict(questions.decoding),
            "refusals": [pattern.pattern for pattern in questions.refusals],
            "logprob": "softmax over the log-probabilities of the option letters A and B "
            "as the start of the answer",
        },
        "metadata": {"bootstrap": run.resamples, "confidence": run.confidence, "seed": run.seed},
        **figures,
    })  # fmt: skip
    paths = {
        "raw": folder / RAW_FILE,
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
    }
    atomic_write_text(paths["raw"], _raw_lines(answers, records))
    atomic_write_text(paths["benchmark"], json.dumps(benchmark, indent=2) + "\n")
    atomic_write_text(paths["report"], decisions_markdown(benchmark))
    plots = folder / "plots"
    for name, figure in (
        ("decision_flips", flip_figure(benchmark)),
        ("decision_gaps", gap_figure(benchmark, answers)),
    ):
        png, svg = save_formats(figure, plots / name)
        paths[name], paths[f"{name}_svg"] = png, svg
    return paths, benchmark
