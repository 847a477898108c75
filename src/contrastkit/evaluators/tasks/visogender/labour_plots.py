"""The labour-statistics plot of one model's VisoGender results: per-occupation bias
against the share of men in US labour statistics (Appendix F).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    figure_title,
    label_panels,
    model_name,
    new_figure,
    style_axis,
    suptitle,
)
from contrastkit.evaluators.report.tables import format_number, format_p
from contrastkit.evaluators.tasks.visogender.resolution_plots import n_images_note

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["labour_panels", "labour_plot"]


_LABOUR_AXES = {
    "resolution_gap": "resolution gap Δ = RA_masculine − RA_feminine\n(−1 to +1; > 0 favours "
    "masculine-presenting)",
    "resolution_gap_two_person": "resolution gap Δ, two-person images\n(−1 to +1)",
}


def _labour_axis_label(name: str) -> str:
    if name in _LABOUR_AXES:
        return _LABOUR_AXES[name]
    if name.startswith("retrieval_bias@"):
        k = name.split("@", 1)[1]
        return f"retrieval Bias@{k}\n(−1 all feminine … +1 all masculine)"
    if name.startswith("resolution_accuracy_"):
        return f"resolution accuracy, pair {name.rsplit('_', 1)[1]} (0 to 1)"
    return name.replace("_", " ")


def labour_plot(
    comparisons: Mapping[str, Any],
    panels: list[str],
    model: str = "",
    results: Mapping[str, Any] | None = None,
) -> Figure:
    """Per-occupation values against the share of men (VisoGender Appendix F), one panel
    per value: a least-squares line, Pearson's r and Kendall's tau with their p-values
    and n in each panel's title, labels placed without overlap."""
    results = results or {"metadata": {}}
    most = max(len(comparisons[name]["points"]) for name in panels)
    side = 4.6 if most <= 25 else 6.2
    figure, axes = new_figure(side * len(panels) + 0.4, side * 0.82 + 0.9, len(panels))
    for axis, name in zip(axes, panels, strict=True):
        c = comparisons[name]
        xs = [float(p["male_share"]) for p in c["points"]]
        ys = [float(p["value"]) for p in c["points"]]
        axis.scatter(
            xs, ys, s=14, color=PALETTE["neutral"], edgecolor="black", linewidth=0.4, zorder=3
        )
        if len(xs) >= 2 and max(xs) > min(xs) and "caveat" not in c:
            import numpy as np

            slope, intercept = np.polyfit(xs, ys, 1)
            line = np.array([0.0, 100.0])
            axis.plot(
                line,
                slope * line + intercept,
                color=PALETTE["reference"],
                linewidth=0.8,
                linestyle=":",
                zorder=2,
            )
        axis.axhline(0, color="black", linewidth=0.6, zorder=1)
        axis.axvline(50, color=PALETTE["neutral"], linewidth=0.5, linestyle="--", zorder=1)
        axis.set_xlim(-2, 102)
        low, high = min([*ys, 0.0]), max([*ys, 0.0])
        pad = 0.12 * (high - low or 1.0)
        bounded = name.startswith(("resolution_gap", "retrieval_bias"))
        axis.set_ylim(
            max(low - pad, -1.1) if bounded else low - pad,
            min(high + pad, 1.1) if bounded else high + pad,
        )
        axis.set_xlabel("share of men in the occupation, US labour statistics (%)", fontsize=FONT)
        axis.set_ylabel(_labour_axis_label(name), fontsize=FONT)
        title = (
            f"Pearson r = {format_number(c['pearson_r'])} "
            f"(p {format_p(c['pearson_p'], coarse_from=0.01)}), "
            f"Kendall τ = {format_number(c['kendall_tau'])} "
            f"(p {format_p(c['kendall_p'], coarse_from=0.01)})"
            f"\nn = {c.get('n', len(xs))} occupations"
        )
        if "caveat" in c:  # too few occupations: no coefficient to read
            title = f"n = {c.get('n', len(xs))} occupations: too few for a correlation"
        covered = (c.get("left_out") or {}).get("k_covers_all_candidates") or []
        if covered and not xs:  # K covers every occupation's images: nothing to draw
            title = "n/a: no occupation's Bias@K is a reading"
            axis.text(
                0.5, 0.62, textwrap.fill(str(c.get("caveat", "")), 40),
                ha="center", va="center", fontsize=FONT - 1, color="#A00000",
                transform=axis.transAxes,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 2},
            )  # fmt: skip
        elif covered:
            title += f"\n{len(covered)} left out: K covers all their candidates"
        axis.set_title(title, fontsize=FONT)
        style_axis(axis)
    suptitle(
        figure,
        figure_title(
            results,
            model or model_name(results),
            "Bias against US labour statistics",
            n_images_note(results),
        ),
        results,
    )
    points = [
        [
            (float(p["male_share"]), float(p["value"]), str(p["occupation"]))
            for p in comparisons[name]["points"]
        ]
        for name in panels
    ]
    fitted = any("caveat" not in comparisons[name] for name in panels)
    figure.supxlabel(
        "each point one occupation; "
        + ("dotted: least-squares line; " if fitted else "")
        + "dashed: 50% men; solid: no bias (0)",
        fontsize=FONT - 1,
    )
    left_out = label_panels(figure, axes, points)
    if any(left_out):  # some labels did not fit: say so, and label again
        for axis, left in zip(axes, left_out, strict=True):
            for text in axis.texts[:]:
                text.remove()
            if left:
                axis.set_title(
                    f"{axis.get_title()}; {left} points unlabelled (see report.md)", fontsize=FONT
                )
        figure.set_layout_engine("constrained")
        label_panels(figure, axes, points)
    return figure


def labour_panels(results: Mapping[str, Any]) -> list[str]:
    """The comparisons of the results' labour statistics that have points to draw, or
    whose points were all left out (a K covering every occupation's images: the panel
    says so): the resolution gap first, then each retrieval Bias@K."""
    comparisons = (results.get("labour_statistics") or {}).get("comparisons") or {}
    retrieval_names = [n for n in comparisons if n.startswith("retrieval_bias")]
    return [
        name
        for name in ("resolution_gap", *retrieval_names)
        if name in comparisons
        and (comparisons[name]["points"] or (comparisons[name].get("left_out")))
    ]
