"""VisoGender evaluation (resolution, retrieval, flipped retrieval; VisoGender Sec.
3.4-3.5 and Tab. 5): one folder per model and a comparison of all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.data import SkippedRow
from contrastkit.evaluators.evaluation import (
    EvaluateConfig,
    EvaluateResult,
    ModelEvaluation,
    available_items,
    data_labels,
    folder_links,
    plot_links,
    skipped_rows_json,
)
from contrastkit.evaluators.report.files import model_slug
from contrastkit.evaluators.runner import answers_only
from contrastkit.evaluators.tasks.visogender.retrieval import retrieval_needs_dual
from contrastkit.interfaces import ImageTextScorer, ProgressFactory, PronounScorer, progress_stage
from contrastkit.io import atomic_write_text
from contrastkit.models.registry import parse_spec
from contrastkit.results.common import SkippedRows
from contrastkit.results.visogender import VisoGenderResult

__all__ = ["evaluate_visogender"]


def evaluate_visogender(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """VisoGender resolution and retrieval: one folder per model, a comparison of all.

    Raises:
        ConfigError: ``config.task_settings`` given (VisoGender's settings are
            ``config.settings``), or a model that cannot run the task (before any
            loads).
    """
    from contrastkit.evaluators.data import load_items
    from contrastkit.evaluators.evaluation import no_task_settings
    from contrastkit.evaluators.report.outputs import write_outputs
    from contrastkit.evaluators.report.plots import write_comparison_plots
    from contrastkit.evaluators.tasks.visogender.benchmark import headline, visogender_result
    from contrastkit.evaluators.tasks.visogender.report import comparison_markdown
    from contrastkit.evaluators.tasks.visogender.scoring import ImageBatches, score_dataset
    from contrastkit.models import load_model

    no_task_settings(config, "visogender")
    settings = config.settings
    for spec in config.models:
        if refusal := answers_only(spec, "VisoGender's resolution or retrieval"):
            raise ConfigError(f"models: {refusal}")
        if not parse_spec(spec).capabilities & {"embeddings", "pronouns"}:
            raise ConfigError(
                f"models: {spec} is an image-text-matching model: it scores captions for "
                "stereotype probing (a probe set, --task stereotype), not VisoGender pronouns"
            )
    if settings.tasks == ("retrieval",):
        for spec in config.models:
            if "embeddings" not in parse_spec(spec).capabilities:
                raise ConfigError(f"models: {retrieval_needs_dual(spec)}")
    items = load_items(paths, split=config.split)
    if not items:
        raise DataFormatError(", ".join(map(str, paths)), None, None, "the dataset has no rows")
    items, loader, skipped_rows, fetched = available_items(config, paths, items, progress)
    labels = data_labels(paths)
    evaluations: list[ModelEvaluation] = []
    all_results: list[VisoGenderResult] = []
    for spec in config.models:
        adapter = load_model(spec, config.model)
        if not isinstance(adapter, ImageTextScorer | PronounScorer):
            raise ConfigError(f"models: {spec} scores neither image-text similarity nor pronouns")
        folder = config.out / model_slug(spec)
        with progress_stage(progress, f"scoring {spec}") as update:
            batches = ImageBatches(loader, config.model.batch_size, update)
            run = score_dataset(items, adapter, folder, settings, batches)
        del adapter  # free the model before the next one loads
        results = _evaluated(
            visogender_result(run, settings, labels), config.skipping, skipped_rows
        )
        files = write_outputs(results, folder)
        all_results.append(results)
        evaluation = ModelEvaluation(
            model=spec, folder=folder, files=files, scored_images=run.scored_images,
            reused_records=run.reused, skipped=tuple(run.skipped), summary=headline(results),
            skipped_rows=tuple(skipped_rows),
        )  # fmt: skip
        evaluations.append(evaluation)
    comparison = None
    if len(all_results) > 1:
        comparison = config.out / "comparison.md"
        plots = write_comparison_plots(all_results, config.out)
        text = comparison_markdown(all_results) + plot_links(plots)
        text += folder_links(config.out, evaluations)
        atomic_write_text(comparison, text)
    return EvaluateResult(
        "visogender", paths, tuple(evaluations), comparison, store=loader.store.root
        if loader.store is not None else None, checked=fetched[1], fetched=fetched[0],
        skipped_rows=tuple(skipped_rows),
    )  # fmt: skip


def _evaluated(
    result: VisoGenderResult, skipping: bool, skipped_rows: Sequence[SkippedRow]
) -> VisoGenderResult:
    """``result`` with what the evaluation adds: whether missing images were skipped
    (``metadata.skip_missing``) and the rows left out (``skipped_rows``)."""
    metadata = replace(
        result.metadata,
        skip_missing=skipping,
        absent=result.metadata.absent - {"skip_missing"},
    )
    rows = SkippedRows.from_json(skipped_rows_json(skipped_rows))
    return replace(
        result, metadata=metadata, skipped_rows=rows, absent=result.absent - {"skipped_rows"}
    )
