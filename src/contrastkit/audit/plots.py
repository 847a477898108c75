"""The audit's plots (PNG and SVG), drawn from the report's data.

``composition.png`` (images per label), ``baselines.png`` (Tab. 1: Bias@K and MaxSkew@K
per model, data as is and balanced), ``clusters_factor.png`` (ΔM per cluster with its
salient words, Tab. 6) and ``clusters_map.png`` (the 2-D map of Fig. 1); the markdown
report that shows them is :mod:`contrastkit.audit.report`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.audit.data import LABELS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["metric_title", "write_plots"]

#: The evaluators' palette (masculine blue, feminine vermillion), so every plot agrees.
_COLOURS = {"masculine": "#0072B2", "feminine": "#D55E00", "undefined": "#BBBBBB"}


def metric_title(name: str) -> str:
    """A baseline metric's name as a title: ``bias@10`` -> ``Bias@10``, ``maxskew@10`` ->
    ``MaxSkew@10``."""
    kind, k = name.split("@")
    return f"{'Bias' if kind == 'bias' else 'MaxSkew'}@{k}"


#: The colour of a random-weights title, as in the evaluators' plots.
_RANDOM_COLOUR = "#A00000"


def _figure(
    width: float, height: float, columns: int = 1, mark: str | None = None
) -> tuple[Figure, list[Any]]:
    """A constrained-layout figure and its axes; ``mark`` (:func:`_random_weights_mark`)
    becomes its title, in dark red, before anything is laid out."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=150, layout="constrained")
    axes = figure.subplots(1, columns, squeeze=False)[0]
    if mark:
        figure.suptitle(mark, fontsize=8, color=_RANDOM_COLOUR)
    return figure, list(axes)


#: Values at most this far from 0 are 0 (float rounding): a panel of them is flat.
_FLAT = 1e-9


def _flat_note(axis: Axes, text: str, limits: tuple[float, float]) -> None:
    """A panel whose values are all 0 (to rounding): a readable axis (``limits``, not
    the ±1e-16 matplotlib zooms into) and a note in the panel saying why it is empty."""
    axis.set_ylim(*limits)
    axis.text(
        0.5, 0.62, textwrap.fill(text, 34), transform=axis.transAxes, ha="center",
        va="center", fontsize=7, color="#A00000",
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 2},
    )  # fmt: skip


def _composition_plot(section: Mapping[str, Any], mark: str | None = None) -> Figure:
    figure, (axis,) = _figure(4.5, 3, mark=mark)
    counts = [section["counts"][label] for label in LABELS]
    bars = axis.bar(LABELS, counts, color=[_COLOURS[label] for label in LABELS])
    for bar, label in zip(bars, LABELS, strict=True):
        share = section["shares"][label] or 0.0
        axis.annotate(f"{100 * share:.1f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      ha="center", va="bottom", fontsize=8)  # fmt: skip
    axis.set_ylabel("images")
    axis.set_title("Images per caption gender label (GenSynth Sec. 3.2)", fontsize=9)
    axis.margins(y=0.15)
    return figure


def _baselines_plot(section: Mapping[str, Any], mark: str | None = None) -> Figure:
    """Bias@K (-1 to +1) and MaxSkew@K (a log ratio, >= 0) in separate panels (their
    scales differ), the data as is and, with ``--balanced``, the balanced subsamples.
    Whiskers: the standard error of the mean over the queries (as is) and the standard
    deviation over the seeded subsamples (balanced), as the caption says."""
    models = list(section["models"])
    balanced = any("balanced" in entry for entry in section["models"].values())
    groups = [("bias", section["ks_bias"]), ("maxskew", section["ks_skew"])]
    panels = [("original", "data as is")] + (
        [("balanced", "balanced subsamples")] if balanced else []
    )
    figure, axes = _figure(3.2 * len(panels) * 2, 3.6, 2 * len(panels), mark)
    width = 0.8 / max(1, len(models))
    colours = ["#7F7F7F", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442"]
    column = 0
    for key, title in panels:
        for metric, ks in groups:
            axis = axes[column]
            column += 1
            names = [f"{metric}@{k}" for k in ks]
            for j, model in enumerate(models):
                entry = section["models"][model].get(key, {})
                means, errors = [], []
                for name in names:
                    figure_of = entry.get(name, {})
                    means.append(figure_of.get("mean") or 0.0)
                    if key == "balanced":
                        errors.append(figure_of.get("std") or 0.0)
                    else:
                        n = figure_of.get("n") or 0
                        sigma = figure_of.get("sigma") or 0.0
                        errors.append(sigma / np.sqrt(n) if n else 0.0)
                x = np.arange(len(names)) + (j - (len(models) - 1) / 2) * width
                label = model if len(model) <= 40 else model[:18] + "…" + model[-18:]
                if model in section.get("weights_notes", {}):
                    label += "\n(random weights)"
                axis.bar(x, means, width, yerr=errors, capsize=2, label=label,
                         color=colours[j % len(colours)])  # fmt: skip
            axis.set_xticks(range(len(names)), [metric_title(n) for n in names])
            axis.axhline(0, color="#4D4D4D", linewidth=0.8)
            drawn = [
                abs(float(section["models"][m].get(key, {}).get(n, {}).get("mean") or 0.0))
                for m in models
                for n in names
            ]
            if max(drawn, default=0.0) <= _FLAT:
                _flat_note(
                    axis,
                    f"every {'Bias' if metric == 'bias' else 'MaxSkew'}@K here is 0 (or "
                    "undefined): no bars to draw; see audit.md for why (a balanced set, "
                    "or K at least the images)",
                    (-1, 1) if metric == "bias" else (0, 1),
                )
            if metric == "bias":
                axis.set_ylim(-1, 1)
                axis.set_ylabel("mean Bias@K (−1 all feminine … +1 all masculine)", fontsize=8)
            else:
                axis.set_ylabel("mean MaxSkew@K (ln ratio; 0 mirrors the data)", fontsize=8)
            axis.set_title(f"{'Bias' if metric == 'bias' else 'MaxSkew'}, {title}", fontsize=9)
    axes[0].legend(fontsize=7, loc="upper left")
    queries = section.get("queries")
    title = (
        f"Retrieval bias beside gender-agnostic baselines (GenSynth Tab. 1; {queries} "
        "neutral-caption queries)"
    )
    if mark:
        figure.suptitle(f"{title}\n{mark}", fontsize=9, color=_RANDOM_COLOUR)
    else:
        figure.suptitle(title, fontsize=9)
    whiskers = "standard error over the queries" + (
        "; balanced: standard deviation over the seeded subsamples" if balanced else ""
    )
    figure.supxlabel(f"whiskers: {whiskers}", fontsize=7)
    return figure


def _factor_plot(section: Mapping[str, Any], mark: str | None = None) -> Figure:
    rows = sorted(section["clusters"], key=lambda r: r["factor_pp"])
    figure, (axis,) = _figure(6.5, 0.8 + 0.28 * len(rows), mark=mark)
    values = [r["factor_pp"] for r in rows]
    axis.barh(range(len(rows)), values,
              color=["#4477aa" if v >= 0 else "#cc6677" for v in values])  # fmt: skip
    labels = [f"{r['cluster']}: {', '.join(r['words'][:3])} (n={r['size']})" for r in rows]
    axis.set_yticks(range(len(rows)), labels, fontsize=7)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("male over-representation ΔM (percentage points)")
    axis.set_title("Context clusters of neutral captions (GenSynth Tab. 6)", fontsize=9)
    if max((abs(v) for v in values), default=0.0) <= _FLAT:
        axis.set_xlim(-10, 10)
        text = (
            "every cluster has ΔM = 0: each holds the masculine share of the whole set "
            "(as on a contrast set, where every photo appears in both genders)"
            if values else "no cluster"
        )  # fmt: skip
        axis.text(
            0.5, 0.5, textwrap.fill(text, 70), transform=axis.transAxes, ha="center",
            va="center", fontsize=7, color="#A00000",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 2},
        )  # fmt: skip
    return figure


def _map_plot(
    section: Mapping[str, Any], points: Mapping[str, Sequence[Any]], mark: str | None = None
) -> Figure:
    """The images on the first two principal components of their caption embeddings,
    coloured by their cluster's ΔM; each cluster's centre marked and labelled with its
    top word, labels placed so that none overlaps another or a centre
    (:func:`contrastkit.evaluators.report.plots.place_labels`)."""
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    from contrastkit.evaluators.report.figures import label_panels

    factors = {r["cluster"]: r["factor_pp"] for r in section["clusters"]}
    x = np.asarray(points["x"], dtype=np.float64)
    y = np.asarray(points["y"], dtype=np.float64)
    cluster = np.asarray(points["cluster"], dtype=np.int64)
    colour = np.array([factors[c] for c in cluster])
    bound = max(1e-6, float(np.max(np.abs(colour))) if colour.size else 1.0)
    flat = bound <= 1e-6
    if flat:  # every ΔM is 0: a readable colour bar, not ±1e-6
        bound = 1.0
    figure, (axis,) = _figure(6.5, 5, mark=mark)
    norm = TwoSlopeNorm(0.0, -bound, bound)
    scatter = axis.scatter(
        x, y, c=colour, s=14 if x.size < 2000 else 2, cmap=colormaps["RdBu"], norm=norm,
        alpha=0.8, linewidths=0,
    )  # fmt: skip
    centres: list[tuple[float, float, str]] = []
    for row in section["clusters"]:
        members = cluster == row["cluster"]
        if members.any():
            cx, cy = float(x[members].mean()), float(y[members].mean())
            word = row["words"][0] if row["words"] else ""
            centres.append((cx, cy, f"{row['cluster']}: {word} ({row['factor_pp']:+.0f})"))
    axis.scatter([c[0] for c in centres], [c[1] for c in centres], marker="x", s=30,
                 color="black", linewidths=1)  # fmt: skip
    axis.set_facecolor("#e8e8e8")  # a cluster near parity is white: keep it visible
    axis.margins(0.15)
    notes = []
    spread = float(np.ptp(x)) if x.size else 0.0
    if spread <= _FLAT:  # no dimension at all: every caption embeds alike
        axis.set_xlim(-0.5, 0.5)
        axis.set_ylim(-0.5, 0.5)
        notes.append("both principal components are 0 to rounding: the images share one point")
    elif y.size and float(np.ptp(y)) <= 1e-6 * spread:  # one dimension: a line, not a map
        axis.set_ylim(-0.5 * spread, 0.5 * spread)
        notes.append("principal component 2 is 0 to rounding: the images lie on a line")
    if colour.size and flat:
        notes.append("every cluster has ΔM = 0 (no colour to read)")
    if notes:
        axis.text(
            0.5, 0.04, textwrap.fill("; ".join(notes), 60), transform=axis.transAxes,
            ha="center", va="bottom",
            fontsize=7, color="#A00000",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 2},
        )  # fmt: skip
    figure.colorbar(scatter, ax=axis, label="ΔM of the cluster (pp; blue: more men)")
    axis.set_xlabel("principal component 1")
    axis.set_ylabel("principal component 2")
    embedding = "LSA (bag of words)" if section["embedding"] == "lsa" else "text encoder"
    axis.set_title(
        f"Neutral-caption clusters of {x.size} images, PCA map\n({embedding}; GenSynth "
        "Fig. 1; x: cluster centre, label: cluster, top word, ΔM)",
        fontsize=9,
    )
    (left_out,) = label_panels(figure, [axis], [centres])
    if left_out:
        figure.text(0.01, 0.01, f"{left_out} cluster labels left out for room", fontsize=7)
    return figure


def _random_weights_mark(report: Mapping[str, Any]) -> str | None:
    """The lines every plot's title carries when the audit used a model with random
    weights (``random_weights``): the evaluators' warning and the models (wrapped at 70
    characters, at most 3 lines); ``None`` otherwise."""
    import textwrap

    from contrastkit.evaluators.report.figures import RANDOM_WEIGHTS_TITLE

    if not report.get("random_weights"):
        return None
    models = textwrap.wrap(
        "models: " + ", ".join(report.get("weights_notes", {})), 70,
        break_on_hyphens=False, max_lines=3, placeholder=" …",
    )  # fmt: skip
    return "\n".join([RANDOM_WEIGHTS_TITLE, *models])


def write_plots(
    report: Mapping[str, Any], points: Mapping[str, Sequence[Any]], folder: Path
) -> list[Path]:
    """Write the plots of the sections ``report`` has into ``folder``; return them. When
    ``report`` says the audit used a model with random weights (``random_weights``),
    every plot's title says so, in dark red (:func:`_random_weights_mark`)."""
    from contrastkit.evaluators.report.figures import save_formats

    folder.mkdir(parents=True, exist_ok=True)
    mark = _random_weights_mark(report)
    figures: list[tuple[str, Figure]] = []
    if "composition" in report:
        figures.append(("composition", _composition_plot(report["composition"], mark)))
    if "baselines" in report and "skipped" not in report["baselines"]:
        figures.append(("baselines", _baselines_plot(report["baselines"], mark)))
    clusters = report.get("clusters", {})
    if clusters and "skipped" not in clusters:
        figures.append(("clusters_factor", _factor_plot(clusters, mark)))
        if points:
            figures.append(("clusters_map", _map_plot(clusters, points, mark)))
    # PNG and SVG of each, as the evaluators' plots
    return [path for name, figure in figures for path in save_formats(figure, folder / name)]
