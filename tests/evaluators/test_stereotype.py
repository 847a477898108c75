"""``contrastkit evaluate --task stereotype`` end to end: tiny BLIP-ITM, ViLT and OpenCLIP
models (random weights, built from configs and saved) score the stereotype fixture probe
set from the command line; the files agree with the raw scores; reruns reuse them;
``contrastkit report`` puts the models side by side; wrong inputs get clear errors."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.stereotype_metrics import choice_shares
from contrastkit.probes import read_probes
from contrastkit.tiny.clip import tiny_open_clip
from contrastkit.tiny.itm import tiny_blip_itm, tiny_vilt
from stereoset_data import make_probe_fixture

runner = CliRunner()


@pytest.fixture(scope="module")
def probe_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture probe set: 16 local images over the four categories (read-only)."""
    return make_probe_fixture(tmp_path_factory.mktemp("probes"))[2]


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("stereo-models")
    return {
        "blip-itm": tiny_blip_itm(folder),
        "vilt": tiny_vilt(folder),
        "open_clip": tiny_open_clip(folder),
    }


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _evaluate(data: Path, out: Path, models: list[str], *extra: str) -> Any:
    args = ["evaluate", "--data", data, "--out", out, "--device", "cpu", "--bootstrap", "50"]
    for spec in models:
        args += ["--model", spec]
    return _invoke(*args, *extra)


def _sigmoid_log(x: float) -> float:
    return -math.log1p(math.exp(-x))


def _check_against_raw(folder: Path) -> dict[str, Any]:
    """Recompute every figure of ``benchmark.json`` from ``raw_stereotype.jsonl``."""
    benchmark = json.loads((folder / "benchmark.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in (folder / "raw_stereotype.jsonl").open()]
    assert len(records) == benchmark["metadata"]["rows"] == 16
    by_category: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_category.setdefault(record["category"], []).append(record)
    groups = {"overall": records, **by_category}
    for name, group in groups.items():
        figures = (
            benchmark["summary"]["overall"]
            if name == "overall"
            else benchmark["summary"]["categories"][name]
        )
        shares = choice_shares([r["scores"] for r in group])
        anti = np.array([r["label"] == "anti-stereotype" for r in group])
        assert figures["vlrs"] == pytest.approx(100 * (shares[:, 0] + shares[:, 1]).mean())
        assert figures["vlbs"] == pytest.approx(100 * shares[anti, 0].mean())
        low, high = figures["vlrs_ci"]["low"], figures["vlrs_ci"]["high"]
        assert low <= figures["vlrs"] <= high
    instances = {item["id"]: item for item in benchmark["shifting"]["instances"]}
    for record in records:
        s = record["scores"]
        picked = record["label"] == "anti-stereotype" and s[0] > s[1] and s[0] > s[2]
        if not picked or record["neutral_scores"] is None:
            assert record["id"] not in instances
            continue
        n, b = record["neutral_scores"], record["blank_scores"]
        expected_lmss = _sigmoid_log(s[0] - s[1]) - _sigmoid_log(n[0] - n[1])
        expected_vlss = _sigmoid_log(n[0] - n[1]) - _sigmoid_log(b[0] - b[1])
        assert instances[record["id"]]["lmss"] == pytest.approx(expected_lmss, abs=1e-12)
        assert instances[record["id"]]["vlss"] == pytest.approx(expected_vlss, abs=1e-12)
    return benchmark


@pytest.mark.slow
def test_cli_scores_a_probe_set_with_itm_and_dual_models(
    probe_set: Path, specs: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    models = [specs["blip-itm"], specs["vilt"], specs["open_clip"]]
    result = _evaluate(probe_set, out, models, "--task", "stereotype", "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert [entry["model"] for entry in printed] == models
    for entry in printed:
        folder = Path(entry["folder"])
        for name in ("raw_stereotype.jsonl", "benchmark.json", "report.md"):
            assert (folder / name).is_file()
        for suffix in ("png", "svg"):
            assert (folder / "plots" / f"shifting_scores.{suffix}").stat().st_size > 1000
        benchmark = _check_against_raw(folder)
        assert benchmark["task"] == "stereotype" and benchmark["random_weights"] is True
        assert benchmark["blank_image"] == {"size": [32, 32], "colour": "white"}
        assert set(benchmark["summary"]["categories"]) == {
            "gender", "profession", "race", "religion"
        }  # fmt: skip
        references = benchmark["reference_models"]
        assert references["IDM"]["overall"]["ivlas"] == 100.0
        assert references["BIM"]["overall"]["vlbs"] == 100.0
        assert round(references["RAM"]["overall"]["vlrs"], 2) == 66.67
        report = (folder / "report.md").read_text(encoding="utf-8")
        assert "**Random weights.**" in report and "| ***RAM*** | 66.67 | 33.33 | 66.67 |" in report
        overall = benchmark["summary"]["overall"]
        assert f"{overall['vlrs']:.2f} [" in report
        assert entry["headlines"]["figures"][0]["name"] == "vlrs"
        assert entry["headlines"]["figures"][0]["value"] == pytest.approx(overall["vlrs"])
        assert entry["summary"]["random_weights"] is True
    kinds = [json.loads((Path(e["folder"]) / "benchmark.json").read_text())["score_kind"]
             for e in printed]  # fmt: skip
    assert kinds[0].startswith("BLIP ITM match logit") and kinds[1].startswith("ViLT")
    assert kinds[2].startswith("cosine similarity")
    comparison = (out / "comparison.md").read_text(encoding="utf-8")
    assert comparison.count("(random weights) |") >= 6 and "| ***IDM*** |" in comparison

    # a rerun reuses every raw record and writes the same figures
    before = (Path(printed[1]["folder"]) / "benchmark.json").read_text()
    again = _evaluate(probe_set, out, models[1:2])  # no --task: the data is a probe set
    assert again.exit_code == 0, again.output
    assert "0 images scored, 16 records reused" in again.output
    assert (Path(printed[1]["folder"]) / "benchmark.json").read_text() == before

    # contrastkit report: Table 3 / 4 side by side
    table = tmp_path / "side_by_side.md"
    report = _invoke("report", *(e["folder"] for e in printed), "--out", table)
    assert report.exit_code == 0, report.output
    text = table.read_text(encoding="utf-8")
    assert "VLStereoSet Tables 3 and 4" in text and text.count("| ***BIM*** |") == 2
    headlines = json.loads(_invoke("report", printed[0]["folder"], "--json").stdout)
    assert headlines[0]["task"] == "stereotype"
    assert headlines[0]["vlrs"] == pytest.approx(printed[0]["summary"]["vlrs"])


@pytest.mark.slow
def test_an_export_folder_scores_like_its_tsv(
    probe_set: Path, specs: dict[str, str], tmp_path: Path
) -> None:
    export = tmp_path / "export"
    exported = _invoke("export", "stereotype", probe_set, "--out", export)
    assert exported.exit_code == 0, exported.output
    from_tsv = _evaluate(probe_set, tmp_path / "a", [specs["vilt"]], "--json")
    from_export = _evaluate(export, tmp_path / "b", [specs["vilt"]], "--json")
    from_hub = _evaluate(Path(f"hf:{export}"), tmp_path / "c", [specs["vilt"]], "--json")
    for result in (from_tsv, from_export, from_hub):
        assert result.exit_code == 0, result.output
    raw = [
        [json.loads(line) for line in (Path(r["folder"]) / "raw_stereotype.jsonl").open()]
        for r in (json.loads(result.stdout)[0] for result in (from_tsv, from_export, from_hub))
    ]
    for other in raw[1:]:
        assert [r["id"] for r in other] == [r["id"] for r in raw[0]]
        for a, b in zip(raw[0], other, strict=True):  # the embedded images are the same
            np.testing.assert_allclose(a["scores"], b["scores"], rtol=1e-6)
            assert b["image"].startswith("dataset:")


def test_missing_images_are_located_or_left_out(
    probe_set: Path, specs: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "set"
    shutil.copytree(probe_set.parent, folder)
    (folder / "images" / "03.jpg").unlink()
    probes = folder / "probes.tsv"
    row = read_probes(probes)[3]
    failed = _evaluate(probes, tmp_path / "out", [specs["vilt"]], "--bootstrap", "0")
    assert failed.exit_code != 0
    message = " ".join(failed.output.split())
    assert f"probes.tsv:{row.line}: field 'image'" in message and "03.jpg" in message
    assert "--skip-missing" in message
    kept = _evaluate(probes, tmp_path / "out", [specs["vilt"]], "--skip-missing")
    assert kept.exit_code == 0, kept.output
    assert "left out 1 row without an image" in kept.output
    benchmark = json.loads(next((tmp_path / "out").glob("*/benchmark.json")).read_text())
    assert benchmark["metadata"]["rows"] == 15
    assert benchmark["skipped_rows"]["rows"][0]["idx"] == row.id
    report = next((tmp_path / "out").glob("*/report.md")).read_text(encoding="utf-8")
    assert "## Rows left out" in report and row.id in report


def test_wrong_models_and_data_are_refused_clearly(
    probe_set: Path, specs: dict[str, str], tmp_path: Path, official_op: Path
) -> None:
    out = tmp_path / "out"
    cases = [
        (
            [official_op, specs["vilt"], "--task", "stereotype"],
            "task stereotype needs stereotype probe sets",
        ),
        ([official_op, specs["vilt"]], "image-text-matching model"),
        ([probe_set, specs["vilt"], "--task", "stereotype,resolution"], "stereotype runs alone"),
        ([probe_set, "blip:Salesforce/blip-image-captioning-large"], "is a captioning model"),
    ]
    for (data, spec, *extra), message in cases:
        result = _evaluate(data, out, [spec], *extra)
        assert result.exit_code != 0
        assert message in " ".join(result.output.split()), result.output
    mixed = _invoke(
        "evaluate", "--data", probe_set, "--data", official_op, "--model", specs["vilt"],
        "--out", out,
    )  # fmt: skip
    assert mixed.exit_code != 0 and "evaluate them in separate runs" in mixed.output
