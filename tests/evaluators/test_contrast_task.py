"""The contrast task on the task protocol (issue 45): its settings come from the shared
options (``--k``, ``--contrast-metrics``), the engine evaluates each contrast set on its
own (one folder per model and set, the model loaded once), keeps no records of its own
and writes the files the task always wrote, from the typed result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contrast_data import contrast_export
from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine import TaskSettings, read_task_result, run_task
from contrastkit.evaluators.engine.run import check_capabilities, task_settings
from contrastkit.evaluators.evaluation import EvaluateConfig
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.evaluators.tasks.contrast_sets.report import (
    contrast_headline,
    contrast_markdown,
)
from contrastkit.evaluators.tasks.contrast_sets.task import (
    CONTRAST,
    ContrastTaskSettings,
)
from contrastkit.results.contrast import ContrastResult

SPEC = "open_clip:ViT-B-32/openai"


def _config(tmp_path: Path, **given: Any) -> EvaluateConfig:
    return EvaluateConfig(data=("set",), models=(SPEC,), out=tmp_path / "out", **given)


def test_the_settings_are_the_task_s_own_and_the_shared_k(tmp_path: Path) -> None:
    """ContrastTaskSettings given from Python are taken as they are; without them the
    shared --k (EvaluateConfig.settings.ks) and the deprecated
    EvaluateConfig.contrast_metrics (a DeprecationWarning) still give them, and the
    deprecated field beside task_settings is refused (one would be ignored)."""
    assert task_settings(CONTRAST, _config(tmp_path)) == ContrastTaskSettings()
    shared = _config(tmp_path, settings=EvalConfig(ks=(2, 4)))
    assert task_settings(CONTRAST, shared) == ContrastTaskSettings(ks=(2, 4))
    with pytest.warns(DeprecationWarning, match="contrast_metrics is deprecated"):
        config = _config(tmp_path, settings=EvalConfig(ks=(2, 4)), contrast_metrics="pairs")
    assert task_settings(CONTRAST, config) == ContrastTaskSettings(ks=(2, 4), metrics="pairs")
    with pytest.raises(ConfigError, match="contrast_metrics: deprecated, and ignored beside"):
        _config(tmp_path, contrast_metrics="pairs", task_settings=ContrastTaskSettings())
    given = ContrastTaskSettings(ks=(3,), metrics="all")
    assert task_settings(CONTRAST, _config(tmp_path, task_settings=given)) is given
    with pytest.raises(ConfigError, match="takes ContrastTaskSettings, not TaskSettings"):
        task_settings(CONTRAST, _config(tmp_path, task_settings=TaskSettings()))
    with pytest.raises(ConfigError, match="contrast_metrics must be one of auto, all, pairs"):
        ContrastTaskSettings(metrics="most")


def test_a_captioning_model_is_refused_in_the_task_s_words() -> None:
    with pytest.raises(ConfigError, match="models: blip:some/model is a captioning model"):
        check_capabilities(CONTRAST, ["blip:some/model"])
    check_capabilities(CONTRAST, [SPEC, "vilt:some/model"])


@pytest.mark.slow
def test_the_engine_evaluates_each_set_on_its_own_with_one_model_load(
    tmp_path: Path, tiny_clip_spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contrastkit.models

    loads: list[str] = []
    real = contrastkit.models.load_model

    def counted(spec: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(spec)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(contrastkit.models, "load_model", counted)
    first = contrast_export(tmp_path / "first", sources=4)
    second = contrast_export(tmp_path / "second", sources=2)
    config = EvaluateConfig(
        data=(str(first), str(second)), models=(tiny_clip_spec,), out=tmp_path / "res",
        settings=EvalConfig(ks=(2, 4), bootstrap=20),
    )  # fmt: skip
    result = run_task(CONTRAST, config, (first, second))
    assert loads == [tiny_clip_spec] and result.comparison is None
    assert [e.data for e in result.evaluations] == [str(first), str(second)]
    assert [e.folder.name for e in result.evaluations] == ["first", "second"]
    one = result.evaluations[0]
    assert set(one.files) == {"raw", "benchmark", "report", "plot", "plot_svg"}
    assert one.scored_images == 8 and one.reused_records == 0
    assert not (one.folder.parent / "raw_contrast.jsonl").exists()  # no records of its own
    queries = one.files["raw"].read_text(encoding="utf-8").splitlines()
    assert len(queries) == one.summary["queries"] == 4
    assert set(json.loads(queries[0])) >= {"source_id", "query", "bias@2", "top"}

    typed = read_task_result(CONTRAST, one.folder)
    assert isinstance(typed, ContrastResult)
    assert typed.data == str(first) and typed.summary.ks == (2, 4)
    assert json.dumps(typed.summary.to_json()) == json.dumps(one.summary)  # NaN too
    text = one.files["benchmark"].read_text(encoding="utf-8")
    assert "NaN" in text  # non-finite figures written as contrast benchmarks always were
    assert list(json.loads(text))[:3] == ["random_weights", "weights_note", "model"]
    assert one.files["report"].read_text(encoding="utf-8") == contrast_markdown(typed)
    assert contrast_markdown(typed) == contrast_markdown(json.loads(text))
    assert CONTRAST.headline(typed) == contrast_headline(json.loads(text))

    again = run_task(CONTRAST, config, (first,))  # one set: straight into the model folder
    assert again.evaluations[0].folder == one.folder.parent
    assert again.evaluations[0].scored_images == 8


def test_sets_of_one_name_are_refused_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contrastkit.models

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no model loads")

    monkeypatch.setattr(contrastkit.models, "load_model", never)
    one = contrast_export(tmp_path / "a" / "set", sources=1)
    other = contrast_export(tmp_path / "b" / "set", sources=1)
    config = EvaluateConfig(data=(str(one), str(other)), models=(SPEC,), out=tmp_path / "o")
    with pytest.raises(ConfigError, match="distinct names"):
        run_task(CONTRAST, config, (one, other))


@pytest.mark.slow
def test_several_models_are_compared_by_report_not_by_evaluate(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    """evaluate writes no comparison.md for contrast sets (compares_on_evaluate); the
    task's comparison and its plots (plots_title, compare_plots) take the typed results."""
    from tiny_models import tiny_open_clip

    other = tiny_open_clip(tmp_path / "other")
    data = contrast_export(tmp_path / "set", sources=3)
    config = EvaluateConfig(
        data=(str(data),), models=(tiny_clip_spec, other), out=tmp_path / "res",
        settings=EvalConfig(ks=(2,)),
    )  # fmt: skip
    result = run_task(CONTRAST, config, (data,))
    assert result.comparison is None and not (tmp_path / "res" / "comparison.md").exists()
    typed = [read_task_result(CONTRAST, e.folder) for e in result.evaluations]
    assert all(isinstance(one, ContrastResult) for one in typed)
    assert "Original vs balanced vs contrast set" in CONTRAST.compare(typed)
    assert CONTRAST.plots_title == "original vs balanced vs contrast set"
    written = CONTRAST.compare_plots(typed, tmp_path / "cmp", "side")
    assert sorted(path.name for path in written) == ["side.png", "side.svg"]
    assert all(path.is_file() for path in written)
