"""The reports of decision probes (``evaluate --task decisions``): reading a
``benchmark.json`` back, the console headline, ``report.md`` and the comparison of
several models (re-exported by :mod:`contrastkit.evaluators.tasks.decision_probes.task`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contrastkit.text import MISSING, UNDEFINED, count, format_number, markdown_table

__all__ = [
    "LEFT_OUT",
    "MODE_TITLES",
    "TASK",
    "UNITS_NOTE",
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


def read_decisions_benchmark(path: Path) -> dict[str, Any] | None:
    """A decisions ``benchmark.json`` (or the folder holding one), or ``None`` for
    another task's.

    Raises:
        DataFormatError: no such file, or not a JSON object.
    """
    from contrastkit.evaluators.report.results import read_task_benchmark

    found = read_task_benchmark(path, TASK)
    return None if found is None else found[1]


def decisions_headline(benchmark: Mapping[str, Any]) -> dict[str, Any]:
    """The console headline: the model, data and sources, as ``figures`` (name ->
    value, with ``NAME_ci`` intervals beside) the flip rate of each family under each
    scoring mode and ``B_ovl``, and the benchmark's ``warnings`` (answers that never
    change, answers with no probability)."""
    figures: dict[str, Any] = {}
    for mode, families in (benchmark.get("summary") or {}).items():
        for family, values in families.items():
            name = f"flip rate {family} ({mode})"
            figures[name] = values.get("flip_rate")
            if values.get("flip_rate_ci") is not None:
                figures[f"{name}_ci"] = values["flip_rate_ci"]
    b_ovl = (benchmark.get("genderbias_vl") or {}).get("b_ovl")
    if b_ovl is not None:
        figures["B_ovl"] = b_ovl
    return {
        "task": TASK,
        "model": benchmark.get("model"),
        "data": benchmark.get("data"),
        "random_weights": bool(benchmark.get("random_weights")),
        "weights_note": benchmark.get("weights_note"),
        "sources": benchmark.get("sources"),
        "figures": figures,
        "warnings": list(benchmark.get("warnings") or []),
    }


def _cell(figures: Mapping[str, Any], key: str) -> str:
    """A figure with its interval, or ``n/a`` (:data:`~contrastkit.text.UNDEFINED`)
    when it could not be computed (:data:`UNDEFINED_REASONS` says why)."""
    from contrastkit.evaluators.report.tables import format_interval

    return format_interval(figures, key) if figures.get(key) is not None else UNDEFINED


_PAIR_REASONS = (
    "n/a: no paired answer to compute it from (flip rate and gap: none where both versions "
    "chose an option; B_pair: none with probabilities for both versions)"
)

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


def _summary_rows(families: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for family, f in families.items():
        rows.append([
            family, f.get("kind"), f.get("n_sources"), f.get("n_compared"),
            _cell(f, "flip_rate"), _cell(f, "stereotyped_flip_share"), _cell(f, "gap"),
            _cell(f, "abs_gap"), _cell(f, "first_position_rate"),
            f"{f.get('n_refusals_masculine')} / {f.get('n_refusals_feminine')}",
            f"{f.get('n_unparseable_masculine')} / {f.get('n_unparseable_feminine')}",
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


def _paired_lines(benchmark: Mapping[str, Any]) -> list[str]:
    """How many paired answers each scoring mode's figures come from, in each option
    order, and a caveat when the orders are not equally represented."""
    lines = []
    for mode, counts in (benchmark.get("paired_answers") or {}).items():
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


def _warning_lines(benchmark: Mapping[str, Any]) -> list[str]:
    warnings = benchmark.get("warnings") or []
    return [*(f"> **Warning.** {text}." for text in warnings), *([""] if warnings else [])]


#: How B_pair and B_ovl read beside GenderBias-VL's published numbers.
UNITS_NOTE = (
    "B_pair and B_ovl are fractions (differences of probabilities, from -1 to 1), "
    "computed without rounding; GenderBias-VL's released code reports them in percent "
    "rounded to 2 decimals at every stage, so 0.40 here reads as 40.00 there, up to that "
    "rounding"
)


def decisions_markdown(benchmark: Mapping[str, Any]) -> str:
    """``report.md`` of one model."""
    from contrastkit.evaluators.report.tables import interval_note

    scoring = benchmark.get("scoring") or {}
    lines = [f"# Decision probes: `{benchmark.get('model')}`", ""]
    if benchmark.get("weights_note"):
        lines += [f"**{benchmark['weights_note']}**", ""]
    lines += _warning_lines(benchmark)
    lines += [
        f"- data: `{benchmark.get('data')}`: {benchmark.get('sources')} sources with both "
        f"versions; left out: {left_out_text(benchmark.get('left_out') or {})}",
        f"- questions: {scoring.get('questions')}; each put to both versions with "
        "identical text, the options in both orders (the answers paired: below)",
        *_paired_lines(benchmark),
        f"- decoding: {json.dumps(scoring.get('decoding'))}",
        "",
        "Flip rate: share of paired answers (both versions chose, or both gave a number) "
        "where the answers differ. Gap: masculine minus feminine, of the probability of "
        "the masculine-stereotyped option (log-probability), of choosing it (generated), "
        "or of the number; positive is toward the stereotype. First position: share of "
        "choices on the option shown first (0.5: no position bias). Refusals and "
        "unparseable answers are counted per version (M / F) and enter no other figure.",
        "",
    ]
    for mode, families in (benchmark.get("summary") or {}).items():
        lines += [f"## {MODE_TITLES.get(mode, mode)}", ""]
        rows = _summary_rows(families)
        lines += markdown_table(_SUMMARY_HEADER, rows)
        if any(UNDEFINED in row for row in rows):
            lines += [f"{UNDEFINED_REASONS}.", ""]
        lines += interval_note(list(families.values()), "resampling sources")
    bias = benchmark.get("genderbias_vl") or {}
    for mode, pairs in (benchmark.get("occupation_pairs") or {}).items():
        lines += [f"## Occupation pairs ({MODE_TITLES.get(mode, mode).lower()})", ""]
        header = ["pair (masculine / feminine stereotyped)", "men %", "n", "flip rate", "gap"]
        if mode == "logprob":
            header.append("B_pair")
        rows = []
        for name, p in pairs.items():
            row = [
                name,
                f"{p['male_share_masculine_stereotyped']:g} / "
                f"{p['male_share_feminine_stereotyped']:g}",
                p["n"], format_number(p.get("flip_rate"), missing=UNDEFINED),
                format_number(p.get("gap"), missing=UNDEFINED),
            ]  # fmt: skip
            if mode == "logprob":
                row.append(format_number(p.get("b_pair"), missing=UNDEFINED))
            rows.append(row)
        lines += markdown_table(header, rows)
        if any(UNDEFINED in row for row in rows):
            lines += [f"{_PAIR_REASONS}.", ""]
        if mode == "logprob" and bias:
            lines += [
                "B_ovl (GenderBias-VL, mean |B_pair|): "
                f"{format_number(bias.get('b_ovl'), missing=UNDEFINED)}. "
                f"Ipss: not computed ({bias.get('ipss_reason')}).",
                "",
                f"Units: {UNITS_NOTE}.",
                "",
            ]
    labour = benchmark.get("labour") or {}
    for mode, occupations in (benchmark.get("occupations") or {}).items():
        lines += [f"## Per occupation ({MODE_TITLES.get(mode, mode).lower()})", ""]
        rows = [
            [name, f"{o['male_share']:g}", o["n"],
             *(format_number(o.get(k), missing=UNDEFINED) for k in ("yes_gap", "flip_rate"))]
            for name, o in sorted(occupations.items(), key=lambda kv: -kv[1]["male_share"])
        ]  # fmt: skip
        lines += markdown_table(["occupation", "men %", "n", "yes gap (M - F)", "flip rate"], rows)
        if any(UNDEFINED in row for row in rows):
            lines += [f"{_PAIR_REASONS}.", ""]
        corr = labour.get(mode) or {}
        text = (
            f"Correlation of the yes gap with the share of men (US labour statistics), "
            f"n = {corr.get('n')}: Pearson r = {format_number(corr.get('pearson_r'))}, "
            f"Kendall tau = {format_number(corr.get('kendall_tau'))}"
        )
        if corr.get("caveat"):
            text += f" — {corr['caveat']}."
        else:
            text += (
                f" (p = {format_number(corr.get('pearson_p'), 3)}, "
                f"{format_number(corr.get('kendall_p'), 3)})."
            )
        lines += [text, ""]
    lines += ["Plots: `plots/decision_flips.png`, `plots/decision_gaps.png`.", ""]
    return "\n".join(lines)


def decisions_comparison_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """The models side by side (``contrastkit report``): per scoring mode and family
    the flip rate, gap and refusal rates, and ``B_ovl``; then each model's warnings
    (answers that never change, answers with no probability)."""
    from contrastkit.evaluators.report.tables import RANDOM_WEIGHTS_CELL

    lines = ["## Decision probes", ""]
    header = ["model", "data", "mode", "family", "flip rate", "gap", "stereotyped flips",
              "refusals M", "refusals F", "B_ovl"]  # fmt: skip
    rows = []
    for result in results:
        name = f"`{result.get('model')}`" + (
            RANDOM_WEIGHTS_CELL if result.get("random_weights") else ""
        )
        b_ovl = (result.get("genderbias_vl") or {}).get("b_ovl")
        for mode, families in (result.get("summary") or {}).items():
            for family, f in families.items():
                rows.append([
                    name, result.get("data"), mode, family, _cell(f, "flip_rate"),
                    _cell(f, "gap"), _cell(f, "stereotyped_flip_share"),
                    format_number(f.get("refusal_rate_masculine")),
                    format_number(f.get("refusal_rate_feminine")),
                    format_number(b_ovl, missing=UNDEFINED) if mode == "logprob" else MISSING,
                ])  # fmt: skip
    lines += markdown_table(header, rows)
    if any(row[-1] != MISSING for row in rows):
        lines += [f"Units: {UNITS_NOTE}.", ""]
    for result in results:
        for text in result.get("warnings") or ():
            lines += [f"> **Warning** (`{result.get('model')}`). {text}.", ""]
    return "\n".join(lines)
