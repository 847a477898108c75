"""VisoGender on the task protocol (resolution, retrieval and flipped retrieval;
VisoGender Sec. 3.4-3.5 and Tab. 5): the data is one item, every row of the given files
together, scored at once by :func:`~contrastkit.evaluators.tasks.visogender.scoring.
score_dataset` (which keeps each part's raw records in ``raw_resolution.jsonl``,
``raw_retrieval.jsonl`` and ``raw_retrieval_flipped.jsonl`` under keys of its own and
reuses them on rerun, so the engine keeps no records and writes no raw file); its run
aggregated into the typed :class:`~contrastkit.results.VisoGenderResult`
(:func:`~contrastkit.evaluators.tasks.visogender.benchmark.visogender_result`), whose
``benchmark.json`` keeps its keyed layout (``visogender_<model>_results``, Appendix J).

The engine does the rest: the capability check (a dual encoder or a captioning model:
``embeddings`` or ``pronouns``; only retrieval asks for a dual encoder), the images
checked, fetched and left out as ``--fetch`` and ``--skip-missing`` say (through the
task's own loader: a saved dataset's images, the image pipeline's preprocessing), each
model loaded in turn, the files, and with several models ``comparison.md`` and its plot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.engine.protocol import (
    Item,
    RunConfig,
    RunContext,
    ScoreContext,
    Task,
    TaskSettings,
)
from contrastkit.evaluators.tasks.visogender.retrieval import retrieval_needs_dual
from contrastkit.evaluators.tasks.visogender.settings import AnalysisSettings, EvalConfig
from contrastkit.models.registry import parse_spec
from contrastkit.results.visogender import VisoGenderResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

    from contrastkit.evaluators.data import SkippedRow
    from contrastkit.evaluators.engine.images import Images
    from contrastkit.evaluators.evaluation import EvaluateConfig
    from contrastkit.evaluators.tasks.visogender.scoring import ScoredRun
    from contrastkit.interfaces import ProgressFactory

__all__ = ["TASK", "VISOGENDER", "VisoGender", "VisoGenderSettings"]

#: The key of the one item (all the rows of the data).
_ITEM = "visogender"

#: Every plot a model's folder may hold (``plots/STEM.png`` / ``.svg``).
_PLOT_STEMS = (
    "resolution_accuracy",
    "accuracy_by_gender_pair",
    "gap_per_occupation",
    "bias_at_k_per_occupation",
    "labour_statistics",
    "retrieval_template_flipping",
)


@dataclass(frozen=True)
class VisoGenderSettings(TaskSettings):
    """What a VisoGender run computes: ``EvaluateConfig.settings`` with the task's
    :class:`~contrastkit.evaluators.tasks.visogender.settings.AnalysisSettings` (its
    options) applied, by :meth:`VisoGender.settings_of`.

    Attributes:
        analyses: the parts, protocol, cut-offs and analyses
            (:class:`~contrastkit.evaluators.tasks.visogender.settings.EvalConfig`).
    """

    analyses: EvalConfig = field(default_factory=EvalConfig)


def _run(records: Sequence[Mapping[str, Any]]) -> ScoredRun:
    """The scored run in a model's one record."""
    [record] = records
    run: ScoredRun = record["run"]
    return run


def _evaluated(
    result: VisoGenderResult, skipping: bool, skipped_rows: Sequence[SkippedRow]
) -> VisoGenderResult:
    """``result`` with what the evaluation adds: whether missing images were skipped
    (``metadata.skip_missing``) and the rows left out (``skipped_rows``)."""
    from contrastkit.evaluators.outcome import skipped_rows_json
    from contrastkit.results.common import SkippedRows

    metadata = replace(
        result.metadata,
        skip_missing=skipping,
        absent=result.metadata.absent - {"skip_missing"},
    )
    rows = SkippedRows.from_json(skipped_rows_json(skipped_rows))
    return replace(
        result, metadata=metadata, skipped_rows=rows, absent=result.absent - {"skipped_rows"}
    )


def _inner(result: VisoGenderResult) -> Mapping[str, Any]:
    """The results object of ``result``'s file (its one key's value)."""
    _, inner = next(iter(result.to_json().items()))
    return cast("Mapping[str, Any]", inner)


class VisoGender(Task[VisoGenderSettings, VisoGenderResult]):
    """VisoGender resolution, retrieval and flipped retrieval of dual encoders and
    captioning models (the module docstring)."""

    name = "visogender"
    kind = "visogender"
    any_capabilities = frozenset({"embeddings", "pronouns"})
    # what settings_of gives (VisoGenderSettings) is a TaskSettings; its options are the
    # shared groups below, "visogender" made from AnalysisSettings' fields
    settings = TaskSettings
    result = VisoGenderResult
    description = "VisoGender resolution and retrieval bias (VisoGender Sec. 3.4-3.5)."
    example_model = "open_clip:ViT-B-32/openai"
    scoring_settings = ()
    options = ("images", "network", "visogender", "retrieval", "bootstrap")
    keeps_records = False
    plots_title = "the models side by side"
    plots_on_evaluate = True
    progress_label = "scoring {model}"
    reports_progress = True

    def settings_of(self, config: RunConfig) -> VisoGenderSettings:
        """The analyses of ``config``: its ``task_settings`` (an
        :class:`~contrastkit.evaluators.tasks.visogender.settings.AnalysisSettings`, what
        ``contrastkit evaluate visogender`` gives) applied to its ``settings``, or its
        ``settings`` alone.

        Raises:
            ConfigError: settings of another class, or an analysis given both ways with
                different values (one of the two would be ignored).
        """
        from contrastkit.evaluators.evaluation import no_task_settings

        evaluate_config = cast("EvaluateConfig", config)
        shared = evaluate_config.settings
        own = evaluate_config.task_settings
        if not isinstance(own, AnalysisSettings):
            no_task_settings(evaluate_config, self.name)
            return VisoGenderSettings(shared)
        default = EvalConfig()
        for spec in fields(own):
            given = getattr(shared, spec.name)
            if given != getattr(default, spec.name) and given != getattr(own, spec.name):
                raise ConfigError(
                    f"settings.{spec.name}: {given!r} here and {getattr(own, spec.name)!r} in "
                    "task_settings; give VisoGender's analyses in one of the two"
                )
        return VisoGenderSettings(own.applied_to(shared))

    def refusal(self, model: str, lacking: Sequence[str]) -> str:
        from contrastkit.evaluators.runner import answers_only

        if refusal := answers_only(model, "VisoGender's resolution or retrieval"):
            return f"models: {refusal}"
        return (
            f"models: {model} is an image-text-matching model: it scores captions for "
            "stereotype probing (a probe set, --task stereotype), not VisoGender pronouns"
        )

    def check_models(self, models: Sequence[str], settings: VisoGenderSettings) -> None:
        """Refuse a model that is no dual encoder when only retrieval is asked.

        Raises:
            ConfigError: such a model.
        """
        if settings.analyses.tasks != ("retrieval",):
            return
        for spec in models:
            if "embeddings" not in parse_spec(spec).capabilities:
                raise ConfigError(f"models: {retrieval_needs_dual(spec)}")

    def items(
        self, paths: Sequence[Path], settings: VisoGenderSettings, split: str | None
    ) -> Iterable[Item]:
        """One item: every row of ``paths``.

        Raises:
            DataFormatError: a file that does not read, or no rows.
        """
        from contrastkit.evaluators.data import load_items

        rows = load_items(tuple(paths), split=split)
        if not rows:
            raise DataFormatError(", ".join(map(str, paths)), None, None, "the dataset has no rows")
        return [Item(_ITEM, {}, {"rows": rows}, source=paths[0])]

    def available(
        self,
        config: RunConfig,
        paths: tuple[Path, ...],
        items: Sequence[Item],
        progress: ProgressFactory | None,
    ) -> tuple[list[Item], Images]:
        """The rows whose image is available (fetched first with ``--fetch``; the others
        refused, or left out with ``--skip-missing``) and the loader that opens them."""
        from contrastkit.evaluators.availability import available_items
        from contrastkit.evaluators.engine.images import Images

        evaluate_config = cast("EvaluateConfig", config)
        [item] = items
        rows = list(item.data["rows"])
        kept, loader, skipped, (fetched, checked) = available_items(
            evaluate_config, paths, rows, progress
        )
        store = loader.store.root if loader.store is not None else None
        images = Images(store, checked, fetched, tuple(skipped), bool(evaluate_config.skipping))
        return [replace(item, data={"rows": kept, "loader": loader})], images

    def score_in(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        context: ScoreContext[VisoGenderSettings],
    ) -> list[Mapping[str, Any]]:
        from contrastkit.evaluators.tasks.visogender.scoring import ImageBatches, score_dataset
        from contrastkit.interfaces import ImageTextScorer, PronounScorer

        if not isinstance(model, ImageTextScorer | PronounScorer):
            raise ConfigError(
                f"models: {context.model} scores neither image-text similarity nor pronouns"
            )
        [item] = items
        batches = ImageBatches(item.data["loader"], context.batch_size, context.progress)
        run = score_dataset(
            item.data["rows"], model, context.folder, context.settings.analyses, batches
        )
        return [{"run": run}]

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[VisoGenderSettings]
    ) -> VisoGenderResult:
        from contrastkit.evaluators.tasks.visogender.benchmark import visogender_result

        result = visogender_result(_run(records), context.settings.analyses, list(context.data))
        return _evaluated(result, context.skip_missing, context.skipped_rows)

    def raw_text(self, records: Sequence[Mapping[str, Any]]) -> None:
        return None  # score_dataset keeps the raw files of each part

    def benchmark_text(self, result: VisoGenderResult) -> str:
        return json.dumps(result.to_json(), indent=2) + "\n"

    def render(self, result: VisoGenderResult) -> str:
        from contrastkit.evaluators.tasks.visogender.report import markdown_report

        return markdown_report(_inner(result))

    def report(self, result: VisoGenderResult, figures: Sequence[Path]) -> str:
        from contrastkit.evaluators.tasks.visogender.plots import plots_markdown

        lines = self.render(result).rstrip("\n").split("\n")
        folder = figures[0].parent.parent if figures else Path()
        return "\n".join([*lines, "", *plots_markdown(figures, folder)]).rstrip() + "\n"

    def figures(self, result: VisoGenderResult) -> Mapping[str, Figure]:
        from contrastkit.evaluators.tasks.visogender.plots import figures

        return figures(_inner(result))

    def file_names(self) -> Mapping[str, str]:
        return {
            f"plot_{stem}_{suffix}": stem if suffix == "png" else f"{stem}_svg"
            for stem in _PLOT_STEMS
            for suffix in ("png", "svg")
        }

    def listed_files(self, files: Mapping[str, Path]) -> Mapping[str, Path]:
        """``benchmark`` and ``report``, then the plots; the scoring's raw files are not
        listed (as the evaluation always listed them)."""
        first = {name: files[name] for name in ("benchmark", "report")}
        rest = {name: path for name, path in files.items() if name not in {"raw", *first}}
        return {**first, **rest}

    def scored_from(
        self, result: VisoGenderResult, records: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int]:
        run = _run(records)
        return run.scored_images, run.reused

    def skipped(
        self, result: VisoGenderResult, records: Sequence[Mapping[str, Any]]
    ) -> Sequence[str]:
        return list(_run(records).skipped)

    def summary(self, result: VisoGenderResult) -> Mapping[str, Any]:
        return self.headline(result)  # what evaluate --json prints, as it always was

    def headline(self, result: VisoGenderResult) -> Mapping[str, Any]:
        from contrastkit.evaluators.tasks.visogender.benchmark import headline

        return headline(result)

    def compare(self, results: Sequence[VisoGenderResult]) -> str:
        from contrastkit.evaluators.tasks.visogender.report import comparison_markdown

        return comparison_markdown(list(results))

    def compare_plots(
        self, results: Sequence[VisoGenderResult], folder: Path, stem: str
    ) -> list[Path]:
        from contrastkit.evaluators.tasks.visogender.comparison_plots import write_comparison_plots

        return list(write_comparison_plots(list(results), folder, stem))


#: The VisoGender task.
VISOGENDER = VisoGender()

#: The task (the registry keeps its built-in ``visogender`` row, whose run is this
#: task's: see the package docstring).
TASK = VISOGENDER
