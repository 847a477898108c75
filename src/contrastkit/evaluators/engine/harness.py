"""The optional harness hooks of a task: its items asked as multiple-choice questions of
an evaluation harness (VLMEvalKit, lmms-eval), and the harness's answers read back as
the task's own typed result.

A task written on the protocol (:class:`~contrastkit.evaluators.engine.protocol.Task`)
that also defines the two methods of :class:`HarnessTask` can be exported with
``contrastkit export harness DATA --format lmms-eval|vlmevalkit`` (``DATA`` of the task's
dataset kind) and read back with ``contrastkit report --harness-predictions FILE
--harness-set EXPORT --out DIR``, with no line of contrastkit changed:

* :meth:`HarnessTask.questions` turns the task's items (:meth:`Task.items`, the task's
  default settings) into :class:`HarnessQuestion` values: one per item, its image, its
  question, its options by label and the right label. The export shuffles the options
  per item, writes them in the harness's format (and, by default, a second time with the
  options reversed) and keeps in its key what each letter means and each item's ``data``.
* :meth:`HarnessTask.answer_record` turns the label a model chose for an item into the
  record the task's :meth:`Task.aggregate` takes (what :meth:`Task.score` gives for an
  item). Answers that name no option (unparseable) or are missing are left out and
  counted, as for the built-in sets; the main split's records are aggregated with the
  report's bootstrap settings, and the typed result is written by the engine's writer
  (:func:`contrastkit.evaluators.engine.run.write_outputs`: ``benchmark.json`` checked
  against the result's schema, ``report.md`` with the harness section, the figures),
  which ``contrastkit report`` reads as an ``evaluate`` result.

Example (the example plugin's caption-preference task, ``tests/plugin_example``)::

    def questions(self, items, settings):
        return [extend.HarnessQuestion(
            key=item.key, image=item.images["image"],
            question="Which caption describes the image?",
            options={"masculine": item.data["masculine"], "feminine": item.data["feminine"]},
            answer="masculine", category="caption-pairs",
        ) for item in items]

    def answer_record(self, item, chosen):
        return {"masculine": float(chosen == "masculine"),
                "feminine": float(chosen == "feminine")}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from contrastkit.evaluators.engine.protocol import (
    ImageRef,
    Item,
    RunContext,
    Task,
    TaskResult,
    TaskSettings,
)
from contrastkit.moved import moved_names

if TYPE_CHECKING:
    from contrastkit.results.base import Result

__all__ = [
    "MAX_OPTIONS",
    "HarnessQuestion",
    "HarnessTask",
    "aggregate_answers",
    "answer_records",
    "questions_of",
]

#: The most options a question may have (the harnesses' letters ``A``..``D``).
MAX_OPTIONS = 4


@dataclass(frozen=True)
class HarnessQuestion:
    """One item of a task asked as a multiple-choice question.

    Attributes:
        key: the key of the item it asks about (:attr:`Item.key`); one question per item.
        image: the image shown (an :data:`~contrastkit.evaluators.engine.protocol.
            ImageRef`: a relative path is read from the item's data folder, as the
            engine reads it).
        question: the question's text.
        options: label -> option text, in a canonical order (the export shuffles it per
            item); 2 to :data:`MAX_OPTIONS` options with distinct texts.
        answer: the label of the right option (a harness's accuracy is the share of
            answers that choose it).
        category: the harness's ``category`` column.
        l2_category: its ``l2-category`` column.

    Raises:
        ValueError: too few or too many options, repeated texts, or an answer that is no
            option's label.
    """

    key: str
    image: ImageRef
    question: str
    options: Mapping[str, str]
    answer: str
    category: str = ""
    l2_category: str = ""

    def __post_init__(self) -> None:
        texts = [str(text) for text in self.options.values()]
        if not 2 <= len(texts) <= MAX_OPTIONS:
            raise ValueError(
                f"harness question {self.key!r}: needs 2 to {MAX_OPTIONS} options, not {len(texts)}"
            )
        if len(set(texts)) < len(texts) or not all(text.strip() for text in texts):
            raise ValueError(f"harness question {self.key!r}: its option texts must differ")
        if self.answer not in self.options:
            raise ValueError(
                f"harness question {self.key!r}: answer {self.answer!r} is not one of the "
                f"option labels {', '.join(self.options)}"
            )


@runtime_checkable
class HarnessTask(Protocol):
    """The two methods a task defines to be exported to a harness and read back (the
    module docstring)."""

    def questions(self, items: Sequence[Item], settings: Any) -> Sequence[HarnessQuestion]:
        """The questions of ``items`` (the task's items, in order): at most one per item,
        keyed by the item's key; an item without one is not asked."""
        ...

    def answer_record(self, item: Item, chosen: str) -> Mapping[str, Any]:
        """The record :meth:`Task.aggregate` takes for ``item`` answered with the option
        labelled ``chosen`` (unparseable answers are left out before this is called)."""
        ...


def questions_of(task: Task[Any, Any], paths: Sequence[Path]) -> list[tuple[Item, HarnessQuestion]]:
    """The questions of ``task`` (a task with the harness hooks) on ``paths``, each with
    its item (the task's default settings).

    Raises:
        DataFormatError: data the task cannot read (its :meth:`Task.items`).
        ValueError: a task without the harness hooks; a question of no item, two of one
            item, or not a :class:`HarnessQuestion`.
    """
    if not isinstance(task, HarnessTask):
        raise ValueError(f"task {task.name} has no harness hooks (questions, answer_record)")
    settings = task.settings()
    items = list(task.items(paths, settings, None))
    by_key = {item.key: item for item in items}
    found: list[tuple[Item, HarnessQuestion]] = []
    asked: set[str] = set()
    for question in task.questions(items, settings):
        if not isinstance(question, HarnessQuestion):
            raise ValueError(
                f"task {task.name}: questions() gave {type(question).__name__}, not a "
                "HarnessQuestion"
            )
        if question.key not in by_key or question.key in asked:
            why = "no item has" if question.key not in by_key else "two questions have"
            raise ValueError(f"task {task.name}: {why} the key {question.key!r}")
        asked.add(question.key)
        found.append((by_key[question.key], question))
    return found


#: Finding the registered tasks with the harness hooks is the task registry's: the old
#: names here.
__getattr__ = moved_names(
    __name__,
    dict.fromkeys(
        ("harness_tasks", "harness_task", "task_questions"),
        "contrastkit.evaluators.tasks.registry",
    ),
)


def answer_records(
    task: Task[Any, Any], answered: Sequence[tuple[Item, str]], model: str
) -> list[dict[str, Any]]:
    """The records of a harness's answers: each ``(item, chosen label)`` made a record by
    :meth:`HarnessTask.answer_record`, with the item's ``key`` and the ``model`` (as the
    engine keeps a scored item's record).

    Raises:
        TypeError: the task lacks the hooks.
    """
    if not isinstance(task, HarnessTask):
        raise TypeError(f"task {task.name} has no harness hooks (questions, answer_record)")
    return [
        {**task.answer_record(item, chosen), "key": item.key, "model": model}
        for item, chosen in answered
    ]


def aggregate_answers(
    task: Task[Any, Any],
    records: Sequence[Mapping[str, Any]],
    context: RunContext[Any],
    stamp: Mapping[str, Any],
) -> Result:
    """The typed result of ``task`` from the records of a harness's answers
    (:func:`answer_records`), aggregated with ``context`` (whose ``items`` are the
    answered items); a :class:`TaskResult` gets the common fields the engine fills in
    for ``evaluate`` (``stamp`` adds or overrides some: ``weights_note``,
    ``skipped_rows``).

    Raises:
        TypeError: the task's aggregate gave another result class.
    """
    result = task.aggregate(records, context)
    if not isinstance(result, task.result):
        raise TypeError(
            f"task {task.name}: aggregate() gave {type(result).__name__}, not "
            f"{task.result.__name__}"
        )
    if not isinstance(result, TaskResult):
        return result
    from contrastkit import __version__

    settings: TaskSettings = context.settings
    boot = context.bootstrap
    fields = {
        "task": task.name, "model": context.model, "data": tuple(context.data),
        "items": len(context.items), "contrastkit_version": __version__,
        "bootstrap": boot.resamples, "confidence": boot.confidence, "seed": boot.seed,
        "settings": settings.as_json(),
        "random_weights": stamp.get("weights_note") is not None, **stamp,
    }  # fmt: skip
    return dataclasses.replace(result, **fields)
