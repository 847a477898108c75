"""The zero-shot disparity analysis as a row of the task registry
(:mod:`contrastkit.evaluators.tasks.registry`, task ``zero-shot``, dataset kind
``zero-shot``): what :func:`contrastkit.evaluators.job.evaluate` runs on a Visual Genome
or COCO folder (:func:`evaluate_zero_shot`), and how ``contrastkit report`` reads a
``disparity.json`` (:func:`read_zero_shot_result`, the typed
:class:`~contrastkit.results.ZeroShotResult`); its headline and comparison are in
:mod:`.comparison`.

``contrastkit evaluate zero-shot`` keeps its own command and printing
(:mod:`contrastkit.cli.zero_shot`); both run :func:`~.job.zero_shot_disparity`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import TaskSettings
from contrastkit.results.zero_shot import ZeroShotResult

if TYPE_CHECKING:
    from contrastkit.evaluators.evaluation import EvaluateConfig
    from contrastkit.evaluators.outcome import EvaluateResult, ModelEvaluation
    from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityResult
    from contrastkit.interfaces import ProgressFactory

__all__ = ["TASK_NAME", "ZeroShotSettings", "evaluate_zero_shot", "read_zero_shot_result"]

#: The task's name in the registry (its results record ``zero-shot-disparity``).
TASK_NAME = "zero-shot"


@dataclass(frozen=True)
class ZeroShotSettings(TaskSettings):
    """The analysis' own settings when it runs through
    :func:`~contrastkit.evaluators.job.evaluate` (``EvaluateConfig(task_settings=...)``):
    the fields of :class:`~.config.ZeroShotDisparityConfig` that are neither the data,
    the model, the output nor the bootstrap (those come from the
    :class:`~contrastkit.evaluators.evaluation.EvaluateConfig`), checked by that config
    when the analysis runs. A predictions file instead of a model is
    ``contrastkit evaluate zero-shot --predictions`` or the config itself."""

    prompt: str = "{}"
    layout: str = "auto"
    min_images: int | None = None
    images_without_concepts: str = "keep"
    filter_split: str | None = None
    concept_map: Path | None = None
    bins: int = 15
    calibration: str = "multi-label"
    temperature: float = 100.0
    words: Path | None = None
    word_source: str | None = None
    compare: Path | None = None
    threshold: float = 5.0
    top: int = 20


def evaluate_zero_shot(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None = None
) -> EvaluateResult:
    """The analysis of each model of ``config`` on its one data folder, into
    ``out/<model slug>/zero_shot/`` (:func:`~.job.zero_shot_disparity`), with the
    bootstrap of ``config.settings`` and the :class:`ZeroShotSettings` of
    ``config.task_settings`` (its defaults when none).

    Raises:
        ConfigError: several data folders, settings of another task, or what the
            analysis' config refuses.
    """
    from contrastkit.evaluators.outcome import EvaluateResult
    from contrastkit.evaluators.tasks.zero_shot.config import ZeroShotDisparityConfig
    from contrastkit.evaluators.tasks.zero_shot.job import zero_shot_disparity

    if len(paths) != 1:
        raise ConfigError(
            "data: the zero-shot task reads one Visual Genome or COCO folder; compare with a "
            "second one through ZeroShotSettings(compare=...)"
        )
    settings = config.task_settings or ZeroShotSettings()
    if not isinstance(settings, ZeroShotSettings):
        raise ConfigError(
            f"task_settings: task {TASK_NAME} takes ZeroShotSettings, not {type(settings).__name__}"
        )
    statistics = config.settings
    evaluations = []
    for spec in config.models:
        analysis = ZeroShotDisparityConfig(
            data=paths[0], out=config.out, model=spec, split=config.split,
            model_config=config.model, bootstrap=statistics.bootstrap,
            confidence=statistics.confidence, seed=statistics.seed, **asdict(settings),
        )  # fmt: skip
        evaluations.append(_evaluation(spec, zero_shot_disparity(analysis, progress)))
    return EvaluateResult(kind=TASK_NAME, data=tuple(paths), evaluations=tuple(evaluations))


def _evaluation(spec: str, done: ZeroShotDisparityResult) -> ModelEvaluation:
    """One model's :class:`~contrastkit.evaluators.outcome.ModelEvaluation`: its summary
    the analysis' (:attr:`~.job.ZeroShotDisparityResult.summary`) with the headline
    ``figures`` the console prints (mAP per group and their difference)."""
    from contrastkit.evaluators.outcome import ModelEvaluation
    from contrastkit.evaluators.tasks.zero_shot.comparison import headline_figures

    typed = done.result
    summary = {**done.summary, "figures": headline_figures(typed)}
    summary["weights_note"] = typed.weights_note
    return ModelEvaluation(model=spec, folder=done.folder, files=dict(done.files), summary=summary)


def read_zero_shot_result(path: Path) -> ZeroShotResult | None:
    """The typed result of a ``disparity.json``, of the ``zero_shot`` folder holding
    one or of the model folder above it; ``None`` for any other file or folder (another
    task's, read by its own reader).

    Raises:
        DataFormatError: a ``zero-shot-disparity`` file that does not fit
            :class:`~contrastkit.results.ZeroShotResult`.
    """
    from contrastkit.records import read_json
    from contrastkit.results.base import RESULT_FILES

    path = Path(path)
    file = path if path.is_file() else None
    if path.is_dir():
        file = next((path / name for name in RESULT_FILES if (path / name).is_file()), None)
    if file is None:
        return None
    try:
        data = read_json(file)  # bounded (records.MAX_JSON_BYTES)
    except (OSError, ValueError):  # the other readers say what is wrong with it
        return None
    if not isinstance(data, dict) or data.get("task") != ZeroShotResult.TASK:
        return None
    return ZeroShotResult.from_json(data, path=file)
