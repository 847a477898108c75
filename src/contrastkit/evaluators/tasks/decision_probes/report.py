"""The reports of decision probes (``evaluate --task decisions``): reading a
``benchmark.json`` back, the console headline, ``report.md`` and the comparison of
several models (re-exported by :mod:`contrastkit.evaluators.tasks.decision_probes.task`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from contrastkit.results.base import Node
from contrastkit.results.decisions import DecisionFigures, DecisionsResult
from contrastkit.text import MISSING, UNDEFINED, count, format_number, markdown_table

__all__ = [
    "LEFT_OUT",
    "MODE_TITLES",
    "TASK",
    "UNITS_NOTE",
    "as_decisions_result",
    "decisions_comparison_markdown",
    "decisions_headline",
    "decisions_markdown",
    "left_out_text",
    "read_decisions_benchmark",
]

#: What results of this task record as their ``task``.
TASK = "decisions"

#: The title of each scoring mode in reports and plots.
MODE_TITLES = {
    "logprob": "Log-probability of each option",
    "generate": "Generated answers",
}


def read_decisions_benchmark(path: Path) -> DecisionsResult | None:
    """A decisions ``benchmark.json`` (or the folder holding one), or ``None`` for
    another task's.

    Raises:
        DataFormatError: no such file, not a JSON object, or not a decisions result.
    """
    from contrastkit.evaluators.report.results import read_task_benchmark

    found = read_task_benchmark(path, TASK)
    return None if found is None else DecisionsResult.from_json(found[1], path=found[0])


def as_decisions_result(result: DecisionsResult | Mapping[str, Any]) -> DecisionsResult:
    """``result``, typed: a decisions ``benchmark.json`` as JSON (what the task registry
    hands over for a task it reads itself) is read into its
    :class:`~contrastkit.results.decisions.DecisionsResult`.

    Raises:
        DataFormatError: JSON that is no decisions result.
    """
    if isinstance(result, DecisionsResult):
        return result
    return DecisionsResult.from_json(dict(result))


class DecisionsHeadline(TypedDict):
    """The console headline of a decisions result (:func:`decisions_headline`)."""

    task: str
    model: str
    data: str
    random_weights: bool
    weights_note: str | None
    sources: int
    figures: dict[str, float | Mapping[str, object] | None]
    figure_notes: dict[str, str]
    warnings: list[str]


def decisions_headline(result: DecisionsResult | Mapping[str, Any]) -> DecisionsHeadline:
    """The console headline: the model, data and sources, as ``figures`` (name ->
    value, with ``NAME_ci`` intervals beside) the flip rate of each family under each
    scoring mode and ``B_ovl``, and the result's ``warnings`` (answers that never
    change, answers with no probability)."""
    result = as_decisions_result(result)
    figures: dict[str, float | Mapping[str, object] | None] = {}
    notes: dict[str, str] = {}
    for mode, families in result.summary.items():
        for family, values in families.items():
            name = f"flip rate {family} ({mode})"
            figures[name] = values.flip_rate
            if values.flip_rate is None:
                notes[name] = NO_PAIRED_ANSWER
            interval = values.intervals.get("flip_rate_ci")
            if interval is not None:
                figures[f"{name}_ci"] = interval.to_json()
    b_ovl = result.genderbias_vl.b_ovl if result.genderbias_vl is not None else None
    if b_ovl is not None:
        figures["B_ovl"] = b_ovl
    return {
        "task": TASK,
        "model": result.model,
        "data": result.data,
        "random_weights": bool(result.random_weights),
        "weights_note": result.weights_note,
        "sources": result.sources,
        "figures": figures,
        "figure_notes": notes,
        "warnings": list(result.warnings or []),
    }


def _cell(figures: Node, key: str) -> str:
    """A figure of ``figures`` with its interval (the cell every report table writes:
    :func:`~contrastkit.evaluators.report.tables.format_interval`), or ``n/a``
    (:data:`~contrastkit.text.UNDEFINED`) when it could not be computed
    (:data:`UNDEFINED_REASONS` says why)."""
    from contrastkit.evaluators.report.tables import format_interval

    if getattr(figures, key, None) is None:
        return UNDEFINED
    return format_interval(figures.to_json(), key)


_PAIR_REASONS = (
    "n/a: no paired answer to compute it from (flip rate and gap: none where both versions "
    "chose an option; B_pair: none with probabilities for both versions)"
)

#: Why a flip rate is ``n/a`` (the console headline says so beside it).
NO_PAIRED_ANSWER = "no paired answer where both versions chose an option or gave a number"

#: Why a figure of the summary table is ``n/a``: nothing to compute it from.
UNDEFINED_REASONS = (
    "n/a: nothing to compute the figure from (flip rate and gap: no paired answer where "
    "both versions chose an option or both gave a number; stereotyped flips: no flip; "
    "first position: no choice)"
)


_SUMMARY_HEADER = [
    "family", "kind", "sources", "compared", "flip rate", "stereotyped flips", "gap",
    "abs gap", "first position", "refusals M / F", "unparseable M / F",
]  # fmt: skip


def _summary_rows(families: Mapping[str, DecisionFigures]) -> list[list[Any]]:
    rows = []
    for family, f in families.items():
        rows.append([
            family, f.kind, f.n_sources, f.n_compared,
            _cell(f, "flip_rate"), _cell(f, "stereotyped_flip_share"), _cell(f, "gap"),
            _cell(f, "abs_gap"), _cell(f, "first_position_rate"),
            f"{f.n_refusals_masculine} / {f.n_refusals_feminine}",
            f"{f.n_unparseable_masculine} / {f.n_unparseable_feminine}",
        ])  # fmt: skip
    return rows


#: What each ``left_out`` count of a decisions ``benchmark.json`` counts: a contrast
#: set's rows (``evaluate --task decisions``) or a harness's answers (``report
#: --harness-predictions``): the noun counted and what is said of it.
LEFT_OUT = {
    "unpaired": ("source", "with one version only"),
    "extra_versions": ("further row", "of a version already taken"),
    "export_skipped": ("row", "the harness export left out"),
    "missing_answers": ("item", "with no answer in the prediction files"),
    "unpaired_answers": ("answer", "whose other version has no answer"),
}


def left_out_text(left_out: Mapping[str, Any]) -> str:
    """What ``left_out`` counts, in words (every count, the zero ones too, so a reader
    sees what was checked): ``0 sources with one version only, 1 further row ...``."""
    if not left_out:
        return "nothing"
    parts = []
    for reason, n in left_out.items():
        noun, what = LEFT_OUT.get(reason, ("", reason))
        parts.append(f"{count(int(n), noun)} {what}" if noun else f"{n} {what}")
    return ", ".join(parts)


def _paired_lines(result: DecisionsResult) -> list[str]:
    """How many paired answers each scoring mode's figures come from, in each option
    order, and a caveat when the orders are not equally represented."""
    lines = []
    for mode, counts in (result.paired_answers or {}).items():
        listed, reversed_ = counts.get("options_as_listed", 0), counts.get("options_reversed", 0)
        text = (
            f"- {MODE_TITLES.get(mode, mode).lower()}: the figures come from "
            f"{counts.get('total')} paired answers (both versions answered): {listed} with the "
            f"options as listed, {reversed_} reversed"
        )
        if listed != reversed_:
            text += (
                "; the two orders are not equally represented, so position bias does not "
                "cancel out of the figures"
            )
        lines.append(text)
    return lines


def _warning_lines(result: DecisionsResult) -> list[str]:
    warnings = result.warnings or ()
    return [*(f"> **Warning.** {text}." for text in warnings), *([""] if warnings else [])]


#: How B_pair and B_ovl read beside GenderBias-VL's published numbers.
UNITS_NOTE = (
    "B_pair and B_ovl are fractions (differences of probabilities, from -1 to 1), "
    "computed without rounding; GenderBias-VL's released code reports them in percent "
    "rounded to 2 decimals at every stage, so 0.40 here reads as 40.00 there, up to that "
    "rounding"
)


def _header_lines(result: DecisionsResult) -> list[str]:
    """The title, the weights note, the warnings and what was asked."""
    lines = [f"# Decision probes: `{result.model}`", ""]
    if result.weights_note:
        lines += [f"**{result.weights_note}**", ""]
    lines += _warning_lines(result)
    return [
        *lines,
        f"- data: `{result.data}`: {result.sources} sources with both "
        f"versions; left out: {left_out_text(result.left_out or {})}",
        f"- questions: {result.scoring.questions}; each put to both versions with "
        "identical text, the options in both orders (the answers paired: below)",
        *_paired_lines(result),
        f"- decoding: {json.dumps(result.scoring.decoding)}",
        "",
        "Flip rate: share of paired answers (both versions chose, or both gave a number) "
        "where the answers differ. Gap: masculine minus feminine, of the probability of "
        "the masculine-stereotyped option (log-probability), of choosing it (generated), "
        "or of the number; positive is toward the stereotype. First position: share of "
        "choices on the option shown first (0.5: no position bias). Refusals and "
        "unparseable answers are counted per version (M / F) and enter no other figure.",
        "",
    ]


def _summary_lines(mode: str, families: Mapping[str, DecisionFigures]) -> list[str]:
    """One scoring mode's figures per question family."""
    from contrastkit.evaluators.report.tables import interval_note

    lines = [f"## {MODE_TITLES.get(mode, mode)}", ""]
    rows = _summary_rows(families)
    lines += markdown_table(_SUMMARY_HEADER, rows)
    if any(UNDEFINED in row for row in rows):
        lines += [f"{UNDEFINED_REASONS}.", ""]
    return lines + interval_note([f.to_json() for f in families.values()], "resampling sources")


def _pair_lines(mode: str, result: DecisionsResult) -> list[str]:
    """One scoring mode's occupation pairs, and ``B_ovl`` under log-probability
    scoring."""
    lines = [f"## Occupation pairs ({MODE_TITLES.get(mode, mode).lower()})", ""]
    header = ["pair (masculine / feminine stereotyped)", "men %", "n", "flip rate", "gap"]
    if mode == "logprob":
        header.append("B_pair")
    rows = []
    for name, p in result.occupation_pairs[mode].items():
        row = [
            name,
            f"{p.male_share_masculine_stereotyped:g} / {p.male_share_feminine_stereotyped:g}",
            p.n, format_number(p.flip_rate, missing=UNDEFINED),
            format_number(p.gap, missing=UNDEFINED),
        ]  # fmt: skip
        if mode == "logprob":
            row.append(format_number(p.b_pair, missing=UNDEFINED))
        rows.append(row)
    lines += markdown_table(header, rows)
    if any(UNDEFINED in row for row in rows):
        lines += [f"{_PAIR_REASONS}.", ""]
    bias = result.genderbias_vl
    if mode == "logprob" and bias is not None:
        lines += [
            "B_ovl (GenderBias-VL, mean |B_pair|): "
            f"{format_number(bias.b_ovl, missing=UNDEFINED)}. "
            f"Ipss: not computed ({bias.ipss_reason}).",
            "",
            f"Units: {UNITS_NOTE}.",
            "",
        ]
    return lines


def _correlation_text(corr: Mapping[str, Any]) -> str:
    """The correlation of the yes gap with the labour statistics, in words."""
    text = (
        f"Correlation of the yes gap with the share of men (US labour statistics), "
        f"n = {corr.get('n')}: Pearson r = {format_number(corr.get('pearson_r'))}, "
        f"Kendall tau = {format_number(corr.get('kendall_tau'))}"
    )
    if corr.get("caveat"):
        return text + f" — {corr['caveat']}."
    return text + (
        f" (p = {format_number(corr.get('pearson_p'), 3)}, "
        f"{format_number(corr.get('kendall_p'), 3)})."
    )


def _occupation_lines(mode: str, result: DecisionsResult) -> list[str]:
    """One scoring mode's occupations of the yes-no families, and their correlation
    with the labour statistics."""
    lines = [f"## Per occupation ({MODE_TITLES.get(mode, mode).lower()})", ""]
    occupations = sorted(result.occupations[mode].items(), key=lambda kv: -kv[1].male_share)
    rows = [
        [name, f"{o.male_share:g}", o.n,
         *(format_number(value, missing=UNDEFINED) for value in (o.yes_gap, o.flip_rate))]
        for name, o in occupations
    ]  # fmt: skip
    lines += markdown_table(["occupation", "men %", "n", "yes gap (M - F)", "flip rate"], rows)
    if any(UNDEFINED in row for row in rows):
        lines += [f"{_PAIR_REASONS}.", ""]
    return [*lines, _correlation_text(result.labour.get(mode) or {}), ""]


def decisions_markdown(result: DecisionsResult | Mapping[str, Any]) -> str:
    """``report.md`` of one model."""
    result = as_decisions_result(result)
    lines = _header_lines(result)
    for mode, families in result.summary.items():
        lines += _summary_lines(mode, families)
    for mode in result.occupation_pairs:
        lines += _pair_lines(mode, result)
    for mode in result.occupations:
        lines += _occupation_lines(mode, result)
    lines += ["Plots: `plots/decision_flips.png`, `plots/decision_gaps.png`.", ""]
    return "\n".join(lines)


def decisions_comparison_markdown(results: Sequence[DecisionsResult | Mapping[str, Any]]) -> str:
    """The models side by side (``contrastkit report``): per scoring mode and family
    the flip rate, gap and refusal rates, and ``B_ovl``; then each model's warnings
    (answers that never change, answers with no probability)."""
    from contrastkit.evaluators.report.tables import RANDOM_WEIGHTS_CELL

    typed = [as_decisions_result(result) for result in results]
    lines = ["## Decision probes", ""]
    header = ["model", "data", "mode", "family", "flip rate", "gap", "stereotyped flips",
              "refusals M", "refusals F", "B_ovl"]  # fmt: skip
    rows = []
    for result in typed:
        name = f"`{result.model}`" + (RANDOM_WEIGHTS_CELL if result.random_weights else "")
        b_ovl = result.genderbias_vl.b_ovl if result.genderbias_vl is not None else None
        for mode, families in result.summary.items():
            for family, f in families.items():
                rows.append([
                    name, result.data, mode, family, _cell(f, "flip_rate"),
                    _cell(f, "gap"), _cell(f, "stereotyped_flip_share"),
                    format_number(f.refusal_rate_masculine),
                    format_number(f.refusal_rate_feminine),
                    format_number(b_ovl, missing=UNDEFINED) if mode == "logprob" else MISSING,
                ])  # fmt: skip
    lines += markdown_table(header, rows)
    if any(cell == UNDEFINED for row in rows for cell in row[4:7]):
        lines += [f"{UNDEFINED_REASONS}.", ""]
    if any(row[-1] != MISSING for row in rows):
        lines += [f"Units: {UNITS_NOTE}.", ""]
    for result in typed:
        for text in result.warnings or ():
            lines += [f"> **Warning** (`{result.model}`). {text}.", ""]
    return "\n".join(lines)
