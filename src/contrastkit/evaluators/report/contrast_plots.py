"""The plots of contrast-set evaluations (GenSynth Sec. 5): one model's, and several
sets and models side by side (GenSynth Tab. 3 as a plot).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking, cutoffs_by_k
from contrastkit.evaluators.report.comparison_plots import k_bars
from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    RANDOM_WEIGHTS_TITLE,
    add_legend,
    draw_bars,
    figure_title,
    finite,
    interval_error,
    interval_handle,
    interval_level,
    label_bars,
    lean_handles,
    new_figure,
    save_formats,
    shorten_spec,
    sign_colour,
    style_axis,
    suptitle,
    wrap_to_figure,
)
from contrastkit.evaluators.report.markdown import contrast_set_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["contrast_comparison_figure", "contrast_figure", "write_contrast_comparison_plots"]


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


@dataclass(frozen=True)
class _KMetric:
    """The metric a panel of @K bars shows: its name in the tick labels (``Bias``,
    ``MaxSkew``) and whether it has a sign (bars coloured by their lean) or not."""

    name: str
    signed: bool


def _k_panel(
    axis: Axes,
    rows: Sequence[tuple[int, str | None, str | None]],
    values: Mapping[str, Any],
    cutoffs: Mapping[int, Mapping[str, Any]],
    shown: _KMetric,
) -> None:
    """Bars of the @K metrics of ``rows`` (their means, bootstrap intervals as error bars,
    each bar labelled with its K and its value); a K covering every query's candidates
    gets its marking, written upright, where its bars would be."""
    metric, signed = shown.name, shown.signed
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
    _k_panel(bias, rows, retrieval, cutoffs, _KMetric("Bias", signed=True))
    bias.axhline(0, color="black", linewidth=0.8)
    bias.set_ylim(-1.1, 1.1)
    bias.set_ylabel("mean Bias@K over queries\n(−1 all feminine … +1 all masculine)", fontsize=FONT)
    bias.set_title("Retrieval bias", fontsize=FONT)
    _k_panel(skew, skews, retrieval, cutoffs, _KMetric("MaxSkew", signed=False))
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
    k_bars(bias, rows, ks, "bias_gensynth@{k}")
    k_bars(skew, rows, ks, "maxskew@{k}", signed=False)
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
    sets = [set(int(k) for k in b["summary"].get("ks") or []) for b in benchmarks]
    if len(sets) > 1 and not set.intersection(*sets):
        title += "\nthese results share no K: their @K bars cannot be compared"
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
