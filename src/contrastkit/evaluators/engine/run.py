"""The engine: what every task repeated, once (:func:`run_task`).

Per model, in the order given: the capabilities every model needs are checked before
any loads; the model is loaded; the items not yet in its raw file (or scored there
under other settings) are scored batch by batch, their images opened by the engine,
each batch's records appended and flushed (an interrupted run loses at most one
batch); the task aggregates the records into its typed result; the engine stamps the
common fields and writes ``benchmark.json`` (checked against the result's JSON
schema), ``report.md`` and the figures. With several models, ``comparison.md``.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.bootstrap import BootstrapSettings
from contrastkit.evaluators.engine.images import Images, available
from contrastkit.evaluators.engine.protocol import (
    Item,
    RunConfig,
    RunContext,
    Task,
    TaskResult,
    TaskSettings,
)
from contrastkit.evaluators.raw import RawAppender, read_raw
from contrastkit.interfaces import progress_stage
from contrastkit.io import atomic_write_text
from contrastkit.results.base import Result

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.evaluators.outcome import EvaluateResult, ModelEvaluation
    from contrastkit.interfaces import ProgressFactory

__all__ = ["check_capabilities", "load_items", "run_task", "score_items", "task_settings"]

#: The raw record field holding the settings' fingerprint.
SETTINGS_FIELD = "settings"


def task_settings(task: Task[Any, Any], config: RunConfig) -> TaskSettings:
    """The task's settings in ``config`` (its defaults when none were given).

    Raises:
        ConfigError: settings of another class than the task's.
    """
    given = config.task_settings
    if given is None:
        return task.settings()
    if not isinstance(given, task.settings):
        raise ConfigError(
            f"task_settings: task {task.name} takes {task.settings.__name__}, not "
            f"{type(given).__name__}"
        )
    return given


def check_capabilities(task: Task[Any, Any], models: Sequence[str]) -> None:
    """Refuse, before any model loads, a model that lacks what the task needs.

    Raises:
        ConfigError: naming the model, what it lacks and what it can do.
    """
    from contrastkit.models import parse_spec

    for spec in models:
        has = parse_spec(spec).capabilities
        lacking = sorted(task.capabilities - has)
        if lacking:
            raise ConfigError(
                task.refusal(spec, lacking)
                or f"models: {spec} cannot run task {task.name}: it needs "
                f"{', '.join(lacking)}, and {spec} has {', '.join(sorted(has)) or 'none'} "
                "(`contrastkit models list` shows each family's)"
            )


def load_items(
    task: Task[Any, Any], paths: Sequence[Path], settings: TaskSettings, split: str | None
) -> list[Item]:
    """The task's items of ``paths``, checked: at least one, keys unique.

    Raises:
        DataFormatError: no items, or two items with one key (naming both places).
    """
    items = list(task.items(paths, settings, split))
    if not items:
        raise DataFormatError(", ".join(map(str, paths)), None, None, "no items to score")
    seen: dict[str, Item] = {}
    for item in items:
        if not isinstance(item, Item):
            raise TypeError(f"task {task.name}: items() gave {type(item).__name__}, not an Item")
        other = seen.get(item.key)
        if other is not None:
            where = f"{other.source}:{other.line}" if other.line else str(other.source)
            raise DataFormatError(
                item.source or paths[0], item.line, "key",
                f"{item.key!r} also at {where}: every item needs its own key",
            )  # fmt: skip
        seen[item.key] = item
    return items


def _open_images(item: Item) -> dict[str, Image.Image]:
    from contrastkit.pipeline.sources import decode

    opened = {}
    for name, ref in item.images.items():
        if isinstance(ref, str | Path) and item.source is not None and not Path(ref).is_absolute():
            base = item.source if item.source.is_dir() else item.source.parent
            ref = base / ref
        try:
            opened[name] = decode(ref)
        except (OSError, TypeError) as error:
            raise DataFormatError(
                item.source or "<data>", item.line, f"images.{name}",
                f"image of item {item.key!r} cannot be opened: {error}",
            ) from error  # fmt: skip
    return opened


def score_items(
    task: Task[Any, Any],
    model: Any,
    items: Sequence[Item],
    raw: Path,
    context: tuple[str, TaskSettings, int, ProgressFactory | None],
) -> tuple[list[Mapping[str, Any]], int, int]:
    """The records of ``items`` (in their order), scoring those ``raw`` lacks;
    ``context`` is (model spec, settings, batch size, progress). Returns the records,
    how many were reused and how many stored ones were scored again because their
    settings differ."""
    spec, settings, batch_size, progress = context
    stamped = task.scoring_settings != ()  # () : no setting changes a record, none stored
    stamp = settings.fingerprint(task.scoring_settings) if stamped else None
    stored = read_raw(raw, spec)
    keys = {item.key for item in items}
    kept = {k: r for k, r in stored.items() if k in keys and r.get(SETTINGS_FIELD) == stamp}
    rescored = sum(1 for k, r in stored.items() if k in keys and k not in kept)
    todo = [item for item in items if item.key not in kept]
    records = dict(kept)
    step = max(1, batch_size)
    label = f"{task.name}: {spec}"
    with (
        RawAppender(raw, kept.values()) as appender,
        progress_stage(progress, label, len(todo)) as update,
    ):
        for start in range(0, len(todo), step):
            batch = todo[start : start + step]
            images = [_open_images(item) for item in batch]
            scored = task.score(model, batch, images, settings)
            if len(scored) != len(batch):
                raise TypeError(
                    f"task {task.name}: score() gave {len(scored)} records for {len(batch)} items"
                )
            new = [
                {
                    **record,
                    "key": item.key,
                    "model": spec,
                    **({SETTINGS_FIELD: stamp} if stamped else {}),
                }
                for item, record in zip(batch, scored, strict=True)
            ]
            appender.write(new)
            records.update({record["key"]: record for record in new})
            update(start + len(batch), len(todo))
    return [records[item.key] for item in items], len(kept), rescored


def _stamped(
    task: Task[Any, Any], result: Result, context: RunContext[Any], data: Sequence[str]
) -> Result:
    from contrastkit import __version__
    from contrastkit.models.registry import weights_note

    if not isinstance(result, task.result):
        raise TypeError(
            f"task {task.name}: aggregate() gave {type(result).__name__}, not "
            f"{task.result.__name__}"
        )
    if not isinstance(result, TaskResult):  # a result of its own layout: filled by the task
        return result
    note = weights_note(context.model)
    boot = context.bootstrap
    settings = {
        spec.name: _plain(getattr(context.settings, spec.name))
        for spec in dataclasses.fields(context.settings)
    }
    return dataclasses.replace(
        result, task=task.name, model=context.model, data=tuple(data),
        items=len(context.items), random_weights=note is not None, weights_note=note,
        contrastkit_version=__version__, bootstrap=boot.resamples,
        confidence=boot.confidence, seed=boot.seed, settings=settings,
        skipped_rows=tuple(row.to_dict() for row in context.skipped_rows),
    )  # fmt: skip


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _checked_json(task: Task[Any, Any], result: Result, where: Path) -> dict[str, Any]:
    """The result as JSON, validated against its class's JSON schema."""
    import jsonschema  # type: ignore[import-untyped]

    from contrastkit.evaluators.report.results import jsonable
    from contrastkit.results.schema import json_schema

    data: dict[str, Any] = jsonable(result.to_json())
    errors = list(jsonschema.Draft202012Validator(json_schema(type(result))).iter_errors(data))
    if errors:
        first = errors[0]
        dotted = ".".join(map(str, first.absolute_path)) or None
        raise TypeError(
            f"task {task.name}: its result for {where} does not fit its schema at "
            f"{dotted}: {first.message}"
        )
    return data


def _report(task: Task[Any, Any], result: Result, plots: Sequence[Path]) -> str:
    own = task.report(result, plots)
    if own is not None:
        return own
    text = ""
    note, skipped = getattr(result, "weights_note", None), getattr(result, "skipped_rows", ())
    if note:
        text += f"> **Random weights.** {note}\n\n"
    text += task.render(result).rstrip("\n") + "\n"
    if skipped:
        text += f"\n## Skipped rows\n\n{len(skipped)} rows had no image:\n\n"
        text += "".join(f"- {_skipped_line(row)}\n" for row in skipped)
    png = [path for path in plots if path.suffix == ".png"]
    if png:
        text += "\n## Figures\n\n"
        text += "".join(f"![{p.stem}](plots/{p.name}) ([SVG](plots/{p.stem}.svg))\n\n" for p in png)
    return text


def _skipped_line(row: Any) -> str:
    if isinstance(row, Mapping) and {"idx", "url", "reason"} <= set(row):
        return f"`{row['idx']}` ({row['url']}): {row['reason']}"
    return str(row)


def write_outputs(task: Task[Any, Any], result: Result, folder: Path) -> dict[str, Path]:
    """Write a model's ``benchmark.json``, figures and ``report.md`` (each atomically)
    into ``folder``; return them by name with the raw file."""
    from contrastkit.evaluators.report.figures import save_formats

    folder.mkdir(parents=True, exist_ok=True)
    files = {"raw": folder / task.raw_file, "benchmark": folder / "benchmark.json"}
    data = _checked_json(task, result, files["benchmark"])
    plots: list[Path] = []
    for stem, figure in task.figures(result).items():
        written = save_formats(figure, folder / "plots" / stem)
        plots += written
        files.update({f"plot_{stem}_{p.suffix[1:]}": p for p in written})
    atomic_write_text(files["benchmark"], json.dumps(data, indent=2) + "\n")
    files["report"] = folder / "report.md"
    atomic_write_text(files["report"], _report(task, result, plots))
    names = task.file_names()
    return {names.get(name, name): path for name, path in files.items()}


def console_summary(headline: Mapping[str, Any]) -> dict[str, Any]:
    """A task's headline with the ``figures`` the console prints (each fraction or score
    of it, not the counts, and beside a figure ``x`` its interval when the headline
    gives ``x_ci``)."""
    from contrastkit.results.common import Interval

    figures: dict[str, Any] = {}
    for name, value in headline.items():
        if isinstance(value, Interval):
            figures[name] = value.to_json()
        elif isinstance(value, float):
            figures[name] = value
    return {**headline, "figures": figures}


def _evaluate_model(
    task: Task[Any, Any], spec: str, items: list[Item], config: RunConfig, run: _Run
) -> tuple[ModelEvaluation, Result]:
    from contrastkit.evaluators.outcome import ModelEvaluation, data_labels
    from contrastkit.evaluators.report.results import model_slug
    from contrastkit.models import load_model

    folder = config.out / model_slug(spec)
    model = load_model(spec, config.model)
    context = (spec, run.settings, config.model.batch_size, run.progress)
    records, reused, rescored = score_items(task, model, items, folder / task.raw_file, context)
    del model
    images = run.images
    ctx = RunContext(spec, run.settings, run.bootstrap, tuple(items),
                     tuple(data_labels(run.paths)), images.skipped_rows,
                     images.skip_missing)  # fmt: skip
    result = _stamped(task, task.aggregate(records, ctx), ctx, ctx.data)
    files = write_outputs(task, result, folder)
    if rescored:
        warnings.warn(
            f"{folder / task.raw_file}: {rescored} records of {spec} were scored under other "
            f"settings of task {task.name}; they were scored again, not reused",
            stacklevel=2,
        )
    summary = task.summary(result)
    evaluation = ModelEvaluation(
        model=spec, folder=folder, files=files, scored_images=len(items) - reused,
        reused_records=reused, skipped_rows=images.skipped_rows,
        summary=console_summary(task.headline(result)) if summary is None else summary,
    )  # fmt: skip
    return evaluation, result


@dataclasses.dataclass(frozen=True)
class _Run:
    paths: tuple[Path, ...]
    settings: TaskSettings
    bootstrap: BootstrapSettings
    progress: ProgressFactory | None
    images: Images = dataclasses.field(default_factory=Images)


def run_task(
    task: Task[Any, Any],
    config: RunConfig,
    paths: tuple[Path, ...],
    progress: ProgressFactory | None = None,
) -> EvaluateResult:
    """Run ``task`` on ``paths`` for every model of ``config`` (the module docstring);
    what :func:`contrastkit.evaluators.job.evaluate` calls for a task written on the
    protocol.

    Raises:
        ConfigError: a model without a capability the task needs, settings of another
            task.
        DataFormatError: data the task cannot read, an image that does not open.
        ModelNotFoundError: a model that is not on this machine or does not load.
    """
    from contrastkit.evaluators.outcome import EvaluateResult, folder_links

    settings = task_settings(task, config)
    check_capabilities(task, config.models)
    items, images = available(
        task, config, paths, load_items(task, paths, settings, config.split), progress
    )
    boot = config.settings
    run = _Run(paths, settings, BootstrapSettings(boot.bootstrap, boot.confidence, boot.seed),
               progress, images)  # fmt: skip
    evaluations, results = [], []
    for spec in config.models:
        evaluation, result = _evaluate_model(task, spec, items, config, run)
        evaluations.append(evaluation)
        results.append(result)
    comparison = None
    if len(results) > 1:
        comparison = config.out / "comparison.md"
        text = task.compare(results) + folder_links(config.out, evaluations)
        atomic_write_text(comparison, text)
    return EvaluateResult(
        task.name, paths, tuple(evaluations), comparison, store=images.store,
        checked=images.checked, fetched=images.fetched, skipped_rows=images.skipped_rows,
    )  # fmt: skip
