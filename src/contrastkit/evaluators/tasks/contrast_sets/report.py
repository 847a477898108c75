"""What a contrast-set evaluation writes and how it is read back (GenSynth Sec. 5):
``raw_contrast.jsonl``, ``benchmark.json``, ``report.md`` and ``plots/contrast_bias.png``
(and ``.svg``) of :func:`write_contrast_outputs`, from the typed result
(:class:`~contrastkit.results.contrast.ContrastResult`, :func:`contrast_result`) that the
report, the plot and the headline take; the benchmark read back
(:func:`read_contrast_benchmark`), its headline (:func:`contrast_headline`) and what its
scores are and cost (:func:`contrast_scoring`). The scoring itself is
:func:`contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

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
from contrastkit.results.common import Interval
from contrastkit.results.contrast import (
    ContrastPairs,
    ContrastResult,
    ContrastScoring,
    ContrastSummary,
)
from contrastkit.text import UNDEFINED, format_number, table_header, table_row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "ContrastLabels",
    "benchmark_text",
    "contrast_headline",
    "contrast_markdown",
    "contrast_plot",
    "contrast_result",
    "contrast_scoring",
    "raw_lines",
    "read_contrast_benchmark",
    "write_contrast_files",
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
    dataset: Mapping[str, Any] | None = None


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


def contrast_result(summary: Mapping[str, Any], labels: ContrastLabels) -> ContrastResult:
    """The typed ``benchmark.json`` of one model on one contrast set: the ``summary`` of
    :func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast` (its
    JSON-ready output, read into :class:`~contrastkit.results.contrast.ContrastSummary`)
    with what ``labels`` names, the model's random-weights note and what the scores are
    and cost (:func:`contrast_scoring`)."""
    from contrastkit.models.registry import weights_note

    model_note = weights_note(labels.model)
    scoring = contrast_scoring(summary)
    return ContrastResult(
        random_weights=model_note is not None, weights_note=model_note, model=labels.model,
        data=labels.data, dataset=labels.dataset, schema_version=SCHEMA_VERSION,
        contrastkit_version=__version__, note=labels.note, score_kind=scoring.score_kind,
        scoring=scoring, summary=ContrastSummary.from_json(dict(summary), path="summary"),
        key_order=_BENCHMARK_KEYS,
    )  # fmt: skip


#: The order of a contrast ``benchmark.json``'s keys, as it has always been written.
_BENCHMARK_KEYS = (
    "random_weights", "weights_note", "model", "data", "dataset", "task", "schema_version",
    "contrastkit_version", "note", "score_kind", "scoring", "summary",
)  # fmt: skip


def _typed(benchmark: ContrastResult | Mapping[str, Any]) -> ContrastResult:
    """``benchmark`` as its typed result (a ``benchmark.json`` object read into one)."""
    if isinstance(benchmark, ContrastResult):
        return benchmark
    return ContrastResult.from_json(dict(benchmark))


class ContrastHeadline(TypedDict):
    """The headline numbers of a contrast-set result (:func:`contrast_headline`)."""

    task: str
    model: str
    data: str | tuple[str, ...] | None
    dataset: Mapping[str, Any] | None
    random_weights: bool
    weights_note: str | None
    images: int | None
    queries: int | None
    retrieval: dict[str, Mapping[str, object]]
    pairs: Mapping[str, object] | None
    warnings: list[Mapping[str, object]]


def contrast_headline(benchmark: ContrastResult | Mapping[str, Any]) -> ContrastHeadline:
    """The headline numbers of a contrast-set result (``contrastkit report --json``):
    ``task`` (``contrast``), ``model``, ``data``, ``dataset``, ``random_weights``,
    ``weights_note``, ``images``, ``queries``, ``retrieval`` (each Bias@K and MaxSkew@K
    summary, with ``mean_ci`` when evaluated with intervals), ``pairs`` and ``warnings``
    (each K at or above the set's images, whose figures are then no reading). A
    ``benchmark.json`` object is read into its typed result first."""
    result = _typed(benchmark)
    summary = result.summary
    return {
        "task": "contrast",
        "model": result.model,
        "data": result.data,
        "dataset": result.dataset,
        "random_weights": bool(result.random_weights),
        "weights_note": result.weights_note,
        "images": summary.images,
        "queries": summary.queries,
        "retrieval": {
            name: value.to_json()
            for name, value in summary.retrieval.items()
            if name.startswith(INTERVAL_METRICS)
        },
        "pairs": None if summary.pairs is None else summary.pairs.to_json(),
        "warnings": [warning.to_json() for warning in summary.warnings or ()],
    }


def contrast_scoring(summary: Mapping[str, Any]) -> ContrastScoring:
    """What the scores of a contrast-set summary are and what they cost (the result's
    ``scoring``): the summary's own ``scoring`` (a caption scorer's,
    :func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`), or for
    a dual encoder's summary, which has none, the same fields filled in: ``score_kind``
    (the score in words), ``metrics`` (``all`` or ``pairs``), ``requested`` (as asked;
    ``None`` when unknown), ``unit``
    (``embedding`` or ``image-query pair``), ``model_passes`` (what these metrics
    needed), ``all_metrics_passes`` (what ``all`` needs), ``computed`` and ``reused``
    (passes run in the evaluation, scores read back from an earlier run)."""
    from contrastkit.evaluators.tasks.stereotype_probing.scoring import score_kind

    given = summary.get("scoring")
    if isinstance(given, Mapping):
        return ContrastScoring.from_json(dict(given), path="summary.scoring")
    passes = int(summary.get("images") or 0) + int(summary.get("queries") or 0)
    return ContrastScoring(
        score_kind=score_kind(None),
        metrics="pairs" if summary.get("retrieval_note") else "all",
        requested=None,
        unit="embedding",
        model_passes=passes,
        all_metrics_passes=passes,
        computed=passes,
        reused=0,
    )


def _scoring_of(result: ContrastResult) -> ContrastScoring:
    """The result's ``scoring`` (:func:`contrast_scoring` of its summary when it has
    none: a file written before the field)."""
    if result.scoring is not None:
        return result.scoring
    return contrast_scoring(result.summary.to_json())


def _fmt(value: Any, *, signed: bool = True) -> str:
    """A number for the report: signed (a bias, a gap) or not (a spread, sigma), 3 places,
    ``n/a`` when undefined."""
    return format_number(value, 3, sign=signed, missing=UNDEFINED)


def _finite(interval: Interval | None) -> Interval | None:
    """``interval`` when both its bounds are finite numbers, else ``None``."""
    if interval is None or interval.low is None or interval.high is None:
        return None
    return interval if np.isfinite(interval.low) and np.isfinite(interval.high) else None


def _scoring_lines(result: ContrastResult) -> list[str]:
    """What the report says of the scores and their cost (:func:`contrast_scoring`)."""
    scoring = _scoring_of(result)
    images, queries = result.summary.images, result.summary.queries
    lines = [f"Score: {scoring.score_kind}.", ""]
    if scoring.unit == "embedding":
        cost = (
            f"Cost: one embedding per image and per query ({images} + {queries} model "
            "passes); every score is a dot product."
        )
    else:
        done = scoring.model_passes
        every = scoring.all_metrics_passes
        if scoring.metrics == "all":
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
            f"; {scoring.computed} run in this evaluation, {scoring.reused} reused "
            f"from an earlier run (`{RAW_SCORES_FILE}`)."
        )
    return [*lines, cost]


def _retrieval_lines(summary: ContrastSummary) -> list[str]:
    """The retrieval-bias section: one row per metric, and what its intervals are."""
    lines = [
        "",
        "## Retrieval bias (GenSynth Sec. 5; 0 is balanced, positive leans masculine)",
        "",
        *table_header(["metric", "mean", "interval", "sigma", "queries"], "lrrrr"),
    ]
    note = summary.extra.get("retrieval_note")
    if not summary.retrieval and note:
        lines = [*lines[:-2], f"Retrieval bias is {note}."]
    level: Interval | None = None
    for name, stats in summary.retrieval.items():
        ci = _finite(stats.mean_ci)
        interval = f"[{_fmt(ci.low)}, {_fmt(ci.high)}]" if ci is not None else "–"
        if stats.mean_ci is not None and level is None:
            level = stats.mean_ci
        sigma = _fmt(stats.sigma, signed=False)
        lines.append(table_row([name, _fmt(stats.mean), interval, sigma, stats.n]))
    if level is not None:
        lines += [
            "",
            f"Interval: {100 * float(level.level or 0.0):g}% percentile bootstrap interval of "
            f"the mean over queries ({level.resamples} resamples).",
        ]
    return lines


def _pair_lines(pairs: ContrastPairs, gap: str) -> list[str]:
    """The pair-preference section."""
    lines = ["", "## Pair preference (same scene, masculine vs feminine version)", ""]
    if not pairs.applicable:
        return [*lines, f"Pair preference is {pairs.extra.get('note') or PAIRS_NOT_APPLICABLE}."]
    ci = _finite(pairs.masculine_preferred_ci)
    interval = (
        f" [{ci.low:.3f}, {ci.high:.3f}] ({100 * float(ci.level or 0.0):g}% percentile "
        f"bootstrap interval over these queries, {ci.resamples} resamples)"
        if ci is not None
        else ""
    )
    return [
        *lines,
        f"- queries with both versions of their source: {pairs.queries_with_pair}",
        f"- share preferring the masculine version: {pairs.masculine_preferred:.3f}"
        f"{interval} (0.5 is no preference)",
        f"- mean {gap}, masculine minus feminine: {_fmt(pairs.mean_gap)}",
    ]


def contrast_markdown(benchmark: ContrastResult | Mapping[str, Any]) -> str:
    """The report of one model on one contrast set (a ``benchmark.json`` object is read
    into its typed result first)."""
    result = _typed(benchmark)
    s = result.summary
    lines = [f"# Contrast-set evaluation: {result.model}", ""]
    if result.weights_note:
        lines += [f"> **Random weights.** {result.weights_note}", ""]
    lines += [
        f"Data: `{result.data}` ({s.images} images from {s.sources} sources, "
        f"{s.queries} gender-neutral queries).",
        "",
        *_scoring_lines(result),
    ]
    if s.warnings:
        from contrastkit.evaluators.report.markdown import warnings_section

        lines += ["", *warnings_section([w.to_json() for w in s.warnings])[:-1]]
    if result.note and result.note != result.weights_note:
        lines += ["", f"> {result.note}"]
    lines += _retrieval_lines(s)
    embedded = _scoring_of(result).unit == "embedding"
    if s.pairs is not None:
        lines += _pair_lines(s.pairs, "similarity gap" if embedded else "score gap")
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


def contrast_plot(result: ContrastResult) -> Figure:
    """The contrast-set plot
    (:func:`~contrastkit.evaluators.report.contrast_plots.contrast_figure`, which reads
    the ``benchmark.json`` object)."""
    from contrastkit.evaluators.report.plots import contrast_figure

    return contrast_figure(result.to_json())


def raw_lines(queries: Sequence[Mapping[str, Any]]) -> str:
    """``raw_contrast.jsonl``: one JSON line per query record (non-finite numbers as
    ``NaN`` / ``Infinity``, as it has always been written)."""
    return "".join(json.dumps(record, allow_nan=True) + "\n" for record in queries)


def benchmark_text(result: ContrastResult) -> str:
    """``benchmark.json`` of a result (the file boundary: non-finite numbers as ``NaN``
    / ``Infinity``, as contrast benchmarks have always been written)."""
    return json.dumps(result.to_json(), indent=2) + "\n"


def write_contrast_outputs(
    result: Mapping[str, Any], folder: Path, labels: ContrastLabels
) -> dict[str, Path]:
    """Write ``raw_contrast.jsonl``, ``benchmark.json``, ``report.md`` and the plot (PNG
    and SVG) of an evaluation (:func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.
    evaluate_contrast`'s ``{"summary", "queries"}``), each atomically; return them by
    name (``raw``, ``benchmark``, ``report``, ``plot``, ``plot_svg``). ``labels`` names the
    model and the data (:class:`ContrastLabels`)."""
    return write_contrast_files(contrast_result(result["summary"], labels), result["queries"],
                                folder)  # fmt: skip


def write_contrast_files(
    result: ContrastResult, queries: Sequence[Mapping[str, Any]], folder: Path
) -> dict[str, Path]:
    """Write the files of a typed result and its per-query records (as
    :func:`write_contrast_outputs` says)."""
    from contrastkit.evaluators.report.plots import save_formats

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "raw": folder / "raw_contrast.jsonl",
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
        "plot": folder / "plots" / "contrast_bias.png",
        "plot_svg": folder / "plots" / "contrast_bias.svg",
    }
    atomic_write_text(paths["raw"], raw_lines(queries))
    atomic_write_text(paths["benchmark"], benchmark_text(result))
    atomic_write_text(paths["report"], contrast_markdown(result))
    save_formats(contrast_plot(result), folder / "plots" / "contrast_bias")
    return paths
