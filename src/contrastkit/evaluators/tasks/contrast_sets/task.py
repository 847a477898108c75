"""Contrast-set evaluation as ``contrastkit evaluate`` runs it (GenSynth Sec. 5): one
report per model and data folder (the scoring itself is
:func:`contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`)."""

from __future__ import annotations

from pathlib import Path

from contrastkit.errors import ConfigError
from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult, ModelEvaluation
from contrastkit.evaluators.report.results import model_slug
from contrastkit.interfaces import CaptionScorer, ImageTextScorer, ProgressFactory, progress_stage
from contrastkit.models.registry import parse_spec

__all__ = ["check_contrast_model", "evaluate_contrast_sets"]


def evaluate_contrast_sets(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """Contrast sets (GenSynth Sec. 5): one report per model and data folder. Dual
    encoders and caption scorers (``blip-itm:``, ``vilt:``, ``vlm:``; their scores kept in
    ``raw_contrast_scores.jsonl`` and reused on rerun); captioning models that only score
    pronoun continuations are refused before anything loads."""
    from contrastkit.evaluators.tasks.contrast_sets.report import (
        contrast_result,
        write_contrast_files,
    )
    from contrastkit.evaluators.tasks.contrast_sets.scoring import (
        RAW_SCORES_FILE,
        ContrastLabels,
        ContrastSettings,
        describe_export,
        evaluate_contrast,
        load_contrast,
    )
    from contrastkit.models import load_model

    for spec in config.models:
        check_contrast_model(spec)
    names = [path.name for path in paths]
    if len(paths) > 1 and len(set(names)) < len(names):
        raise ConfigError(f"data: contrast sets need distinct folder names, not {names}")
    sets = [(path, load_contrast(path, split=config.split)) for path in paths]
    evaluations: list[ModelEvaluation] = []
    for spec in config.models:
        scorer = load_model(spec, config.model)
        pairs = isinstance(scorer, CaptionScorer) and not isinstance(scorer, ImageTextScorer)
        if not isinstance(scorer, ImageTextScorer | CaptionScorer):  # nor pairs
            raise ConfigError(f"models: {_NOT_FOR_CONTRAST.format(spec=spec)}")
        for path, dataset in sets:
            folder = config.out / model_slug(spec)
            folder = folder / path.name if len(paths) > 1 else folder
            raw_scores = folder / RAW_SCORES_FILE if pairs else None
            label = f"scoring {spec}" + (" (image-caption pairs)" if pairs else "")
            with progress_stage(progress, label, len(dataset)) as update:
                settings = ContrastSettings(
                    ks=config.settings.ks, batch_size=config.model.batch_size,
                    device="cpu" if pairs else str(getattr(scorer, "device", "cpu")),
                    bootstrap=config.settings.bootstrap,
                    confidence=config.settings.confidence, seed=config.settings.seed,
                    metrics=config.contrast_metrics, raw_scores=raw_scores,
                )  # fmt: skip
                result = evaluate_contrast(dataset, scorer, settings, progress=update)
            labels = ContrastLabels(model=spec, data=str(path), dataset=describe_export(path))
            typed = contrast_result(result["summary"], labels)
            files = write_contrast_files(typed, result["queries"], folder)
            if raw_scores is not None:
                files = {**files, "raw_scores": raw_scores}
            scoring = typed.scoring
            evaluation = ModelEvaluation(
                model=spec, folder=folder, files=files, data=str(path),
                scored_images=typed.summary.images or 0, summary=result["summary"],
                reused_records=int(scoring.reused or 0) if scoring is not None else 0,
            )  # fmt: skip
            evaluations.append(evaluation)
        del scorer
    return EvaluateResult("contrast", paths, tuple(evaluations))


_NOT_FOR_CONTRAST = (
    "{spec} is a captioning model: it scores pronoun continuations, not an image against "
    "a caption; contrast sets take dual encoders (open_clip:, hf-clip: ...), "
    "image-text-matching models (blip-itm:, vilt:) and generative VLMs (vlm:, scored by "
    "the caption's log-likelihood)"
)


def check_contrast_model(spec: str) -> None:
    """Refuse, before anything loads, a model that cannot score a contrast set: the
    captioning families (``blip:``, ``git:``, ``blip2:``, ``instructblip:``) score pronoun
    continuations only.

    Raises:
        ConfigError: such a model, or a malformed spec.
    """
    from contrastkit.evaluators.runner import answers_only

    if refusal := answers_only(spec, "contrast sets"):
        raise ConfigError(f"models: {refusal}")
    if "captions" not in parse_spec(spec).capabilities:
        raise ConfigError(f"models: {_NOT_FOR_CONTRAST.format(spec=spec)}")
