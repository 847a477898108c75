"""Bars shared by the figures that put several results side by side: each model's (or
set's) metric at each K, with the K warnings a result carries."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking
from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    draw_bars,
    interval_error,
    sign_colour,
)
from contrastkit.moved import moved_names

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["k_bars"]

_VISOGENDER = "contrastkit.evaluators.tasks.visogender.comparison_plots"

#: VisoGender's comparison figure moved to the VisoGender task folder.
__getattr__ = moved_names(
    __name__,
    {"comparison_figure": _VISOGENDER, "write_comparison_plots": _VISOGENDER},
)


def _k_bar_labels(
    axis: Axes, bars: Any, errors: Sequence[tuple[float, float, float]], k: int, signed: bool
) -> None:
    """Label each horizontal bar of one K with ``K = k`` and its value, just past its
    end (past its error bar)."""
    for bar, (value, below, above) in zip(bars.patches, errors, strict=True):
        spread = above if value >= 0 else below
        end = value + (0.0 if math.isnan(spread) else spread) * (1 if value >= 0 else -1)
        axis.annotate(
            f"K = {k}: {value:+.2f}" if signed else f"K = {k}: {value:.2f}",
            (end, bar.get_y() + bar.get_height() / 2),
            xytext=(3 if value >= 0 else -3, 0),
            textcoords="offset points",
            ha="left" if value >= 0 else "right",
            va="center",
            fontsize=FONT - 2.5,
        )


def k_bars(
    axis: Axes,
    rows: Sequence[tuple[Mapping[str, Any] | None, Mapping[int, Mapping[str, Any]]]],
    ks: Sequence[int],
    name: str,
    *,
    signed: bool = True,
) -> None:
    """Horizontal bars of metric ``name`` (``bias@{k}``) for each K in each row (one row
    per model or set: its summaries by metric, and its K warnings), each bar labelled
    with its K; the mean's bootstrap interval as error bar; a K covering every query's
    candidates is written as its marking instead of a bar."""
    step = 0.8 / max(len(ks), 1)
    for j, k in enumerate(ks):
        at = [i - 0.4 + step * (j + 0.5) for i in range(len(rows))]
        drawn, errors = [], []
        for i, (values, cutoffs) in enumerate(rows):
            if values is None or name.format(k=k) not in values:
                continue
            if covers_every_query(cutoffs.get(k)):
                axis.annotate(
                    f"K = {k}: {cutoff_marking(cutoffs[k])}", (0, at[i]), xytext=(3, 0),
                    textcoords="offset points", ha="left", va="center",
                    fontsize=FONT - 2.5, color="#A00000",
                )  # fmt: skip
                continue
            drawn.append(at[i])
            errors.append(interval_error(values.get(name.format(k=k)), "mean"))
        if drawn:
            bars = draw_bars(
                axis, drawn, errors, horizontal=True, height=step * 0.85,
                color=[sign_colour(v) if signed else PALETTE["neutral"] for v, _, _ in errors],
                edgecolor="white", linewidth=0.4,
            )  # fmt: skip
            _k_bar_labels(axis, bars, errors, k, signed)
