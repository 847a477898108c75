"""The zero-shot disparity paper's figures (seed 003): the concepts with the largest AP
(or ECE) difference between images of men and of women, coloured by whether the
concept's language bias points the same way (Fig. 1, the yellow bars of Sec. 3.3); the
mAP of each group (Fig. 2: one number per group hides the per-concept gaps); and the
cross-dataset consistency scatter (Fig. 3-4: green, red, yellow).

Drawn with the conventions of :mod:`contrastkit.evaluators.report.figures` and its helpers
(matplotlib's object API on the Agg canvas, :data:`~contrastkit.evaluators.report.figures.PALETTE`,
non-overlapping point labels, PNG at 150 dpi and SVG with text kept as text). Each
function returns the paths it wrote, PNG before SVG, and takes the words around its
figure as a :class:`FigureText`: the title, the value axis' label and a ``note``, a line
printed under the title in dark red (the random-weights note of
:func:`contrastkit.models.registry.weights_note`, for instance).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    draw_bars,
    label_panels,
    new_figure,
    save_formats,
    style_axis,
)
from contrastkit.evaluators.tasks.zero_shot.consistency import (
    COLOUR_MEANINGS,
    COLOURS,
    DEFAULT_THRESHOLD,
    consistency_colours,
    consistency_counts,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ALIGNMENT_COLOURS",
    "CONSISTENCY_STYLE",
    "ComparedDifferences",
    "ConceptDifferences",
    "FigureText",
    "plot_consistency",
    "plot_group_map",
    "plot_top_differences",
]

#: Bar colours of :func:`plot_top_differences` when language biases are given: the
#: paper's yellow for a language bias of the same sign as the difference.
ALIGNMENT_COLOURS = {
    "aligned": "#E6AB02",  # the paper's yellow, dark enough on white
    "opposite": "#BBBBBB",
    "no vector": "white",
}

#: Colour and marker of each consistency class in :func:`plot_consistency` (the marker
#: tells them apart without colour vision).
CONSISTENCY_STYLE = {
    "green": ("#009E73", "o"),
    "red": ("#B2182B", "X"),
    "yellow": ("#E6AB02", "^"),
}

_NOTE_COLOUR = "#A00000"


@dataclass(frozen=True)
class FigureText:
    """The words around one figure.

    Attributes:
        title: the figure's first title line (the model, the dataset); ``None``: the
            plot's own, where it has one.
        note: a line under the title in dark red (a random-weights note); ``None``: none.
        value_label: what the plotted values are, for their axis; ``None``: the plot's
            default.
    """

    title: str | None = None
    note: str | None = None
    value_label: str | None = None

    def values(self, default: str) -> str:
        """The value axis' label: ``value_label``, else ``default``."""
        return default if self.value_label is None else self.value_label


@dataclass(frozen=True)
class ConceptDifferences:
    """Per-concept differences between two groups, for :func:`plot_top_differences`.

    Attributes:
        values: concept -> difference, oriented so that > 0 favours ``groups[0]`` (a
            higher AP, a lower ECE: pass ECE_women − ECE_men); ``None`` / NaN left out.
        intervals: concept -> ``(low, high)`` drawn as error bars; ``None``: no bars.
        language: concept -> language bias (:func:`~.words.language_bias`). When given,
            a bar is yellow when the language bias has the same sign as its difference
            (the paper's yellow bars), grey when opposite, white when the concept has no
            word vector; otherwise bars are coloured by the group they favour.
        groups: the names of the two groups, positive side first.
        interval_label: what the error bars are.
    """

    values: Mapping[str, float | None]
    intervals: Mapping[str, tuple[float, float]] | None = None
    language: Mapping[str, float | None] | None = None
    groups: tuple[str, str] = ("men", "women")
    interval_label: str = "bootstrap interval"


@dataclass(frozen=True)
class ComparedDifferences:
    """Per-concept differences on two datasets, for :func:`plot_consistency`.

    Attributes:
        a / b: concept -> difference on dataset A / B.
        labels: the names of datasets A and B.
    """

    a: Mapping[str, float | None]
    b: Mapping[str, float | None]
    labels: tuple[str, str]


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _title(figure: Figure, lines: Sequence[str], note: str | None) -> None:
    """The title lines and the note, each wrapped to the figure's width (a long model
    spec or note is never clipped at the edge); dark red when there is a note."""
    width = max(int(figure.get_figwidth() * 72 / ((FONT + 1) * 0.62)), 30)
    wrapped = [
        part
        for line in [*lines, *([note] if note else [])]
        for part in textwrap.wrap(line, width, break_on_hyphens=False) or [""]
    ]
    figure.suptitle("\n".join(wrapped), fontsize=FONT + 1, color=_NOTE_COLOUR if note else "black")


def _save(figure: Figure, out_stem: Path) -> list[Path]:
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    return save_formats(figure, out_stem)


def _group_colour(name: str) -> str:
    lowered = name.lower()
    if any(word in lowered for word in ("woman", "women", "female", "femin", "girl")):
        return PALETTE["feminine"]
    if any(word in lowered for word in ("man", "men", "male", "mascul", "boy")):
        return PALETTE["masculine"]
    return PALETTE["neutral"]


# --------------------------------------------------------------------------- Fig. 1


def plot_top_differences(
    out_stem: Path, differences: ConceptDifferences, text: FigureText, *, top: int = 20
) -> list[Path]:
    """Fig. 1 of the paper: the ``top`` concepts by absolute difference as diverging
    horizontal bars, largest positive at the top, written as ``OUT_STEM.png`` and ``.svg``.

    Args:
        out_stem: the path without suffix (its folder is created).
        differences: the differences, their intervals and language biases.
        text: the title (the model, the dataset), the note, and what the difference is
            for the x axis (default ``AP difference: AP_men − AP_women (AP points)``; say
            so for ECE: ``"ECE difference: ECE_women − ECE_men (points)"``).
        top: how many concepts.

    Returns:
        The PNG and SVG paths.
    """
    from matplotlib.patches import Patch

    intervals, language = differences.intervals, differences.language
    groups = differences.groups
    value_label = text.values("AP difference: AP_men − AP_women (AP points)")
    values = {c: v for c, raw in differences.values.items() if (v := _finite(raw)) is not None}
    chosen = sorted(values, key=lambda c: (-abs(values[c]), c))[: max(top, 0)]
    chosen.sort(key=lambda c: (-values[c], c))
    errors = []
    for concept in chosen:
        value = values[concept]
        bounds = (intervals or {}).get(concept)
        low, high = (_finite(bounds[0]), _finite(bounds[1])) if bounds else (None, None)
        if low is None or high is None:
            errors.append((value, math.nan, math.nan))
        else:
            errors.append((value, max(value - low, 0.0), max(high - value, 0.0)))
    figure, (axis,) = new_figure(6.4, max(2.6, 0.22 * len(chosen) + 2.2))
    handles: list[Any] = []
    if language is None:
        colours = [
            PALETTE["masculine"] if v > 0 else PALETTE["feminine"] if v < 0 else PALETTE["neutral"]
            for v in (values[c] for c in chosen)
        ]
        hatches = [""] * len(chosen)
        handles = [
            Patch(color=PALETTE["masculine"], label=f"favours images of {groups[0]}"),
            Patch(color=PALETTE["feminine"], label=f"favours images of {groups[1]}"),
        ]
    else:
        kinds = []
        for concept in chosen:
            bias = _finite(language.get(concept))
            if bias is None:
                kinds.append("no vector")
            else:
                kinds.append("aligned" if bias * values[concept] > 0 else "opposite")
        colours = [ALIGNMENT_COLOURS[k] for k in kinds]
        hatches = ["////" if k == "no vector" else "" for k in kinds]
        meanings = {
            "aligned": "language bias has the same sign (word closer to that group's terms)",
            "opposite": "language bias has the opposite sign",
            "no vector": "no word vector for the concept",
        }
        handles = [
            Patch(
                facecolor=ALIGNMENT_COLOURS[k],
                edgecolor="#555555",
                hatch="////" if k == "no vector" else "",
                label=meanings[k],
            )
            for k in ("aligned", "opposite", "no vector")
            if k in kinds
        ]
    if chosen:
        bars = draw_bars(
            axis,
            range(len(chosen)),
            errors,
            horizontal=True,
            height=0.7,
            color=colours,
            edgecolor="#555555",
            linewidth=0.4,
        )
        for bar, hatch in zip(bars.patches, hatches, strict=True):
            bar.set_hatch(hatch)
        axis.set_yticks(range(len(chosen)), chosen)
        axis.set_ylim(len(chosen) - 0.4, -0.6)  # the largest positive at the top
        reach = max(
            abs(v) + (0.0 if math.isnan(e) else e)
            for v, below, above in errors
            for e in (below, above)
        )
        reach = reach * 1.08 or 1.0
        axis.set_xlim(-reach, reach)
    else:
        axis.text(0.5, 0.5, "no concept has a difference", ha="center", va="center",
                  transform=axis.transAxes, fontsize=FONT)  # fmt: skip
        axis.set_yticks([])
    axis.axvline(0, color="black", linewidth=0.8)
    has_bars = any(not math.isnan(below) for _, below, _ in errors)
    axis.set_xlabel(
        f"{value_label}\n< 0: favours images of {groups[1]}; > 0: favours images of "
        f"{groups[0]}" + (f"\nerror bars: {differences.interval_label}" if has_bars else ""),
        fontsize=FONT,
    )
    axis.set_ylabel("concept", fontsize=FONT)
    style_axis(axis)
    if handles:
        figure.legend(
            handles=handles, fontsize=FONT - 1, loc="outside lower center", ncols=1, frameon=False
        )
    shown = f"top {len(chosen)} of {len(values)} concepts by |difference|"
    _title(figure, [text.title or "", shown], text.note)
    return _save(figure, out_stem)


# --------------------------------------------------------------------------- Fig. 2


def plot_group_map(
    out_stem: Path,
    map_by_group: Mapping[str, float | None],
    text: FigureText,
    *,
    intervals: Mapping[str, tuple[float, float]] | None = None,
    counts: Mapping[str, int] | None = None,
) -> list[Path]:
    """Fig. 2 of the paper: the mAP of each group as bars (coloured by the group's
    perceived gender when its name says it, grey otherwise), each with its value written
    on it, to show how close the aggregates are while concepts differ.

    Args:
        out_stem: the path without suffix.
        map_by_group: group -> mAP (fractions of 1 or AP points; the axis follows).
        text: the first title line, the note, and the y axis label (default ``mAP (mean
            AP over the concepts)``).
        intervals: group -> ``(low, high)`` error bars.
        counts: group -> number of images, under the group's name.

    Returns:
        The PNG and SVG paths.
    """
    names = list(map_by_group)
    values = [_finite(map_by_group[n]) for n in names]
    errors = []
    for name, value in zip(names, values, strict=True):
        bounds = (intervals or {}).get(name)
        low, high = (_finite(bounds[0]), _finite(bounds[1])) if bounds else (None, None)
        if value is None or low is None or high is None:
            errors.append((value or 0.0, math.nan, math.nan))
        else:
            errors.append((value, max(value - low, 0.0), max(high - value, 0.0)))
    figure, (axis,) = new_figure(max(4.2, 1.1 * len(names) + 1.6), 3.8)
    draw_bars(
        axis,
        range(len(names)),
        errors,
        width=0.5,
        color=[_group_colour(n) for n in names],
    )
    finite = [v for v in values if v is not None]
    points = bool(finite) and max(finite) > 1.0
    top = 100.0 if points else 1.0
    for i, value in enumerate(values):
        written = "–" if value is None else f"{value:.1f}" if points else f"{value:.3f}"
        axis.annotate(
            written,
            (i, value or 0.0),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=FONT,
        )
    axis.set_xticks(
        range(len(names)),
        [f"{n}\nn = {counts[n]} images" if counts and n in counts else n for n in names],
    )
    axis.set_ylim(0, top * 1.08)
    axis.set_ylabel(text.values("mAP (mean AP over the concepts)"), fontsize=FONT)
    spread = (
        f"largest difference between groups: {max(finite) - min(finite):.3g}\n"
        if len(finite) >= 2
        else ""
    )
    with_bars = any(not math.isnan(e[1]) for e in errors)
    axis.set_xlabel(
        f"{spread}one number per group can hide large\nper-concept gaps "
        "(see the top differences)" + ("\nerror bars: bootstrap interval" if with_bars else ""),
        fontsize=FONT,
    )
    style_axis(axis)
    _title(figure, [text.title or ""], text.note)
    return _save(figure, out_stem)


# --------------------------------------------------------------------------- Fig. 3-4


def plot_consistency(
    out_stem: Path,
    compared: ComparedDifferences,
    text: FigureText = FigureText(),
    *,
    threshold: float = DEFAULT_THRESHOLD,
    max_labels: int = 30,
) -> list[Path]:
    """Fig. 3-4 of the paper: each concept in both datasets as a point (difference on
    dataset A across, on B up), coloured and shaped by :func:`~.consistency.
    consistency_colours` (green circle, red cross, yellow triangle), with the threshold
    band dashed. Up to ``max_labels`` points are named, green and red ones first, then
    those farthest from the origin (labels never overlap; the caption says how many
    points are unnamed).

    Args:
        out_stem: the path without suffix.
        compared: the differences on datasets A and B, and their names.
        text: the first title line (default names the figure), the note, and what the
            differences are (default ``AP_men − AP_women (AP points)``).
        threshold: the magnitude of practical significance, in the units of the diffs.
        max_labels: how many points to name at most.

    Returns:
        The PNG and SVG paths.
    """
    from matplotlib.lines import Line2D

    diff_a, diff_b, labels = compared.a, compared.b, compared.labels
    value_label = text.values("AP_men − AP_women (AP points)")
    colours = consistency_colours(diff_a, diff_b, threshold)
    counts = consistency_counts(colours)
    points = {c: (float(diff_a[c] or 0.0), float(diff_b[c] or 0.0)) for c in colours}
    figure, (axis,) = new_figure(5.6, 6.0)
    for colour in COLOURS:
        members = [c for c in points if colours[c] == colour]
        if not members:
            continue
        face, marker = CONSISTENCY_STYLE[colour]
        axis.scatter(
            [points[c][0] for c in members],
            [points[c][1] for c in members],
            s=26,
            color=face,
            marker=marker,
            edgecolor="black",
            linewidth=0.4,
            zorder=3,
        )
    reach = max([abs(v) for xy in points.values() for v in xy] + [1.5 * threshold, 1e-9]) * 1.12
    axis.set_xlim(-reach, reach)
    axis.set_ylim(-reach, reach)
    axis.set_aspect("equal")
    axis.axhline(0, color="black", linewidth=0.6, zorder=1)
    axis.axvline(0, color="black", linewidth=0.6, zorder=1)
    for edge in (-threshold, threshold):
        axis.axhline(edge, color=PALETTE["reference"], linewidth=0.7, linestyle="--", zorder=1)
        axis.axvline(edge, color=PALETTE["reference"], linewidth=0.7, linestyle="--", zorder=1)
    axis.set_xlabel(f"{labels[0]}: {value_label}", fontsize=FONT)
    axis.set_ylabel(f"{labels[1]}: {value_label}", fontsize=FONT)
    style_axis(axis)
    handles = [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=CONSISTENCY_STYLE[c][1],
            markerfacecolor=CONSISTENCY_STYLE[c][0],
            markeredgecolor="black",
            markeredgewidth=0.4,
            label=f"{c} ({counts[c]}): {COLOUR_MEANINGS[c]}",
        )
        for c in COLOURS
    ]
    handles.append(
        Line2D(
            [], [], color=PALETTE["reference"], linestyle="--", linewidth=0.7,
            label=f"threshold ±{threshold:g}",
        )
    )  # fmt: skip
    figure.legend(
        handles=handles, fontsize=FONT - 1, loc="outside lower center", ncols=1, frameon=False
    )
    heading = text.title or "Cross-dataset consistency of per-concept differences (Fig. 3-4)"
    summary = f"{len(points)} concepts in both {labels[0]} and {labels[1]}"
    _title(figure, [heading, summary], text.note)
    named = sorted(  # green and red first (the disparities to read), then the farthest
        points,
        key=lambda c: (colours[c] == "yellow", -(points[c][0] ** 2 + points[c][1] ** 2), c),
    )
    chosen = [(*points[c], c) for c in named[: max(max_labels, 0)]]
    if chosen:
        left_out = label_panels(figure, [axis], [chosen])[0]
        unnamed = len(points) - len(chosen) + left_out
        if unnamed:
            axis.set_title(
                f"{unnamed} of {len(points)} points unnamed\n(at most {max_labels} "
                "named: green and red first, then the farthest from 0)",
                fontsize=FONT - 1,
            )
            for label in axis.texts[:]:
                label.remove()
            figure.set_layout_engine("constrained")
            label_panels(figure, [axis], [chosen])
    return _save(figure, out_stem)
