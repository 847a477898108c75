"""PNG plots of one model's results, drawn with matplotlib's object-oriented API.

Figures are :class:`matplotlib.figure.Figure` objects saved straight to a file: no
pyplot, no global figure registry, no backend switch, so a notebook's own backend is
left alone. Each file is written through :func:`contrastkit.io.atomic_path`.

Confidence intervals in the results (a figure's ``x_ci`` sibling) are drawn as error
bars: per gender pair in ``accuracy_by_gender_pair.png``, and on the mean Bias@K across
occupations (``mean_ci``) in ``bias_at_k_per_occupation.png``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.report.markdown import format_number
from contrastkit.io import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PLOTS", "save_figure", "write_plots"]

#: PNG files :func:`write_plots` draws (when their data exist).
PLOTS = (
    "accuracy_by_gender_pair.png",
    "gap_per_occupation.png",
    "bias_at_k_per_occupation.png",
    "labour_statistics.png",
)


def save_figure(figure: Figure, path: Path, *, dpi: int = 110) -> Path:
    """Lay ``figure`` out tightly and write it to ``path`` (format from the suffix),
    atomically; return ``path``."""
    figure.tight_layout()
    with atomic_path(path) as tmp:
        figure.savefig(tmp, dpi=dpi)
    return path


def _error(values: Mapping[str, Any] | None, key: str) -> tuple[float, float, float]:
    """``(value, below, above)``: a figure and the distances to its interval's ends (0
    without an interval; undefined values drawn as 0)."""
    values = values or {}
    ci = values.get(f"{key}_ci")
    given = [values.get(key), *((ci.get("low"), ci.get("high")) if isinstance(ci, Mapping) else ())]
    numbers = [float(v) if isinstance(v, int | float) and math.isfinite(v) else None for v in given]
    point = numbers[0] if numbers[0] is not None else 0.0
    if len(numbers) == 3 and None not in numbers:
        low, high = float(numbers[1] or 0.0), float(numbers[2] or 0.0)
        return point, max(point - low, 0.0), max(high - point, 0.0)
    return point, 0.0, 0.0


def _bars(
    axis: Any, positions: list[float], errors: list[tuple[float, float, float]], **style: Any
) -> None:
    """Vertical bars with error bars where any interval exists."""
    heights = [value for value, _, _ in errors]
    spread = [[below for _, below, _ in errors], [above for _, _, above in errors]]
    with_bars = any(below or above for _, below, above in errors)
    axis.bar(positions, heights, yerr=spread if with_bars else None, capsize=3, **style)


def _gender_pair_plot(resolution: Mapping[str, Any], model: str) -> Figure:
    """Resolution accuracy per (occupation, participant) gender pair, with the pronoun
    referring to the occupation and, when scored, to the participant; error bars show
    the bootstrap intervals when the results have them."""
    from matplotlib.figure import Figure

    cells = resolution["per_cell"]
    flip = resolution.get("participant_first", {}).get("per_cell", {})
    figure = Figure(figsize=(6, 3.5))
    axis = figure.subplots()
    names = list(cells)
    _bars(
        axis,
        [i - 0.2 for i in range(len(names))],
        [_error(cells[n], "accuracy") for n in names],
        width=0.4,
        label="occupation first",
    )
    flipped = [i for i, n in enumerate(names) if n in flip]  # OP cells only
    if flipped:
        _bars(
            axis,
            [i + 0.2 for i in flipped],
            [_error(flip[names[i]], "accuracy") for i in flipped],
            width=0.4,
            label="participant first",
        )
    axis.set_xticks(range(len(names)), names)
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("resolution accuracy")
    axis.set_title(f"Accuracy by gender pair: {model}", fontsize=9)
    axis.legend(fontsize=8)
    return figure


def _gap_plot(resolution: Mapping[str, Any], model: str) -> Figure:
    """The resolution gap of each occupation, sorted."""
    from matplotlib.figure import Figure

    occupations = resolution["per_occupation"]
    ordered = sorted(occupations, key=lambda n: occupations[n]["gender_gap"] or 0)
    figure = Figure(figsize=(6, max(3, 0.25 * len(ordered) + 1)))
    axis = figure.subplots()
    axis.barh(ordered, [occupations[n]["gender_gap"] or 0 for n in ordered])
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("gap = RA_masculine − RA_feminine")
    axis.set_title(f"Resolution gap per occupation: {model}", fontsize=9)
    return figure


def _bias_at_k_plot(retrieval: Mapping[str, Any], model: str) -> Figure:
    """Bias@K of each occupation for every K, sorted by the first K, under the mean
    across occupations (with its bootstrap interval as an error bar when the results
    have one)."""
    from matplotlib.figure import Figure

    section_name = "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
    section = retrieval[section_name]
    per = section["per_occupation"]
    ks = retrieval["ks"]
    ordered = sorted(per, key=lambda n: per[n][f"bias@{ks[0]}"] or 0)
    labels = [*ordered, "mean (all occupations)"]
    figure = Figure(figsize=(6, max(3, 0.25 * len(labels) + 1)))
    axis = figure.subplots()
    height = 0.8 / len(ks)
    for j, k in enumerate(ks):
        value, below, above = _error(section.get(f"bias@{k}"), "mean")
        positions = [i + j * height for i in range(len(labels))]
        axis.barh(
            positions,
            [per[n][f"bias@{k}"] or 0 for n in ordered] + [value],
            height=height,
            label=f"Bias@{k}",
        )
        if below or above:  # the mean's interval (``mean_ci``)
            axis.errorbar(
                [value], [positions[-1]], xerr=[[below], [above]], fmt="none",
                ecolor="black", capsize=3,
            )  # fmt: skip
    axis.set_yticks([i + height * (len(ks) - 1) / 2 for i in range(len(labels))], labels)
    axis.axhline(len(ordered) - 0.5 + height * (len(ks) - 1) / 2, color="grey", linewidth=0.6)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlim(-1, 1)
    axis.legend(fontsize=8)
    axis.set_title(f"Bias@K per occupation ({retrieval['context']}): {model}", fontsize=9)
    return figure


def _labor_plot(comparisons: Mapping[str, Any], panels: list[str]) -> Figure:
    """Per-occupation values against the share of men (VisoGender Appendix F), one panel
    per value, with Pearson's r and Kendall's tau in the title."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5 * len(panels), 4))
    axes = figure.subplots(1, len(panels), squeeze=False)
    for axis, name in zip(axes[0], panels, strict=True):
        c = comparisons[name]
        xs = [p["male_share"] for p in c["points"]]
        ys = [p["value"] for p in c["points"]]
        axis.scatter(xs, ys)
        for p in c["points"]:
            axis.annotate(p["occupation"], (p["male_share"], p["value"]), fontsize=6)
        axis.axhline(0, color="grey", linewidth=0.6)
        axis.set_xlabel("US labour statistics: share of men (%)")
        axis.set_ylabel(name.replace("_", " "))
        title = f"r = {format_number(c['pearson_r'])}, τ = {format_number(c['kendall_tau'])}"
        axis.set_title(title, fontsize=9)
    return figure


def write_plots(results: Mapping[str, Any], folder: Path) -> list[Path]:
    """Draw the PNG plots (:data:`PLOTS`) whose data exist into ``folder``; return their
    paths."""
    folder.mkdir(parents=True, exist_ok=True)
    model = results["metadata"]["model_name"]
    figures: list[tuple[Figure, str]] = []
    resolution = results.get("resolution_bias")
    if resolution:
        figures.append((_gender_pair_plot(resolution, model), "accuracy_by_gender_pair.png"))
        figures.append((_gap_plot(resolution, model), "gap_per_occupation.png"))
    retrieval = results.get("retrieval_bias")
    if retrieval and retrieval.get("context"):
        figures.append((_bias_at_k_plot(retrieval, model), "bias_at_k_per_occupation.png"))
    comparisons = results["labour_statistics"]["comparisons"]
    retrieval_names = [n for n in comparisons if n.startswith("retrieval_bias")]
    panels = [
        name
        for name in ("resolution_gap", *retrieval_names)
        if name in comparisons and comparisons[name]["points"]
    ]
    if panels:
        figures.append((_labor_plot(comparisons, panels), "labour_statistics.png"))
    return [save_figure(figure, folder / name) for figure, name in figures]
