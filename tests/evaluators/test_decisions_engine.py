"""The decisions task on the task engine: its folder takes the built-in row's place, its
settings are the shared options, and the engine's hooks that read a run's records
(scored and reused counts, the notes of what was not reused, the figures) default to
what the result alone gives for a task that does not override them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from contrast_data import contrast_export
from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import Task, TaskSettings
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.evaluators.tasks.decision_probes import TASK, DecisionProbes, DecisionSettings
from contrastkit.evaluators.tasks.decision_probes.task import DECISIONS
from contrastkit.evaluators.tasks.registry import tasks
from contrastkit.results.base import Result


def test_the_folder_is_the_registered_decisions_task_in_the_built_in_place() -> None:
    assert TASK is DECISIONS and isinstance(TASK, DecisionProbes)
    registered = tasks()
    row = registered["decisions"]
    assert row.protocol is DECISIONS and row.kind == "contrast"
    assert row.options == ("bootstrap",) and row.settings is DecisionSettings
    names = list(registered)
    # after contrast, which reads the same kind (data of that kind still goes there)
    assert names.index("contrast") < names.index("decisions") < names.index("zero-shot")


def test_its_settings_are_its_own_and_the_deprecated_fields_still_give_them(
    tmp_path: Path,
) -> None:
    questions = tmp_path / "q.yaml"
    given = DecisionSettings(scoring="generate", questions=str(questions))  # type: ignore[arg-type]
    assert given.questions == questions and given.modes == ("generate",)
    config = EvaluateConfig(
        data=("x",), models=("vlm:a/b",), out=tmp_path, task="decisions", task_settings=given
    )
    assert DECISIONS.settings_of(config) is given
    default = EvaluateConfig(data=("x",), models=("vlm:a/b",), out=tmp_path)
    assert DECISIONS.settings_of(default).modes == ("logprob", "generate")
    with (
        pytest.warns(DeprecationWarning, match="decision_scoring is deprecated"),
        pytest.warns(DeprecationWarning, match="questions is deprecated"),
    ):
        old = EvaluateConfig(
            data=("x",), models=("vlm:a/b",), out=tmp_path, task="decisions",
            decision_scoring="generate", questions=questions,
        )  # fmt: skip
    assert DECISIONS.settings_of(old) == DecisionSettings(scoring="generate", questions=questions)
    other = EvaluateConfig(
        data=("x",), models=("vlm:a/b",), out=tmp_path, task_settings=TaskSettings()
    )
    with pytest.raises(ConfigError, match="task decisions takes DecisionSettings, not"):
        DECISIONS.settings_of(other)
    with pytest.raises(ConfigError, match="decision_scoring: must be both, logprob or generate"):
        DecisionSettings(scoring=" all ")


def test_a_model_that_does_not_answer_is_refused_in_the_tasks_words(tmp_path: Path) -> None:
    data = contrast_export(tmp_path / "set", sources=1)
    config = EvaluateConfig(
        data=(str(data),), models=("open_clip:ViT-B-32/openai",), out=tmp_path / "out",
        task="decisions",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="does not answer questions; --task decisions takes"):
        evaluate(config)
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())


def test_sets_of_one_folder_name_are_refused_before_any_model_loads(tmp_path: Path) -> None:
    first = contrast_export(tmp_path / "a" / "set", sources=1)
    second = contrast_export(tmp_path / "b" / "set", sources=1)
    config = EvaluateConfig(
        data=(str(first), str(second)), models=("vlm:no/such-model",), out=tmp_path / "out",
        task="decisions",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="need distinct names"):
        evaluate(config)
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())


class _Plain(Task[TaskSettings, Result]):
    """A task that overrides none of the hooks reading a run's records."""

    name = "plain"
    kind = "plain"

    def scored(self, result: Result) -> tuple[int, int]:
        return 3, 4

    def figures(self, result: Result) -> Mapping[str, Any]:
        return {"stem": "figure"}


def test_the_record_hooks_default_to_what_the_result_gives() -> None:
    task, result = _Plain(), Result()
    records: Sequence[Mapping[str, Any]] = [{"key": "a"}]
    assert task.scored_from(result, records) == (3, 4)
    assert list(task.skipped(result, records)) == []
    assert task.figures_from(result, records) == {"stem": "figure"}
