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

from contrastkit.errors import ConfigError, DataFormatError
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
    ``task``'s, else ``None``.

    Raises:
        DataFormatError: a file of the task that does not fit its result class.
    """
    from contrastkit.records import read_json

    file = Path(path) / "benchmark.json" if Path(path).is_dir() else Path(path)
    if not file.is_file():
        return None
    try:
        data = read_json(file)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("task") != task.name:
        return None
    result = task.result.from_json(data, path=file)
    if not isinstance(result, Result):  # pragma: no cover - from_json returns cls
        raise DataFormatError(file, None, None, f"not a {task.name} result")
    return result
