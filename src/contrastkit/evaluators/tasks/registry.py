"""The evaluation tasks as a registry: what ``contrastkit evaluate`` runs on each kind of
data and what ``contrastkit report`` puts side by side.

A :class:`Task` names, as import paths (so this table imports nothing heavy), the
functions that run it on a config (:class:`~contrastkit.evaluators.evaluation.
EvaluateConfig`), recognise and read its ``benchmark.json``, make its console headline,
and compare several results (markdown, and plots). :func:`contrastkit.evaluators.job.
evaluate` and :func:`~contrastkit.evaluators.job.compare_results` are one loop over this
table. A task reads one dataset kind (:mod:`contrastkit.kinds`).

Other packages add tasks through the ``contrastkit.tasks`` entry point group (a
:class:`Task` or an iterable of them), with the dataset kind they read through
``contrastkit.kinds``:

.. code-block:: toml

    [project.entry-points."contrastkit.tasks"]
    mytask = "my_package.contrastkit_plugin:TASK"
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.errors import ConfigError
from contrastkit.plugins import is_import_path, resolve
from contrastkit.registry import Registry

if TYPE_CHECKING:
    from contrastkit.evaluators.engine.harness import HarnessQuestion
    from contrastkit.evaluators.engine.protocol import Item, RunConfig
    from contrastkit.evaluators.engine.protocol import Task as ProtocolTask
    from contrastkit.evaluators.outcome import EvaluateResult
    from contrastkit.interfaces import ProgressFactory

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "OPTION_GROUPS",
    "REGISTRY",
    "Task",
    "built_in_rows",
    "folder_protocol_tasks",
    "folder_tasks",
    "harness_task",
    "harness_tasks",
    "read_result",
    "register_protocol_task",
    "register_task",
    "task_for_data",
    "task_questions",
    "task_row",
    "tasks",
]

#: The entry point group third-party packages add tasks through.
ENTRY_POINT_GROUP = "contrastkit.tasks"

#: The option groups a task's ``contrastkit evaluate TASK`` command may offer besides
#: the ones every task command has (``--data``, ``--model``, ``--split``, ``--out``,
#: ``--json`` and the model's runtime: ``--device``, ``--dtype``, ``--batch-size``,
#: ``--workers``, ``--decode``, ``--allow-download``), each setting part of
#: :class:`~contrastkit.evaluators.evaluation.EvaluateConfig`:
OPTION_GROUPS: dict[str, str] = {
    "images": "--store, --fetch, --skip-missing: where image URLs are read from",
    "network": "--concurrency, --timeout, --retries, --allow-private, --allow-network, "
    "--resolve: how --fetch fetches URLs",
    "retrieval": "--k: the retrieval cut-offs",
    "visogender": "--only, --neutral, --ndkl-k, --flipped-retrieval, --protocol, "
    "--subsample-k, --subsample-runs, --baseline-runs: VisoGender's analyses",
    "bootstrap": "--bootstrap, --confidence, --seed: the intervals",
    # deprecated (one release): the contrast and decisions tasks' own options now come
    # from their settings classes; a plugin task naming these groups still gets them
    "contrast": "--contrast-metrics: what a contrast set gets (deprecated)",
    "decisions": "--decision-scoring, --questions: how decision probes are asked and scored "
    "(deprecated)",
}


@dataclass(frozen=True)
class Task:
    """One evaluation task.

    Attributes:
        name: what results record as their task (``visogender``, ``contrast`` ...).
        kind: the :mod:`contrastkit.kinds` dataset kind it reads (``None``: no data is
            evaluated under it; its results come from elsewhere, like a harness's
            answers).
        run: ``function(config, paths, progress) -> EvaluateResult``.
        read: ``function(path) -> results or None``: a ``benchmark.json`` (or the
            folder holding one) of this task, ``None`` for another task's. Used for a
            task whose results :mod:`contrastkit.results` does not know (a plugin's);
            the others are read by :func:`contrastkit.results.load_result`, by the
            ``task`` field their files record (:attr:`result_tasks`).
        headline: ``function(results) -> dict``: the console headline.
        compare: ``function(list of results) -> str``: the side-by-side markdown.
        compare_plots: ``function(list of results, folder, stem) -> list of paths``:
            the side-by-side plots (``None``: none).
        plots_title: what the comparison's plot section is called.
        listed_last: its results come after every other task's in a comparison.
        result_tasks: the ``task`` values of the :mod:`contrastkit.results` trees
            this task's files read as.
        options: the option groups (:data:`OPTION_GROUPS`) its ``contrastkit evaluate
            NAME`` command offers besides the ones every task command has; the
            settings they do not offer keep their defaults.
        source: the distribution that registered it.
        settings: a task written on the protocol (:mod:`contrastkit.evaluators.engine`):
            its settings class, whose fields are the options of ``contrastkit evaluate
            NAME`` (besides :attr:`options`).
        protocol: that task itself (``None`` for the tasks that run their own loop).

    Every function is the function itself or its import path, ``"module:function"``
    (imported when first called; what the built-in rows use, so that this table imports
    nothing heavy).
    """

    name: str
    kind: str | None
    run: str | Callable[..., Any] | None
    read: str | Callable[..., Any]
    headline: str | Callable[..., Any]
    compare: str | Callable[..., Any]
    compare_plots: str | Callable[..., Any] | None = None
    plots_title: str = "the models side by side"
    listed_last: bool = False
    result_tasks: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    source: str = "contrastkit"
    settings: type | None = None
    protocol: object | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(self.options))
        unknown = [name for name in self.options if name not in OPTION_GROUPS]
        if unknown:
            raise ConfigError(
                f"task {self.name!r}: options {', '.join(map(repr, unknown))} are no option "
                f"group; use some of {', '.join(OPTION_GROUPS)}"
            )
        for field_name in ("run", "read", "headline", "compare", "compare_plots"):
            path = getattr(self, field_name)
            if path is not None and not callable(path) and not is_import_path(path):
                raise ConfigError(
                    f"task {self.name!r}: {field_name} must be a function or "
                    f"'module:function', not {path!r}"
                )

    def function(self, field_name: str) -> Callable[..., Any]:
        """One of the task's functions (imported, when given as an import path)."""
        path = getattr(self, field_name)
        if path is None:
            raise ConfigError(f"task {self.name!r} has no {field_name} function")
        if callable(path):
            return path  # type: ignore[no-any-return]
        return resolve(path, f"task {self.name!r} ({self.source})")

    def evaluate(
        self, config: RunConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
    ) -> EvaluateResult:
        """Run the task on ``paths``."""
        return self.function("run")(config, paths, progress)  # type: ignore[no-any-return]


_E = "contrastkit.evaluators"

#: The built-in tasks, in the order a comparison shows them.
BUILT_IN: tuple[Task, ...] = (
    Task(
        "visogender", "visogender", f"{_E}.tasks.visogender.evaluate:evaluate_visogender",
        read=f"{_E}.tasks.visogender.benchmark:read_visogender_benchmark",
        headline=f"{_E}.tasks.visogender.benchmark:headline",
        compare=f"{_E}.tasks.visogender.report:comparison_markdown",
        compare_plots=f"{_E}.tasks.visogender.comparison_plots:write_comparison_plots",
        result_tasks=("visogender",),
        options=("images", "network", "visogender", "retrieval", "bootstrap"),
    ),
    Task(  # its place in the order: the task folder tasks/contrast_sets/ replaces it
        "contrast", "contrast", f"{_E}.tasks.contrast_sets.task:evaluate_contrast_sets",
        read=f"{_E}.tasks.contrast_sets.report:read_contrast_benchmark",
        headline=f"{_E}.tasks.contrast_sets.report:contrast_headline",
        compare=f"{_E}.report.markdown:contrast_comparison_markdown",
        compare_plots=f"{_E}.report.plots:write_contrast_comparison_plots",
        plots_title="original vs balanced vs contrast set", result_tasks=("contrast",),
        options=("contrast", "retrieval", "bootstrap"),
    ),
    Task(  # its place in the order: the task folder tasks/decision_probes/ replaces it
        "decisions", "contrast", f"{_E}.tasks.decision_probes.task:evaluate_decisions",
        read=f"{_E}.tasks.decision_probes.report:read_decisions_benchmark",
        headline=f"{_E}.tasks.decision_probes.report:decisions_headline",
        compare=f"{_E}.tasks.decision_probes.report:decisions_comparison_markdown",
        result_tasks=("decisions",), options=("decisions", "bootstrap"),
    ),
    Task(  # reads its disparity.json itself (result_tasks empty): typed, not a benchmark
        "zero-shot", "zero-shot", f"{_E}.tasks.zero_shot.task:evaluate_zero_shot",
        read=f"{_E}.tasks.zero_shot.task:read_zero_shot_result",
        headline=f"{_E}.tasks.zero_shot.comparison:zero_shot_headline",
        compare=f"{_E}.tasks.zero_shot.comparison:zero_shot_comparison_markdown",
    ),
    Task(
        "harness", None, None,
        read=f"{_E}.harness:read_harness_results",
        headline=f"{_E}.harness:harness_headline",
        compare=f"{_E}.harness:harness_comparison_markdown",
        listed_last=True, result_tasks=("harness-contrast",),
    ),
)  # fmt: skip

#: The registry of evaluation tasks (:class:`~contrastkit.registry.Registry`): the
#: built-in ones, then those of installed plugins, then those of :func:`register_task`.
REGISTRY: Registry[Task] = Registry(
    "task", ENTRY_POINT_GROUP, Task, lambda one: one.name, BUILT_IN,
    discover=lambda: folder_tasks(), adapt=lambda one: _as_row(one),
)  # fmt: skip


def _as_row(declared: object) -> object:
    """What a ``contrastkit.tasks`` entry point gives, as a registry row: a task written
    on the protocol becomes its row (:func:`task_row`; its result class registered);
    anything else is checked as given."""
    from contrastkit.evaluators.engine.protocol import Task as ProtocolTask
    from contrastkit.results.base import register_result

    if isinstance(declared, ProtocolTask):
        row = task_row(declared)
        with contextlib.suppress(ConfigError):  # a taken name: the row's conflict says so
            register_result(declared.name, declared.result)
        return row
    return declared


def register_task(task: Task, *, replace_existing: bool = False) -> Task:
    """Add an evaluation task (what the ``contrastkit.tasks`` entry points do).

    Raises:
        ConfigError: its name is taken and ``replace_existing`` is false.
    """
    return REGISTRY.register(task, replace_existing=replace_existing)


def folder_protocol_tasks() -> tuple[ProtocolTask[Any, Any], ...]:
    """The ``TASK`` of each built-in task folder of this package (every sub-package whose
    ``__init__`` defines one), in name order: imported, not registered."""
    import importlib
    import pkgutil

    from contrastkit.evaluators import tasks as package

    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        if info.ispkg:
            module = importlib.import_module(f"{__package__}.{info.name}")
            task = getattr(module, "TASK", None)
            if task is not None:
                found.append(task)
    return tuple(found)


def folder_tasks() -> tuple[Task, ...]:
    """The built-in tasks written as a folder of this package on the task protocol
    (:mod:`contrastkit.evaluators.engine`): every sub-package whose ``__init__`` defines
    ``TASK``, in name order, registered as registry rows (a folder's row replacing the
    :data:`BUILT_IN` row of its name). A new task is a new folder here and no edit
    elsewhere."""
    return tuple(
        register_protocol_task(task, replace_existing=True) for task in folder_protocol_tasks()
    )


def built_in_rows() -> tuple[Task, ...]:
    """The rows of :data:`BUILT_IN` as the registry holds them: where a task folder's
    ``TASK`` replaces the row of its name, that task's row (:func:`task_row`). Nothing is
    registered and no plugin is read (``contrastkit evaluate`` makes its built-in task
    commands from these)."""
    folders = {task.name: task_row(task) for task in folder_protocol_tasks()}
    return tuple(folders.get(row.name, row) for row in BUILT_IN)


def task_row(task: ProtocolTask[Any, Any], source: str = "contrastkit") -> Task:
    """The registry row of ``task``: the engine runs it, its result class reads it."""
    from contrastkit.evaluators.engine.registration import check_task, read_task_result

    check_task(task)

    def run(
        config: RunConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
    ) -> EvaluateResult:
        from contrastkit.evaluators.engine.run import run_task

        return run_task(task, config, paths, progress)

    def read(path: Path) -> Any:
        return read_task_result(task, path)

    def compare(results: Sequence[Any]) -> str:
        return task.compare(results)

    def compare_plots(results: Sequence[Any], folder: Path, stem: str) -> list[Path]:
        return task.compare_plots(results, folder, stem)

    plotted = task.plots_title is not None
    return Task(
        task.name, task.kind, run, read=read, headline=task.headline, compare=compare,
        compare_plots=compare_plots if plotted else None,
        plots_title=task.plots_title or "the models side by side",
        result_tasks=(task.name,), options=task.options, source=source,
        settings=task.settings, protocol=task,
    )  # fmt: skip


def register_protocol_task(
    task: ProtocolTask[Any, Any], *, source: str = "contrastkit", replace_existing: bool = False
) -> Task:
    """Register ``task`` and its result class; return its registry row.

    Raises:
        ConfigError: an incomplete task, or its name is taken (and not
            ``replace_existing``).
    """
    from contrastkit.results.base import register_result

    row = register_task(task_row(task, source), replace_existing=replace_existing)
    register_result(task.name, task.result, replace_existing=replace_existing)
    return row


def tasks() -> dict[str, Task]:
    """Every registered task by name: the built-in ones (those of :data:`BUILT_IN`, then
    the task folders, :func:`folder_tasks`), then plugins'."""
    return REGISTRY.all()


def task_for_data(paths: Sequence[Path], asked: str | None = None) -> Task:
    """The task that evaluates ``paths``: ``asked`` (``EvaluateConfig.task``) if given,
    else the one that reads their dataset kind (:func:`contrastkit.kinds.detect_kinds`).

    Raises:
        ConfigError: data of several kinds; data ``asked`` cannot read; a kind no task
            evaluates.
    """
    from contrastkit.kinds import detect_kind, detect_kinds, kinds

    registered = tasks()
    if asked is not None:
        task = registered.get(asked)
        if task is None or task.run is None:
            runnable = [name for name, t in registered.items() if t.run is not None]
            raise ConfigError(f"task: {asked!r} is not one of {', '.join(runnable)}")
        wanted = kinds().get(task.kind or "")
        other = [str(path) for path in paths if detect_kind(path) != wanted]
        if other and wanted is not None:
            raise ConfigError(
                f"task {asked} needs {wanted.plural}; not {wanted.title.removeprefix('a ')}: "
                + ", ".join(other)
            )
        REGISTRY.check(task.name)
        return task
    kind = detect_kinds(paths)
    for task in registered.values():
        if task.kind == kind.name and task.run is not None:
            REGISTRY.check(task.name)
            return task
    raise ConfigError(
        f"data: {', '.join(map(str, paths))} is {kind.title}, which `contrastkit evaluate` "
        + (f"reads with --task {kind.task}" if kind.task else "has no task for")
    )


def read_result(path: Path) -> tuple[Task, Any]:
    """The task whose results file ``path`` is (a ``benchmark.json``, a contrast set's
    ``harness_results.json``, a zero-shot ``disparity.json``, or the folder holding
    one), and its results: a task that reads its own files (a plugin's, a task folder's,
    zero-shot's: typed results) if one recognises it, else the file's recorded ``task``
    (:func:`contrastkit.evaluators.report.results.read_benchmark`, one reader for the
    other built-in tasks).

    Raises:
        DataFormatError: a missing or malformed file, an unknown task, or a result that
            is no evaluation's (an audit).
    """
    from contrastkit.evaluators.report.results import read_benchmark
    from contrastkit.results import VisoGenderResult

    registered = list(tasks().values())
    for task in registered:
        if not task.result_tasks:
            results = task.function("read")(path)
            if results is not None:
                REGISTRY.check(task.name)
                return task, results
    typed = read_benchmark(path)
    for task in registered:
        if typed.task in task.result_tasks:
            REGISTRY.check(task.name)
            if task.protocol is not None:  # a protocol task's functions take its typed result
                return task, typed
            data = typed.to_json()
            return task, data[typed.name] if isinstance(typed, VisoGenderResult) else data
    raise ConfigError(f"{path}: no registered task reads {typed.task!r} results")


def harness_tasks() -> dict[str, ProtocolTask[Any, Any]]:
    """The registered tasks written on the protocol that have the harness hooks
    (:class:`~contrastkit.evaluators.engine.harness.HarnessTask`), by name."""
    from contrastkit.evaluators.engine.harness import HarnessTask
    from contrastkit.evaluators.engine.protocol import Task as ProtocolTask

    found: dict[str, ProtocolTask[Any, Any]] = {}
    for name, row in tasks().items():
        task = row.protocol
        if isinstance(task, ProtocolTask) and isinstance(task, HarnessTask):
            found[name] = task
    return found


def harness_task(kind: str) -> ProtocolTask[Any, Any] | None:
    """The first registered task with the harness hooks that reads the dataset kind
    ``kind``, or ``None``."""
    return next((task for task in harness_tasks().values() if task.kind == kind), None)


def task_questions(
    kind: str, paths: Sequence[Path]
) -> tuple[str, list[tuple[Item, HarnessQuestion]]] | None:
    """The name of the task with the harness hooks that reads ``kind`` and its questions
    of ``paths`` (:func:`~contrastkit.evaluators.engine.harness.questions_of`), or
    ``None`` when no such task is registered (what ``contrastkit export harness`` asks
    for data of a kind no built-in export handles).

    Raises:
        DataFormatError: data the task cannot read.
        ValueError: a question of no item, two of one item, or not a ``HarnessQuestion``.
    """
    from contrastkit.evaluators.engine.harness import questions_of

    task = harness_task(kind)
    return None if task is None else (task.name, questions_of(task, paths))
