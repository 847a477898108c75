"""Zero-shot on the task engine: the registry's row runs ``run_task`` of the task, each
model is checked (its analysis' config, the data and output folders) just before it
loads, the analysis opens its own progress stages and writes its files where it always
has (``out/<model slug>/zero_shot/``), and the engine writes none of its own. The engine
hooks the port added are off by default for every other task."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import ScoreContext, Task, TaskSettings
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.evaluators.report.results import model_slug
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.evaluators.tasks import zero_shot
from contrastkit.evaluators.tasks.registry import tasks
from contrastkit.evaluators.tasks.zero_shot.config import ZeroShotDisparityConfig
from contrastkit.evaluators.tasks.zero_shot.job import zero_shot_disparity
from contrastkit.evaluators.tasks.zero_shot.task import (
    ZERO_SHOT,
    ZeroShot,
    ZeroShotSettings,
    evaluate_zero_shot,
)
from zero_shot_data import write_vg

SETTINGS = ZeroShotSettings(min_images=5, prompt="a photo of a {}.")


@pytest.fixture(scope="module")
def vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg") / "vg")


def test_the_registry_row_runs_the_engine_task() -> None:
    assert isinstance(ZERO_SHOT, ZeroShot)
    assert tasks()["zero-shot"].function("run") is evaluate_zero_shot
    # the package names no TASK: the built-in row (reading disparity.json) stays
    assert not hasattr(zero_shot, "TASK")
    assert ZERO_SHOT.progress_label is None and not ZERO_SHOT.compares_on_evaluate


@pytest.fixture
def no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a model loaded before it was checked")

    monkeypatch.setattr("contrastkit.models.load_scorer", load)
    monkeypatch.setattr("contrastkit.models.load_model", load)


def _evaluate(data: tuple[Path, ...], models: tuple[str, ...], out: Path, **kw: Any) -> Any:
    config = EvaluateConfig(
        data=tuple(map(str, data)), models=models, out=out,
        settings=EvalConfig(bootstrap=20, seed=3), **kw,
    )  # fmt: skip
    return evaluate(config)


@pytest.mark.usefixtures("no_loading")
@pytest.mark.parametrize(
    ("data", "settings", "model", "message"),
    [
        (2, SETTINGS, "open_clip:a/b", "data: the zero-shot task reads one Visual "
         "Genome or COCO folder; compare with a second one through ZeroShotSettings"),
        (1, TaskSettings(), "open_clip:a/b", "task_settings: task zero-shot takes "
         "ZeroShotSettings, not TaskSettings"),
        # the analysis' config, before the model loads
        (1, ZeroShotSettings(bins=0), "open_clip:a/b", "bins: must be a whole number >= 1"),
        (1, SETTINGS, "blip:Salesforce/blip-image-captioning-base",
         "blip:Salesforce/blip-image-captioning-base is a captioning model"),
        (1, ZeroShotSettings(compare=Path("/nowhere/at/all")), "open_clip:a/b",
         "compare: /nowhere/at/all is neither results nor a data folder"),
    ],
)  # fmt: skip
def test_refusals_come_before_the_model_loads(
    vg: Path, tmp_path: Path, data: int, settings: TaskSettings, model: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        folders = (vg, write_vg(tmp_path / "data" / "vg2"))[:data]
        _evaluate(folders, (model,), tmp_path / "out", task_settings=settings)
    assert not list((tmp_path / "out").rglob("*.json"))  # nothing analysed


@pytest.mark.slow
def test_a_run_writes_what_the_analysis_writes_and_nothing_of_the_engines(
    tiny_clip_spec: str, vg: Path, tmp_path: Path
) -> None:
    stages: list[tuple[str, int | None]] = []

    @contextmanager
    def progress(label: str, total: int | None = None) -> Iterator[Callable[..., None]]:
        stages.append((label, total))
        yield lambda *args, **kwargs: None

    out = tmp_path / "api"
    # one model: the analysis' own stages only, its files only
    done = evaluate(
        EvaluateConfig(data=(str(vg),), models=(tiny_clip_spec,), out=out,
                       settings=EvalConfig(bootstrap=20, seed=3), task_settings=SETTINGS),
        progress=progress,
    )  # fmt: skip
    assert [label for label, _ in stages] == [
        "embedding images (vg)",
        "AP and ECE per concept and group",
    ]
    model = out / model_slug(tiny_clip_spec)
    assert sorted(p.name for p in model.iterdir()) == ["zero_shot"]  # no benchmark.json
    [entry] = done.evaluations
    assert entry.folder == model / "zero_shot"
    assert entry.files["json"] == model / "zero_shot" / "disparity.json"
    assert all(path.is_file() for path in entry.files.values())
    assert (entry.scored_images, entry.reused_records, done.comparison) == (0, 0, None)
    assert entry.summary["cache"]["images"] == {"reused": 0, "computed": 55}
    assert entry.summary["weights_note"] and "mAP men" in entry.summary["figures"]
    # what zero_shot_disparity writes for the same analysis, byte for byte
    direct = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, out=tmp_path / "direct", model=tiny_clip_spec, bootstrap=20, seed=3,
        min_images=5, prompt="a photo of a {}.",
    ))  # fmt: skip
    for name in ("disparity.json", "report.md"):
        mine = (entry.folder / name).read_text(encoding="utf-8")
        theirs = (direct.folder / name).read_text(encoding="utf-8")
        assert mine == theirs.replace(str(tmp_path / "direct"), str(out)), name
    # a rerun embeds nothing: the analysis' cache, not the engine's records
    again = evaluate(
        EvaluateConfig(data=(str(vg),), models=(tiny_clip_spec,), out=out,
                       settings=EvalConfig(bootstrap=20, seed=3), task_settings=SETTINGS),
    )  # fmt: skip
    assert again.evaluations[0].summary["cache"]["images"] == {"reused": 55, "computed": 0}
    data = json.loads((entry.folder / "disparity.json").read_text(encoding="utf-8"))
    assert data["cache"]["images"]["reused"] == 55


@pytest.mark.slow
def test_a_model_is_checked_when_its_turn_comes(
    tiny_clip_spec: str, vg: Path, tmp_path: Path
) -> None:
    """As before the engine ran it: each model's analysis is checked just before that
    model loads, so the first model's files are written before a second that is no dual
    encoder is refused."""
    with pytest.raises(ConfigError, match="is a captioning model"):
        evaluate(EvaluateConfig(
            data=(str(vg),), models=(tiny_clip_spec, "blip:Salesforce/blip-image-captioning-base"),
            out=tmp_path, settings=EvalConfig(bootstrap=0), task_settings=SETTINGS,
        ))  # fmt: skip
    assert (tmp_path / model_slug(tiny_clip_spec) / "zero_shot" / "disparity.json").is_file()


class _Plain(Task[TaskSettings, Any]):
    name = "plain"
    kind = "plain"


def test_the_hooks_are_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[tuple[str, Any]] = []
    monkeypatch.setattr("contrastkit.models.load_model", lambda *a: loaded.append(a) or "m")

    class Config:
        model = "model config"

    task = _Plain()
    assert task.load("x:y", Config(), TaskSettings(), (Path(),)) == "m"  # type: ignore[arg-type]
    assert loaded == [("x:y", "model config")]
    assert task.written(None, []) is None
    assert Task.progress_label == "{task}: {model}"
    assert ScoreContext("m", TaskSettings(), Path(), 1).stages is None
