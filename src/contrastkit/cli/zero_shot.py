"""``contrastkit evaluate zero-shot``: the options of the "Zero-shot disparity" panel
and the run behind them.

The models run on the task engine: one :func:`contrastkit.evaluators.job.evaluate` of the
``zero-shot`` task (:mod:`contrastkit.evaluators.tasks.zero_shot.task`) with the command's
options as its :class:`~contrastkit.evaluators.tasks.zero_shot.task.ZeroShotSettings`; a
``--predictions`` file is analysed by
:func:`~contrastkit.evaluators.tasks.zero_shot.job.zero_shot_disparity` itself. This maps
the command's options onto those configs and prints what each model's analysis found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer
from rich.text import Text

from contrastkit.cli.common import console, plain, print_json, shown
from contrastkit.cli.options import (
    BootstrapOptions,
    DataOptions,
    ModelOptions,
    OptionGroup,
    OutputOptions,
)
from contrastkit.cli.task_settings import settings_group
from contrastkit.evaluators.tasks.zero_shot.task import PANEL, ZeroShotSettings

if TYPE_CHECKING:
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.evaluation import EvaluateConfig
    from contrastkit.evaluators.tasks.zero_shot.job import (
        ZeroShotDisparityConfig,
        ZeroShotDisparityResult,
    )
    from contrastkit.interfaces import ProgressFactory

__all__ = ["HELP", "TASK", "ZeroShotOptions", "data_task", "run_options", "run_zero_shot"]

#: The old ``--task`` value of this analysis (``contrastkit evaluate --task
#: zero-shot-disparity``, now ``contrastkit evaluate zero-shot``).
TASK = "zero-shot-disparity"

#: The help of ``contrastkit evaluate zero-shot``.
HELP = """Per-concept AP and ECE gaps between men and women on a Visual Genome
or COCO folder (the zero-shot disparities paper).

Scores a model, or reads another model's --predictions. Every option in detail:
docs/zero_shot.md.

Example: contrastkit evaluate zero-shot --data vg/ --model open_clip:ViT-B-32/openai
"""


@dataclass(frozen=True, kw_only=True)
class PredictionsOption(OptionGroup):
    """``--predictions``: another model's predictions analysed instead of a model's."""

    predictions: Annotated[
        Path | None,
        typer.Option("--predictions", metavar="FILE", help="Another model's predictions "
                     "(.jsonl or .parquet; format in docs/zero_shot.md) instead of --model.",
                     rich_help_panel=PANEL),
    ] = None  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ZeroShotOptions(settings_group(ZeroShotSettings), PredictionsOption):  # type: ignore[misc]
    """The options of the zero-shot disparity analysis (docs/zero_shot.md):
    ``--predictions`` and one option per field of
    :class:`~contrastkit.evaluators.tasks.zero_shot.task.ZeroShotSettings`
    (:meth:`settings` gives them as the settings)."""


def data_task(data: Sequence[str]) -> str | None:
    """The registered task that reads ``data`` when every item is a local folder
    (:func:`~contrastkit.evaluators.tasks.registry.task_for_data`), else ``None``: the
    evaluation job picks it then.

    Raises:
        ConfigError: folders of several kinds, or of a kind no task reads.
    """
    from contrastkit.evaluators.tasks.registry import task_for_data

    paths = [Path(item) for item in data]
    if not paths or not all(path.is_dir() for path in paths):
        return None
    return task_for_data(paths).name


def run_options(data: DataOptions, values: Mapping[type[OptionGroup], OptionGroup]) -> None:
    """``contrastkit evaluate zero-shot`` (and ``evaluate --data`` with a Visual Genome or
    COCO folder): :func:`run_zero_shot` with the command's ``--data`` group and its other
    option groups."""
    from contrastkit.cli.common import user_errors

    output, runtime = values[OutputOptions], values[ModelOptions]
    bootstrap, options = values[BootstrapOptions], values[ZeroShotOptions]
    assert isinstance(output, OutputOptions) and isinstance(runtime, ModelOptions)
    assert isinstance(bootstrap, BootstrapOptions)
    assert isinstance(options, ZeroShotOptions)
    with user_errors():
        run_zero_shot(
            data=data.data, models=list(data.model or ()), split=data.split, out=output.out,
            as_json=output.as_json, model_config=runtime.config(), bootstrap=bootstrap,
            options=options,
        )  # fmt: skip


def run_zero_shot(
    *,
    data: list[str],
    models: list[str],
    split: str | None,
    out: Path,
    model_config: ModelConfig,
    as_json: bool,
    bootstrap: BootstrapOptions,
    options: ZeroShotOptions,
) -> None:
    """Run the analysis of every model on the task engine (:func:`_evaluated`), or of
    ``--predictions``, and print each result: its folder, the counts, the mAP per group
    and the largest AP differences."""
    from contrastkit.cli.common import progress
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.tasks.zero_shot.job import (
        ZeroShotDisparityConfig,
        zero_shot_disparity,
    )

    if len(data) != 1:
        raise ConfigError(
            "data: the zero-shot disparity task reads one --data folder (Visual Genome or "
            "COCO); give a second dataset with --compare"
        )
    settings = asdict(options.settings())
    predictions = options.predictions
    settings["images_without_concepts"] = options.images_without_concepts.strip()
    if predictions is not None and models:
        raise ConfigError("predictions: give --predictions or --model, not both")
    if predictions is None and not models:
        raise ConfigError("models: give --model SPEC, or --predictions FILE")
    # every model's options are checked before any model runs
    configs = [
        ZeroShotDisparityConfig(
            data=Path(data[0]), out=out, model=spec, predictions=predictions,
            model_config=model_config, split=split, bootstrap=bootstrap.bootstrap,
            confidence=bootstrap.confidence, seed=bootstrap.seed, **settings,
        )
        for spec in ([*models] if models else [None])
    ]  # fmt: skip
    if _on_engine(configs):
        results = _evaluated(configs, progress)
    else:
        # A predictions file (the engine runs models), or what evaluate() refuses before
        # the analysis would (see _on_engine): analysed one config after another.
        results = [zero_shot_disparity(config, progress=progress) for config in configs]
    if as_json:
        print_json([_json(result) for result in results])
        return
    for result in results:
        _print(result)


def _on_engine(configs: Sequence[ZeroShotDisparityConfig]) -> bool:
    """Whether the task engine runs ``configs``: models (a predictions file has none) on
    a local folder the engine reads as Visual Genome or COCO. Not what
    :func:`~contrastkit.evaluators.job.evaluate` would refuse up front that the analysis
    takes its own way: a folder of neither layout or a blank split (the analysis refuses
    them after the first model's checks and load), the same model twice (analysed twice,
    the second time from its embedding cache); nor data named as ``evaluate`` reads a Hub
    dataset or the bundled VisoGender sets."""
    from contrastkit.evaluators.hub import HUB_PREFIX
    from contrastkit.kinds import detect_kind
    from contrastkit.tsv import is_bundled

    first = configs[0]
    named = str(first.data)
    return (
        first.model is not None
        and len({config.folder for config in configs}) == len(configs)
        and not (is_bundled(named) or named.startswith(HUB_PREFIX))
        and first.data.is_dir()
        and detect_kind(first.data).name == "zero-shot"
        and (first.split is None or bool(first.split.strip()))
    )


def _evaluated(
    configs: Sequence[ZeroShotDisparityConfig], progress: ProgressFactory | None
) -> list[ZeroShotDisparityResult]:
    """What the analysis of each of ``configs`` (one per model) found, run by
    :func:`~contrastkit.evaluators.job.evaluate` of the ``zero-shot`` task (its engine
    checks and loads each model in turn, as the analysis does); each model's typed result
    read back from the ``disparity.json`` it wrote.

    The first model's folders are checked first, as the analysis checks them, so that
    ``evaluate``'s own check of the output folder finds nothing to refuse first.

    Raises:
        ConfigError, DataFormatError, ResourceError, ModelNotFoundError, StateError:
            what the analysis of a model raises (:func:`~.job.zero_shot_disparity`).
    """
    from contrastkit.errors import DataFormatError
    from contrastkit.evaluators.job import evaluate
    from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityResult, check_folders
    from contrastkit.evaluators.tasks.zero_shot.task import read_zero_shot_result

    check_folders(configs[0])
    done = evaluate(_evaluate_config(configs), progress=progress)
    results = []
    for evaluation in done.evaluations:
        result = read_zero_shot_result(evaluation.files["json"])
        if result is None:
            raise DataFormatError(evaluation.files["json"], None, None, "no zero-shot result")
        results.append(ZeroShotDisparityResult(evaluation.folder, evaluation.files, result))
    return results


def _evaluate_config(configs: Sequence[ZeroShotDisparityConfig]) -> EvaluateConfig:
    """The :class:`~contrastkit.evaluators.evaluation.EvaluateConfig` of the ``zero-shot``
    task that analyses ``configs`` (one per model; all alike but for the model)."""
    from contrastkit.evaluators.evaluation import EvaluateConfig
    from contrastkit.evaluators.runner import EvalConfig
    from contrastkit.evaluators.tasks.zero_shot.task import TASK_NAME, ZeroShotSettings

    first = configs[0]
    settings = {field.name: getattr(first, field.name) for field in fields(ZeroShotSettings)}
    return EvaluateConfig(
        data=(str(first.data),), models=tuple(str(config.model) for config in configs),
        out=first.out, model=first.model_config, split=first.split,
        settings=EvalConfig(bootstrap=first.bootstrap, confidence=first.confidence,
                            seed=first.seed),
        task=TASK_NAME, task_settings=ZeroShotSettings(**settings),
    )  # fmt: skip


class _RunJSON(TypedDict):
    """One model's run as ``evaluate zero-shot --json`` prints it."""

    label: str | None
    folder: str
    files: dict[str, str]
    summary: Mapping[str, object]
    weights_note: str | None


def _json(result: ZeroShotDisparityResult) -> _RunJSON:
    return {
        "label": result.result.label,
        "folder": str(result.folder),
        "files": {name: str(path) for name, path in result.files.items()},
        "summary": result.summary,
        "weights_note": result.result.weights_note,
    }


def _print(result: ZeroShotDisparityResult) -> None:
    from contrastkit.evaluators.tasks.zero_shot.result import required

    r = result.result
    counts, mapped = required(r.counts, "counts"), required(r.map, "map")
    images = counts.images or {}
    line = Text.assemble((shown(r.label or ""), "bold"))
    line.append(shown(
        f": {images['men']:,} images of men, {images['women']:,} of "
        f"women, {counts.concepts_kept or 0:,} concepts -> {result.folder}"
    ))  # fmt: skip
    console.print(line, highlight=False)
    if r.weights_note:
        console.print(plain(f"  random weights: {r.weights_note}", style="yellow"))
    if r.cache is not None:
        kept, prompts = r.cache.images, r.cache.prompts
        computed = f"{kept.computed:,} images and {prompts.computed:,} prompts computed"
        where = result.folder / r.cache.folder
        console.print(plain(
            f"  embeddings: {kept.reused:,} images and {prompts.reused:,} prompts "
            f"reused from {where}; {computed}"
            if kept.reused or prompts.reused
            else f"  embeddings: {computed}, kept in {where} for reruns"
        ), highlight=False)  # fmt: skip
    console.print(plain(
        f"  mAP men {mapped.men:.1f}, women {mapped.women:.1f} "
        f"(difference {mapped.difference:+.1f} points)"
    ), highlight=False)  # fmt: skip
    top = ", ".join(
        f"{c.concept} {c.ap_diff:+.1f}" for c in r.concepts[:5] if c.ap_diff is not None
    )
    console.print(plain(f"  largest AP_men - AP_women: {top}"), highlight=False)
    if not required(r.calibration, "calibration").computed:
        console.print(plain("  ECE not computed (see report.md: the scores are not "
                            "probabilities)"), highlight=False)  # fmt: skip
    consistency = r.consistency
    if consistency is not None:
        c = consistency.counts or {}
        text = (
            f"green {c['green']}, red {c['red']}, yellow {c['yellow']}"
            if consistency.concepts
            else "no concept in both datasets"
        )
        console.print(plain(f"  consistency with {consistency.other}: {text}"), highlight=False)
    console.print(plain(f"  report: {result.files['report']}"), highlight=False)
