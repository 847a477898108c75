"""The engine: what every task repeated, once (:func:`run_task`).

Per model, in the order given: the capabilities every model needs are checked before
any loads; the model is loaded; the items not yet in its raw file (or scored there
under other settings) are scored batch by batch, their images opened by the engine,
each batch's records appended and flushed (an interrupted run loses at most one
batch); the task aggregates the records into its typed result; the engine stamps the
common fields and writes ``benchmark.json`` (checked against the result's JSON
schema), ``report.md`` and the figures. With several models, ``comparison.md``.

A task that evaluates each data path on its own (``per_data``) gets one result per model
and path, in ``OUT/MODEL/NAME/`` when several paths are given, each model loaded once
for all of them; a task that keeps no records (``keeps_records = False``: its item is a
whole data set, scored at once) has every item scored on every run and its raw file
written from :meth:`~contrastkit.evaluators.engine.protocol.Task.raw_text`.

Besides its result, a model's records reach three hooks, for a task whose result does
not keep all of them: what the evaluation reports as scored and reused
(:meth:`~contrastkit.evaluators.engine.protocol.Task.scored_from`), its notes of what
was left out or not reused (:meth:`~contrastkit.evaluators.engine.protocol.Task.
skipped`) and its figures (:meth:`~contrastkit.evaluators.engine.protocol.Task.
figures_from`); each defaults to what the result alone gives.

Hooks, each off by default, for a task whose data, files and checks predate the engine
(VisoGender): a model must have one of several capabilities (``any_capabilities``) and
may be refused under the run's settings (``check_models``), before any loads; the task
checks its images itself (``available``), keeps its raw files itself (``raw_text``
gives ``None``), reports its own progress under a label of its own
(``reports_progress``, ``progress_label``), lists its files its own way
(``listed_files``), and ``evaluate`` draws its comparison plots
(``plots_on_evaluate``). And for a task that runs each model its own way (zero-shot): it
loads each model after checks of its own (``load``), opens its own progress stages
(``progress_label`` ``None``: :attr:`~contrastkit.evaluators.engine.protocol.
ScoreContext.stages`) and writes a model's files as it scores (``written``).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.bootstrap import BootstrapSettings
from contrastkit.evaluators.engine.images import Images, available
from contrastkit.evaluators.engine.protocol import (
    Item,
    RunConfig,
    RunContext,
    ScoreContext,
    Task,
    TaskResult,
    TaskSettings,
)
from contrastkit.evaluators.raw import RawAppender, read_raw
from contrastkit.interfaces import progress_stage
from contrastkit.io import atomic_write_text
from contrastkit.results.base import Result

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

    from contrastkit.evaluators.outcome import EvaluateResult, ModelEvaluation
    from contrastkit.interfaces import ProgressFactory

__all__ = [
    "check_capabilities",
    "load_items",
    "run_task",
    "score_all",
    "score_items",
    "task_settings",
]

#: The raw record field holding the settings' fingerprint.
SETTINGS_FIELD = "settings"


def task_settings(task: Task[Any, Any], config: RunConfig) -> TaskSettings:
    """The task's settings in ``config`` (:meth:`~contrastkit.evaluators.engine.protocol.
    Task.settings_of`: its defaults when none were given).

    Raises:
        ConfigError: settings of another class than the task's.
    """
    settings = task.settings_of(config)
    if not isinstance(settings, task.settings):
        raise ConfigError(
            f"task_settings: task {task.name} takes {task.settings.__name__}, not "
            f"{type(settings).__name__}"
        )
    return settings


def check_capabilities(task: Task[Any, Any], models: Sequence[str]) -> None:
    """Refuse, before any model loads, a model that lacks what the task needs: each of
    its ``capabilities``, and one of its ``any_capabilities`` when it names some.

    Raises:
        ConfigError: naming the model, what it lacks and what it can do.
    """
    from contrastkit.models import parse_spec

    either = task.any_capabilities
    for spec in models:
        has = parse_spec(spec).capabilities
        lacking = sorted(task.capabilities - has)
        if either and not either & has:
            lacking.append(" or ".join(sorted(either)))
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
    records: dict[str, Mapping[str, Any]] = dict(kept)
    extra = {SETTINGS_FIELD: stamp} if stamped else {}
    label = _label(task, spec)
    stages = None if label else progress
    with (
        RawAppender(raw, kept.values()) as appender,
        progress_stage(progress if label else None, label, len(todo)) as update,
    ):
        scoring = ScoreContext(
            spec, settings, raw.parent, batch_size, progress=update, stages=stages
        )
        for new in _batches(task, model, todo, scoring, extra):
            appender.write(new)
            records.update({record["key"]: record for record in new})
    return [records[item.key] for item in items], len(kept), rescored


def _batches(
    task: Task[Any, Any],
    model: Any,
    todo: Sequence[Item],
    context: ScoreContext[Any],
    extra: Mapping[str, Any],
) -> Iterator[list[Mapping[str, Any]]]:
    """The records of ``todo``, batch by batch (each item's record with its ``key``, the
    model and ``extra``), the progress updated after each batch (in items)."""
    step = max(1, context.batch_size)
    for start in range(0, len(todo), step):
        batch = todo[start : start + step]
        images = [_open_images(item) for item in batch]
        scored = task.score_in(model, batch, images, context)
        if len(scored) != len(batch):
            raise TypeError(
                f"task {task.name}: score() gave {len(scored)} records for {len(batch)} items"
            )
        yield [
            {**record, "key": item.key, "model": context.model, **extra}
            for item, record in zip(batch, scored, strict=True)
        ]
        if context.progress is not None and not task.reports_progress:
            context.progress(start + len(batch), len(todo))


def _label(task: Task[Any, Any], spec: str) -> str:
    """The progress display's label of scoring ``spec`` (:attr:`Task.progress_label`;
    ``""``: a task that opens its own stages)."""
    return (task.progress_label or "").format(task=task.name, model=spec)


def score_all(
    task: Task[Any, Any], model: Any, items: Sequence[Item], context: ScoreContext[Any]
) -> list[Mapping[str, Any]]:
    """The records of every item of ``items``, none kept or reused (a task that keeps no
    records: ``keeps_records = False``)."""
    records: list[Mapping[str, Any]] = []
    for new in _batches(task, model, items, context, {}):
        records += new
    return records


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
    settings = context.settings.as_json()
    return dataclasses.replace(
        result, task=task.name, model=context.model, data=tuple(data),
        items=len(context.items), random_weights=note is not None, weights_note=note,
        contrastkit_version=__version__, bootstrap=boot.resamples,
        confidence=boot.confidence, seed=boot.seed, settings=settings,
        skipped_rows=tuple(row.to_dict() for row in context.skipped_rows),
    )  # fmt: skip


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


def write_outputs(
    task: Task[Any, Any],
    result: Result,
    folder: Path,
    raw: str | None = None,
    figures: Mapping[str, Figure] | None = None,
) -> dict[str, Path]:
    """Write a model's ``benchmark.json``, figures and ``report.md`` (each atomically)
    into ``folder``, and its raw file's text ``raw`` when given (a task that keeps no
    records); return them by name with the raw file and the task's own files
    (:meth:`~contrastkit.evaluators.engine.protocol.Task.files`). ``figures``: the
    figures to save (those of the run, :meth:`~contrastkit.evaluators.engine.protocol.
    Task.figures_from`); ``None``: the result's
    (:meth:`~contrastkit.evaluators.engine.protocol.Task.figures`)."""
    from contrastkit.evaluators.report.figures import save_formats

    folder.mkdir(parents=True, exist_ok=True)
    files = {"raw": folder / task.raw_file, "benchmark": folder / "benchmark.json"}
    if raw is not None:
        atomic_write_text(files["raw"], raw)
    data = _checked_json(task, result, files["benchmark"])
    plots: list[Path] = []
    for stem, figure in (task.figures(result) if figures is None else figures).items():
        written = save_formats(figure, folder / "plots" / stem)
        plots += written
        files.update({f"plot_{stem}_{p.suffix[1:]}": p for p in written})
    text = task.benchmark_text(result)
    atomic_write_text(files["benchmark"], text or json.dumps(data, indent=2) + "\n")
    files["report"] = folder / "report.md"
    atomic_write_text(files["report"], _report(task, result, plots))
    names = task.file_names()
    listed = {
        **{names.get(name, name): path for name, path in files.items()},
        **task.files(result, folder),
    }
    return dict(task.listed_files(listed))


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


def _scored(
    task: Task[Any, Any], loaded: tuple[str, Any], items: list[Item], folder: Path, run: _Run
) -> tuple[list[Mapping[str, Any]], int, int]:
    """The records of ``items`` for the ``loaded`` model (its spec and itself), how many
    were reused and how many scored again (:func:`score_items`; every item scored, none
    kept, for a task that keeps no records)."""
    spec, model = loaded
    if task.keeps_records:
        context = (spec, run.settings, run.batch_size, run.progress)
        return score_items(task, model, items, folder / task.raw_file, context)
    label = _label(task, spec)
    with progress_stage(run.progress if label else None, label) as update:
        stages = None if label else run.progress
        scoring = ScoreContext(spec, run.settings, folder, run.batch_size, run.bootstrap,
                               update, stages)  # fmt: skip
        return score_all(task, model, items, scoring), 0, 0


def _evaluate_model(
    task: Task[Any, Any], loaded: tuple[str, Any], data: _Data, config: RunConfig, run: _Run
) -> tuple[ModelEvaluation, Result]:
    from contrastkit.evaluators.outcome import ModelEvaluation, data_labels
    from contrastkit.evaluators.report.results import model_slug

    spec = loaded[0]
    folder = config.out / model_slug(spec)
    folder = folder / data.subfolder if data.subfolder else folder
    records, reused, rescored = _scored(task, loaded, data.items, folder, run)
    images = data.images
    ctx = RunContext(spec, run.settings, run.bootstrap, tuple(data.items),
                     tuple(data_labels(data.paths)), images.skipped_rows,
                     images.skip_missing)  # fmt: skip
    result = _stamped(task, task.aggregate(records, ctx), ctx, ctx.data)
    own = task.written(result, records)
    if own is None:
        raw = None if task.keeps_records else task.raw_text(records)
        files = write_outputs(task, result, folder, raw, task.figures_from(result, records))
    else:
        folder, files = own[0], dict(own[1])
    if rescored:
        warnings.warn(
            f"{folder / task.raw_file}: {rescored} records of {spec} were scored under other "
            f"settings of task {task.name}; they were scored again, not reused",
            stacklevel=2,
        )
    summary = task.summary(result)
    scored, reused = task.scored_from(result, records) or (len(data.items) - reused, reused)
    evaluation = ModelEvaluation(
        model=spec, folder=folder, files=files, scored_images=scored, reused_records=reused,
        data=str(data.paths[0]) if task.per_data else None, skipped_rows=images.skipped_rows,
        skipped=tuple(task.skipped(result, records)),
        summary=console_summary(task.headline(result)) if summary is None else summary,
    )  # fmt: skip
    return evaluation, result


@dataclasses.dataclass(frozen=True)
class _Run:
    settings: TaskSettings
    bootstrap: BootstrapSettings
    progress: ProgressFactory | None
    batch_size: int


@dataclasses.dataclass(frozen=True)
class _Data:
    """Data the task evaluates into one result per model: its paths, their items and
    what reading their images did; ``subfolder``: the model folder's subfolder its files
    go to (a data path's name, for a task that evaluates each path on its own)."""

    paths: tuple[Path, ...]
    items: list[Item]
    images: Images
    subfolder: str = ""


def _data(
    task: Task[Any, Any],
    config: RunConfig,
    paths: tuple[Path, ...],
    settings: TaskSettings,
    progress: ProgressFactory | None,
) -> list[_Data]:
    """What the task evaluates: all of ``paths`` together, or each path on its own (a
    task with ``per_data``; in a subfolder of each model's when there are several).

    Raises:
        ConfigError: several paths of one name for a task that evaluates each on its own.
        DataFormatError: as :func:`load_items` and
            :func:`~contrastkit.evaluators.engine.images.available` say.
    """
    groups = [(path,) for path in paths] if task.per_data else [paths]
    names = [path.name for path in paths]
    if task.per_data and len(paths) > 1 and len(set(names)) < len(names):
        raise ConfigError(
            f"data: task {task.name} writes each data folder's results into a folder of "
            f"its name, so the folders need distinct names, not {names}"
        )
    found = []
    for group in groups:
        items = load_items(task, group, settings, config.split)
        own = task.available(config, group, items, progress)
        kept, images = own if own is not None else available(task, config, group, items, progress)
        subfolder = group[0].name if task.per_data and len(paths) > 1 else ""
        found.append(_Data(group, kept, images, subfolder))
    return found


def _images(found: Sequence[_Data]) -> Images:
    """What reading the images of all the data did."""
    if len(found) == 1:
        return found[0].images
    return Images(
        store=next((data.images.store for data in found if data.images.store), None),
        checked=sum(data.images.checked for data in found),
        fetched=sum(data.images.fetched for data in found),
        skipped_rows=tuple(row for data in found for row in data.images.skipped_rows),
        skip_missing=any(data.images.skip_missing for data in found),
    )


def _comparison_plots(task: Task[Any, Any], results: Sequence[Result], out: Path) -> str:
    """Draw the comparison plots into ``out`` for a task that draws them on evaluate
    (``plots_on_evaluate``) and return the markdown showing them; ``""`` otherwise."""
    from contrastkit.evaluators.outcome import plot_links

    if not (task.plots_on_evaluate and task.plots_title is not None):
        return ""
    return plot_links(task.compare_plots(results, out, "comparison"), task.plots_title)


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
    task.check_models(config.models, settings)
    found = _data(task, config, paths, settings, progress)
    boot = config.settings
    run = _Run(settings, BootstrapSettings(boot.bootstrap, boot.confidence, boot.seed),
               progress, config.model.batch_size)  # fmt: skip
    evaluations, results = [], []
    for spec in config.models:
        loaded = (spec, task.load(spec, config, settings, paths))
        for data in found:
            evaluation, result = _evaluate_model(task, loaded, data, config, run)
            evaluations.append(evaluation)
            results.append(result)
        del loaded
    comparison = None
    if len(results) > 1 and task.compares_on_evaluate:
        comparison = config.out / "comparison.md"
        text = task.compare(results) + _comparison_plots(task, results, config.out)
        atomic_write_text(comparison, text + folder_links(config.out, evaluations))
    images = _images(found)
    return EvaluateResult(
        task.name, paths, tuple(evaluations), comparison, store=images.store,
        checked=images.checked, fetched=images.fetched, skipped_rows=images.skipped_rows,
    )  # fmt: skip
