"""The option groups of ``contrastkit evaluate``'s commands: which a task command has
(:func:`task_groups`, from the groups the task names), and those of ``evaluate auto`` and
``evaluate zero-shot``. :mod:`contrastkit.cli.evaluate` maps them onto the job's config.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer

from contrastkit.cli import zero_shot as zs
from contrastkit.cli.options import (
    BootstrapOptions,
    DataOptions,
    ModelOptions,
    NetworkOptions,
    OptionGroup,
    OutputOptions,
)
from contrastkit.cli.task_settings import SettingsOptions, settings_group
from contrastkit.evaluators.tasks.visogender.settings import PANEL as _VISOGENDER
from contrastkit.evaluators.tasks.visogender.settings import AnalysisSettings

if TYPE_CHECKING:
    from contrastkit.config import ModelConfig
    from contrastkit.curation.urls import CheckConfig
    from contrastkit.evaluators.engine.protocol import TaskSettings
    from contrastkit.evaluators.tasks.registry import Task

__all__ = [
    "AUTO_GROUPS",
    "COMMON_GROUPS",
    "TASK_GROUPS",
    "AnalysesOptions",
    "AutoData",
    "ConfigFields",
    "ContrastOptions",
    "DataOptions",
    "DecisionOptions",
    "ImageOptions",
    "RetrievalOptions",
    "SettingsFields",
    "TaskChoice",
    "VisoGenderOptions",
    "ZeroShotData",
    "task_groups",
    "visogender_group",
]

# Each option's details are in docs/reference/commands/evaluate.md and docs/zero_shot.md;
# its help here is one line.
_IMAGES = "Images"


@dataclass(frozen=True, kw_only=True)
class ImageOptions(OptionGroup):
    """Where image URLs are read from, and whether the missing ones are fetched."""

    store: Annotated[
        Path | None,
        typer.Option("--store", help="Image store the URLs are read from [default for --data "
                     "visogender or with --fetch: ~/.cache/contrastkit/images].",
                     rich_help_panel=_IMAGES),
    ] = None  # fmt: skip
    fetch: Annotated[
        bool | None,
        typer.Option("--fetch/--no-fetch", help="First fetch the URLs the store lacks (Network "
                     "options) [default: on for --data visogender].", show_default=False,
                     rich_help_panel=_IMAGES),
    ] = None  # fmt: skip
    skip_missing: Annotated[
        bool | None,
        typer.Option("--skip-missing/--no-skip-missing", help="Leave out (and list) rows "
                     "without an image instead of stopping [default: on for --data "
                     "visogender].", show_default=False, rich_help_panel=_IMAGES),
    ] = None  # fmt: skip


def visogender_group(*names: str) -> type[SettingsOptions]:
    """The options of VisoGender's analyses ``names`` (fields of
    :class:`~contrastkit.evaluators.tasks.visogender.settings.AnalysisSettings`, whose
    help and spelling they take) as a shared group: their values are
    ``EvaluateConfig.settings`` fields, for every task that offers them."""
    omit = tuple(
        spec.name for spec in dataclasses.fields(AnalysisSettings) if spec.name not in names
    )
    return settings_group(AnalysisSettings, omit, feeds_shared=True)


#: ``--only``: which of VisoGender's analyses run (``evaluate auto``: its ``--task``).
AnalysesOptions = visogender_group("tasks")

#: VisoGender's analyses but which run (``--only``) and their cut-offs (``--k``: the
#: shared :class:`RetrievalOptions`).
_SETTINGS = (
    "neutral", "ndkl_k", "flipped_retrieval", "protocol", "subsample_ks", "subsample_runs",
    "baseline_runs",
)  # fmt: skip

#: Their options, as ``evaluate auto`` offers them.
VisoGenderOptions = visogender_group(*_SETTINGS)


@dataclass(frozen=True, kw_only=True)
class RetrievalOptions(OptionGroup):
    """The retrieval cut-offs."""

    ks: Annotated[
        str,
        typer.Option("--k", help="Retrieval cut-offs K, comma-separated.",
                     rich_help_panel=_VISOGENDER),
    ] = "5,10"  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ContrastOptions(OptionGroup):
    """What a contrast set gets."""

    contrast_metrics: Annotated[
        str,
        typer.Option("--contrast-metrics", help="all, pairs (pair preference only) or auto "
                     "(all for dual encoders)."),
    ] = "auto"  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class DecisionOptions(OptionGroup):
    """How counterfactual decision probes are asked and scored."""

    decision_scoring: Annotated[
        str,
        typer.Option("--decision-scoring", help="Score each option letter's log-probability "
                     "(logprob), parse generated answers (generate), or both."),
    ] = "both"  # fmt: skip
    questions: Annotated[
        Path | None,
        typer.Option("--questions", help="Question templates (YAML) [default: the bundled "
                     "ones, docs/decisions.md]."),
    ] = None  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class HtmlOptions(OptionGroup):
    """``--html``: the offline HTML report of what was evaluated."""

    html: Annotated[
        Path | None,
        typer.Option("--html", metavar="DIR", help="Also write the offline HTML report of the "
                     "results into DIR: the models side by side, a page per model, galleries "
                     "of the images behind the figures; opens from file://."),
    ] = None  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class TaskChoice(OptionGroup):
    """``contrastkit evaluate --task``: the analyses of the command that picks the task
    from the data, and the older way to name a task (a deprecated alias)."""

    task: Annotated[
        str,
        typer.Option("--task", help="resolution,retrieval (VisoGender); stereotype and "
                     "zero-shot-disparity: deprecated, use `contrastkit evaluate stereotype` "
                     "and `contrastkit evaluate zero-shot`."),
    ] = "resolution,retrieval"  # fmt: skip


#: The option groups a task names (:data:`~contrastkit.evaluators.tasks.registry.
#: OPTION_GROUPS`), as the CLI's groups.
TASK_GROUPS: dict[str, tuple[type[OptionGroup], ...]] = {
    "images": (ImageOptions,),
    "network": (NetworkOptions,),
    "retrieval": (RetrievalOptions,),
    "visogender": (visogender_group("tasks", *_SETTINGS),),
    "bootstrap": (BootstrapOptions,),
    "contrast": (ContrastOptions,),
    "decisions": (DecisionOptions,),
}

#: The groups every task command has.
COMMON_GROUPS: tuple[type[OptionGroup], ...] = (
    DataOptions, OutputOptions, HtmlOptions, ModelOptions,
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class AutoData(DataOptions):
    """``--data`` of ``evaluate auto``: any task's data."""

    data: Annotated[
        list[str],
        typer.Option(
            "--data",
            metavar="PATH",
            help="Official-format TSV(s) or a folder of them, an export, a probe set, a saved "
            "or Hub dataset (hf:USER/NAME), or `visogender` (the bundled official sets). "
            "Repeatable.",
        ),
    ]


#: ``evaluate auto`` (``evaluate --data ...``): every task's options.
AUTO_GROUPS: tuple[type[OptionGroup], ...] = (
    AutoData, OutputOptions, HtmlOptions, TaskChoice, ImageOptions, VisoGenderOptions,
    RetrievalOptions, ContrastOptions, ModelOptions, BootstrapOptions, NetworkOptions,
    zs.ZeroShotOptions,
)  # fmt: skip


def task_groups(task: Task) -> tuple[type[OptionGroup], ...]:
    """The option groups of ``contrastkit evaluate TASK``: the common ones and the ones
    the task names."""
    groups = COMMON_GROUPS + tuple(group for name in task.options for group in TASK_GROUPS[name])
    if task.settings is None:
        return groups
    from contrastkit.cli.task_settings import settings_group

    group = settings_group(task.settings)
    own = (group,) if dataclasses.fields(group) else ()  # fields a shared group offers: none
    return tuple(dict.fromkeys((*groups, *own, BootstrapOptions)))  # each group once


@dataclass(frozen=True, kw_only=True)
class ZeroShotData(DataOptions):
    """``--data`` of the zero-shot analysis: one Visual Genome or COCO folder."""

    data: Annotated[
        list[str],
        typer.Option(
            "--data",
            metavar="PATH",
            help="A Visual Genome or COCO folder (layout: docs/zero_shot.md).",
        ),
    ]
    model: Annotated[
        list[str] | None,
        typer.Option("--model", metavar="SPEC", help="Model spec, e.g. open_clip:ViT-B-32/openai. "
                     "Repeatable; required unless --predictions."),
    ] = None  # fmt: skip
    split: Annotated[str | None, typer.Option("--split", help="COCO split, e.g. val2017.")] = None


class ConfigFields(TypedDict, total=False):
    """The :class:`~contrastkit.evaluators.job.EvaluateConfig` fields a command's
    options give."""

    data: tuple[str, ...]
    models: tuple[str, ...]
    split: str | None
    out: Path
    model: ModelConfig
    store: Path | None
    fetch: bool | None
    skip_missing: bool | None
    network: CheckConfig
    contrast_metrics: str
    decision_scoring: str
    questions: Path | None
    task_settings: TaskSettings | None


class SettingsFields(TypedDict, total=False):
    """The :class:`~contrastkit.evaluators.runner.EvalConfig` fields a command's options
    give."""

    tasks: tuple[str, ...]
    neutral: bool
    ndkl_k: int | None
    flipped_retrieval: bool
    protocol: str
    subsample_ks: tuple[int, ...]
    subsample_runs: int
    baseline_runs: int
    ks: tuple[int, ...]
    bootstrap: int
    confidence: float
    seed: int
