"""Settings of another task given to a task are refused before anything loads: run with
its defaults while the caller believes the settings were used, the result would be
silently wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrast_data import contrast_export
from contrastkit.errors import ConfigError
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.evaluators.tasks.gendered_words import GenderedWordsSettings


def test_decisions_refuses_another_tasks_settings_before_any_model_loads(tmp_path: Path) -> None:
    data = contrast_export(tmp_path / "set", sources=2)
    out = tmp_path / "out"
    config = EvaluateConfig(
        data=(str(data),), models=("vlm:no/such-model",), out=out, task="decisions",
        task_settings=GenderedWordsSettings(max_new_tokens=7),
    )  # fmt: skip
    match = "task_settings: task decisions takes DecisionSettings, not GenderedWordsSettings"
    with pytest.raises(ConfigError, match=match):
        evaluate(config)
    assert not out.exists() or not any(out.iterdir())


def test_visogender_refuses_another_tasks_settings_before_any_model_loads(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    config = EvaluateConfig(
        data=("visogender",), models=("open_clip:no-such/model",), out=out,
        task="visogender", task_settings=GenderedWordsSettings(), fetch=False,
    )  # fmt: skip
    with pytest.raises(ConfigError, match="task_settings: task visogender has no settings"):
        evaluate(config)
    assert not out.exists() or not any(out.iterdir())
