"""The questions of a task written on the task protocol (:func:`task_set`), for
``contrastkit export harness`` of data of a kind no built-in export handles: the task
that reads the kind gives them through its harness hooks, and each becomes a
:class:`~contrastkit.builders.harness_questions.Question` like the built-in sets'.

The function that finds the task and asks it (:data:`TaskQuestions`:
:func:`contrastkit.evaluators.tasks.registry.task_questions`) is handed in by the
caller: it reads the task registry, which lives beside the evaluators, and the layer
contract keeps the builders and the evaluators from importing each other."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from contrastkit.builders.harness_questions import (
    ImageFinder,
    Question,
    QuestionSet,
    SkippedQuestion,
)
from contrastkit.errors import DataFormatError

__all__ = ["TaskQuestions", "task_set"]


def _const(value: Any) -> Callable[[], Any]:
    """A loader that returns ``value`` (an image source)."""
    return lambda: value


class _AskedItem(Protocol):
    """What the export reads of a task's item (an engine ``Item``; named by its shape:
    the builders do not import the evaluators)."""

    @property
    def key(self) -> str: ...

    @property
    def source(self) -> Path | None: ...

    @property
    def line(self) -> int | None: ...

    @property
    def data(self) -> Mapping[str, Any]: ...

    @property
    def name(self) -> str | None: ...

    @property
    def group(self) -> str: ...


class _AskedQuestion(Protocol):
    """What the export reads of a task's question (an engine ``HarnessQuestion``)."""

    @property
    def question(self) -> str: ...

    @property
    def options(self) -> Mapping[str, str]: ...

    @property
    def answer(self) -> str: ...

    @property
    def category(self) -> str: ...

    @property
    def l2_category(self) -> str: ...

    @property
    def image(self) -> Any: ...


#: The function that gives the questions of the registered task with the harness hooks
#: that reads a kind (:func:`contrastkit.evaluators.tasks.registry.task_questions`):
#: ``function(kind, paths) -> (task name, [(item, question), ...])``, or ``None`` when
#: no such task is registered.
TaskQuestions = Callable[
    [str, Sequence[Path]], tuple[str, Sequence[tuple[_AskedItem, _AskedQuestion]]] | None
]


def _task_image(
    item: _AskedItem, ref: Any, images: ImageFinder
) -> tuple[Callable[[], Any] | None, str, str | None]:
    """(loader or ``None``, image id, why not available) of a task question's image: a
    path or URL read as :meth:`ImageFinder.locate` reads it (a relative path from the
    item's data folder), anything else (bytes, an image, a function) as given."""
    if not isinstance(ref, str | Path):
        return _const(ref), f"item {item.key}", None
    source = Path(item.source) if item.source is not None else Path.cwd()
    base = source if source.is_dir() else source.parent
    file, why = images.locate(str(ref), base, (source, item.line, "image"))
    return (None, str(ref), why) if file is None else (_const(file), str(file), None)


def _task_question(item: _AskedItem, question: _AskedQuestion, loader: Callable[[], Any],
                   image_id: str) -> Question:  # fmt: skip
    return Question(
        row=item.key,
        question=question.question,
        options=tuple((str(text), label) for label, text in question.options.items()),
        answer=question.answer,
        category=question.category,
        l2_category=question.l2_category,
        image_id=image_id,
        image=loader,
        annotations={
            "item": {
                "key": item.key,
                "data": dict(item.data),
                "name": item.name,
                "group": item.group,
            },
        },
    )


def task_set(
    kind: str,
    paths: Sequence[Path],
    images: ImageFinder,
    skip_missing: bool,
    questions_of: TaskQuestions | None = None,
) -> QuestionSet | None:
    """The questions of the registered task with the harness hooks that reads ``kind``,
    as ``questions_of`` gives them (:data:`TaskQuestions`), one per item it asks; ``None``
    when no such task is registered, or without ``questions_of``. Each key item's
    ``annotations`` keep the item (its key, ``data``, name and group), so the answers
    read back without the data."""
    found = None if questions_of is None else questions_of(kind, paths)
    if found is None:
        return None
    name, pairs = found
    questions: list[Question] = []
    skipped: list[SkippedQuestion] = []
    for item, question in pairs:
        loader, image_id, why = _task_image(item, question.image, images)
        if loader is None:
            reason = why or "image not available"
            if not skip_missing:
                raise DataFormatError(
                    item.source or paths[0], item.line, "image",
                    f"{reason}; pass --store DIR holding it, or --skip-missing to leave such "
                    "rows out (they are listed in the export's README and key)",
                )  # fmt: skip
            skipped.append({"row": item.name or item.key, "url": image_id, "reason": reason})
            continue
        questions.append(_task_question(item, question, loader, image_id))
    example = f" (e.g. {questions[0].question!r})" if questions else ""
    return QuestionSet(
        kind,
        questions,
        skipped,
        f"the questions of task {name}{example}; the answer is the option the task deems "
        "right, and the task aggregates the chosen options into its own result",
        task=name,
    )
