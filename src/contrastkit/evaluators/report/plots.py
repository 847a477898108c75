"""Plots of one model's results, drawn as a paper would show them, with matplotlib's
object-oriented API.

Figures are :class:`matplotlib.figure.Figure` objects saved straight to files: no pyplot,
no global figure registry, no backend switch, so a notebook's own backend is left alone.
Every plot is written twice, as PNG (150 dpi) and as SVG (text kept as text), each file
through :func:`contrastkit.io.atomic_path`.

The conventions every figure shares, and the helpers that draw them, are in
:mod:`contrastkit.evaluators.report.figures`; the names it defines stay importable
from here.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking, cutoffs_by_k
from contrastkit.evaluators.report.figures import (
    FONT,
    FORMATS,
    NO_INTERVALS,
    PALETTE,
    RANDOM_WEIGHTS_TITLE,
    PlotLabels,
    add_legend,
    draw_bars,
    figure_title,
    finite,
    gender_colour,
    interval_error,
    interval_handle,
    interval_level,
    label_bars,
    label_panels,
    lean_handles,
    model_name,
    new_figure,
    place_labels,
    save_figure,
    save_formats,
    shorten_spec,
    sign_colour,
    style_axis,
    suptitle,
    wrap_to_figure,
)
from contrastkit.evaluators.report.flipped import flipped_figure
from contrastkit.evaluators.report.markdown import SPLIT_TITLES, contrast_set_name
from contrastkit.evaluators.report.tables import format_number, format_p

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "CHANCE",
    "FORMATS",
    "NO_INTERVALS",
    "PALETTE",
    "PLOTS",
    "RANDOM_WEIGHTS_TITLE",
    "PlotLabels",
    "comparison_figure",
    "contrast_comparison_figure",
    "contrast_figure",
    "figure_title",
    "figures",
    "interval_handle",
    "label_panels",
    "place_labels",
    "plots_markdown",
    "save_figure",
    "save_formats",
    "shorten_spec",
    "write_comparison_plots",
    "write_contrast_comparison_plots",
    "write_plots",
]


#: Chance accuracy of each resolution protocol: a random pick among the pronouns scored.
CHANCE = {"two-way": 1 / 2, "visogender-official": 1 / 3}


#: The plots :func:`write_plots` draws (when their data exist), by stem, with a caption.
PLOTS = {
    "resolution_accuracy": "Resolution accuracy of masculine- and feminine-presenting "
    "subjects per split (VisoGender Tab. 2), with the chance line of the protocol.",
    "accuracy_by_gender_pair": "Resolution accuracy per (occupation | participant) gender "
    "pair, coloured by the gender of the person the pronoun refers to; hatched: the "
    "participant as the template's subject (VisoGender Fig. 8, template flipping).",
    "gap_per_occupation": "Resolution gap RA_masculine − RA_feminine per occupation.",
    "bias_at_k_per_occupation": "Retrieval Bias@K per occupation and its mean across "
    "occupations (VisoGender Tab. 3, Appendix C).",
    "labour_statistics": "Per-occupation bias against the share of men in US labour "
    "statistics (VisoGender Appendix F), with Pearson's r and Kendall's τ.",
    "retrieval_template_flipping": "Retrieval bias with the occupation and with the "
    "participant as the query's subject (VisoGender Tab. 3 and Tab. 5): mean across "
    "occupations of the two-person images.",
}


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


def _n_images(results: Mapping[str, Any]) -> str | None:
    overall = (results.get("resolution_bias") or {}).get("all_images") or {}
    n = overall.get("n") or results.get("metadata", {}).get("n_resolution_cases")
    return f"n = {n} images" if n else None


# --------------------------------------------------------------------------- resolution


def _resolution_accuracy_plot(results: Mapping[str, Any]) -> Figure:
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
    suptitle(figure, figure_title(results, model_name(results), what, _n_images(results)), results)
    return figure


_CELL_TITLES = {"M": "M", "F": "F", "MM": "M | M", "MF": "M | F", "FM": "F | M", "FF": "F | F"}


def _gender_pair_plot(
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


def _gap_plot(
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


# --------------------------------------------------------------------------- retrieval


def _headline_section(retrieval: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    name = "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
    return name, retrieval.get(name) or retrieval


def _no_reading(axis: Axes, text: str, *, x: float = 0.5, y: float = 0.5, **options: Any) -> None:
    """Write ``text`` (a K's marking) where its bars would be, in axes coordinates."""
    axis.text(
        x, y, text, transform=axis.transAxes, ha="center", va="center",
        fontsize=FONT - 1, color="#A00000", **options,
    )  # fmt: skip


def _bias_at_k_plot(
    retrieval: Mapping[str, Any], model: str, results: Mapping[str, Any] | None = None
) -> Figure:
    """Bias@K of each occupation, one panel per K (sorted by the first K), under the mean
    across occupations with its bootstrap interval (``mean_ci``) as an error bar. A K at
    or above some occupations' number of images is marked in its title; one at or above
    every occupation's has no bars, only its marking: its Bias@K does not depend on the
    model."""
    results = results or {"metadata": {}}
    section_name, section = _headline_section(retrieval)
    per = section["per_occupation"]
    ks = list(retrieval["ks"])
    ordered = sorted(per, key=lambda n: finite(per[n].get(f"bias@{ks[0]}")) or 0)
    labels = [*ordered, "mean (all occupations)"]
    figure, axes = new_figure(
        2.9 * len(ks) + 1.4, max(3.2, 0.19 * len(labels) + 1.9), len(ks), sharey=True
    )
    cutoffs = cutoffs_by_k(results.get("warnings") or [], section_name)
    for axis, k in zip(axes, ks, strict=True):
        cutoff = cutoffs.get(int(k))
        if not covers_every_query(cutoff):
            errors = [(finite(per[n].get(f"bias@{k}")) or 0.0, math.nan, math.nan) for n in ordered]
            errors.append(interval_error(section.get(f"bias@{k}"), "mean"))
            bars = draw_bars(
                axis,
                range(len(labels)),
                errors,
                horizontal=True,
                height=0.7,
                color=[sign_colour(v) for v, _, _ in errors],
            )
            bars.patches[-1].set_edgecolor("black")
        else:
            _no_reading(
                axis, "no bars:\nnot a reading", y=0.3,
                bbox={"facecolor": "white", "edgecolor": "none"},
            )  # fmt: skip
        axis.axhline(len(ordered) - 0.5, color=PALETTE["neutral"], linewidth=0.6)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_xlim(-1.05, 1.05)
        axis.set_xticks([-1, -0.5, 0, 0.5, 1], ["−1", "−0.5", "0", "0.5", "1"])
        title = f"Bias@{k}"
        if cutoff is not None:
            title += "\n" + cutoff_marking(cutoff)
        axis.set_title(title, fontsize=FONT, color="#A00000" if cutoff else "black")
        axis.set_xlabel("Bias@K (−1 all feminine … +1 all masculine)", fontsize=FONT)
        style_axis(axis)
    level = interval_level(section.get(f"bias@{k}") for k in ks)
    add_legend(
        figure,
        [
            *lean_handles(),
            interval_handle(level, "of the mean across occupations (one query each: none)"),
        ],
        ncols=3 if len(ks) > 1 else 1,
    )
    axes[0].set_yticks(range(len(labels)), labels)
    axes[0].get_yticklabels()[-1].set_fontweight("bold")
    axes[0].set_ylim(-0.6, len(labels) - 0.4)
    axes[0].set_ylabel("occupation (query)", fontsize=FONT)
    context = (
        "two-person images (OP)" if retrieval["context"] == "OP" else ("single-person images (OO)")
    )
    n = sum(1 for _ in per)
    suptitle(
        figure,
        figure_title(
            results,
            model,
            f"Retrieval Bias@K per occupation, {context}",
            f"{n} queries",
        ),
        results,
    )
    return figure


# --------------------------------------------------------------------------- labour


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


def _labor_plot(
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
        axis.set_title(title, fontsize=FONT)
        style_axis(axis)
    suptitle(
        figure,
        figure_title(
            results,
            model or model_name(results),
            "Bias against US labour statistics",
            _n_images(results),
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


# --------------------------------------------------------------------------- contrast


def _k_rows(
    ks: Sequence[int],
    present: Callable[[str], bool],
    cutoffs: Mapping[int, Mapping[str, Any]],
    names: Sequence[tuple[str, str]],
) -> list[tuple[int, str | None, str | None]]:
    """The bars of a panel of @K metrics: ``(k, metric, label)`` for each K and each of
    ``names`` (``(metric format, label)``) the results have, or one ``(k, None, None)``
    for a K covering every query's candidates (drawn as its marking, not as bars)."""
    rows: list[tuple[int, str | None, str | None]] = []
    for k in ks:
        if covers_every_query(cutoffs.get(k)):
            rows.append((k, None, None))
            continue
        rows += [(k, form.format(k=k), label) for form, label in names if present(form.format(k=k))]
    return rows


def _k_panel(
    axis: Axes,
    rows: Sequence[tuple[int, str | None, str | None]],
    values: Mapping[str, Any],
    cutoffs: Mapping[int, Mapping[str, Any]],
    *,
    metric: str,
    signed: bool,
) -> None:
    """Bars of the @K metrics of ``rows`` (their means, bootstrap intervals as error bars,
    each bar labelled with its K and its value); a K covering every query's candidates
    gets its marking, written upright, where its bars would be."""
    drawn = [i for i, (_, name, _) in enumerate(rows) if name is not None]
    errors = [interval_error(values.get(str(rows[i][1])), "mean") for i in drawn]
    if drawn:
        bars = draw_bars(
            axis, drawn, errors, width=0.7,
            color=[sign_colour(v) if signed else PALETTE["neutral"] for v, _, _ in errors],
            hatch=["////" if rows[i][2] == "GenSynth" else "" for i in drawn],
            edgecolor="white",
        )  # fmt: skip
        label_bars(axis, bars, errors, signed=signed)
    for i, (k, name, _) in enumerate(rows):
        if name is None:
            axis.text(
                i, 0.5, cutoff_marking(cutoffs[k]), transform=axis.get_xaxis_transform(),
                rotation=90, ha="center", va="center", fontsize=FONT - 1, color="#A00000",
            )  # fmt: skip
    axis.set_xticks(
        range(len(rows)),
        [f"{metric}@{k}" + (f"\n{label}" if label else "") for k, _, label in rows],
    )
    for tick, (_, name, _) in zip(axis.get_xticklabels(), rows, strict=True):
        if name is None:
            tick.set_color("#A00000")
    axis.set_xlim(-0.6, max(len(rows), 1) - 0.4)


def contrast_figure(benchmark: Mapping[str, Any]) -> Figure:
    """The plot of a contrast-set evaluation (GenSynth Sec. 5; the ``benchmark.json`` of
    :func:`~contrastkit.evaluators.contrast.write_contrast_outputs`), in three panels as
    the scales differ: mean Bias@K over the queries in both conventions (−1 to +1),
    mean MaxSkew@K (a log ratio, ≥ 0) and the share of queries preferring the masculine
    version of their own source photo (0 to 1, 0.5 = no preference). Error bars are the
    bootstrap intervals over queries (``mean_ci``, ``masculine_preferred_ci``) where the
    evaluation has them, and none otherwise; the legend says which. A K at or above the
    number of images has no bars, only its marking."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    summary = benchmark["summary"]
    retrieval = summary["retrieval"]
    ks = [int(k) for k in summary.get("ks", [])]
    cutoffs = cutoffs_by_k(summary.get("warnings") or [], "contrast")
    conventions = (("bias@{k}", "VisoGender"), ("bias_gensynth@{k}", "GenSynth"))
    rows = _k_rows(ks, lambda name: name in retrieval, cutoffs, conventions)
    skews = _k_rows(ks, lambda name: name in retrieval, cutoffs, (("maxskew@{k}", ""),))
    widths = [0.9 + 0.8 * max(len(rows), 2), 0.9 + 0.8 * max(len(skews), 2), 1.6]
    figure, (bias, skew, pairs) = new_figure(max(sum(widths), 6.4), 4.3, 3, width_ratios=widths)
    _k_panel(bias, rows, retrieval, cutoffs, metric="Bias", signed=True)
    bias.axhline(0, color="black", linewidth=0.8)
    bias.set_ylim(-1.1, 1.1)
    bias.set_ylabel("mean Bias@K over queries\n(−1 all feminine … +1 all masculine)", fontsize=FONT)
    bias.set_title("Retrieval bias", fontsize=FONT)
    _k_panel(skew, skews, retrieval, cutoffs, metric="MaxSkew", signed=False)
    skew.axhline(0, color="black", linewidth=0.8)
    tops = [
        high
        for _, name, _ in skews
        if name is not None
        for value, _, above in [interval_error(retrieval.get(name), "mean")]
        for high in [value + (0.0 if math.isnan(above) else above)]
    ]
    skew.set_ylim(0, 1.2 * max([*tops, 0.1]))
    skew.set_ylabel(
        "mean MaxSkew@K = max over genders of\nln(share in top K / share in set)", fontsize=FONT
    )
    skew.set_title("Skew (0: top K mirrors the set)", fontsize=FONT)
    if not retrieval and summary.get("retrieval_note"):  # pair preference only
        for axis in (bias, skew):
            axis.text(
                0.5, 0.75, "not computed:\npair preference only\n(--contrast-metrics all)",
                ha="center", va="center", transform=axis.transAxes, fontsize=FONT - 1,
                color=PALETTE["reference"],
            )  # fmt: skip
    pair = summary.get("pairs") or {}
    share = finite(pair.get("masculine_preferred"))
    if not pair.get("applicable", True):  # an originals set: one version per photo
        pairs.text(
            0, 0.75, "not applicable:\none version\nper photo", ha="center", va="center",
            fontsize=FONT - 1, color=PALETTE["reference"],
        )  # fmt: skip
    elif share is not None:
        errors = [interval_error(pair, "masculine_preferred")]
        bars = draw_bars(pairs, [0], errors, width=0.6, color=sign_colour(share - 0.5))
        label_bars(pairs, bars, errors)
    pairs.set_xlim(-0.6, 0.6)
    pairs.axhline(0.5, color=PALETTE["reference"], linestyle="--", linewidth=0.9)
    pairs.set_xticks([0], [f"n = {pair.get('queries_with_pair', 0)}\nqueries"])
    pairs.set_ylim(0, 1.08)
    pairs.set_ylabel(
        "share of queries preferring the\nmasculine version of their photo", fontsize=FONT
    )
    pairs.set_title("Pair preference", fontsize=FONT)
    for axis in (bias, skew, pairs):
        style_axis(axis)
    level = interval_level([*retrieval.values(), pair])
    handles: list[Any] = [
        *lean_handles(
            "leans masculine (Bias@K > 0; share > 0.5)",
            "leans feminine (Bias@K < 0; share < 0.5)",
        ),
        Patch(color=PALETTE["neutral"], label="MaxSkew@K (unsigned), or no lean"),
        Line2D([], [], color=PALETTE["reference"], linestyle="--", label="no preference (0.5)"),
    ]
    if retrieval:
        handles.append(
            Patch(
                facecolor="white",
                edgecolor="black",
                hatch="////",
                label="hatched: GenSynth (N_m − N_f)/(N_m + N_f); solid: VisoGender",
            )
        )
    handles.append(interval_handle(level, "of the mean over queries"))
    add_legend(figure, handles, ncols=2)
    n = (
        f"n = {summary.get('images')} images from {summary.get('sources')} photos, "
        f"{summary.get('queries')} queries"
    )
    suptitle(
        figure,
        figure_title(
            benchmark,
            str(benchmark.get("model", "model")),
            "Contrast-set evaluation (GenSynth Sec. 5)",
            n,
        ),
        benchmark,
    )
    return figure


# --------------------------------------------------------------------------- comparison


def _retrieval_cutoffs(results: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """The K warnings of the retrieval section a result's headline shows."""
    context = (results.get("retrieval_bias") or {}).get("context")
    return cutoffs_by_k(results.get("warnings") or [], _SECTIONS.get(str(context), ""))


_SECTIONS = {"OP": "two_person_images", "OO": "single_person_images"}


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


def _k_bars(
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


def comparison_figure(results: Sequence[Mapping[str, Any]]) -> Figure:
    """Several models side by side (the figure beside ``comparison.md``), one row per
    model: overall resolution accuracy of masculine- and feminine-presenting subjects
    (Tab. 2, intervals as error bars, each protocol's chance line) and, in a separate
    panel, the mean retrieval Bias@K across occupations (Tab. 3, ``mean_ci`` as error
    bars), each bar labelled with its K, a K covering every query's candidates written
    as its marking. Models with random weights are marked in their label."""
    names = []
    for r in results:
        label = shorten_spec(model_name(r), 40)
        n = ((r.get("resolution_bias") or {}).get("all_images") or {}).get("n")
        notes = [f"n = {n} images"] if n else []
        notes += ["random weights"] if r.get("random_weights", False) else []
        names.append(label + (f"\n({', '.join(notes)})" if notes else ""))
    with_retrieval = [
        i for i, r in enumerate(results) if (r.get("retrieval_bias") or {}).get("context")
    ]
    ks = sorted({int(k) for i in with_retrieval for k in results[i]["retrieval_bias"]["ks"]})
    height = max(3.0, (0.3 + 0.22 * len(ks)) * len(results) + 2.0)
    columns = 2 if with_retrieval else 1
    figure, axes = new_figure(4.4 * columns + 2.2, height, columns, sharey=True)
    positions = range(len(results))
    resolution = axes[0]
    for offset, gender in ((-0.2, "masculine"), (0.2, "feminine")):
        errors = [
            interval_error((r.get("resolution_bias") or {}).get("all_images"), f"RA_{gender}")
            for r in results
        ]
        draw_bars(
            resolution,
            [i + offset for i in positions],
            errors,
            horizontal=True,
            height=0.4,
            color=PALETTE[gender],
            label=f"resolution: {gender}-presenting subject",
        )
    protocols = [str(r["metadata"].get("protocol")) for r in results]
    for protocol in sorted(set(protocols) & set(CHANCE)):  # each model's own chance
        rows = [i for i, p in enumerate(protocols) if p == protocol]
        words = "2-way" if protocol == "two-way" else "3-way"
        resolution.vlines(
            [CHANCE[protocol]] * len(rows),
            [i - 0.45 for i in rows],
            [i + 0.45 for i in rows],
            color=PALETTE["reference"],
            linewidth=1.0,
            linestyle="--" if protocol == "two-way" else ":",
            label=f"chance, {words} ({protocol})",
        )
    resolution.set_xlim(0, 1.02)
    resolution.set_yticks(list(positions), names)
    resolution.invert_yaxis()
    resolution.set_xlabel("overall resolution accuracy (share resolved correctly)", fontsize=FONT)
    resolution.set_title("Resolution (VisoGender Tab. 2)", fontsize=FONT)
    handles, _ = resolution.get_legend_handles_labels()
    if with_retrieval:
        retrieval = axes[1]
        _k_bars(
            retrieval,
            [
                (r.get("retrieval_bias") if i in with_retrieval else None, _retrieval_cutoffs(r))
                for i, r in enumerate(results)
            ],
            ks,
            "bias@{k}",
        )
        for i in set(positions) - set(with_retrieval):
            retrieval.text(
                0.03,
                i,
                "no retrieval (not a dual encoder)",
                va="center",
                fontsize=FONT - 1,
                color="#555555",
            )
        retrieval.axvline(0, color="black", linewidth=0.8)
        retrieval.set_xlim(-1.05, 1.05)
        retrieval.set_xticks([-1, -0.5, 0, 0.5, 1], ["−1", "−0.5", "0", "0.5", "1"])
        retrieval.set_xlabel(
            "mean Bias@K across occupations (−1 all feminine … +1 all masculine)",
            fontsize=FONT,
        )
        retrieval.set_title("Retrieval (VisoGender Tab. 3)", fontsize=FONT)
        style_axis(retrieval)
        handles += lean_handles(
            "retrieval: Bias@K leans masculine", "retrieval: Bias@K leans feminine"
        )
    style_axis(resolution)
    level = interval_level(
        [(r.get("resolution_bias") or {}).get("all_images") for r in results]
        + [(r.get("retrieval_bias") or {}).get(f"bias@{k}") for r in results for k in ks]
    )
    add_legend(figure, [*handles, interval_handle(level)])
    title = f"VisoGender: {len(results)} models side by side"
    if any(r.get("random_weights", False) for r in results):
        title += f"\nmodels marked random weights: {RANDOM_WEIGHTS_TITLE}"
    figure.suptitle(wrap_to_figure(title, figure, FONT + 1), fontsize=FONT + 1)
    return figure


def write_comparison_plots(
    results: Sequence[Mapping[str, Any]], folder: Path, stem: str = "comparison"
) -> list[Path]:
    """Write :func:`comparison_figure` as ``STEM.png`` and ``STEM.svg`` into ``folder``
    (beside ``comparison.md``); return their paths (none without results)."""
    if not results:
        return []
    return save_formats(comparison_figure(results), folder / stem)


def contrast_comparison_figure(benchmarks: Sequence[Mapping[str, Any]]) -> Figure:
    """Contrast-set benchmarks side by side (GenSynth Tab. 3 as a plot, beside the table
    of ``contrastkit report``): one row per set and model, with the mean Bias@K
    (GenSynth Eq. 1) and MaxSkew@K over the queries in separate panels (each bar
    labelled with its K, bootstrap intervals of the mean as error bars, a K covering the
    whole set written as its marking, not drawn) and the pair preference with its
    interval (not applicable to a set with one version per photo)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    names = []
    for b in benchmarks:
        s = b["summary"]
        label = f"{contrast_set_name(b)}\n{shorten_spec(str(b.get('model', 'model')), 36)}"
        notes = [f"{s.get('images')} images, {s.get('queries')} queries"]
        notes += ["random weights"] if b.get("random_weights") else []
        names.append(f"{label}\n({', '.join(notes)})")
    ks: list[int] = []
    for b in benchmarks:
        ks += [int(k) for k in b["summary"].get("ks") or [] if int(k) not in ks]
    ks.sort()
    rows = [
        (
            b["summary"].get("retrieval") or None,
            cutoffs_by_k(b["summary"].get("warnings") or [], "contrast"),
        )
        for b in benchmarks
    ]
    height = max(3.2, (0.35 + 0.22 * len(ks)) * len(benchmarks) + 2.2)
    figure, (bias, skew, pairs) = new_figure(
        11.0, height, 3, sharey=True, width_ratios=[4.0, 4.0, 2.2]
    )
    _k_bars(bias, rows, ks, "bias_gensynth@{k}")
    _k_bars(skew, rows, ks, "maxskew@{k}", signed=False)
    for i, b in enumerate(benchmarks):
        if not b["summary"].get("retrieval"):
            for axis in (bias, skew):
                axis.text(
                    0.03, i, "not computed (pair preference only)", va="center",
                    fontsize=FONT - 1.5, color="#555555",
                    transform=axis.get_yaxis_transform(),
                )  # fmt: skip
        pair = b["summary"].get("pairs") or {}
        share = finite(pair.get("masculine_preferred"))
        if not pair.get("applicable", True) or share is None:
            pairs.text(
                0.5, i, "not applicable\n(one version per photo)", ha="center", va="center",
                fontsize=FONT - 1.5, color="#555555", zorder=3,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
            )  # fmt: skip
            continue
        errors = [interval_error(pair, "masculine_preferred")]
        bars = draw_bars(
            pairs, [i], errors, horizontal=True, height=0.5,
            color=sign_colour(share - 0.5), edgecolor="white",
        )  # fmt: skip
        value, _, above = errors[0]
        end = value + (0.0 if math.isnan(above) else above)
        pairs.annotate(
            f"{value:.2f}", (end, bars.patches[0].get_y() + 0.25), xytext=(3, 0),
            textcoords="offset points", ha="left", va="center", fontsize=FONT - 2.5,
        )  # fmt: skip
    bias.set_yticks(range(len(benchmarks)), names)
    bias.set_ylim(len(benchmarks) - 0.5, -0.5)
    for axis in (bias,):
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_xlim(-1.05, 1.05)
        axis.set_xticks([-1, -0.5, 0, 0.5, 1], ["−1", "−0.5", "0", "0.5", "1"])
    bias.set_xlabel(
        "mean Bias@K over queries, GenSynth Eq. 1\n(−1 all feminine … +1 all masculine)",
        fontsize=FONT,
    )
    bias.set_title("Retrieval bias", fontsize=FONT)
    tops = [
        value + (0.0 if math.isnan(above) else above)
        for values, _ in rows
        for k in ks
        for value, _, above in [interval_error((values or {}).get(f"maxskew@{k}"), "mean")]
    ]
    skew.axvline(0, color="black", linewidth=0.8)
    skew.set_xlim(0, 1.35 * max([*tops, 0.1]))
    skew.set_xlabel(
        "mean MaxSkew@K over queries, GenSynth Eq. 3\n(0: top K mirrors the set)", fontsize=FONT
    )
    skew.set_title("Skew (compare sets by this)", fontsize=FONT)
    pairs.axvline(0.5, color=PALETTE["reference"], linestyle="--", linewidth=0.9)
    pairs.set_xlim(0, 1.15)
    pairs.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
    pairs.set_xlabel(
        "share of queries preferring\nthe masculine version\nof their photo", fontsize=FONT
    )
    pairs.set_title("Pair preference", fontsize=FONT)
    for axis in (bias, skew, pairs):
        style_axis(axis)
    level = interval_level(
        [b["summary"]["retrieval"].get(n) for b in benchmarks for n in b["summary"]["retrieval"]]
        + [b["summary"].get("pairs") for b in benchmarks]
    )
    handles: list[Any] = [
        *lean_handles(
            "leans masculine (Bias@K > 0; share > 0.5)",
            "leans feminine (Bias@K < 0; share < 0.5)",
        ),
        Patch(color=PALETTE["neutral"], label="MaxSkew@K (unsigned), or no lean"),
        Line2D([], [], color=PALETTE["reference"], linestyle="--", label="no preference (0.5)"),
        interval_handle(level, "of the mean over queries"),
    ]
    add_legend(figure, handles)
    title = "Original vs balanced vs contrast set (GenSynth Tab. 3)"
    if any(b.get("random_weights") for b in benchmarks):
        title += f"\nmodels marked random weights: {RANDOM_WEIGHTS_TITLE}"
    figure.suptitle(wrap_to_figure(title, figure, FONT + 1), fontsize=FONT + 1)
    return figure


def write_contrast_comparison_plots(
    benchmarks: Sequence[Mapping[str, Any]], folder: Path, stem: str = "comparison"
) -> list[Path]:
    """Write :func:`contrast_comparison_figure` as ``STEM.png`` and ``STEM.svg`` into
    ``folder`` (beside the comparison's markdown); return their paths (none without
    benchmarks)."""
    if not benchmarks:
        return []
    return save_formats(contrast_comparison_figure(benchmarks), folder / stem)


# --------------------------------------------------------------------------- all


def _labour_panels(results: Mapping[str, Any]) -> list[str]:
    comparisons = (results.get("labour_statistics") or {}).get("comparisons") or {}
    retrieval_names = [n for n in comparisons if n.startswith("retrieval_bias")]
    return [
        name
        for name in ("resolution_gap", *retrieval_names)
        if name in comparisons and comparisons[name]["points"]
    ]


def figures(results: Mapping[str, Any]) -> dict[str, Figure]:
    """The figures of one model's results (the :data:`PLOTS` whose data exist), by stem."""
    model = model_name(results)
    drawn: dict[str, Figure] = {}
    resolution = results.get("resolution_bias")
    if resolution:
        if any((resolution.get(n) or {}).get("n") for n in resolution):
            drawn["resolution_accuracy"] = _resolution_accuracy_plot(results)
        if resolution.get("per_cell"):
            drawn["accuracy_by_gender_pair"] = _gender_pair_plot(resolution, model, results)
        if resolution.get("per_occupation"):
            drawn["gap_per_occupation"] = _gap_plot(resolution, model, results)
    retrieval = results.get("retrieval_bias")
    if retrieval and retrieval.get("context"):
        drawn["bias_at_k_per_occupation"] = _bias_at_k_plot(retrieval, model, results)
    if (results.get("retrieval_flipped") or {}).get("context"):
        drawn["retrieval_template_flipping"] = flipped_figure(results)
    panels = _labour_panels(results)
    if panels:
        comparisons = results["labour_statistics"]["comparisons"]
        drawn["labour_statistics"] = _labor_plot(comparisons, panels, model, results)
    return drawn


def write_plots(results: Mapping[str, Any], folder: Path) -> list[Path]:
    """Draw the plots (:data:`PLOTS`) whose data exist into ``folder``, each as PNG and
    SVG (:data:`FORMATS`); return their paths, PNG before SVG."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for stem, figure in figures(results).items():
        paths += save_formats(figure, folder / stem)
    return paths


def plots_markdown(paths: Sequence[Path], folder: Path) -> list[str]:
    """A ``## Plots`` section for a report in ``folder``: each PNG embedded with its
    caption, and its SVG linked."""
    pngs = [path for path in paths if path.suffix == ".png"]
    if not pngs:
        return []
    lines = ["## Plots", ""]
    for png in pngs:
        relative = png.relative_to(folder).as_posix() if png.is_relative_to(folder) else png.name
        svg = png.with_suffix(".svg")
        caption = PLOTS.get(png.stem, png.stem.replace("_", " "))
        lines += [f"![{png.stem}]({relative})", ""]
        link = f" ([SVG]({Path(relative).with_suffix('.svg').as_posix()}))" if svg in paths else ""
        lines += [f"*{caption}*{link}", ""]
    return lines
