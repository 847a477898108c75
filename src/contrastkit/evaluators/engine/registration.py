"""What the task registry (:mod:`contrastkit.evaluators.tasks.registry`, which sits
above the engine) needs of a protocol :class:`~contrastkit.evaluators.engine.protocol.
Task`: :func:`check_task` refuses an incomplete declaration, :func:`read_task_result`
reads its typed result back. The registry's :func:`~contrastkit.evaluators.tasks.
registry.task_row` makes the row whose run is :func:`~contrastkit.evaluators.engine.run.
run_task`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import Task, TaskSettings
from contrastkit.results.base import Result

__all__ = ["check_task", "read_task_result"]


def check_task(task: Task[Any, Any]) -> None:
    """Refuse a task whose declaration is incomplete, naming what is missing.

    Raises:
        ConfigError: no name, kind or result class; settings or result of the wrong base.
    """
    where = type(task).__name__
    for attribute in ("name", "kind", "result"):
        if not getattr(task, attribute, None):
            raise ConfigError(f"task {where}: set its {attribute!r} class attribute")
    if not (isinstance(task.settings, type) and issubclass(task.settings, TaskSettings)):
        raise ConfigError(f"task {task.name}: settings must be a TaskSettings subclass")
    if not (isinstance(task.result, type) and issubclass(task.result, Result)):
        raise ConfigError(f"task {task.name}: result must be a TaskResult (or Result) subclass")
    if task.name != task.result.TASK:
        raise ConfigError(
            f"task {task.name}: its result class {task.result.__name__} has TASK = "
            f"{task.result.TASK!r}; set it to {task.name!r}"
        )


def read_task_result(task: Task[Any, Any], path: Path) -> Result | None:
    """The typed result in ``path`` (a ``benchmark.json`` or its folder) when it is
    ``task``'s, else ``None`` (read by
    :func:`~contrastkit.evaluators.report.results.read_task_benchmark`, the reader every
    task's files go through).

    Raises:
        DataFormatError: no such file, not a JSON object, or a file of the task that
            does not fit its result class.
    """
    from contrastkit.evaluators.report.results import read_task_benchmark

    found = read_task_benchmark(path, task.name)
    if found is None:
        return None
    file, data = found
    result: Result = task.result.from_json(data, path=file)
    return result
