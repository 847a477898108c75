"""``contrastkit evaluate zero-shot`` runs its models on the task engine: one
``evaluate()`` of the ``zero-shot`` task with the command's options, its console lines and
``--json`` those of the analysis run by itself; a predictions file, and what ``evaluate()``
would refuse before the analysis does, are analysed by the job itself as always."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.evaluation import EvaluateConfig
from contrastkit.evaluators.report.results import model_slug
from contrastkit.evaluators.tasks.zero_shot.config import ZeroShotDisparityConfig
from contrastkit.evaluators.tasks.zero_shot.task import ZeroShotSettings
from zero_shot_data import write_vg

runner = CliRunner()

SPEC = "open_clip:ViT-B-32/openai"
OTHER = "hf-clip:openai/clip-vit-base-patch32"
BLIP = "blip:Salesforce/blip-image-captioning-base"


@pytest.fixture(scope="module")
def vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg") / "vg")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What ``evaluate`` and ``zero_shot_disparity`` are called with (they run no
    further)."""
    import contrastkit.evaluators.job as job
    import contrastkit.evaluators.tasks.zero_shot.job as zero_shot_job

    seen: list[tuple[str, Any]] = []

    def recorder(name: str) -> Any:
        def record(config: Any, **_: Any) -> Any:
            seen.append((name, config))
            raise typer.Exit(0)

        return record

    monkeypatch.setattr(job, "evaluate", recorder("engine"))
    monkeypatch.setattr(zero_shot_job, "zero_shot_disparity", recorder("direct"))
    return seen


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, ["evaluate", "zero-shot", *args])
    assert result.exit_code == 0, result.output
    return result


def test_the_models_run_in_one_evaluate_of_the_zero_shot_task(
    calls: list[tuple[str, Any]], vg: Path, tmp_path: Path
) -> None:
    concept_map, words = tmp_path / "map.tsv", tmp_path / "w.txt"
    _invoke(
        "--data", str(vg), "--model", SPEC, "--model", OTHER, "--out", str(tmp_path / "o"),
        "--split", "test", "--batch-size", "7", "--bootstrap", "9", "--confidence", "0.9",
        "--seed", "5", "--prompt", "a photo of {}", "--layout", "vg", "--min-images", "2",
        "--images-without-concepts", " drop ", "--filter-split", "train",
        "--concept-map", str(concept_map), "--bins", "5", "--calibration", "softmax",
        "--temperature", "50", "--words", str(words), "--word-source", "both",
        "--compare", str(vg), "--threshold", "2", "--top", "3",
    )  # fmt: skip
    [(kind, config)] = calls
    assert kind == "engine" and isinstance(config, EvaluateConfig)
    assert (config.data, config.models, config.out) == ((str(vg),), (SPEC, OTHER), tmp_path / "o")
    assert (config.task, config.split, config.model.batch_size) == ("zero-shot", "test", 7)
    boot = config.settings
    assert (boot.bootstrap, boot.confidence, boot.seed) == (9, 0.9, 5)
    assert config.task_settings == ZeroShotSettings(
        prompt="a photo of {}", layout="vg", min_images=2, images_without_concepts="drop",
        filter_split="train", concept_map=concept_map, bins=5, calibration="softmax",
        temperature=50.0, words=words, word_source="both", compare=vg,
        threshold=2.0, top=3,
    )  # fmt: skip


def test_the_defaults_are_the_tasks_defaults(
    calls: list[tuple[str, Any]], vg: Path, tmp_path: Path
) -> None:
    _invoke("--data", str(vg), "--model", SPEC, "--out", str(tmp_path))
    [(_, config)] = calls
    assert config.task_settings == ZeroShotSettings()
    assert config.split is None and config.settings.bootstrap == 1000


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--predictions", "p.jsonl"], "the engine runs models"),
        (["--model", SPEC, "--model", SPEC], "the same model twice: analysed twice"),
        (["--model", SPEC, "--split", " "], "a blank split: the analysis refuses it"),
    ],
)  # fmt: skip
def test_what_the_engine_does_not_run_the_analysis_runs_itself(
    calls: list[tuple[str, Any]], vg: Path, tmp_path: Path, args: list[str], why: str
) -> None:
    _invoke("--data", str(vg), "--out", str(tmp_path), *args)
    [(kind, config)] = calls
    assert kind == "direct" and isinstance(config, ZeroShotDisparityConfig), why


@pytest.mark.parametrize("data", ["nowhere", "empty"])
def test_data_the_engine_does_not_read_is_refused_by_the_analysis(
    calls: list[tuple[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    _invoke("--data", data, "--model", SPEC, "--out", "o")
    assert [kind for kind, _ in calls] == ["direct"]


def test_every_model_is_checked_before_any_runs(
    calls: list[tuple[str, Any]], vg: Path, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["evaluate", "zero-shot", "--data", str(vg), "--model", SPEC,
                                 "--model", BLIP, "--out", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2 and "is a captioning model" in result.stderr
    assert calls == [] and not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_run_prints_what_the_analysis_found_and_a_second_model_fails_in_its_turn(
    tiny_clip_spec: str, vg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contrastkit.evaluators.tasks.zero_shot.job as zero_shot_job
    from contrastkit.cli.zero_shot import _json
    from contrastkit.evaluators.tasks.zero_shot.job import zero_shot_disparity

    common = ["--data", str(vg), "--bootstrap", "20", "--seed", "3", "--min-images", "5"]
    # what the analysis writes and finds when it runs by itself
    direct = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, out=tmp_path / "direct", model=tiny_clip_spec, bootstrap=20, seed=3,
        min_images=5,
    ))  # fmt: skip

    def not_called(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the command ran the analysis outside the engine")

    monkeypatch.setattr(zero_shot_job, "zero_shot_disparity", not_called)
    out = tmp_path / "cli"
    shown = _invoke(*common, "--model", tiny_clip_spec, "--out", str(out), "--json")
    [entry] = json.loads(shown.stdout)
    expected = json.loads(json.dumps(_json(direct)).replace(str(tmp_path / "direct"), str(out)))
    assert entry == expected
    folder = out / model_slug(tiny_clip_spec) / "zero_shot"
    for name in ("disparity.json", "report.md"):
        mine = (folder / name).read_text(encoding="utf-8")
        theirs = (direct.folder / name).read_text(encoding="utf-8")
        assert mine == theirs.replace(str(tmp_path / "direct"), str(out)), name
    # a rerun prints its embeddings reused from the cache
    again = _invoke(*common, "--model", tiny_clip_spec, "--out", str(out))
    assert f"embeddings: 55 images and 4 prompts reused from {folder / 'cache'}" in again.stdout
    # a model that does not load is refused in its turn, after the first one's files
    fresh = tmp_path / "fresh"
    models = ["--model", tiny_clip_spec, "--model", "open_clip:nope/nothere"]
    failed = runner.invoke(app, ["evaluate", "zero-shot", *common, *models, "--out", str(fresh)])
    assert failed.exit_code == 2 and "unknown OpenCLIP architecture 'nope'" in failed.stderr
    assert (fresh / model_slug(tiny_clip_spec) / "zero_shot" / "disparity.json").is_file()
