"""What a task declares (:class:`Task`), and the values it declares them with: its
settings (:class:`TaskSettings`, one field per option of ``contrastkit evaluate
TASK``), the items it scores (:class:`Item`), what its aggregation receives
(:class:`RunContext`) and the typed result it returns (:class:`TaskResult`).

Everything a task repeated before lives once in the engine
(:func:`contrastkit.evaluators.engine.run.run_task`): loading each model after checking
its capabilities, opening the images batch by batch, resume from the raw records,
the bootstrap, writing ``benchmark.json`` (checked against the result's schema),
``report.md`` and the figures, the progress display and the comparison of several
models.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np

from contrastkit.errors import ConfigError
from contrastkit.evaluators.bootstrap import (
    NO_BOOTSTRAP,
    BootstrapSettings,
    few_items,
    percentile_interval,
    resample_indices,
)
from contrastkit.evaluators.engine.settings import TaskSettings, setting, settings_fields
from contrastkit.results.base import Result
from contrastkit.results.common import Interval

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.outcome import Images
    from contrastkit.interfaces import ImageSource, ProgressFactory

__all__ = [
    "ImageRef",
    "Item",
    "RunConfig",
    "RunContext",
    "ScoreContext",
    "Task",
    "TaskResult",
    "TaskSettings",
    "setting",
    "settings_fields",
]

#: How an item names one of its images: a path (relative paths are read from the data
#: folder the item came from), encoded bytes, a decoded image, or a function that
#: returns one (an image decoded from a dataset row only when its batch is scored).
ImageRef = typing.Union["ImageSource", Callable[[], "Image.Image"]]


class _Intervals(Protocol):
    @property
    def bootstrap(self) -> int: ...

    @property
    def confidence(self) -> float: ...

    @property
    def seed(self) -> int: ...


class RunConfig(Protocol):
    """What the engine reads of the config it runs a task on
    (:class:`~contrastkit.evaluators.evaluation.EvaluateConfig` has it all): the models
    and how they run, the output folder, the split, the bootstrap and the task's own
    settings."""

    @property
    def models(self) -> tuple[str, ...]: ...

    @property
    def model(self) -> ModelConfig: ...

    @property
    def out(self) -> Path: ...

    @property
    def split(self) -> str | None: ...

    @property
    def settings(self) -> _Intervals: ...

    @property
    def task_settings(self) -> TaskSettings | None: ...


@dataclass(frozen=True)
class Item:
    """One thing a task scores.

    Attributes:
        key: unique within the data and stable across runs: what a raw record is
            found by when a run is resumed.
        images: the item's images, by name (``{"masculine": ..., "feminine": ...}``);
            the engine opens them as RGB, batch by batch.
        data: what the task needs to score it (JSON-ready values: a caption, a label).
        source: the file or folder it came from (errors name it).
        line: its line in ``source``, if any.
        name: how a list of rows left out for a missing image names it (its ID);
            ``None``: its key.
        group: the group such a list gives it (a category); empty by default.
    """

    key: str
    images: Mapping[str, ImageRef]
    data: Mapping[str, Any] = field(default_factory=dict)
    source: Path | None = None
    line: int | None = None
    name: str | None = None
    group: str = ""


@dataclass(frozen=True, kw_only=True)
class TaskResult(Result):
    """The base of a task's typed result (``benchmark.json``): a
    :class:`~contrastkit.results.base.Result` whose common fields the engine fills in
    (the task leaves them at their defaults); a subclass adds the task's own figures as
    typed fields (nested :class:`~contrastkit.results.base.Node` classes,
    :class:`~contrastkit.results.common.Interval` for intervals) and sets ``TASK``.

    Attributes:
        model: the model spec.
        data: the data evaluated, as given.
        items: items scored into the result.
        random_weights: the model has random weights (its figures mean nothing).
        weights_note: the sentence every report of such a model carries.
        contrastkit_version: the version that wrote the file.
        bootstrap: resamples behind the intervals (0: none).
        confidence: the intervals' level.
        seed: seeds the resampling.
        settings: the task's settings, by field name.
        skipped_rows: rows left out because their image was not available.
    """

    model: str = ""
    data: tuple[str, ...] = ()
    items: int = 0
    random_weights: bool = False
    weights_note: str | None = None
    contrastkit_version: str = ""
    bootstrap: int = 0
    confidence: float = 0.95
    seed: int = 0
    settings: Mapping[str, Any] = field(default_factory=dict)
    skipped_rows: tuple[Mapping[str, Any], ...] = ()


_S = TypeVar("_S", bound=TaskSettings)
_R = TypeVar("_R", bound=Result)


@dataclass(frozen=True)
class RunContext(Generic[_S]):
    """What a task's :meth:`Task.aggregate` receives besides the records.

    Attributes:
        model: the model spec the records are of.
        settings: the task's settings.
        bootstrap: the intervals to give the figures (:meth:`mean_interval`).
        items: the items the records belong to, in order.
        data: the data evaluated, as the results name it.
        skipped_rows: the rows left out because their image was not available (a task
            offering the ``images`` options), as
            :class:`~contrastkit.evaluators.data.SkippedRow`.
        skip_missing: whether such rows were left out (``--skip-missing``) rather than
            refused.
    """

    model: str
    settings: _S
    bootstrap: BootstrapSettings
    items: tuple[Item, ...] = ()
    data: tuple[str, ...] = ()
    skipped_rows: tuple[Any, ...] = ()
    skip_missing: bool = False

    def mean_interval(self, values: Sequence[float] | np.ndarray) -> Interval | None:
        """The percentile bootstrap interval of the mean of ``values`` (NaN left
        out), resampling the values with replacement; ``None`` without resamples; an
        interval with ``null`` bounds and its ``reason`` on fewer than two values."""
        boot = self.bootstrap
        if boot.resamples < 1:
            return None
        array = np.asarray(values, dtype=np.float64).reshape(-1)
        array = array[np.isfinite(array)]
        level, resamples = boot.confidence, boot.resamples
        bounds = (math.nan, math.nan)
        if array.size >= 2:
            rng = np.random.default_rng(boot.seed)
            means = array[resample_indices(rng, array.size, resamples)].mean(axis=1)
            bounds = percentile_interval(means, level)
        # fewer than two values: no interval, and the reason every report gives
        found = few_items({"low": bounds[0], "high": bounds[1]}, int(array.size))
        low, high = (None if math.isnan(b) else float(b) for b in (found["low"], found["high"]))
        reason = found.get("reason")
        return Interval(low=low, high=high, level=level, resamples=resamples, reason=reason)


@dataclass(frozen=True)
class ScoreContext(Generic[_S]):
    """What :meth:`Task.score_in` receives besides the model and a batch.

    Attributes:
        model: the model spec.
        settings: the task's settings.
        folder: the model's output folder (the data path's, for a task that evaluates
            each data path on its own): where a task may keep a cache of its own (a
            score file it reuses on rerun).
        batch_size: the model's batch size (``--batch-size``).
        bootstrap: the intervals asked for: what a task that keeps no records
            (:attr:`Task.keeps_records`) computes as it scores; a task that keeps them
            gives its intervals in :meth:`Task.aggregate` (``RunContext.bootstrap``).
        progress: ``update(done, total)`` of the stage's progress display, for a task
            whose batch is long (a whole data set); ``None``: no display.
        stages: the progress display, for a task that opens its own (no ``progress_label``).
    """

    model: str
    settings: _S
    folder: Path
    batch_size: int
    bootstrap: BootstrapSettings = NO_BOOTSTRAP
    progress: Callable[[int, int], None] | None = None
    stages: ProgressFactory | None = None


class Task(Generic[_S, _R]):
    """An evaluation task: what is its own, and nothing the engine does.

    Set the class attributes and implement :meth:`items`, :meth:`score`,
    :meth:`aggregate`, :meth:`render`, :meth:`compare` and :meth:`headline`;
    :meth:`figures` is optional. Register an instance with
    :func:`contrastkit.extend.register_task` (or the ``contrastkit.tasks`` entry point
    group).

    Attributes:
        name: the command (``contrastkit evaluate NAME``) and the ``task`` its results
            record.
        kind: the dataset kind (:mod:`contrastkit.kinds`) it reads.
        capabilities: what each model must be able to do (:mod:`contrastkit.models.
            families`: ``embeddings``, ``captions``, ``pronouns``, ``answers`` ...);
            checked for every model before any loads.
        any_capabilities: capabilities of which each model must have at least one
            (``embeddings`` or ``pronouns``: a task that dual encoders and captioning
            models both run, each its own way); checked with :attr:`capabilities`, the
            pair named ``"embeddings or pronouns"`` among what a model lacks. Empty (the
            default): no such need.
        settings: its settings class (its options).
        result: its result class.
        description: the ``--help`` of its command: a one-sentence paragraph (what the
            command list shows), then any detail.
        example_model: a model spec the task takes (``--model``'s help shows it).
        scoring_settings: the settings fields that change a raw record (``None``: all
            of them); a record scored under other values is scored again, never reused.
            ``()``: none does, and the records carry no fingerprint.
        options: the option groups of :data:`~contrastkit.evaluators.tasks.registry.
            OPTION_GROUPS` its command offers besides its settings. With ``images``
            (``--store``, ``--fetch``, ``--skip-missing``; ``network`` says how URLs are
            fetched) the engine reads the image references given as strings or paths
            the way VisoGender rows are read: local files, URLs through the image
            store (fetched with ``--fetch``), rows without an image refused or left out
            (:attr:`RunContext.skipped_rows`).
        raw_file: the raw records' file name in each model folder.

    The result class may be a :class:`~contrastkit.results.base.Result` that is not a
    :class:`TaskResult` (a result whose layout predates the engine): the engine then
    stamps none of its fields, and :meth:`aggregate` fills them from the
    :class:`RunContext`. Every other method is an optional hook keeping the engine's
    default unless a task overrides it; :meth:`scored_from`, :meth:`skipped` and
    :meth:`figures_from` read a run's records besides its result (for a task whose
    result does not keep all its records say).

    Further class attributes, for tasks whose data or records are not one item each:

    * ``per_data``: the task evaluates each data path on its own (one result per model
      and path, from that path's items only), written to ``OUT/MODEL/NAME/`` (the path's
      name) when several paths are given, whose names must then differ; each model
      loads once for all of them. ``False`` (default): one result per model over all
      the data.
    * ``keeps_records``: the engine keeps each item's record in :attr:`raw_file` and
      reuses it on rerun (default). ``False``: a task whose item is scored as a whole
      (every query of a data set ranked against every image of it) keeps no records to
      reuse: every item is scored on every run, :attr:`raw_file` holds
      :meth:`raw_text`, and a cache of the task's own lives in
      :attr:`ScoreContext.folder`. Such a task may keep its raw files itself, under
      names of its own (several files, one per part of the task, reused on rerun by
      keys of its own): its :meth:`raw_text` gives ``None`` and the engine writes no
      raw file.
    * ``compares_on_evaluate``: ``evaluate`` with several models writes
      ``comparison.md`` (default); ``False``: only ``report`` puts them side by side.
    * ``plots_title``: the title of the comparison plots :meth:`compare_plots` writes
      (``None``, the default: the task has none).
    * ``plots_on_evaluate``: ``evaluate`` with several models also writes the comparison
      plots (:meth:`compare_plots`, stem ``comparison``) into the output folder, and
      ``comparison.md`` shows them under :attr:`plots_title` before its links to each
      model's report. ``False`` (default): only ``report --out`` draws them.
    * ``progress_label``: the label of each model's scoring stage in the progress
      display, with ``{task}`` and ``{model}`` filled in (default ``"{task}: {model}"``);
      ``None``: the engine opens no stage, the task its own (:attr:`ScoreContext.stages`).
    * ``reports_progress``: a task that keeps no records and scores its item as a whole
      reports its progress itself, in units of its own (images), through
      :attr:`ScoreContext.progress`: the engine adds no update of its own after the
      batch. ``False`` (default): the engine updates the display after each batch, in
      items.
    """

    name: ClassVar[str]
    kind: ClassVar[str]
    capabilities: ClassVar[frozenset[str]] = frozenset()
    any_capabilities: ClassVar[frozenset[str]] = frozenset()
    settings: ClassVar[type[TaskSettings]] = TaskSettings
    result: ClassVar[type[Result]]
    description: ClassVar[str] = ""
    example_model: ClassVar[str] = ""
    scoring_settings: ClassVar[tuple[str, ...] | None] = None
    options: ClassVar[tuple[str, ...]] = ()
    per_data: ClassVar[bool] = False
    keeps_records: ClassVar[bool] = True
    compares_on_evaluate: ClassVar[bool] = True
    plots_title: ClassVar[str | None] = None
    plots_on_evaluate: ClassVar[bool] = False
    progress_label: ClassVar[str | None] = "{task}: {model}"
    reports_progress: ClassVar[bool] = False

    @property
    def raw_file(self) -> str:
        return f"raw_{self.name.replace('-', '_')}.jsonl"

    def items(self, paths: Sequence[Path], settings: _S, split: str | None) -> Iterable[Item]:
        """The items of the data ``paths`` (each of :attr:`kind`).

        Raises:
            DataFormatError: data that cannot be read, naming file, line and field.
        """
        raise NotImplementedError

    def score(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        settings: _S,
    ) -> list[Mapping[str, Any]]:
        """One JSON-ready record per item of a batch (``images[i]`` are ``items[i]``'s,
        opened); the engine adds ``key`` and ``model`` and keeps them in the raw file."""
        raise NotImplementedError

    def score_in(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        context: ScoreContext[_S],
    ) -> list[Mapping[str, Any]]:
        """What the engine calls to score a batch: :meth:`score` by default; a task
        that needs its output folder, the batch size, the intervals or the progress
        display (:class:`ScoreContext`) overrides this instead."""
        return self.score(model, items, images, context.settings)

    def aggregate(self, records: Sequence[Mapping[str, Any]], context: RunContext[_S]) -> _R:
        """The typed result of one model from its records (in item order); intervals
        from ``context.mean_interval``."""
        raise NotImplementedError

    def render(self, result: _R) -> str:
        """The markdown of one model's ``report.md`` (the engine adds the random-weights
        note, the skipped rows and the figures)."""
        raise NotImplementedError

    def figures(self, result: _R) -> Mapping[str, Figure]:
        """Figures of one model's result, by file stem (saved as PNG and SVG under
        ``plots/``); none by default."""
        return {}

    def compare(self, results: Sequence[_R]) -> str:
        """The markdown putting several models' results side by side."""
        raise NotImplementedError

    def headline(self, result: _R) -> Mapping[str, Any]:
        """The few numbers ``evaluate --json`` and ``report --json`` print for a model."""
        raise NotImplementedError

    def refusal(self, model: str, lacking: Sequence[str]) -> str | None:
        """Why ``model``, which lacks the capabilities ``lacking``, cannot run the task,
        in the task's words; ``None``: the engine's message."""
        return None

    def check_models(self, models: Sequence[str], settings: _S) -> None:
        """Refuse, before any model loads and after every model's capabilities were
        checked, what the capabilities cannot say: a part of the task that ``settings``
        ask for and some of ``models`` cannot do. Nothing by default.

        Raises:
            ConfigError: naming the model and why, in the task's words.
        """

    def available(
        self,
        config: RunConfig,
        paths: tuple[Path, ...],
        items: Sequence[Item],
        progress: ProgressFactory | None,
    ) -> tuple[list[Item], Images] | None:
        """The items of ``paths`` to score and what reading their images did, for a task
        that checks its images itself (rows whose images a loader of its own opens when
        they are scored; fetched and left out as ``options`` ``images`` says); ``None``
        (the default): the engine reads the image references
        (:func:`~contrastkit.evaluators.engine.images.available`).

        Raises:
            DataFormatError: an image that is not available (without ``--skip-missing``),
                or no item with its images available.
        """
        return None

    def load(self, spec: str, config: RunConfig, settings: _S, paths: tuple[Path, ...]) -> Any:
        """Load ``spec`` after a task's checks of it (:func:`~contrastkit.models.load_model`)."""
        from contrastkit.models import load_model

        return load_model(spec, config.model)

    def written(
        self, result: _R, records: Sequence[Mapping[str, Any]]
    ) -> tuple[Path, Mapping[str, Path]] | None:
        """The folder and files of a model's evaluation the task wrote (``None``: the engine's)."""
        return None

    def listed_files(self, files: Mapping[str, Path]) -> Mapping[str, Path]:
        """The files a model's evaluation lists (``ModelEvaluation.files``), from those
        the engine wrote and names (the raw file, ``benchmark.json``, the figures under
        :meth:`file_names`, ``report.md``, then :meth:`files`): as they are by default; a
        task that keeps its raw files itself leaves the engine's raw file out, and may
        list the others in an order of its own."""
        return files

    def report(self, result: _R, figures: Sequence[Path]) -> str | None:
        """The whole ``report.md`` of one model (``figures``: the files written under
        ``plots/``); ``None``: :meth:`render` with the engine's additions."""
        return None

    def summary(self, result: _R) -> Mapping[str, Any] | None:
        """What ``evaluate --json`` prints as a model's ``summary``; ``None``:
        :meth:`headline` with the engine's ``figures``."""
        return None

    def file_names(self) -> Mapping[str, str]:
        """Other names for the files a model's evaluation lists (``plot_STEM_png`` ->
        ``plot``); none by default."""
        return {}

    def settings_of(self, config: RunConfig) -> _S:
        """The settings a run uses: ``config.task_settings``, or the task's defaults
        when none were given. A task whose options are shared option groups (the
        registry's ``OPTION_GROUPS``, fields of the config) reads their values here.

        Raises:
            ConfigError: settings of another class than the task's.
        """
        given = config.task_settings
        if given is None:
            return typing.cast("_S", self.settings())
        if not isinstance(given, self.settings):
            raise ConfigError(
                f"task_settings: task {self.name} takes {self.settings.__name__}, not "
                f"{type(given).__name__}"
            )
        return typing.cast("_S", given)

    def raw_text(self, records: Sequence[Mapping[str, Any]]) -> str | None:
        """The text of :attr:`raw_file` for a task that keeps no records
        (``keeps_records = False``): one JSON line per record by default; ``None``: the
        task keeps its raw files itself, and the engine writes none."""
        return "".join(json.dumps(dict(record)) + "\n" for record in records)

    def benchmark_text(self, result: _R) -> str | None:
        """The text of ``benchmark.json`` (it is checked against the result's schema
        first in any case); ``None``: the engine's (non-finite numbers as ``null``)."""
        return None

    def scored(self, result: _R) -> tuple[int, int] | None:
        """What a model's evaluation reports as scored in this run and reused from an
        earlier one (``scored_images``, ``reused_records``); ``None``: the engine's
        counts of items."""
        return None

    def scored_from(
        self, result: _R, records: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int] | None:
        """What a model's evaluation reports as scored and reused, read from the run's
        ``records`` as well as its result (a task that counts its own reuse inside a
        record, which its result does not keep); :meth:`scored` by default."""
        return self.scored(result)

    def skipped(self, result: _R, records: Sequence[Mapping[str, Any]]) -> Sequence[str]:
        """Notes of what a model's run left out or did not reuse, and why
        (``ModelEvaluation.skipped``: the console prints them), from its result and its
        ``records``; none by default."""
        return ()

    def figures_from(
        self, result: _R, records: Sequence[Mapping[str, Any]]
    ) -> Mapping[str, Figure]:
        """The figures of a model's run (:meth:`figures`), for a task whose figures
        need the run's ``records`` too (a distribution of per-item values the result
        only summarises); :meth:`figures` of the result by default. Not called when a
        result is written without its run (a harness's answers read back)."""
        return self.figures(result)

    def files(self, result: _R, folder: Path) -> Mapping[str, Path]:
        """Files the task keeps in a model's ``folder`` beside the engine's (a score
        cache of its own), by the name a model's evaluation lists them under; none by
        default."""
        return {}

    def compare_plots(self, results: Sequence[_R], folder: Path, stem: str) -> list[Path]:
        """Write the plots putting several models' results side by side into ``folder``
        (``STEM.png`` / ``.svg``) and return them (``contrastkit report --out``); only
        called for a task whose :attr:`plots_title` is set."""
        return []
