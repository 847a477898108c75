"""VisoGender evaluation (resolution, retrieval, flipped retrieval; VisoGender Sec.
3.4-3.5 and Tab. 5): one folder per model and a comparison of all, run by the task
engine (:data:`~contrastkit.evaluators.tasks.visogender.task.VISOGENDER`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult
    from contrastkit.interfaces import ProgressFactory

__all__ = ["evaluate_visogender"]


def evaluate_visogender(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """VisoGender resolution and retrieval: one folder per model, a comparison of all
    (:func:`~contrastkit.evaluators.engine.run.run_task` of the VisoGender task, what the
    registry's ``visogender`` row runs).

    Raises:
        ConfigError: ``config.task_settings`` given (VisoGender's settings are
            ``config.settings``), or a model that cannot run the task (before any
            loads).
        DataFormatError: data that cannot be read, no rows, an image that is not
            available (without ``skip_missing``).
    """
    from contrastkit.evaluators.engine.run import run_task
    from contrastkit.evaluators.tasks.visogender.task import VISOGENDER

    return run_task(VISOGENDER, config, paths, progress)
