"""The report toolkit's figure helpers, shared by every plot of contrastkit (one model's
plots, comparisons, contrast sets, template flipping, the zero-shot disparity figures, the
dataset audit): the palette, the figure and its title, legend and footer, bars with
bootstrap error bars and their labels, non-overlapping point labels, and saving as PNG
and SVG.

Figures are :class:`matplotlib.figure.Figure` objects saved straight to files: no pyplot,
no global figure registry, no backend switch, so a notebook's own backend is left alone.
Every plot is written twice, as PNG (150 dpi) and as SVG (text kept as text), laid out
once for both (:func:`lay_out_once`: the two show the same layout), each file through
:func:`contrastkit.io.atomic_path`.

Conventions shared by every figure:

* the model (long specs wrapped or shortened in the middle, never clipped) and the number
  of images in the title; a results file with ``"random_weights": true`` adds
  :data:`RANDOM_WEIGHTS_TITLE` to it;
* masculine / feminine in the colours of :data:`PALETTE` everywhere (colour-blind safe,
  Okabe-Ito), with one meaning per figure, said in its legend: a bar is coloured by the
  perceived gender it is about, or, for a signed bias (and a pair preference), by the
  gender it leans to;
* one error-bar convention: an error bar is always a bootstrap interval in the results
  (a figure ``x`` with a sibling ``x_ci`` = ``{"low", "high", "level", "resamples"}``),
  and every figure's legend says what its error bars are (:func:`interval_handle`:
  "error bars: 95% bootstrap CI (1000 resamples)"), or that it has none; without
  intervals there are no error bars (nothing is invented, no spread drawn as one);
* a K at or above the candidates of every query is no reading (its @K figures are the
  pool's own balance): no bar is drawn for it, and its place says so with the marking of
  :func:`~contrastkit.evaluators.metrics.cutoff_marking` (``n/a: K covers all 6
  candidates``), the words of the reports and of the console;
* bars of several K side by side are each labelled with their K;
* no text outside the figure: long footers are wrapped to the figure's width;
* accuracies have a chance line: 1/2 for the two-way his / her protocol, 1/3 for the
  three-way official protocol (his / her / their, read from ``metadata.protocol``);
  signed biases have a zero line and their axis runs from -1 to +1;
* metrics on different scales (Bias@K in [-1, 1], MaxSkew@K a log ratio, a preference
  share) are drawn in separate panels;
* scatter labels never overlap (:func:`place_labels`: each label is put at the first
  free spot around its point, extremes first; a label with no free spot is left out
  and the caption says how many were).
"""

from __future__ import annotations

import math
import textwrap
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

__all__ = [
    "DPI",
    "FONT",
    "FORMATS",
    "NO_INTERVALS",
    "PALETTE",
    "RANDOM_WEIGHTS_TITLE",
    "UNDEFINED_INTERVALS",
    "PlotLabels",
    "add_legend",
    "draw_bars",
    "figure_title",
    "finite",
    "footer",
    "gender_colour",
    "interval_error",
    "interval_handle",
    "interval_level",
    "label_bars",
    "label_panels",
    "lay_out_once",
    "lean_handles",
    "model_name",
    "new_figure",
    "place_labels",
    "save_figure",
    "save_formats",
    "shorten_spec",
    "sign_colour",
    "style_axis",
    "suptitle",
    "wrap_to_figure",
]


#: The colours of the perceived genders (Okabe-Ito, colour-blind safe), used by every plot.
PALETTE = {
    "masculine": "#0072B2",  # blue
    "feminine": "#D55E00",  # vermillion
    "neutral": "#7F7F7F",  # grey: pooled or neither
    "reference": "#4D4D4D",  # chance / zero lines
}


#: What the title of a plot of a random-weights model says.
RANDOM_WEIGHTS_TITLE = "random weights — pipeline check, not a measurement"


#: The file formats every plot is written in.
FORMATS = ("png", "svg")


#: The resolution of every PNG (dots per inch).
DPI = 150


#: The base font size (points) of every figure; ticks and labels are a step or two smaller.
FONT = 8


def shorten_spec(spec: str, width: int = 64) -> str:
    """``spec`` for a title: unchanged when short; else wrapped onto two lines at ``/``
    or ``:`` boundaries, and shortened in the middle (``…``) when two lines are not
    enough. Never clipped at the figure's edge."""
    if len(spec) <= width:
        return spec
    if len(spec) > 2 * width:
        head = spec[: width // 2]
        spec = f"{head}…{spec[-(2 * width - len(head) - 1) :]}"
    cuts = [i + 1 for i, char in enumerate(spec) if char in "/:-_" and 0 < i + 1 < len(spec)]
    cut = min(cuts, key=lambda i: abs(i - len(spec) / 2), default=len(spec) // 2)
    if cut > width or len(spec) - cut > width:
        cut = len(spec) // 2
    return f"{spec[:cut]}\n{spec[cut:]}"


def figure_title(results: Mapping[str, Any], model: str, what: str, n: str | None) -> str:
    """The title of a figure: ``what``, the (shortened) model and ``n``, and the random
    weights warning when ``results`` has ``"random_weights": true``."""
    lines = [what, shorten_spec(model) + (f"  ({n})" if n else "")]
    if results.get("random_weights", False):
        lines.append(RANDOM_WEIGHTS_TITLE)
    return "\n".join(lines)


def new_figure(width: float, height: float, columns: int = 1, **grid: Any) -> tuple[Figure, Any]:
    """A constrained-layout figure and its axes (a flat list)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    axes = figure.subplots(1, columns, squeeze=False, **grid)[0]
    return figure, list(axes)


def suptitle(figure: Figure, text: str, results: Mapping[str, Any]) -> None:
    """The figure's title, wrapped to its width, in red for random weights."""
    random = bool(results.get("random_weights", False))
    fontsize = FONT + 1
    colour = "#A00000" if random else "black"
    figure.suptitle(wrap_to_figure(text, figure, fontsize), fontsize=fontsize, color=colour)


def save_figure(figure: Figure, path: Path, *, dpi: int = DPI) -> Path:
    """Write ``figure`` to ``path`` (format from the suffix; SVG keeps its text as text,
    without a date), atomically; return ``path``. A figure without a layout engine is
    laid out tightly first (unless :func:`lay_out_once` laid it out already)."""
    from matplotlib import rc_context

    if figure.get_layout_engine() is None and figure not in _LAID_OUT:
        figure.tight_layout()
    fmt = path.suffix.lstrip(".").lower() or "png"
    metadata = {"Date": None} if fmt == "svg" else None
    settings: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "contrastkit"}
    with rc_context(settings), atomic_path(path) as tmp:
        figure.savefig(tmp, dpi=dpi, format=fmt, metadata=metadata)
    return path


#: The figures :func:`lay_out_once` laid out (their layout is final).
_LAID_OUT: weakref.WeakSet[Figure] = weakref.WeakSet()


def lay_out_once(figure: Figure) -> None:
    """Lay ``figure`` out now, once (its layout engine, else tightly), and keep that
    layout: each format saved afterwards shows the same layout, and no save lays the
    figure out again (a save would otherwise run the layout engine once per format,
    measuring every text each time)."""
    from matplotlib import rc_context
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    engine = figure.get_layout_engine()
    if engine is None:
        if figure not in _LAID_OUT:
            figure.tight_layout()
    elif not isinstance(engine, PlaceHolderLayoutEngine):  # frozen already: nothing to run
        figure.draw_without_rendering()  # the layout engine runs; nothing is rendered
    with rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        figure.set_layout_engine(None)  # None, not "none": savefig skips its layout pass
    _LAID_OUT.add(figure)


def save_formats(figure: Figure, stem: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``figure`` as ``stem.<format>`` for each of ``formats``, laid out once for
    all of them (:func:`lay_out_once`); return the paths."""
    lay_out_once(figure)
    return [save_figure(figure, stem.with_name(f"{stem.name}.{fmt}")) for fmt in formats]


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else ``None``."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def interval_error(values: Mapping[str, Any] | None, key: str) -> tuple[float, float, float]:
    """``(value, below, above)``: a figure and the distances to its interval's ends
    (``nan`` without an interval; an undefined value drawn as 0)."""
    values = values or {}
    point = finite(values.get(key))
    ci = values.get(f"{key}_ci")
    low = finite(ci.get("low")) if isinstance(ci, Mapping) else None
    high = finite(ci.get("high")) if isinstance(ci, Mapping) else None
    if point is not None and low is not None and high is not None:
        return point, max(point - low, 0.0), max(high - point, 0.0)
    return point or 0.0, math.nan, math.nan


def interval_level(entries: Iterable[Mapping[str, Any] | None]) -> str | None:
    """The text "95% bootstrap CI (200 resamples)" for the first interval among
    ``entries`` with both bounds finite (a bound of 0 is one); :data:`UNDEFINED_INTERVALS`
    when the bootstrap ran (an ``x_ci`` entry is there) but no interval is defined;
    ``None`` when there is no interval at all."""
    ran = False
    for entry in entries:
        for key, value in (entry or {}).items():
            if not (key.endswith("_ci") and isinstance(value, Mapping)):
                continue
            ran = True
            if finite(value.get("low")) is not None and finite(value.get("high")) is not None:
                level = 100 * float(value.get("level", 0.95))
                return f"{level:g}% bootstrap CI ({value.get('resamples')} resamples)"
    return UNDEFINED_INTERVALS if ran else None


#: What a figure without intervals says in place of its error bars' meaning.
NO_INTERVALS = (
    "no error bars: the results have no bootstrap intervals (evaluate with --bootstrap N)"
)
#: What a figure says when the bootstrap ran and no interval is defined (every figure
#: rests on fewer than two items, or none is finite).
UNDEFINED_INTERVALS = (
    "no error bars: n/a, the bootstrap ran but no interval is defined "
    "(each figure rests on fewer than 2 items)"
)


def interval_handle(level: str | None, what: str = "") -> Artist:
    """The legend entry every figure with bars carries, saying what its error bars are:
    ``error bars: 95% bootstrap CI (1000 resamples)`` and ``what`` (e.g. "of the mean
    over queries") for the interval ``level`` (:func:`interval_level`), or
    :data:`NO_INTERVALS` when there is none, :data:`UNDEFINED_INTERVALS` when the
    bootstrap ran without a defined interval."""
    from matplotlib.lines import Line2D

    if level is None or level == UNDEFINED_INTERVALS:
        label = NO_INTERVALS if level is None else UNDEFINED_INTERVALS
        return Line2D([], [], linestyle="none", marker="none", label=label)
    label = f"error bars: {level}" + (f" {what}" if what else "")
    return Line2D(
        [], [], color="black", marker="|", markersize=9, markeredgewidth=0.9,
        linestyle="none", label=label,
    )  # fmt: skip


def wrap_to_figure(text: str, figure: Figure, fontsize: float) -> str:
    """``text`` wrapped to the width of ``figure`` (a footer never runs off its edges)."""
    width = figure.get_figwidth() * 72 / (0.55 * fontsize)  # characters per line, roughly
    return "\n".join(
        "\n".join(textwrap.wrap(line, max(int(width * 0.92), 20)) or [""])
        for line in text.split("\n")
    )


def footer(figure: Figure, text: str, fontsize: float = FONT - 1) -> None:
    """``text`` under the figure's axes, wrapped to its width."""
    figure.supxlabel(wrap_to_figure(text, figure, fontsize), fontsize=fontsize)


def add_legend(figure: Figure, handles: Sequence[Any], *, ncols: int = 2, **options: Any) -> None:
    """The figure's legend, under its axes, each entry wrapped so that the ``ncols``
    columns fit the figure's width: with :func:`interval_handle` among ``handles``, it
    says what every error bar is."""
    fontsize = FONT - 1
    ncols = max(1, min(ncols, len(handles)))
    width = int(figure.get_figwidth() * 72 / (0.55 * fontsize) / ncols) - 8
    for handle in handles:
        handle.set_label("\n".join(textwrap.wrap(handle.get_label(), max(width, 24))))
    figure.legend(
        handles=list(handles), fontsize=fontsize, loc="outside lower center", ncols=ncols,
        frameon=False, **options,
    )  # fmt: skip


def lean_handles(
    masculine: str = "leans masculine (> 0)", feminine: str = "leans feminine (< 0)"
) -> list[Any]:
    """Legend entries of the colours of a signed figure (blue: masculine, vermillion:
    feminine)."""
    from matplotlib.patches import Patch

    return [
        Patch(color=PALETTE["masculine"], label=masculine),
        Patch(color=PALETTE["feminine"], label=feminine),
    ]


def gender_colour(letter: str) -> str:
    """The :data:`PALETTE` colour of a perceived gender written ``M...`` / ``F...``."""
    return PALETTE["masculine"] if letter.upper().startswith("M") else PALETTE["feminine"]


def sign_colour(value: float) -> str:
    """The colour of a signed figure: masculine above 0, feminine below, neutral at 0."""
    if value > 0:
        return PALETTE["masculine"]
    return PALETTE["feminine"] if value < 0 else PALETTE["neutral"]


def style_axis(axis: Axes) -> None:
    """The house style of an axis: small tick labels, no top or right spine."""
    axis.tick_params(labelsize=FONT - 1)
    axis.spines[["top", "right"]].set_visible(False)


def draw_bars(
    axis: Axes,
    positions: Sequence[float],
    errors: Sequence[tuple[float, float, float]],
    *,
    horizontal: bool = False,
    **style: Any,
) -> Any:
    """Bars, and black error bars on those with an interval (``nan`` distances: none)."""
    values = [value for value, _, _ in errors]
    bars = (axis.barh if horizontal else axis.bar)(positions, values, **style)
    with_interval = [i for i, (_, below, _) in enumerate(errors) if not math.isnan(below)]
    if with_interval:
        spread = [[errors[i][1] for i in with_interval], [errors[i][2] for i in with_interval]]
        at = [positions[i] for i in with_interval]
        heights = [values[i] for i in with_interval]
        caps: dict[str, Any] = {
            "fmt": "none",
            "ecolor": "black",
            "elinewidth": 0.9,
            "capsize": 2.5,
            "zorder": 4,
        }
        if horizontal:
            axis.errorbar(heights, at, xerr=spread, **caps)
        else:
            axis.errorbar(at, heights, yerr=spread, **caps)
    return bars


def label_bars(
    axis: Axes, bars: Any, errors: Sequence[tuple[float, float, float]], *, signed: bool = False
) -> list[float]:
    """Write each bar's value just beyond its end (past its error bar), so a bar of 0 is
    seen to be 0 rather than missing; return how far each label's anchor reaches from 0."""
    reach = []
    for bar, (value, below, above) in zip(bars.patches, errors, strict=True):
        spread = above if value >= 0 else below
        end = value + (0.0 if math.isnan(spread) else spread) * (1 if value >= 0 else -1)
        reach.append(abs(end))
        axis.annotate(
            f"{value:+.2f}" if signed else f"{value:.2f}",
            (bar.get_x() + bar.get_width() / 2, end),
            xytext=(0, 2 if value >= 0 else -2),
            textcoords="offset points",
            ha="center",
            va="bottom" if value >= 0 else "top",
            fontsize=FONT - 2,
        )
    return reach


@dataclass(frozen=True)
class PlotLabels:
    """What :func:`place_labels` did: the annotations drawn and the names left out."""

    placed: tuple[Any, ...]
    left_out: tuple[str, ...]


def _overlaps(box: Bbox, others: Iterable[Bbox]) -> bool:
    return any(box.overlaps(other) for other in others)


def place_labels(
    axis: Axes,
    points: Sequence[tuple[float, float, str]],
    renderer: RendererBase,
    *,
    fontsize: float = FONT - 1.5,
    marker_radius: float = 3.5,
) -> PlotLabels:
    """Label scatter ``points`` (x, y, text) on ``axis`` without any two labels, or a
    label and a marker, overlapping, and every label inside the axes.

    The figure's layout must be final (drawn once, layout engine off): positions are
    measured in display pixels with ``renderer``. Points are labelled from the most
    extreme (farthest from the centre of the axes) inwards; each label takes the first
    free spot among 8 directions at growing distances (a thin leader line beyond the
    nearest ring). A label with no free spot is left out and named in the result.
    """
    from matplotlib.transforms import Bbox

    scale = axis.figure.dpi / 72
    frame = axis.get_window_extent(renderer).padded(-2)
    centre = frame.x0 + frame.width / 2, frame.y0 + frame.height / 2
    pixels = [(*axis.transData.transform((x, y)), text) for x, y, text in points]
    radius = marker_radius * scale
    taken: list[Bbox] = [
        Bbox.from_extents(px - radius, py - radius, px + radius, py + radius)
        for px, py, _ in pixels
    ]
    order = sorted(
        range(len(pixels)),
        key=lambda i: (
            -(
                ((pixels[i][0] - centre[0]) / frame.width) ** 2
                + ((pixels[i][1] - centre[1]) / frame.height) ** 2
            )
        ),
    )
    directions = [(1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1), (0, 1), (0, -1)]
    placed: list[Any] = []
    left_out: list[str] = []
    probe = axis.text(0, 0, "", fontsize=fontsize)
    for index in order:
        px, py, text = pixels[index]
        probe.set_text(text)
        extent = probe.get_window_extent(renderer)
        width, height = extent.width + 2, extent.height + 1
        spot = None
        for ring, distance in enumerate((5.0, 10.0, 16.0, 24.0, 34.0)):
            for dx, dy in directions:
                offset = distance * scale
                ax_ = px + dx * (offset if dx else 0) + (0 if dx else -width / 2)
                ay_ = py + dy * (offset if dy else 0) + (0 if dy else -height / 2)
                x0 = ax_ - width if dx < 0 else ax_
                y0 = ay_ - height if dy < 0 else ay_
                box = Bbox.from_bounds(x0, y0, width, height)
                inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
                if inside and not _overlaps(box, taken):
                    spot = (box, ring)
                    break
            if spot:
                break
        if spot is None:
            left_out.append(text)
            continue
        box, ring = spot
        taken.append(box)
        xy_text = axis.transData.inverted().transform((box.x0 + 1, box.y0 + box.height / 2))
        annotation = axis.annotate(
            text,
            xy=points[index][:2],
            xytext=tuple(xy_text),
            textcoords="data",
            ha="left",
            va="center",
            fontsize=fontsize,
            arrowprops={
                "arrowstyle": "-",
                "color": "#999999",
                "linewidth": 0.5,
                "shrinkA": 0,
                "shrinkB": 2,
            }
            if ring
            else None,
        )
        annotation.set_in_layout(False)
        placed.append(annotation)
    probe.remove()
    return PlotLabels(tuple(placed), tuple(left_out))


def label_panels(
    figure: Figure, axes: Sequence[Axes], points: Sequence[Sequence[tuple[float, float, str]]]
) -> list[int]:
    """Lay ``figure`` out, freeze the layout and label each axis' points
    (:func:`place_labels`); return how many labels each axis left out."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    lay_out_once(figure)  # the constrained layout, final before labels are measured
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    return [
        len(place_labels(axis, chosen, renderer).left_out)
        for axis, chosen in zip(axes, points, strict=True)
    ]


def model_name(results: Mapping[str, Any]) -> str:
    """The model a results file is of (``metadata.model_name``), for titles."""
    return str(results.get("metadata", {}).get("model_name", "model"))
