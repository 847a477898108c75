"""The config of a ``contrastkit evaluate`` command: its option groups mapped onto
:class:`~contrastkit.evaluators.job.EvaluateConfig` (:func:`evaluate_config`), a task's
own options made into its settings class with the shared values copied in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from contrastkit.cli.common import int_list
from contrastkit.cli.evaluate_options import (
    ConfigFields,
    ContrastOptions,
    DecisionOptions,
    ImageOptions,
    RetrievalOptions,
    SettingsFields,
)
from contrastkit.cli.options import (
    BootstrapOptions,
    DataOptions,
    ModelOptions,
    NetworkOptions,
    OptionGroup,
    OutputOptions,
)
from contrastkit.cli.task_settings import SettingsOptions

if TYPE_CHECKING:
    from contrastkit.evaluators.job import EvaluateConfig

__all__ = ["CONTRAST", "evaluate_config", "task_names"]

#: The contrast task's name in the registry.
CONTRAST = "contrast"


def evaluate_config(groups: Iterable[OptionGroup], task: str | None) -> EvaluateConfig:
    """The :class:`~contrastkit.evaluators.job.EvaluateConfig` the given options
    describe; what a command does not offer keeps its default."""
    from contrastkit.evaluators.job import EvaluateConfig
    from contrastkit.evaluators.runner import EvalConfig

    config: ConfigFields = {}
    settings: SettingsFields = {}
    own: SettingsOptions | None = None
    contrast_metrics: str | None = None
    for group in groups:
        match group:
            case DataOptions():
                config["data"] = tuple(group.data)
                config["models"] = tuple(group.model or ())
                config["split"] = group.split
            case OutputOptions():
                config["out"] = group.out
            case ModelOptions():
                config["model"] = group.config()
            case ImageOptions():
                config["store"] = group.store
                config["fetch"] = group.fetch
                config["skip_missing"] = group.skip_missing
            case NetworkOptions():
                config["network"] = group.config()
            case RetrievalOptions():
                settings["ks"] = int_list(group.ks, "--k")
            case BootstrapOptions():
                settings["bootstrap"] = group.bootstrap
                settings["confidence"] = group.confidence
                settings["seed"] = group.seed
            case ContrastOptions():  # evaluate auto's (evaluate contrast has its own)
                contrast_metrics = group.contrast_metrics.strip()
            case DecisionOptions():  # the deprecated group, for a plugin task naming it
                config["decision_scoring"] = group.decision_scoring.strip()
                config["questions"] = group.questions
            case SettingsOptions() if group.feeds_shared:  # VisoGender's, for any task
                settings.update(group.shared_values())  # type: ignore[typeddict-item]
            case SettingsOptions():
                own = group
    shared = EvalConfig(**settings)
    if own is not None:  # the task's own options, and the shared settings it takes
        config["task_settings"] = own.settings(shared)
    evaluation = EvaluateConfig(**config, settings=shared, task=task)
    return with_contrast_metrics(evaluation, contrast_metrics)


def with_contrast_metrics(config: EvaluateConfig, metrics: str | None) -> EvaluateConfig:
    """``config`` with ``--contrast-metrics`` of ``evaluate auto`` (or of a plugin task
    naming the deprecated ``contrast`` option group; ``None``: the command has none): the
    contrast task's settings when the data is a contrast set; another task's data with a
    value other than ``auto`` is refused, never silently ignored.

    Raises:
        ConfigError: a value other than ``auto`` for data no contrast task reads.
    """
    from dataclasses import replace

    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import data_task
    from contrastkit.evaluators.tasks.contrast_sets import ContrastTaskSettings
    from contrastkit.evaluators.tasks.registry import tasks

    if metrics is None:
        return config
    settings = ContrastTaskSettings(ks=config.settings.ks, metrics=metrics)  # checks it
    if metrics == "auto":  # the default: nothing to pass on
        return config
    found = config.task or data_task(config)
    if found == CONTRAST:
        return replace(config, task_settings=settings)
    if "contrast" in tasks()[found].options:  # a plugin task naming the deprecated group
        return replace(config, contrast_metrics=metrics)
    raise ConfigError(
        f"--contrast-metrics: only contrast sets have it; this data is evaluated by the "
        f"{found} task"
    )


def task_names(text: str) -> tuple[str, ...]:
    """``"a, b,a"`` -> ``("a", "b")``."""
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
