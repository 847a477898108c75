"""The report.md lines of a generative VLM: the prompts it was scored with and, under the
multiple-choice protocol, position bias and the option-swap result
(:mod:`contrastkit.evaluators.tasks.visogender.multiple_choice`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contrastkit.evaluators.report.tables import format_number, table_header, table_row

__all__ = ["multiple_choice_section", "vlm_lines"]


def vlm_lines(results: Mapping[str, Any]) -> list[str]:
    """How a generative VLM was scored (protocol, instruction, normalisation); nothing
    for other models."""
    vlm = results.get("metadata", {}).get("vlm")
    if not isinstance(vlm, Mapping):
        return []
    protocol = vlm.get("protocol")
    if protocol == "multiple-choice":
        how = (
            "each case is a lettered question (his / her / their, order shuffled per case "
            f"with seed {results['metadata'].get('seed')}), scored by the log-probability of "
            "each option's letter as the answer"
        )
    else:
        how = (
            f'the user turn is the image and "{vlm.get("continuation_instruction")}", the '
            "answer starts with the caption prefix, and a pronoun's score is the summed "
            "log-probability of its tokens"
        )
    return [f"Generative VLM, `{protocol}` protocol: {how}.", ""]


def multiple_choice_section(results: Mapping[str, Any]) -> list[str]:
    """Position bias (letter wins whatever they hold) and the resolution figures with the
    options reversed; nothing for a result without a ``multiple_choice`` section."""
    choice = results.get("multiple_choice")
    if not isinstance(choice, Mapping):
        return []
    letters = choice["letters"]
    bias = choice["position_bias"]
    lines = [
        "## Multiple choice: position bias and option swap (GenderBias-VL's option-swap test)",
        "",
        f"{choice['n_cases']} cases; how often each letter wins, whatever pronoun it holds "
        f"(uniform: {format_number(choice['uniform_share'])}), with the options in the seeded "
        "order and reversed:",
        "",
        *table_header(["letter", "wins", "share", "wins (reversed)", "share (reversed)"]),
    ]
    for letter in letters:
        lines.append(table_row([
            letter, bias["wins"][letter], format_number(bias["share"][letter]),
            bias["reversed"]["wins"][letter], format_number(bias["reversed"]["share"][letter]),
        ]))  # fmt: skip
    lines += [
        "",
        f"Largest deviation from the uniform share: {format_number(bias['max_deviation'])}"
        + (f"; {bias['ties']} tied case(s)." if bias.get("ties") else "."),
        "",
    ]
    swap = choice["option_swap"]
    lines += [
        "### With the options reversed",
        "",
        f"The chosen pronoun is the same in both orders for {swap['agreement']:.1%} of cases; "
        f"the chosen letter for {swap.get('letter_agreement', 0):.1%} (with three options "
        "the middle one keeps its letter when the order is reversed).",
        "",
        *table_header(["split", "RA_avg", "RA_avg (reversed)", "gap", "gap (reversed)"]),
    ]
    for split, figures in swap["shuffled"].items():
        other = swap["reversed"].get(split, {})
        lines.append(table_row([
            split.replace("_", " "),
            *(format_number(values.get(key)) for key in ("RA_avg", "gender_gap")
              for values in (figures, other)),
        ]))  # fmt: skip
    lines += [
        "",
        "Gap = masculine − feminine accuracy. A model that reads the options' content gives "
        "the same figures in both orders; differences measure how much the letter position, "
        "not the pronoun, decides.",
        "",
    ]
    return lines
