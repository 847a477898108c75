"""The task protocol and the engine that runs it.

A task (:class:`Task`) declares its name, the dataset kind it reads, the capabilities
its models need, its settings (:class:`TaskSettings`), how it scores a batch of items,
how it aggregates their records into its typed result (:class:`TaskResult`) and how it
renders that result; the engine (:func:`run_task`) does the rest for every task alike.
:func:`contrastkit.evaluators.tasks.registry.register_protocol_task` makes it a
``contrastkit evaluate`` command. The public
spelling of all this is :mod:`contrastkit.extend`.
"""

from contrastkit.evaluators.engine.protocol import (
    ImageRef,
    Item,
    RunConfig,
    RunContext,
    ScoreContext,
    Task,
    TaskResult,
    TaskSettings,
    setting,
    settings_fields,
)
from contrastkit.evaluators.engine.registration import check_task, read_task_result
from contrastkit.evaluators.engine.run import run_task, write_outputs
from contrastkit.evaluators.engine.settings import OptionDetails, option_details, shared_name

__all__ = [
    "ImageRef",
    "Item",
    "OptionDetails",
    "RunConfig",
    "RunContext",
    "ScoreContext",
    "Task",
    "TaskResult",
    "TaskSettings",
    "check_task",
    "option_details",
    "read_task_result",
    "run_task",
    "setting",
    "settings_fields",
    "shared_name",
    "write_outputs",
]
