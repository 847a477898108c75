"""The evaluation jobs, callable from Python exactly as the command line calls them.

* :func:`evaluate` (``contrastkit evaluate``): score models on a VisoGender-style dataset
  (resolution and retrieval bias, VisoGender Sec. 3.4-3.5, with the Appendix F labor
  statistics and Appendix G error analysis) or on GenSynth / GenSwap contrast sets
  (retrieval bias of gender-neutral queries and pair preference, GenSynth Sec. 5).
* :func:`compare_results` (``contrastkit report``): several models' results side by side
  (VisoGender Tab. 2 and Tab. 3 shapes).

Each takes one frozen config that validates itself (a bad value raises
:class:`~contrastkit.errors.ConfigError` naming the field) and returns a typed result.

Example:
    >>> from contrastkit.evaluators.job import EvaluateConfig, evaluate
    >>> from contrastkit.evaluators.runner import EvalConfig
    >>> result = evaluate(EvaluateConfig(  # doctest: +SKIP
    ...     data=("data/OP.tsv", "data/OO.tsv"),
    ...     models=("open_clip:ViT-B-32/openai",),
    ...     out="results",
    ...     settings=EvalConfig(neutral=True),
    ... ))
    >>> result.evaluations[0].folder  # doctest: +SKIP
    PosixPath('results/open_clip-ViT-B-32-openai')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.config import require
from contrastkit.evaluators.evaluation import (
    EvaluateConfig,
    EvaluateResult,
    ModelEvaluation,
    as_strings,
    default_image_store,
    local_data,
    plot_links,
)
from contrastkit.interfaces import ProgressFactory
from contrastkit.io import atomic_write_text, check_writable

if TYPE_CHECKING:
    from contrastkit.evaluators.tasks.registry import Task

__all__ = [
    "Comparison",
    "EvaluateConfig",
    "EvaluateResult",
    "ModelEvaluation",
    "ReportConfig",
    "compare_results",
    "data_task",
    "default_image_store",
    "evaluate",
]


def evaluate(config: EvaluateConfig, *, progress: ProgressFactory | None = None) -> EvaluateResult:
    """Score every model of ``config`` on its data and write the reports.

    Per model, into ``out/<model>/`` (a folder named after the spec): for VisoGender-style
    data ``raw_resolution.jsonl``, ``raw_retrieval.jsonl`` and
    ``raw_retrieval_flipped.jsonl`` (per-image scores, reused by a later run; the last
    holds the participant-subject queries of Tab. 5), ``benchmark.json`` (VisoGender
    Appendix J structure with ``retrieval_flipped`` beside ``retrieval_bias``, the resolution
    protocol in its metadata, the paper's overall accuracy, and ``x_ci`` bootstrap
    intervals beside the headline figures), ``report.md`` and ``plots/*.png`` and ``.svg``
    (intervals as ``[low, high]`` and error bars), and with several models
    ``out/comparison.md`` with ``comparison.png`` / ``.svg``; for contrast sets
    ``raw_contrast.jsonl`` (and for a caption scorer ``raw_contrast_scores.jsonl``, its
    image-query scores, reused by a later run), ``benchmark.json``, ``report.md`` and
    ``plots/contrast_bias.png`` / ``.svg`` (per data folder when there are several); for
    stereotype probe sets (``task="stereotype"``, or probe-set data)
    ``raw_stereotype.jsonl``, ``benchmark.json``, ``report.md`` and
    ``plots/shifting_scores.png`` / ``.svg``
    (the task folder :mod:`contrastkit.evaluators.tasks.stereotype_probing`, run by the engine).

    With ``fetch`` (the default for ``data=("visogender",)``) the URLs the image store does
    not hold are first checked into it (:mod:`contrastkit.curation.urls`); with
    ``skip_missing`` (also the default there) rows whose image is still not available are
    left out and listed in every report (``skipped_rows``).

    Everything that can be checked before a model runs is: the output folder is writable,
    the data loads, every image is found (or the rows without one are set aside), the tasks
    suit the models.

    Args:
        config: what to evaluate.
        progress: opens a progress display per model (see :class:`ProgressFactory`).

    Returns:
        The folders and files written, the counts, and each model's headline numbers.

    Raises:
        ResourceError: ``out`` cannot be written.
        ConfigError: contrast sets mixed with VisoGender-style data, a task a model cannot
            run, a missing image store, a device or dtype this machine lacks; a model
            folder under ``out`` that holds another task's results (each task's files
            share their names: evaluate it into another ``out``).
        DataFormatError: data that cannot be read, a missing or broken image (without
            ``skip_missing``), no row with an image (with it).
        ModelNotFoundError: a model neither on disk nor cached, or one that does not load.
    """
    from contrastkit.evaluators.report.results import model_slug
    from contrastkit.evaluators.task_folders import require_one_task

    task, paths = _task_and_paths(config)
    require_one_task(config.out, [model_slug(spec) for spec in config.models], task.name)
    return task.evaluate(config, paths, progress)


def data_task(config: EvaluateConfig) -> str:
    """The name of the task :func:`evaluate` runs on ``config``: ``config.task``, or the
    one that reads its data (Hub datasets are first saved under ``out/_data``, as
    :func:`evaluate` saves them).

    Raises:
        ResourceError: ``out`` cannot be written.
        ConfigError: data of several kinds, or of a kind no task evaluates.
        DataFormatError: data that cannot be read.
    """
    return _task_and_paths(config)[0].name


def _task_and_paths(config: EvaluateConfig) -> tuple[Task, tuple[Path, ...]]:
    """The task that evaluates ``config`` and its data as local paths, ``out`` checked
    writable first (what :func:`evaluate` and :func:`data_task` both need)."""
    from contrastkit.evaluators.tasks.registry import task_for_data

    check_writable(config.out, "evaluation results")
    paths = local_data(config)
    return task_for_data(paths, config.task), paths


@dataclass(frozen=True)
class ReportConfig:
    """What ``contrastkit report`` does, as one value (strings are taken as paths).

    Attributes:
        results: ``benchmark.json`` files, or the model folders :func:`evaluate` wrote.
        out: also write the markdown comparison here.

    Raises:
        ConfigError: no results given.
    """

    results: tuple[Path, ...]
    out: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(map(Path, as_strings(self.results, "results"))))
        if self.out is not None:
            object.__setattr__(self, "out", Path(self.out))
        require(bool(self.results), "results", "give at least one benchmark.json or folder")


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare_results` found.

    Attributes:
        markdown: the side-by-side tables (VisoGender Tab. 2 and Tab. 3 shapes; GenSynth
            Tab. 3 for contrast sets).
        results: each benchmark's results object, in the order given.
        headlines: each model's headline numbers (model, resolution bias per split,
            retrieval bias mean/sigma), what ``contrastkit report --json`` prints.
        out: where the markdown was written, if anywhere.
    """

    markdown: str
    results: tuple[Mapping[str, Any], ...]
    headlines: tuple[dict[str, Any], ...]
    out: Path | None = None


def compare_results(config: ReportConfig) -> Comparison:
    """Put several models' results side by side.

    VisoGender results give the Tab. 2 / Tab. 3 tables (and, with ``out``, the
    comparison plot ``OUT_STEM.png`` / ``.svg`` beside it); contrast-set results
    (``benchmark.json`` of a contrast set, an original-photo set or a balanced one) give
    the GenSynth Tab. 3 table
    (:func:`~contrastkit.evaluators.report.markdown.contrast_comparison_markdown`):
    one row per set and model with Bias@K and MaxSkew@K and their intervals, a K
    covering a whole set marked in place of its figures and listed under Warnings, and
    with ``out`` its plot
    (:func:`~contrastkit.evaluators.report.plots.contrast_comparison_figure`;
    ``OUT_STEM.png`` / ``.svg``, ``OUT_STEM_contrast.png`` / ``.svg`` beside VisoGender
    results). Mixed inputs give both, VisoGender first. Stereotype-probing results give
    VLStereoSet's Tables 3 and 4 with the reference models
    (:func:`~contrastkit.evaluators.tasks.stereotype_probing.benchmark.stereotype_comparison_markdown`),
    after
    the others. The ``harness_results.json`` that ``contrastkit report
    --harness-predictions`` writes for a contrast set (or its folder) gives its harness
    tables (:func:`~contrastkit.evaluators.harness.harness_results_markdown`).
    ``results`` and ``headlines`` keep the order given, harness results last (a contrast
    headline has ``task: "contrast"``, a stereotype one ``task: "stereotype"``, a harness
    one ``task: "harness-contrast"``).

    Raises:
        ResourceError: ``out`` cannot be written (checked before anything is read).
        DataFormatError: a missing or malformed benchmark file; a results folder that
            holds the files of several tasks (a second task evaluated into it by an
            older contrastkit: its benchmark.json may not be what its files show).
    """
    from contrastkit.evaluators.task_folders import require_unmixed
    from contrastkit.evaluators.tasks.registry import read_result, tasks

    if config.out is not None:
        check_writable(config.out, "the comparison", folder=False)
    for path in config.results:
        require_unmixed(path)
    read = [read_result(path) for path in config.results]
    order = list(tasks().values())
    read.sort(key=lambda pair: pair[0].listed_last)  # stable: the order given otherwise
    text_parts: list[str] = []
    plots: list[tuple[str, list[Path]]] = []
    stem_taken = False
    for task in order:
        group = [results for done, results in read if done is task]
        if not group:
            continue
        text_parts.append(task.function("compare")(group))
        if config.out is not None and task.compare_plots is not None:
            stem = config.out.stem + (f"_{task.name}" if stem_taken else "")
            written = task.function("compare_plots")(group, config.out.parent, stem)
            stem_taken = True
            plots.append((task.plots_title, written))
    text = "\n".join(text_parts)
    if config.out is not None:
        for title, written in plots:
            text += plot_links(written, title)
        atomic_write_text(config.out, text)
    headlines = tuple(task.function("headline")(results) for task, results in read)
    return Comparison(text, tuple(r for _, r in read), headlines, config.out)
