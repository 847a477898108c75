"""The plots of decision probes: the flip rate per question family and the paired
differences behind the gap (``plots/decision_flips``, ``plots/decision_gaps``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.evaluators.tasks.decision_probes.metrics import PairedAnswer, option_gap
from contrastkit.evaluators.tasks.decision_probes.report import MODE_TITLES, as_decisions_result
from contrastkit.results.decisions import DecisionFigures, DecisionsResult
from contrastkit.text import UNDEFINED

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["flip_figure", "gap_figure"]


def flip_figure(result: DecisionsResult | Mapping[str, Any]) -> Figure:
    """Flip rate per question family and scoring mode, with the bootstrap intervals
    (resampling sources)."""
    from contrastkit.evaluators.report.figures import (
        FONT,
        PALETTE,
        add_legend,
        draw_bars,
        figure_title,
        interval_error,
        interval_handle,
        interval_level,
        label_bars,
        new_figure,
        style_axis,
        suptitle,
    )

    result = as_decisions_result(result)
    summary = result.summary
    families = list(dict.fromkeys(f for mode in summary.values() for f in mode))
    figure, (axis,) = new_figure(max(4.5, 1.3 * len(families) + 2), 3.6)
    colours = {"logprob": PALETTE["masculine"], "generate": PALETTE["feminine"]}
    width = 0.8 / max(1, len(summary))
    handles: list[Any] = []
    for m, (mode, figures) in enumerate(summary.items()):
        positions = [i + (m - (len(summary) - 1) / 2) * width for i in range(len(families))]
        shown = [figures.get(f) for f in families]
        errors = [interval_error(_json(f), "flip_rate") for f in shown]
        defined = [i for i, f in enumerate(shown) if f is not None and f.flip_rate is not None]
        bars = draw_bars(
            axis, [positions[i] for i in defined], [errors[i] for i in defined], width=width,
            color=colours.get(mode, "grey"),
        )  # fmt: skip
        label_bars(axis, bars, [errors[i] for i in defined])
        for i in set(range(len(families))) - set(defined):  # nothing compared: no bar
            axis.annotate(UNDEFINED, (positions[i], 0), xytext=(0, 2), textcoords="offset points",
                          ha="center", va="bottom", fontsize=FONT - 2)  # fmt: skip
        from matplotlib.patches import Patch

        handles.append(Patch(color=colours.get(mode, "grey"), label=MODE_TITLES.get(mode, mode)))
    axis.set_xticks(range(len(families)), families)
    axis.set_xlim(-0.6, len(families) - 0.4)
    axis.set_ylabel("flip rate (answers differ between versions)", fontsize=FONT)
    axis.set_ylim(0, 1.1)
    style_axis(axis)
    level = interval_level(f.to_json() for mode in summary.values() for f in mode.values())
    handles.append(interval_handle(level, "resampling sources"))
    add_legend(figure, handles, ncols=3)
    title = figure_title(
        _flags(result), result.model, "Flip rate per question family", f"{result.sources} sources"
    )
    suptitle(figure, title, _flags(result))
    return figure


def _json(figures: DecisionFigures | None) -> Mapping[str, Any] | None:
    """A family's figures as the shared plot helpers read them."""
    return None if figures is None else figures.to_json()


def _flags(result: DecisionsResult) -> dict[str, bool]:
    """What the shared figure titles read of a result: whether its weights are random."""
    return {"random_weights": bool(result.random_weights)}


def gap_figure(
    result: DecisionsResult | Mapping[str, Any], answers: Mapping[str, Sequence[PairedAnswer]]
) -> Figure:
    """The distribution of the paired differences (masculine minus feminine) behind the
    gap of the option questions, one panel per scoring mode."""
    from contrastkit.evaluators.report.figures import (
        FONT,
        PALETTE,
        figure_title,
        new_figure,
        style_axis,
        suptitle,
    )

    result = as_decisions_result(result)
    kinds = {family: f.kind for mode in result.summary.values() for family, f in mode.items()}
    modes = [mode for mode in answers if answers[mode]] or ["logprob"]
    figure, axes = new_figure(4.2 * len(modes), 3.4, len(modes))
    for axis, mode in zip(axes, modes, strict=True):
        gaps = [
            g
            for pair in answers.get(mode, ())
            if kinds.get(pair.family) != "numeric" and (g := option_gap(pair)) is not None
        ]
        if gaps:
            axis.hist(gaps, bins=np.linspace(-1.05, 1.05, 22), color=PALETTE["neutral"])
        else:
            axis.text(0.5, 0.5, "no paired answers", ha="center", transform=axis.transAxes)
        axis.axvline(0, color=PALETTE["reference"], linewidth=0.8)
        axis.set_title(f"{MODE_TITLES.get(mode, mode)} (n = {len(gaps)})", fontsize=8)
        axis.set_xlabel("masculine − feminine\n(> 0: toward the stereotype)", fontsize=FONT)
        axis.set_ylabel("paired answers", fontsize=FONT)
        style_axis(axis)
    title = figure_title(
        _flags(result),
        result.model,
        "Paired differences of the option questions",
        f"{result.sources} sources",
    )
    suptitle(figure, title, _flags(result))
    return figure
