"""The "Harness answers" section of a report, written from the results' ``harness``
section (VisoGender and stereotype ``report.md`` end with it; a contrast set's report is
it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contrastkit.text import UNDEFINED, format_number, markdown_table

__all__ = ["harness_markdown"]


def _fmt(value: Any) -> str:
    return format_number(value, 3, missing=UNDEFINED)


def _figures_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = ""
) -> list[str]:
    """A table of the harness section: the first column text, the others numbers
    (right-aligned unless ``align`` says), 3 places, ``n/a`` when undefined."""
    return markdown_table(header, rows, align=align or "l" + "r" * (len(header) - 1), cell=_fmt)


def harness_markdown(section: Mapping[str, Any]) -> list[str]:
    """The "Harness answers" section of a report, from the results' ``harness`` section."""
    datasets = section["datasets"]
    set_kind = section["set_kind"]
    lines = ["## Harness answers", ""]
    lines += [
        f"{section['harness']} predictions of the `{set_kind}` export {datasets['main']} "
        f"(option order seed {section['option_seed']}). Questions: {section['question']}.",
        "",
    ]
    lines += _figures_table(
        ["split", "items", "answered", "unparseable", "missing"],
        [[split, *(counts[key] for key in ("items", "answered", "unparseable", "missing"))]
         for split, counts in section["counts"].items()],
    )  # fmt: skip
    lines += [
        "Unparseable answers (naming no option, or several) are left out of every figure, "
        "never guessed.",
        "",
    ]
    if section.get("export_skipped_rows"):
        skipped = len(section["export_skipped_rows"])
        lines += [f"The export left out {skipped} row(s) whose image was not available "
                  "(listed in its key).", ""]  # fmt: skip
    lines += ["### Position bias", ""]
    lines += _figures_table(
        ["split", "letter", "chosen", "chosen share", "answer share"],
        [[split, letter, values["chosen"], values["chosen_share"], values["answer_share"]]
         for split, table in section["position_bias"].items()
         for letter, values in table["letters"].items()],
        align="llrrr",
    )  # fmt: skip
    lines += ["A model that answers by content chooses each letter about as often as "
              "it is the answer; a letter chosen far more often wins by position.", ""]  # fmt: skip
    reversal = section.get("reversed_options")
    lines += ["### Options reversed", ""]
    if reversal is None:
        lines += ["Not available: give the predictions of both splits (the export's "
                  f"`{datasets.get('reversed', 'reversed')}` too).", ""]  # fmt: skip
    else:
        lines += [
            f"{reversal['pairs']} questions answered in both orders: the same option in "
            f"{_fmt(reversal['same_content_share'])} of them; of those first answered with "
            f"the first or last option, {_fmt(reversal['followed_position_share'])} kept "
            "the letter (and so changed the option) when the order was reversed.",
            "",
        ]
        compared = section.get("resolution_by_split")
        if compared:
            keys = ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine")
            lines += _figures_table(
                ["split", "RA_avg (all images)", "gender gap", "RA_masculine", "RA_feminine"],
                [[split, *(headline.get("all_images", {}).get(key) for key in keys)]
                 for split, headline in compared.items()],
            )  # fmt: skip
        probed = section.get("stereotype_by_split")
        if probed:
            lines += _figures_table(
                ["split", "images", "vlrs", "vlbs", "ivlas"],
                [[split, *(values[key] for key in ("n", "vlrs", "vlbs", "ivlas"))]
                 for split, values in probed.items()],
            )  # fmt: skip
    figures = section.get("figures")
    if figures and set_kind == "contrast":
        lines += _contrast_markdown(figures)
    elif figures:
        lines += _stereotype_markdown(figures)
    return lines


def _accuracy_table(title: str, table: Mapping[str, Any]) -> list[str]:
    return _figures_table(
        [title, "answered", "correct", "accuracy"],
        [[name, values["answered"], values["correct"], values["accuracy"]]
         for name, values in table.items()],
    )  # fmt: skip


def _chosen_line(chosen: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{name} {values['chosen']} ({_fmt(values['share'])})" for name, values in chosen.items()
    )


def _contrast_markdown(figures: Mapping[str, Any]) -> list[str]:
    pairs = figures["pairs"]
    return [
        "### Contrast-set figures (main split)",
        "",
        "Accuracy: the caption of the image's own version chosen.",
        "",
        *_accuracy_table("version", figures["accuracy_by_version"]),
        f"Captions chosen: {_chosen_line(figures['caption_chosen'])}.",
        "",
        f"Sources with both versions answered: {pairs['sources_with_both_answered']}. Each "
        f"version given its own caption: {pairs['reads_person']} "
        f"({_fmt(pairs['reads_person_share'])}); the same gendered caption for both: "
        f"{pairs['same_gendered_caption']} ({_fmt(pairs['same_gendered_caption_share'])}), "
        f"masculine {pairs['same_caption_masculine']}, feminine "
        f"{pairs['same_caption_feminine']} (the scene, not the person, chose these).",
        "",
        f"Not measured: {figures['not_measured']}.",
        "",
    ]


def _stereotype_markdown(figures: Mapping[str, Any]) -> list[str]:
    anti = figures["anti_stereotype_images"]
    lines = [
        "### Stereotype-probe figures (main split)",
        "",
        "Accuracy: the caption the image shows chosen.",
        "",
        *_accuracy_table("image label", figures["accuracy_by_label"]),
        f"Captions chosen: {_chosen_line(figures['caption_chosen'])}.",
        "",
        f"On the {anti['answered']} answered anti-stereotypical images (VLStereoSet D_a): "
        f"stereotypical caption {anti['stereotype_chosen']}, anti-stereotypical "
        f"{anti['anti_stereotype_chosen']}, unrelated {anti['unrelated_chosen']}; "
        f"stereotype over anti-stereotype {_fmt(anti['stereotype_over_anti'])} (0: no bias).",
        "",
    ]
    return lines + _figures_table(
        ["category", "captions chosen"],
        [[category, _chosen_line(values["caption_chosen"])]
         for category, values in figures["per_category"].items()],
        align="ll",
    )  # fmt: skip
