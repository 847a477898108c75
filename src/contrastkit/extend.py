"""The public extension API: everything a plugin (or a notebook) needs to add a task, a
dataset kind, a model family or an editor family, from one module.

A task is written on the protocol (:class:`Task`): it declares its name, the dataset
kind it reads, the capabilities its models need, its settings (:class:`TaskSettings`,
one :func:`setting` per option), how it scores a batch of :class:`Item`, how it
aggregates the records into its typed :class:`TaskResult` (intervals from
:meth:`RunContext.mean_interval`) and how it renders it. The engine does the rest:
models, batches, images, resume, the bootstrap, ``benchmark.json`` (checked against the
result's schema), ``report.md``, figures, ``comparison.md`` and ``contrastkit report``.

Example:
    >>> from dataclasses import dataclass
    >>> from contrastkit import extend
    >>> @dataclass(frozen=True, kw_only=True)
    ... class CountResult(extend.TaskResult):
    ...     TASK = "count-images"
    ...     images_seen: int = 0
    >>> class CountImages(extend.Task):
    ...     name, kind, result = "count-images", "contrast", CountResult
    >>> CountImages.name
    'count-images'

A task that also defines the two harness hooks of :class:`HarnessTask` (``questions``:
its items as :class:`HarnessQuestion` values; ``answer_record``: the record its
aggregation takes for the option a model chose) is exported by ``contrastkit export
harness`` as a multiple-choice benchmark for VLMEvalKit or lmms-eval, and the harness's
answers come back through ``contrastkit report --harness-predictions`` as its typed
result (:mod:`contrastkit.evaluators.engine.harness`).

Register a task with :func:`register_task` (a plugin names the task instance in its
``pyproject.toml`` under ``[project.entry-points."contrastkit.tasks"]``); see
``docs/how-to/plugins.md`` for a whole task.
"""

from __future__ import annotations

from typing import Any

from contrastkit.curation.editor_families import EditorFamily, register_editor
from contrastkit.errors import ConfigError, ContrastkitError, DataFormatError
from contrastkit.evaluators.engine import (
    ImageRef,
    Item,
    OptionDetails,
    RunContext,
    Task,
    TaskResult,
    TaskSettings,
    setting,
)
from contrastkit.evaluators.engine.harness import HarnessQuestion, HarnessTask
from contrastkit.evaluators.tasks.registry import register_protocol_task
from contrastkit.kinds import DatasetKind, register_kind
from contrastkit.models.families import LoadContext, ModelFamily, register_model
from contrastkit.results.base import Node, Result, key
from contrastkit.results.common import Interval

__all__ = [
    "ConfigError",
    "ContrastkitError",
    "DataFormatError",
    "DatasetKind",
    "EditorFamily",
    "HarnessQuestion",
    "HarnessTask",
    "ImageRef",
    "Interval",
    "Item",
    "LoadContext",
    "ModelFamily",
    "Node",
    "OptionDetails",
    "Result",
    "RunContext",
    "Task",
    "TaskResult",
    "TaskSettings",
    "key",
    "register_editor",
    "register_kind",
    "register_model",
    "register_task",
    "setting",
]


def register_task(task: Task[Any, Any], *, replace_existing: bool = False) -> Task[Any, Any]:
    """Make ``task`` a ``contrastkit evaluate`` command (with its settings as options),
    a task ``contrastkit report`` compares and its result class one
    :func:`contrastkit.results.load_result` reads. Returns ``task``.

    Raises:
        ConfigError: an incomplete task (no name, kind or result class; a result class
            whose ``TASK`` is another name), or its name is taken and not
            ``replace_existing``.
    """
    register_protocol_task(task, replace_existing=replace_existing)
    return task
