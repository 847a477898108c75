"""``contrastkit evaluate zero-shot`` end to end: a tiny OpenCLIP model
from the registry (Experiment 1 and the softmax setting of Experiment 2), bring-your-own
predictions, a second dataset for the consistency colouring."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sklearn.metrics import average_precision_score
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.tasks.zero_shot.groups import (
    GroupingOptions,
    concept_words,
    load_grouped,
)
from contrastkit.models import load_scorer
from zero_shot_data import (
    VG_KEPT,
    planted_rows,
    truth_of,
    vg_images,
    write_coco,
    write_jsonl,
    write_vg,
)

runner = CliRunner()


@pytest.fixture(scope="module")
def spec(tiny_clip_spec: str) -> str:
    """The session's tiny OpenCLIP model (tests/conftest.py)."""
    return tiny_clip_spec


@pytest.fixture(scope="module")
def vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg") / "vg")


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["evaluate", "zero-shot", *args])
    return result.exit_code, result.output


@pytest.mark.slow
def test_a_tiny_open_clip_runs_experiment_one_from_the_cli(
    spec: str, vg: Path, tmp_path: Path
) -> None:
    code, output = _run(
        "--data", str(vg), "--model", spec, "--out", str(tmp_path), "--min-images", "5",
        "--bootstrap", "50", "--prompt", "a photo of a {}.", "--workers", "0",
    )  # fmt: skip
    assert code == 0, output
    assert "random weights" in output and "4 concepts" in output
    folder = next(tmp_path.glob("*/zero_shot"))
    results = json.loads((folder / "disparity.json").read_text(encoding="utf-8"))
    assert results["random_weights"] is True and results["model"] == spec
    assert results["prompt"] == "a photo of a {}."
    # the APs are scikit-learn's on the model's own cosine similarities
    scorer = load_scorer(spec)
    grouped = load_grouped(vg, GroupingOptions(min_images=5))
    images = [Image.open(record.path).convert("RGB") for record in grouped.images]
    prompts = [f"a photo of a {concept_words(c)}." for c in grouped.concepts]
    cosine = scorer.score(images, prompts)
    truth, men = grouped.labels(), grouped.group_mask("men")
    for entry in results["concepts"]:
        j = grouped.concepts.index(entry["concept"])
        for group, mask in (("men", men), ("women", ~men)):
            expected = 100 * average_precision_score(truth[mask, j], cosine[mask, j])
            assert entry[f"ap_{group}"] == pytest.approx(expected, abs=1e-3)
        assert entry["ap_diff"] == pytest.approx(entry["ap_men"] - entry["ap_women"], abs=1e-9)
    # full precision in the file (reports round for display; --compare reads these)
    values = [e[key] for e in results["concepts"] for key in ("ap_men", "ap_women")]
    assert any(value != round(value, 6) for value in values)
    # multi-label cosine scores are not probabilities: no ECE, and the report says why
    assert results["calibration"]["computed"] is False
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "random weights" in report.lower()
    assert "not probabilities" in report and "ECE was not computed" in report
    assert (folder / "plots" / "ap_differences.png").is_file()
    assert (folder / "plots" / "map_by_group.svg").is_file()


@pytest.mark.slow
def test_softmax_calibration_and_the_models_own_word_vectors(
    spec: str, vg: Path, tmp_path: Path
) -> None:
    code, output = _run(
        "--data", str(vg), "--model", spec, "--out", str(tmp_path), "--min-images", "5",
        "--bootstrap", "0", "--calibration", "softmax", "--word-source", "model",
        "--workers", "0", "--json",
    )  # fmt: skip
    assert code == 0, output
    (entry,) = json.loads(output)
    results = json.loads(Path(entry["files"]["json"]).read_text(encoding="utf-8"))
    calibration = results["calibration"]
    assert calibration["computed"] is True and "softmax" in calibration["probabilities"]
    for concept in results["concepts"]:
        assert 0.0 <= concept["ece_men"] <= 100.0 and 0.0 <= concept["ece_women"] <= 100.0
    language = results["language"]["model"]
    assert set(language["concepts"]) == set(VG_KEPT)
    assert language["agreement"]["ap"]["n"] + language["agreement"]["ece"]["n"] > 0
    assert "Experiment 3" in Path(entry["files"]["report"]).read_text(encoding="utf-8")


@pytest.mark.slow
def test_predictions_from_the_cli_and_a_second_dataset_with_the_model(
    spec: str, vg: Path, tmp_path: Path
) -> None:
    truth, groups = truth_of(vg_images(), VG_KEPT)
    rows = planted_rows(truth, groups, favoured={"necktie.n.01": "men"})
    path = write_jsonl(tmp_path / "detic.jsonl", rows)
    code, output = _run(
        "--data", str(vg), "--predictions", str(path), "--out", str(tmp_path / "o"),
        "--min-images", "5", "--bootstrap", "0",
    )  # fmt: skip
    assert code == 0, output
    assert "predictions:" in output and "necktie.n.01 +" in output
    code, output = _run("--data", str(vg), "--predictions", str(path), "--model", spec)
    assert code == 2 and "not both" in output
    code, output = _run("--data", str(vg))
    assert code == 2 and "--model SPEC, or --predictions FILE" in output
    # --compare with a data folder: the same model evaluates the second dataset too
    coco = write_coco(tmp_path / "coco")
    code, output = _run(
        "--data", str(vg), "--model", spec, "--out", str(tmp_path / "c"), "--min-images", "4",
        "--bootstrap", "0", "--compare", str(coco), "--workers", "0",
    )  # fmt: skip
    assert code == 0, output
    folder = next((tmp_path / "c").glob("*/zero_shot"))
    results = json.loads((folder / "disparity.json").read_text(encoding="utf-8"))
    consistency = results["consistency"]
    assert consistency["other"] == str(coco)
    # necktie is the only concept of both (tie -> necktie.n.01)
    assert [c["concept"] for c in consistency["concepts"]] == ["necktie.n.01"]
    assert (folder / "compare" / "disparity.json").is_file()
    assert np.isfinite(results["map"]["men"])
