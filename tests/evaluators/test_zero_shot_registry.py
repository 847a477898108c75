"""The zero-shot disparity analysis as a row of the task registry: ``contrastkit
evaluate --data VG_OR_COCO`` runs it, ``contrastkit report`` reads its
``disparity.json`` as the typed :class:`~contrastkit.results.ZeroShotResult` and puts
several side by side (alone, or beside another task's results)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.tasks.registry import read_result, task_for_data, tasks
from contrastkit.kinds import kinds
from contrastkit.results import ZeroShotResult
from zero_shot_data import VG_KEPT, planted_rows, truth_of, vg_images, write_jsonl, write_vg

runner = CliRunner()

GOLDEN = Path(__file__).parents[1] / "golden"

#: What each planted predictions file favours: a concept found perfectly in one group's
#: images and at chance in the other's.
PLANTED = {"a": {"necktie.n.01": "men"}, "b": {"dress.n.01": "women"}}


@pytest.fixture(scope="module")
def vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg") / "vg")


def _predictions(folder: Path, name: str) -> Path:
    truth, groups = truth_of(vg_images(), VG_KEPT)
    return write_jsonl(folder / f"{name}.jsonl",
                       planted_rows(truth, groups, favoured=PLANTED[name], seed=1))  # fmt: skip


def _invoke(*args: object) -> Any:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


ANALYSIS = ("--min-images", "5", "--bootstrap", "40", "--seed", "3")


@pytest.fixture(scope="module")
def results(vg: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two analyses of the VG fixture by ``contrastkit evaluate --data VG`` (the data
    picks the task): the model folder of each planted predictions file."""
    tmp = tmp_path_factory.mktemp("runs")
    out = tmp / "out"
    for name in PLANTED:
        done = _invoke("evaluate", "--data", vg, "--predictions", _predictions(tmp, name),
                       "--out", out, *ANALYSIS)  # fmt: skip
        assert done.exit_code == 0, done.output
    return {name: out / f"predictions-{name}" for name in PLANTED}


def _without_volatile(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("contrastkit_version", "predictions_file")}


def test_the_zero_shot_row_is_registered_for_its_kind(vg: Path) -> None:
    row = tasks()["zero-shot"]
    assert (row.name, row.kind, row.source) == ("zero-shot", "zero-shot", "contrastkit")
    assert row.run is not None and not row.result_tasks
    assert task_for_data([vg]) is row  # the data picks it
    assert kinds()["zero-shot"].task == "zero-shot"
    for name in ("run", "read", "headline", "compare"):
        assert callable(row.function(name)), name
    # the registry stays light to import: the row names its functions by import path
    code = (
        "import sys, contrastkit.evaluators.tasks.registry as r; r.BUILT_IN; "
        "print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"


def test_evaluate_with_a_visual_genome_folder_runs_the_zero_shot_task(
    vg: Path, results: dict[str, Path], tmp_path: Path
) -> None:
    """The bare form (``auto``) does what ``evaluate zero-shot`` does, without the
    deprecation note of ``--task zero-shot-disparity``, and writes the same files."""
    predictions = _predictions(tmp_path, "a")
    named = _invoke("evaluate", "zero-shot", "--data", vg, "--predictions", predictions,
                    "--out", tmp_path / "named", *ANALYSIS)  # fmt: skip
    bare = _invoke("evaluate", "--data", vg, "--predictions", predictions,
                   "--out", tmp_path / "bare", *ANALYSIS)  # fmt: skip
    assert named.exit_code == bare.exit_code == 0, bare.output
    assert "deprecated" not in bare.stderr
    assert bare.stdout.replace("bare", "named") == named.stdout
    assert "4 concepts" in bare.stdout and "mAP men 100.0" in bare.stdout

    def disparity(out: Path) -> dict[str, Any]:
        file = out / "predictions-a" / "zero_shot" / "disparity.json"
        return _without_volatile(json.loads(file.read_text(encoding="utf-8")))

    assert disparity(tmp_path / "bare") == disparity(tmp_path / "named")
    # the old spelling still works and still says it is old
    old = _invoke("evaluate", "--task", "zero-shot-disparity", "--data", vg,
                  "--predictions", predictions, "--out", tmp_path / "old", *ANALYSIS)  # fmt: skip
    assert old.exit_code == 0 and "deprecated: --task zero-shot-disparity" in old.stderr
    # --html: none for this analysis, bare or named the old way
    html = _invoke("evaluate", "--data", vg, "--predictions", predictions,
                   "--out", tmp_path / "html", "--html", tmp_path / "site", *ANALYSIS)  # fmt: skip
    assert html.exit_code != 0 and "the zero-shot analysis has no HTML report" in html.output


def test_report_reads_each_form_of_a_result_as_the_typed_result(results: dict[str, Path]) -> None:
    folder = results["a"]
    for path in (folder, folder / "zero_shot", folder / "zero_shot" / "disparity.json"):
        row, read = read_result(path)
        assert row is tasks()["zero-shot"]
        assert isinstance(read, ZeroShotResult) and read.label.endswith("a.jsonl")


def test_report_puts_two_zero_shot_results_side_by_side(
    results: dict[str, Path], tmp_path: Path
) -> None:
    a, b = results["a"], results["b"] / "zero_shot" / "disparity.json"
    out = tmp_path / "comparison.md"
    shown = _invoke("report", a, b, "--out", out)
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert text == out.read_text(encoding="utf-8")
    assert "## Zero-shot disparities by perceived gender" in text
    rows = [line for line in text.splitlines() if line.startswith("| `predictions:")]
    assert len(rows) == 2 and "a.jsonl" in rows[0] and "b.jsonl" in rows[1]
    # a favours men on necktie (its interval excludes 0), b women on dress
    assert "| 1 / 0 of 4 |" in rows[0] and "| 0 / 1 of 4 |" in rows[1]
    assert "| 100.0 [100.0, 100.0] |" in rows[0] and "| 100.0 [100.0, 100.0] |" in rows[1]
    concepts = {line.split(" | ")[0][2:]: line for line in text.splitlines()
                if line.startswith("| ") and ".n.0" in line}  # fmt: skip
    assert set(concepts) == set(VG_KEPT)
    necktie = concepts["necktie.n.01"].strip("| ").split(" | ")
    dress = concepts["dress.n.01"].strip("| ").split(" | ")
    assert necktie[1].startswith("+") and necktie[1].endswith(" *") and necktie[2] == "+0.0"
    assert dress[2].startswith("-") and dress[2].endswith(" *") and dress[1] == "+0.0"
    # a concept no gap separates has no mark
    assert not concepts["hair.n.01"].rstrip(" |").endswith("*")

    headlines = json.loads(_invoke("report", a, b, "--json").stdout)
    assert [h["task"] for h in headlines] == ["zero-shot-disparity"] * 2
    first, second = headlines
    assert first["model"].endswith("a.jsonl") and second["model"].endswith("b.jsonl")
    assert (first["ap_gaps_favouring_men"], first["ap_gaps_favouring_women"]) == (1, 0)
    assert (second["ap_gaps_favouring_men"], second["ap_gaps_favouring_women"]) == (0, 1)
    assert first["ap_gaps_with_interval"] == first["concepts"] == 4
    assert first["largest_ap_gaps"][0]["concept"] == "necktie.n.01"
    assert second["largest_ap_gaps"][0]["concept"] == "dress.n.01"
    assert first["map_men"] == 100.0 and first["map_difference"] > 0 > second["map_difference"]
    low, high = first["map_difference_ci"]
    assert low <= first["map_difference"] <= high
    saved = json.loads((a / "zero_shot" / "disparity.json").read_text(encoding="utf-8"))
    assert first["map_women"] == saved["map"]["women"] and first["images"] == {
        "men": 31,
        "women": 24,
    }
    assert first["calibration"] is True  # scores in [0, 1]: probabilities, ECE computed
    assert "ece_gaps_favouring_men" in first


def _visogender_result(folder: Path) -> Path:
    """The VisoGender benchmark.json the golden run of ``evaluate visogender`` wrote."""
    files = json.loads((GOLDEN / "evaluate_visogender.json").read_text(encoding="utf-8"))
    [(name, data)] = [(n, d) for n, d in files.items() if n.endswith("/benchmark.json")]
    path = folder / name.replace("<hash>", "h")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path.parent


def test_a_mixed_report_shows_the_zero_shot_and_the_visogender_results(
    results: dict[str, Path], tmp_path: Path
) -> None:
    visogender = _visogender_result(tmp_path)
    shown = _invoke("report", results["a"], visogender)
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "## Zero-shot disparities by perceived gender" in text
    assert "a.jsonl" in text and "open_clip" in text  # each result's own table
    zero_shot_at = text.index("## Zero-shot disparities")
    assert text.index("open_clip") < zero_shot_at  # the registry's order: VisoGender first
    headlines = json.loads(_invoke("report", results["a"], visogender, "--json").stdout)
    assert len(headlines) == 2  # in the order given
    assert headlines[0]["task"] == "zero-shot-disparity"
    assert "open_clip" in str(headlines[1]["model"])
    assert read_result(visogender)[0] is tasks()["visogender"]


@pytest.mark.slow
def test_the_row_runs_a_model_through_evaluate_as_the_command_does(
    tiny_clip_spec: str, vg: Path, tmp_path: Path
) -> None:
    """``evaluate(EvaluateConfig(...))`` on a Visual Genome folder: the registry's row
    runs the analysis with the config's bootstrap and its ``ZeroShotSettings``, and
    writes what ``contrastkit evaluate zero-shot`` writes."""
    from contrastkit.evaluators.job import EvaluateConfig, evaluate
    from contrastkit.evaluators.report.results import model_slug
    from contrastkit.evaluators.runner import EvalConfig
    from contrastkit.evaluators.tasks.zero_shot.task import ZeroShotSettings

    # the model folder already holds another task's results: zero-shot writes into its
    # own zero_shot/ sub-folder, so nothing is in the way and nothing is replaced
    other = tmp_path / "api" / model_slug(tiny_clip_spec) / "benchmark.json"
    other.parent.mkdir(parents=True)
    other.write_text('{"task": "contrast"}\n', encoding="utf-8")
    done = evaluate(EvaluateConfig(
        data=(str(vg),), models=(tiny_clip_spec,), out=tmp_path / "api",
        settings=EvalConfig(bootstrap=20, seed=3),
        task_settings=ZeroShotSettings(min_images=5, prompt="a photo of a {}."),
    ))  # fmt: skip
    [entry] = done.evaluations
    assert other.read_text(encoding="utf-8") == '{"task": "contrast"}\n'
    assert done.kind == "zero-shot"
    assert entry.folder == tmp_path / "api" / model_slug(tiny_clip_spec) / "zero_shot"
    names = [figure for figure in entry.summary["figures"] if not figure.endswith("_ci")]
    assert names == ["mAP men", "mAP women", "mAP men - women"]
    command = _invoke("evaluate", "zero-shot", "--data", vg, "--model", tiny_clip_spec,
                      "--out", tmp_path / "cli", "--min-images", "5", "--bootstrap", "20",
                      "--seed", "3", "--prompt", "a photo of a {}.", "--workers", "0")  # fmt: skip
    assert command.exit_code == 0, command.output

    def disparity(folder: Path) -> dict[str, Any]:
        data = json.loads((folder / "disparity.json").read_text(encoding="utf-8"))
        return {k: v for k, v in _without_volatile(data).items() if k != "cache"}

    cli_folder = tmp_path / "cli" / model_slug(tiny_clip_spec) / "zero_shot"
    assert disparity(entry.folder) == disparity(cli_folder)
    assert (
        entry.summary["map"]
        == json.loads((cli_folder / "disparity.json").read_text(encoding="utf-8"))["map"]
    )
    # the bare command prints the analysis' lines (the data picks the task)
    bare = _invoke("evaluate", "--data", vg, "--model", tiny_clip_spec, "--out", tmp_path / "cli",
                   "--min-images", "5", "--bootstrap", "20", "--workers", "0")  # fmt: skip
    assert bare.exit_code == 0, bare.output
    assert "random weights" in bare.stdout and "mAP men" in bare.stdout
