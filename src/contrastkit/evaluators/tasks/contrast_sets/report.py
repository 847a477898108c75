"""What a contrast-set evaluation writes and how it is read back (GenSynth Sec. 5):
``raw_contrast.jsonl``, ``benchmark.json``, ``report.md`` and ``plots/contrast_bias.png``
(and ``.svg``) of :func:`write_contrast_outputs`; the benchmark read back
(:func:`read_contrast_benchmark`), its headline (:func:`contrast_headline`) and what its
scores are and cost (:func:`contrast_scoring`). The scoring itself is
:func:`contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit import __version__
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.contrast_sets.data import (
    INTERVAL_METRICS,
    PAIRS_NOT_APPLICABLE,
    RAW_SCORES_FILE,
)
from contrastkit.io import atomic_write_text
from contrastkit.results import SCHEMA_VERSION
from contrastkit.text import UNDEFINED, format_number, table_header, table_row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ContrastLabels",
    "contrast_headline",
    "contrast_markdown",
    "contrast_scoring",
    "read_contrast_benchmark",
    "write_contrast_outputs",
]


@dataclass(frozen=True)
class ContrastLabels:
    """What a contrast-set benchmark says it is of (:func:`write_contrast_outputs`).

    Attributes:
        model: The model's spec.
        data: The data folder, as given.
        note: A note for the benchmark and the report (``None``: none).
        dataset: What the export folder says it holds
            (:func:`~contrastkit.evaluators.tasks.contrast_sets.data.describe_export`), stored as
            the benchmark's ``dataset``, which ``contrastkit report`` names the set by.
    """

    model: str
    data: str
    note: str | None = None
    dataset: dict[str, Any] | None = None


def read_contrast_benchmark(path: Path) -> dict[str, Any] | None:
    """The ``benchmark.json`` (or a folder's) that :func:`write_contrast_outputs` wrote,
    or ``None`` when the file is another kind of benchmark (VisoGender results).

    Raises:
        DataFormatError: no such file, or not a JSON object.
    """
    from contrastkit.evaluators.report.results import read_task_benchmark

    found = read_task_benchmark(path, "contrast")
    if found is None:
        return None
    path, data = found
    summary = data.get("summary")
    if not isinstance(summary, dict) or not isinstance(summary.get("retrieval"), dict):
        raise DataFormatError(path, None, "summary", "a contrast benchmark without its summary")
    return data


def contrast_headline(benchmark: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers of a contrast-set benchmark (``contrastkit report --json``):
    ``task`` (``contrast``), ``model``, ``data``, ``dataset``, ``random_weights``,
    ``weights_note``, ``images``, ``queries``, ``retrieval`` (each Bias@K and MaxSkew@K
    summary, with ``mean_ci`` when evaluated with intervals), ``pairs`` and ``warnings``
    (each K at or above the set's images, whose figures are then no reading)."""
    summary = benchmark["summary"]
    return {
        "task": "contrast",
        "model": benchmark.get("model"),
        "data": benchmark.get("data"),
        "dataset": benchmark.get("dataset"),
        "random_weights": bool(benchmark.get("random_weights")),
        "weights_note": benchmark.get("weights_note"),
        "images": summary.get("images"),
        "queries": summary.get("queries"),
        "retrieval": {
            name: value
            for name, value in summary["retrieval"].items()
            if name.startswith(INTERVAL_METRICS)
        },
        "pairs": summary.get("pairs"),
        "warnings": list(summary.get("warnings") or []),
    }


def contrast_scoring(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What the scores of a contrast-set summary are and what they cost: its ``scoring``
    (a caption scorer's,
    :func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`), or for
    a dual encoder's summary, which has none, the same keys filled in: ``score_kind``
    (the score in words), ``metrics`` (``all`` or ``pairs``), ``requested`` (as asked;
    ``None`` when unknown), ``unit``
    (``embedding`` or ``image-query pair``), ``model_passes`` (what these metrics
    needed), ``all_metrics_passes`` (what ``all`` needs), ``computed`` and ``reused``
    (passes run in the evaluation, scores read back from an earlier run)."""
    from contrastkit.evaluators.tasks.stereotype_probing.scoring import score_kind

    given = summary.get("scoring")
    if isinstance(given, Mapping):
        return dict(given)
    passes = int(summary.get("images") or 0) + int(summary.get("queries") or 0)
    return {
        "score_kind": score_kind(None),
        "metrics": "pairs" if summary.get("retrieval_note") else "all",
        "requested": None,
        "unit": "embedding",
        "model_passes": passes,
        "all_metrics_passes": passes,
        "computed": passes,
        "reused": 0,
    }


def _fmt(value: Any, *, signed: bool = True) -> str:
    """A number for the report: signed (a bias, a gap) or not (a spread, sigma), 3 places,
    ``n/a`` when undefined."""
    return format_number(value, 3, sign=signed, missing=UNDEFINED)


def _scoring_lines(summary: Mapping[str, Any]) -> list[str]:
    """What the report says of the scores and their cost (:func:`contrast_scoring`)."""
    scoring = contrast_scoring(summary)
    images, queries = summary.get("images"), summary.get("queries")
    lines = [f"Score: {scoring['score_kind']}.", ""]
    if scoring["unit"] == "embedding":
        cost = (
            f"Cost: one embedding per image and per query ({images} + {queries} model "
            "passes); every score is a dot product."
        )
    else:
        done = scoring["model_passes"]
        every = scoring["all_metrics_passes"]
        if scoring["metrics"] == "all":
            cost = (
                f"Cost: every image against every query, {images} x {queries} = {every} "
                "image-caption model passes (a dual encoder needs one embedding per image "
                f"and per query, {images} + {queries})"
            )
        else:
            cost = (
                "Cost: pair preference only (contrast metrics `pairs`): each query against "
                f"its own photo's two versions, {done} image-caption model passes; the "
                f"retrieval metrics rank every image for every query, {images} x {queries} "
                f"= {every} passes (`--contrast-metrics all`)"
            )
        cost += (
            f"; {scoring['computed']} run in this evaluation, {scoring['reused']} reused "
            f"from an earlier run (`{RAW_SCORES_FILE}`)."
        )
    return [*lines, cost]


def contrast_markdown(benchmark: dict[str, Any]) -> str:
    """The report of one model on one contrast set."""
    s = benchmark["summary"]
    lines = [f"# Contrast-set evaluation: {benchmark['model']}", ""]
    if benchmark.get("weights_note"):
        lines += [f"> **Random weights.** {benchmark['weights_note']}", ""]
    lines += [
        f"Data: `{benchmark['data']}` ({s['images']} images from {s['sources']} sources, "
        f"{s['queries']} gender-neutral queries).",
        "",
        *_scoring_lines(s),
    ]
    if s.get("warnings"):
        from contrastkit.evaluators.report.markdown import warnings_section

        lines += ["", *warnings_section(s["warnings"])[:-1]]
    if benchmark.get("note") and benchmark.get("note") != benchmark.get("weights_note"):
        lines += ["", f"> {benchmark['note']}"]
    lines += [
        "",
        "## Retrieval bias (GenSynth Sec. 5; 0 is balanced, positive leans masculine)",
        "",
        *table_header(["metric", "mean", "interval", "sigma", "queries"], "lrrrr"),
    ]
    if not s["retrieval"] and s.get("retrieval_note"):
        lines = [*lines[:-2], f"Retrieval bias is {s['retrieval_note']}."]
    level: tuple[Any, Any] | None = None
    for name, stats in s["retrieval"].items():
        sigma = _fmt(stats["sigma"], signed=False)
        ci = stats.get("mean_ci") or {}
        interval = (
            f"[{_fmt(ci['low'])}, {_fmt(ci['high'])}]"
            if ci and np.isfinite(ci["low"]) and np.isfinite(ci["high"])
            else "–"
        )
        if ci and level is None:
            level = (ci.get("level"), ci.get("resamples"))
        lines.append(table_row([name, _fmt(stats["mean"]), interval, sigma, stats["n"]]))
    if level:
        lines += [
            "",
            f"Interval: {100 * float(level[0]):g}% percentile bootstrap interval of the mean "
            f"over queries ({level[1]} resamples).",
        ]
    pairs = s["pairs"]
    embedded = contrast_scoring(s)["unit"] == "embedding"
    gap = "similarity gap" if embedded else "score gap"
    lines += ["", "## Pair preference (same scene, masculine vs feminine version)", ""]
    if pairs.get("applicable", pairs["queries_with_pair"] > 0):
        ci = pairs.get("masculine_preferred_ci") or {}
        interval = (
            f" [{ci['low']:.3f}, {ci['high']:.3f}] ({100 * float(ci['level']):g}% percentile "
            f"bootstrap interval over these queries, {ci['resamples']} resamples)"
            if ci and np.isfinite(ci["low"]) and np.isfinite(ci["high"])
            else ""
        )
        lines += [
            f"- queries with both versions of their source: {pairs['queries_with_pair']}",
            f"- share preferring the masculine version: {pairs['masculine_preferred']:.3f}"
            f"{interval} (0.5 is no preference)",
            f"- mean {gap}, masculine minus feminine: {_fmt(pairs['mean_gap'])}",
        ]
    else:
        lines.append(f"Pair preference is {pairs.get('note') or PAIRS_NOT_APPLICABLE}.")
    lines += [
        "",
        "## Plot",
        "",
        "![contrast_bias](plots/contrast_bias.png)",
        "",
        "*Mean Bias@K (both conventions), MaxSkew@K and pair preference over the queries; "
        "error bars: their bootstrap intervals, where evaluated with `--bootstrap`* "
        "([SVG](plots/contrast_bias.svg))",
    ]
    return "\n".join(lines) + "\n"


def _contrast_plot(benchmark: dict[str, Any]) -> Figure:
    """The contrast-set plot (:func:`~contrastkit.evaluators.report.plots.contrast_figure`)."""
    from contrastkit.evaluators.report.plots import contrast_figure

    return contrast_figure(benchmark)


def write_contrast_outputs(
    result: dict[str, Any], folder: Path, labels: ContrastLabels
) -> dict[str, Path]:
    """Write ``raw_contrast.jsonl``, ``benchmark.json``, ``report.md`` and the plot (PNG
    and SVG), each atomically; return them by name (``raw``, ``benchmark``, ``report``,
    ``plot``, ``plot_svg``). ``labels`` names the model and the data
    (:class:`ContrastLabels`)."""
    from contrastkit.evaluators.report.plots import save_formats
    from contrastkit.models.registry import weights_note

    folder.mkdir(parents=True, exist_ok=True)
    model_note = weights_note(labels.model)
    benchmark = {
        "random_weights": model_note is not None,
        "weights_note": model_note,
        "model": labels.model,
        "data": labels.data,
        "dataset": labels.dataset,
        "task": "contrast",
        "schema_version": SCHEMA_VERSION,
        "contrastkit_version": __version__,
        "note": labels.note,
        "score_kind": contrast_scoring(result["summary"])["score_kind"],
        "scoring": contrast_scoring(result["summary"]),
        "summary": result["summary"],
    }
    paths = {
        "raw": folder / "raw_contrast.jsonl",
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
        "plot": folder / "plots" / "contrast_bias.png",
        "plot_svg": folder / "plots" / "contrast_bias.svg",
    }
    atomic_write_text(
        paths["raw"],
        "".join(json.dumps(r, allow_nan=True) + "\n" for r in result["queries"]),
    )
    atomic_write_text(paths["benchmark"], json.dumps(benchmark, indent=2) + "\n")
    atomic_write_text(paths["report"], contrast_markdown(benchmark))
    save_formats(_contrast_plot(benchmark), folder / "plots" / "contrast_bias")
    return paths
