"""The reports of stereotype probing (VLStereoSet, Zhou et al. 2022): the ``report.md`` of
one model (:func:`stereotype_markdown`: Tables 3 and 4 with the reference models, the lmss
/ vlss table), several models side by side (:func:`stereotype_comparison_markdown`) and
the lmss / vlss histograms of Fig. 4 (:func:`shifting_figure`). The benchmark they read is
:func:`.benchmark.stereotype_benchmark`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.text import format_number, markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "CATEGORY_ORDER",
    "PLOT_STEM",
    "shifting_figure",
    "stereotype_comparison_markdown",
    "stereotype_markdown",
]

#: The plot's file stem under ``plots/``.
PLOT_STEM = "shifting_scores"
#: The categories in reporting order (Table 4's columns; others follow).
CATEGORY_ORDER = ("gender", "profession", "race", "religion")
#: Colour of the zero line of Fig. 4 ("The vertical red lines mark where 0 is").
_ZERO_LINE = "#D00000"


# ------------------------------------------------------------------------ markdown
def _cell(values: Mapping[str, Any] | None, key: str, intervals: bool = True) -> str:
    from contrastkit.evaluators.report.tables import format_interval

    if not isinstance(values, Mapping):
        return "–"
    return format_interval(values, key) if intervals else format_number(values.get(key))


def _categories_of(benchmarks: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: list[str] = []
    for benchmark in benchmarks:
        for name in benchmark["summary"]["categories"]:
            if name not in seen:
                seen.append(name)
    return [c for c in CATEGORY_ORDER if c in seen] + [c for c in seen if c not in CATEGORY_ORDER]


def _model_name(benchmark: Mapping[str, Any]) -> str:
    from contrastkit.evaluators.report.tables import model_cell

    return model_cell(benchmark, benchmark["model"])


def _table3(benchmarks: Sequence[Mapping[str, Any]], intervals: bool) -> list[str]:
    """Table 3 layout: one row per model, then the reference models."""
    keys = ("vlrs", "vlbs", "ivlas")
    rows = [
        [
            _model_name(benchmark),
            *(_cell(benchmark["summary"]["overall"], key, intervals) for key in keys),
        ]
        for benchmark in benchmarks
    ]
    rows += [
        [f"***{name}***", *(_cell(values["overall"], key, False) for key in keys)]
        for name, values in benchmarks[0]["reference_models"].items()
    ]
    return _table(["model", *keys], rows)


def _table4(benchmarks: Sequence[Mapping[str, Any]], intervals: bool) -> list[str]:
    """Table 4 layout: vlrs, vlbs and ivlas per category, one row per model and
    reference model."""
    categories = _categories_of(benchmarks)
    header = ["model"] + [f"{m} {c}" for m in ("vlrs", "vlbs", "ivlas") for c in categories]

    def row(name: str, per: Mapping[str, Any], with_ci: bool) -> list[str]:
        cells = [
            _cell(per.get(c), m, with_ci) for m in ("vlrs", "vlbs", "ivlas") for c in categories
        ]
        return [name, *cells]

    rows = [
        row(_model_name(benchmark), benchmark["summary"]["categories"], intervals)
        for benchmark in benchmarks
    ]
    rows += [
        row(f"***{name}***", values["categories"], False)
        for name, values in benchmarks[0]["reference_models"].items()
    ]
    counts = ", ".join(
        f"{c}: {benchmarks[0]['summary']['categories'].get(c, {}).get('n', 0)}" for c in categories
    )
    return [*_table(header, rows), f"Images per category: {counts}.", ""]


def _small(value: Any) -> str:
    """An lmss / vlss value: three significant digits (they can be tiny: a dual encoder's
    raw cosines, a random-weight model)."""
    return format_number(value if isinstance(value, int | float) else None, 3, significant=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A table of the report, its cells already formatted (each escaped here)."""
    return markdown_table(header, rows, cell=str)


def _mean_cell(shift: Mapping[str, Any]) -> str:
    ci = shift.get("mean_ci")
    text = _small(shift.get("mean"))
    if isinstance(ci, Mapping) and text != "–" and _small(ci.get("low")) != "–":
        text += f" [{_small(ci.get('low'))}, {_small(ci.get('high'))}]"
    return text


def _shift_row(label: str, shift: Mapping[str, Any]) -> list[str]:
    return [
        label,
        str(shift.get("n", 0)),
        _mean_cell(shift),
        _small(shift.get("median")),
        format_number(shift.get("share_positive"), 2),
    ]


def _shifting_section(benchmark: Mapping[str, Any]) -> list[str]:
    shifting = benchmark["shifting"]
    lines = [
        "## Intra- and inter-modal bias (lmss, vlss; Sec. 3.5, Fig. 4)",
        "",
        f"On the {shifting['candidates']} anti-stereotypical images where the model picked the "
        "stereotypical caption"
        + (
            f" ({shifting['without_neutral']} of them have no neutral captions and are left out)"
            if shifting["without_neutral"]
            else ""
        )
        + ". lmss = ln p(S_s|I) / p(S'_s|I): above 0, the target term in the text pushes "
        "towards the stereotype; vlss = ln p(S'_s|I) / p(S'_s|I'), I' a blank white image: "
        "above 0, the image pushes towards it. p is the two-way softmax between the "
        f"stereotypical and anti-stereotypical caption (scale {benchmark['softmax_scale']:g}; "
        "the share above 0 does not depend on the scale).",
        "",
    ]
    rows = [_shift_row("lmss", shifting["lmss"]), _shift_row("vlss", shifting["vlss"])]
    for name, values in shifting["categories"].items():
        if values["lmss"].get("n"):
            rows.append(_shift_row(f"lmss ({name})", values["lmss"]))
            rows.append(_shift_row(f"vlss ({name})", values["vlss"]))
    return lines + _table(["score", "n", "mean", "median", "share > 0"], rows)


def _interval_line(benchmarks: Sequence[Mapping[str, Any]]) -> list[str]:
    meta = benchmarks[0].get("metadata", {})
    if not meta.get("bootstrap"):
        return []
    level = round(100 * float(meta.get("confidence", 0.95)), 1)
    return [
        f"[low, high]: {level:g}% percentile bootstrap interval over the images "
        f"({meta['bootstrap']} resamples). The reference rows are exact.",
        "",
    ]


_ABOUT = (
    "vlrs: % of images whose top caption is the stereotypical or anti-stereotypical one, "
    "not the irrelevant one (higher is better). vlbs: % of anti-stereotypical images whose "
    "top caption is the stereotypical one (0 is unbiased). ivlas: their harmonic mean, "
    "2·vlrs·(100 − vlbs) / (vlrs + 100 − vlbs) (VLStereoSet Sec. 3.4). Reference models "
    "(Sec. 4.1) on the same images: IDM always picks the correct caption, BIM always the "
    "stereotypical one, RAM one of the three at random (in expectation)."
)


def stereotype_markdown(benchmark: Mapping[str, Any]) -> str:
    """The ``report.md`` of one model (see the module docstring)."""
    from contrastkit.evaluators.report.markdown import weights_lines

    lines = [f"# Stereotype probing: {benchmark['model']}", ""]
    lines += weights_lines(benchmark)
    data = ", ".join(f"`{d}`" for d in benchmark.get("data", []))
    meta = benchmark["metadata"]
    lines += [
        f"Data: {data} ({meta['rows']} images). Scores: {benchmark.get('score_kind')}.",
        "",
        _ABOUT,
        "",
        "## Overall (Table 3 layout)",
        "",
    ]
    lines += _interval_line([benchmark])
    lines += _table3([benchmark], intervals=True)
    lines += ["## Per category (Table 4 layout)", ""]
    lines += _table4([benchmark], intervals=True)
    lines += _shifting_section(benchmark)
    lines += [
        f"![lmss and vlss histograms](plots/{PLOT_STEM}.png)",
        "",
        f"*Distributions of lmss and vlss (Fig. 4); the red line marks 0.* "
        f"([SVG](plots/{PLOT_STEM}.svg))",
        "",
    ]
    skipped = benchmark.get("skipped_rows") or {}
    if skipped.get("count"):
        lines += ["## Rows left out", ""]
        lines += _table(
            ["id", "category", "image", "reason"],
            [[row[key] for key in ("idx", "context", "url", "reason")]
             for row in skipped.get("rows", [])],
        )  # fmt: skip
    return "\n".join(lines)


def stereotype_comparison_markdown(benchmarks: Sequence[Mapping[str, Any]]) -> str:
    """Several models' stereotype results side by side: Table 3 (overall) and Table 4
    (per category) with the reference models' rows, and each model's lmss / vlss. The
    reference rows are those of the first benchmark's set."""
    if not benchmarks:
        return ""
    lines = ["# Stereotype probing (VLStereoSet Tables 3 and 4)", ""]
    for benchmark in benchmarks:
        if benchmark.get("random_weights"):
            lines += [f"> **Random weights.** {benchmark.get('weights_note')}", ""]
    datas = {tuple(b.get("data", [])) for b in benchmarks}
    if len(datas) > 1:
        lines += ["> The models were scored on different data; the reference rows are "
                  "those of the first model's.", ""]  # fmt: skip
    lines += [_ABOUT, "", "## Overall", ""]
    lines += _interval_line(benchmarks)
    lines += _table3(benchmarks, intervals=True)
    lines += ["## Per category", ""]
    lines += _table4(benchmarks, intervals=False)
    lines += [
        "## lmss and vlss",
        "",
    ]
    rows = []
    for benchmark in benchmarks:
        shifting = benchmark["shifting"]
        lm, vl = shifting["lmss"], shifting["vlss"]
        rows.append([
            _model_name(benchmark), str(shifting["candidates"]), _small(lm.get("mean")),
            format_number(lm.get("share_positive")), _small(vl.get("mean")),
            format_number(vl.get("share_positive")),
        ])  # fmt: skip
    table = _table(["model", "candidates", "lmss mean", "lmss > 0", "vlss mean", "vlss > 0"], rows)
    return "\n".join([*lines, *table[:-1]]) + "\n"


# --------------------------------------------------------------------------- plots
def shifting_figure(benchmark: Mapping[str, Any]) -> Figure:
    """Fig. 4: histograms of the per-instance lmss and vlss, a red line at 0."""
    from matplotlib.figure import Figure

    from contrastkit.evaluators.report.plots import PALETTE, figure_title

    instances = benchmark["shifting"]["instances"]
    figure = Figure(figsize=(7.0, 3.2), dpi=150, layout="constrained")
    axes = figure.subplots(1, 2)
    for axis, name in zip(axes, ("lmss", "vlss"), strict=True):
        values = np.array(
            [item[name] for item in instances if item.get(name) is not None], dtype=np.float64
        )
        if values.size:
            # Bins symmetric about 0 with 0 as an edge: every bar lies wholly on one side
            # of the red line, however small the values.
            half = max(float(np.abs(values).max()), 1e-12) * 1.05
            per_side = min(15, max(3, values.size))
            edges = np.linspace(-half, half, 2 * per_side + 1)
            axis.hist(values, bins=edges, color=PALETTE["neutral"], edgecolor="white",
                      linewidth=0.5)  # fmt: skip
            axis.yaxis.get_major_locator().set_params(integer=True)
            share = float((values > 0).mean())
            axis.set_title(f"{name} (n = {values.size}, {share:.0%} > 0)", fontsize=8)
        else:
            axis.text(0.5, 0.5, "no instance", ha="center", va="center",
                      transform=axis.transAxes, fontsize=8)  # fmt: skip
            axis.set_title(f"{name} (n = 0)", fontsize=8)
        axis.axvline(0.0, color=_ZERO_LINE, linewidth=1.2)
        axis.set_xlabel(name, fontsize=8)
        axis.set_ylabel("instances", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.spines[["top", "right"]].set_visible(False)
    shifting = benchmark["shifting"]
    counted = f"{shifting['candidates']} anti-stereotypical images picked S_s"
    if shifting["without_neutral"]:
        counted += f"; {shifting['without_neutral']} without neutral captions"
    title = figure_title(
        benchmark, str(benchmark["model"]), "lmss and vlss (VLStereoSet Fig. 4)", counted
    )
    random = bool(benchmark.get("random_weights"))
    figure.suptitle(title, fontsize=9, color="#A00000" if random else "black")
    return figure
