"""The resolution plots of one model's VisoGender results (Tab. 2, Fig. 8 and the gap per
occupation), on the report toolkit (:mod:`contrastkit.evaluators.report.figures`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    add_legend,
    draw_bars,
    figure_title,
    finite,
    gender_colour,
    interval_error,
    interval_handle,
    interval_level,
    label_bars,
    lean_handles,
    model_name,
    new_figure,
    sign_colour,
    style_axis,
    suptitle,
)
from contrastkit.evaluators.tasks.visogender.report import SPLIT_TITLES

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["CHANCE", "gap_plot", "gender_pair_plot", "n_images_note", "resolution_accuracy_plot"]


#: Chance accuracy of each resolution protocol: a random pick among the pronouns scored.
CHANCE = {"two-way": 1 / 2, "visogender-official": 1 / 3}


def _chance_line(axis: Axes, protocol: str | None) -> str | None:
    """Draw the protocol's chance accuracy; return its legend text (None when unknown)."""
    chance = CHANCE.get(protocol or "")
    if chance is None:
        return None
    label = (
        "chance, 2-way (his / her)"
        if protocol == "two-way"
        else ("chance, 3-way (his / her / their)")
    )
    axis.axhline(chance, color=PALETTE["reference"], linestyle="--", linewidth=0.9, label=label)
    return label


def n_images_note(results: Mapping[str, Any]) -> str | None:
    """The ``n = N images`` note of a plot's title (``None`` when the results do not say)."""
    overall = (results.get("resolution_bias") or {}).get("all_images") or {}
    n = overall.get("n") or results.get("metadata", {}).get("n_resolution_cases")
    return f"n = {n} images" if n else None


def resolution_accuracy_plot(results: Mapping[str, Any]) -> Figure:
    """RA_masculine and RA_feminine per split (Tab. 2), intervals as error bars, the
    protocol's chance line."""
    resolution = results["resolution_bias"]
    protocol = results["metadata"].get("protocol")
    names = [n for n in SPLIT_TITLES if (resolution.get(n) or {}).get("n")]
    figure, (axis,) = new_figure(6.4, 3.8)
    for offset, gender in ((-0.2, "masculine"), (0.2, "feminine")):
        draw_bars(
            axis,
            [i + offset for i in range(len(names))],
            [interval_error(resolution[n], f"RA_{gender}") for n in names],
            width=0.4,
            color=PALETTE[gender],
            label=f"{gender}-presenting subject",
        )
    axis.set_xticks(
        range(len(names)),
        [
            "\n".join(textwrap.wrap(SPLIT_TITLES[n], 14)) + f"\nn = {resolution[n]['n']}"
            for n in names
        ],
    )
    _chance_line(axis, protocol)
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("resolution accuracy (share resolved correctly)", fontsize=FONT)
    level = interval_level(resolution.get(n) for n in names)
    axis.set_xlabel("split", fontsize=FONT)
    handles, _ = axis.get_legend_handles_labels()
    add_legend(figure, [*handles, interval_handle(level, "over images")])
    style_axis(axis)
    what = f"Resolution accuracy (protocol {protocol})" if protocol else "Resolution accuracy"
    suptitle(
        figure, figure_title(results, model_name(results), what, n_images_note(results)), results
    )
    return figure


_CELL_TITLES = {"M": "M", "F": "F", "MM": "M | M", "MF": "M | F", "FM": "F | M", "FF": "F | F"}


def gender_pair_plot(
    resolution: Mapping[str, Any], model: str, results: Mapping[str, Any] | None = None
) -> Figure:
    """Resolution accuracy per (occupation | participant) gender pair, with the pronoun
    referring to the occupation and, where scored, to the participant. Each bar is
    coloured by the perceived gender of the person the pronoun refers to; intervals are
    error bars; the protocol's chance line."""
    from matplotlib.patches import Patch

    results = results or {"metadata": {}}
    cells = resolution["per_cell"]
    flip = resolution.get("participant_first", {}).get("per_cell", {})
    names = list(cells)
    figure, (axis,) = new_figure(6.4, 3.8)
    flipped = [i for i, n in enumerate(names) if n in flip]  # OP cells only
    width = 0.4 if flipped else 0.6
    errors = [interval_error(cells[n], "accuracy") for n in names]
    bars = draw_bars(
        axis,
        [i - (0.2 if i in flipped else 0.0) for i in range(len(names))],
        errors,
        width=width,
        color=[gender_colour(n[0]) for n in names],
        edgecolor="white",
        label="pronoun refers to the occupation",
    )
    label_bars(axis, bars, errors)
    if flipped:
        errors = [interval_error(flip[names[i]], "accuracy") for i in flipped]
        bars = draw_bars(
            axis,
            [i + 0.2 for i in flipped],
            errors,
            width=0.4,
            color=[gender_colour(names[i][-1]) for i in flipped],
            hatch="////",
            edgecolor="white",
            label="pronoun refers to the participant",
        )
        label_bars(axis, bars, errors)
    axis.set_xticks(
        range(len(names)),
        [f"{_CELL_TITLES.get(n, n)}\nn = {cells[n].get('n', '?')}" for n in names],
    )
    chance = _chance_line(axis, results["metadata"].get("protocol"))
    axis.set_ylim(0, 1.1)
    axis.set_ylabel("resolution accuracy (share resolved correctly)", fontsize=FONT)
    level = interval_level([*cells.values(), *flip.values()])
    axis.set_xlabel(
        "perceived gender: occupation | participant (one letter: single person)",
        fontsize=FONT,
    )
    handles: list[Any] = [
        Patch(color=PALETTE["masculine"], label="refers to a masculine-presenting person"),
        Patch(color=PALETTE["feminine"], label="refers to a feminine-presenting person"),
    ]
    if flipped:
        handles.append(
            Patch(
                facecolor="white",
                edgecolor="black",
                hatch="////",
                label="hatched: pronoun refers to the participant",
            )
        )
    if chance:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color=PALETTE["reference"], linestyle="--", label=chance))
    add_legend(figure, [*handles, interval_handle(level, "over images")])
    style_axis(axis)
    n = resolution.get("all_images", {}).get("n")
    suptitle(
        figure,
        figure_title(
            results, model, "Resolution accuracy by gender pair", f"n = {n} images" if n else None
        ),
        results,
    )
    return figure


def gap_plot(
    resolution: Mapping[str, Any], model: str, results: Mapping[str, Any] | None = None
) -> Figure:
    """The resolution gap of each occupation, sorted, coloured by the gender it favours,
    under the overall gap (with its interval when the results have one)."""
    results = results or {"metadata": {}}
    occupations = resolution["per_occupation"]
    ordered = sorted(occupations, key=lambda n: finite(occupations[n].get("gender_gap")) or 0)
    overall = resolution.get("all_images") or {}
    labels = [*ordered, "overall (all images)"]
    errors = [interval_error(occupations[n], "gender_gap") for n in ordered]
    errors.append(interval_error(overall, "gender_gap"))
    figure, (axis,) = new_figure(5.6, max(3.2, 0.19 * len(labels) + 1.8))
    draw_bars(
        axis,
        range(len(labels)),
        errors,
        horizontal=True,
        height=0.7,
        color=[sign_colour(v) for v, _, _ in errors],
    )
    axis.set_yticks(range(len(labels)), labels)
    axis.get_yticklabels()[-1].set_fontweight("bold")
    axis.axhline(len(ordered) - 0.5, color=PALETTE["neutral"], linewidth=0.6)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlim(-1.05, 1.05)
    axis.set_xticks([-1, -0.5, 0, 0.5, 1], ["−1", "−0.5", "0", "0.5", "1"])
    axis.set_ylim(-0.6, len(labels) - 0.4)
    level = interval_level([overall, *occupations.values()])
    axis.set_xlabel(
        "gap Δ = RA_masculine − RA_feminine (accuracy difference, −1 to +1)", fontsize=FONT
    )
    axis.set_ylabel("occupation", fontsize=FONT)
    style_axis(axis)
    add_legend(
        figure,
        [
            *lean_handles(
                "Δ > 0: masculine-presenting resolved better",
                "Δ < 0: feminine-presenting resolved better",
            ),
            interval_handle(level, "over images"),
        ],
        ncols=1,
    )
    n = overall.get("n")
    suptitle(
        figure,
        figure_title(
            results,
            model,
            "Resolution gap per occupation",
            f"n = {n} images, {len(ordered)} occupations" if n else None,
        ),
        results,
    )
    return figure
