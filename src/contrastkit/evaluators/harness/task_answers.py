"""A harness's answers to the export of a task written on the task protocol, read back as
the task's own typed result (:mod:`contrastkit.evaluators.engine.harness`): each
answered item of the main split becomes the record the task's ``answer_record`` makes of
the chosen option, the task aggregates them with the report's bootstrap settings, and
the engine's writer writes ``benchmark.json`` (checked against the result's schema),
``report.md`` and the figures, as ``contrastkit evaluate`` does; ``report.md`` ends with
the harness section (counts, position bias, the reversed options)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.bootstrap import BootstrapSettings
from contrastkit.evaluators.engine.harness import aggregate_answers, answer_records
from contrastkit.evaluators.engine.protocol import Item, RunContext, Task
from contrastkit.evaluators.engine.run import write_outputs
from contrastkit.evaluators.harness.config import (
    HarnessReportConfig,
    HarnessSection,
    report_weights_note,
)
from contrastkit.evaluators.harness.markdown import harness_markdown
from contrastkit.evaluators.raw import dumps_jsonl
from contrastkit.evaluators.tasks.registry import harness_tasks
from contrastkit.harness_key import HarnessKey, KeyItem
from contrastkit.io import atomic_write_text

__all__ = ["SECTION_FILE", "registered_task", "task_outputs"]

#: The harness section of a task's read-back (counts, position bias, reversed options),
#: beside its ``benchmark.json`` (whose layout is the task's result's alone).
SECTION_FILE = "harness_answers.json"


def _item(export: Path, key_item: KeyItem) -> Item:
    """The task's item of a key item (its ``annotations.item``, kept by the export)."""
    kept = key_item.annotations.get("item")
    if not isinstance(kept, Mapping) or not isinstance(kept.get("key"), str):
        raise DataFormatError(
            export, None, f"items[index={key_item.index}].annotations.item",
            "the item of a task's question is missing from the harness key",
        )  # fmt: skip
    return Item(
        key=kept["key"], images={}, data=dict(kept.get("data") or {}),
        name=kept.get("name"), group=str(kept.get("group") or ""),
    )  # fmt: skip


def registered_task(export: Path, key: HarnessKey) -> Task[Any, Any]:
    """The registered task with the harness hooks whose questions the export of ``key``
    holds (:attr:`~contrastkit.harness_key.HarnessKey.task`).

    Raises:
        ConfigError: no such task is registered (the plugin that provides it is not
            installed), or it has no harness hooks.
    """
    task = harness_tasks().get(str(key.task))
    if task is None:
        raise ConfigError(
            f"{export}: the export holds questions of task {key.task}, which is not "
            "registered with its harness hooks (is the plugin that provides it installed?)"
        )
    return task


def task_outputs(
    config: HarnessReportConfig,
    key: HarnessKey,
    chosen: Mapping[int, str | None],
    model: str,
    section: HarnessSection,
) -> tuple[Path, str]:
    """Write the typed result of the task of ``key`` (:func:`registered_task`) from the
    main split's parsed answers ``chosen`` (index -> letter) into ``config.out``; return
    the ``benchmark.json`` and the report's text.

    Raises:
        ConfigError: as :func:`registered_task`.
        DataFormatError: a key item without its task item.
        TypeError: the task's result does not fit its schema.
    """
    task = registered_task(config.export, key)
    answered = [
        (_item(config.export, item), item.labels[letter])
        for item in key.items
        if item.split == "main" and (letter := chosen.get(item.index)) is not None
    ]
    boot = BootstrapSettings(config.bootstrap, config.confidence, config.seed)
    context = RunContext(
        model, task.settings(), boot, tuple(item for item, _ in answered), (str(config.export),)
    )
    note = report_weights_note(model, key)
    stamp = {"weights_note": note, "skipped_rows": tuple(dict(row) for row in key.skipped)}
    records = answer_records(task, answered, model)
    result = aggregate_answers(task, records, context, stamp)
    files = write_outputs(task, result, config.out)
    chosen_labels = [
        {**record, "chosen": label} for record, (_, label) in zip(records, answered, strict=True)
    ]
    atomic_write_text(config.out / task.raw_file, dumps_jsonl(chosen_labels))
    report = files.get("report", config.out / "report.md")
    markdown = report.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    markdown += "\n".join(harness_markdown(section)).rstrip() + "\n"
    atomic_write_text(report, markdown)
    from contrastkit.evaluators.report.results import jsonable

    answers = {"task": key.task, "model": model, "harness": jsonable(section)}
    atomic_write_text(config.out / SECTION_FILE, json.dumps(answers, indent=2) + "\n")
    return files.get("benchmark", config.out / "benchmark.json"), markdown
