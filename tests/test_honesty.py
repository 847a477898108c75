"""Issue 17 items 3 and 6: random weights are said everywhere a result goes, published
files carry no local path, and the console says things plainly (headlines after
``evaluate``, one option name, no cut tables, counts with the right noun form)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrastkit.builders.export import build_weights, public_metadata, public_text
from contrastkit.builders.publish import PublishConfig, check_publishable, publish
from contrastkit.cli import app
from contrastkit.errors import ConfigError
from contrastkit.models import load_scorer
from contrastkit.models.registry import random_weights, weights_note
from contrastkit.schema import Context, Gender
from contrastkit.text import count
from contrastkit.tiny.clip import tiny_open_clip
from contrastkit.tiny.marker import MARKER_FILE, mark_random_weights
from contrastkit.tsv import write_visogender_tsv
from eval_data import write_small_dataset
from factories import make_row

runner = CliRunner()
FAST = ["--subsample-runs", "20", "--baseline-runs", "40", "--bootstrap", "30"]


@pytest.fixture(scope="module")
def tiny_spec(tiny_clip_spec: str) -> str:
    """The session's tiny OpenCLIP model (tests/conftest.py)."""
    return tiny_clip_spec


# --- the flag, from the loader --------------------------------------------------------


def test_tiny_models_and_random_architectures_are_flagged_trained_ones_are_not(
    tiny_spec: str, tmp_path: Path
) -> None:
    folder = Path(tiny_spec.removeprefix("open_clip:"))
    assert (folder / MARKER_FILE).is_file()
    assert random_weights(tiny_spec) and random_weights("open_clip:ViT-B-32/random")
    assert not random_weights("open_clip:ViT-B-32/openai")
    assert not random_weights("hf-clip:openai/clip-vit-base-patch32")
    assert weights_note("open_clip:ViT-B-32/openai") is None
    assert "pipeline check, not a measurement" in (weights_note(tiny_spec) or "")
    # The same weights without the marker: a user's own model folder, not flagged.
    copy = tmp_path / "my-model"
    shutil.copytree(folder, copy)
    (copy / MARKER_FILE).unlink()
    assert not random_weights(f"open_clip:{copy}")
    assert load_scorer(tiny_spec).random_weights is True  # type: ignore[attr-defined]
    assert load_scorer(f"open_clip:{copy}").random_weights is False  # type: ignore[attr-defined]


# --- evaluate: reports, comparison, console, --json ----------------------------------


def test_a_random_weight_evaluation_says_so_in_json_report_comparison_and_console(
    tiny_spec: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_small_dataset(data)
    out = tmp_path / "out"
    other = tiny_open_clip(tmp_path / "models", name="tiny-b", seed=1)
    result = runner.invoke(
        app,
        ["evaluate", "--data", str(data), "--model", tiny_spec, "--model", other,
         "--out", str(out), "--allow-download", *FAST],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    folders = sorted(p for p in out.iterdir() if (p / "benchmark.json").is_file())
    assert len(folders) == 2
    for folder in folders:
        results = next(iter(json.loads((folder / "benchmark.json").read_text()).values()))
        assert results["random_weights"] is True
        assert "pipeline check, not a measurement" in results["weights_note"]
        report = (folder / "report.md").read_text()
        # The note comes before any figure.
        assert report.index("**Random weights.**") < report.index("## ")
    comparison = (out / "comparison.md").read_text()
    assert comparison.count("(random weights)") >= 2 and "**Random weights.**" in comparison
    # Retrieval rows use the paper's words in every report, never OP / OO.
    assert "| two people |" in comparison and "| OP |" not in comparison

    # Headlines are printed after the run: accuracy, gap, retrieval bias, the warning.
    lines = result.output.splitlines()
    assert sum("random weights: " in line for line in lines) == 2
    assert any(line.strip().startswith("RA_avg (overall) ") and "gap (overall)" in line
               for line in lines)  # fmt: skip
    assert any("bias@5 (two people)" in line and " ± " in line for line in lines)
    # K = 10 covers the 8 two-person images of each occupation: no reading, said so
    assert any("bias@10 (two people) n/a: K covers all 8 candidates" in line for line in lines)
    assert "± +" not in result.output and "± -" not in result.output  # sigma has no sign
    assert "1 images" not in result.output


def test_evaluate_json_carries_the_headline_figures(tiny_spec: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_small_dataset(data)
    result = runner.invoke(
        app,
        ["evaluate", "--data", str(data), "--model", tiny_spec, "--out", str(tmp_path / "o"),
         "--json", "--download", *FAST],  # the old spelling of --allow-download still works
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.output)
    headlines = entry["headlines"]
    assert headlines["random_weights"] is True and headlines["protocol"] == "visogender-official"
    figures = {figure["name"]: figure for figure in headlines["figures"]}
    assert {"RA_avg (overall)", "gap (overall)", "bias@5 (two people)", "bias@10 (two people)",
            "NDKL (two people)"} <= set(figures)  # fmt: skip
    benchmark = next(iter(json.loads(Path(entry["files"]["benchmark"]).read_text()).values()))
    overall = benchmark["resolution_bias"]["all_images"]
    assert figures["RA_avg (overall)"]["value"] == pytest.approx(overall["RA_avg"])
    assert figures["RA_avg (overall)"]["low"] == pytest.approx(overall["RA_avg_ci"]["low"])
    assert figures["bias@5 (two people)"]["sigma"] == pytest.approx(
        benchmark["retrieval_bias"]["bias@5"]["sigma"]
    )
    # the largest K covers every occupation's 8 two-person images: no value, a note
    assert figures["bias@10 (two people)"]["value"] is None
    assert figures["bias@10 (two people)"]["note"] == "n/a: K covers all 8 candidates"


# --- one option name ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [["evaluate", "visogender"], ["evaluate", "auto"], ["build", "gensynth"]]
)
def test_allow_download_is_the_option_and_download_a_hidden_alias(command: list[str]) -> None:
    shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0
    assert "--allow-download" in shown.output
    assert "--download " not in shown.output.replace("--allow-download", "")


def test_the_old_download_spelling_is_still_accepted_by_build(tmp_path: Path) -> None:
    # Options are parsed before values are checked: an unknown option would be named.
    built = runner.invoke(
        app, ["build", "gensynth", "--out", str(tmp_path), "--stage", "bogus", "--download"]
    )
    assert built.exit_code == 2
    assert "No such option" not in built.output and "--stage" in built.output


# --- the console off a terminal -------------------------------------------------------


def test_piped_tables_keep_long_urls_whole_and_blocked_addresses_say_how_to_allow(
    tmp_path: Path,
) -> None:
    url = "http://127.0.0.1:9/" + "/".join(f"segment-{i:02d}" for i in range(12)) + "/photo.jpg"
    assert len(url) > 120
    rows = [
        make_row("doctor", Gender.MASCULINE, n=1, url=url),
        make_row("doctor", Gender.FEMININE, n=2, url=url.replace("photo", "other")),
    ]
    tsv = tmp_path / "oo.tsv"
    write_visogender_tsv(tsv, rows, Context.OO)
    result = runner.invoke(app, ["urls", "check", str(tsv)])
    assert result.exit_code == 1, result.output
    assert url in result.output  # one piece: not cut at 80 columns, not folded
    assert "--allow-private" in result.output
    assert "2 rows, 2 URLs" in result.output


def test_counts_take_the_right_noun_form() -> None:
    assert [count(1, "error"), count(2, "error"), count(0, "query"), count(1, "URL")] == [
        "1 error", "2 errors", "0 queries", "1 URL"
    ]  # fmt: skip


# --- publishing -----------------------------------------------------------------------


def test_public_metadata_keeps_no_local_path() -> None:
    metadata = {
        "build_summary": {"edit": {"editor": "/home/me/models/tiny-instruct-pix2pix"},
                          "filter": {"encoder": "open_clip:/tmp/x/tiny-open-clip"}},
        "sources": [{"path": "/data/private/OP.tsv"}, {"path": "~/OO.tsv"}],
        "url": "https://example.org/a/b.jpg",
        "files": ["data/contrast/test-00000-of-00001.parquet"],
    }  # fmt: skip
    cleaned = json.dumps(public_metadata(metadata))
    for local in ("/home/me", "/tmp/x", "/data/private", "~/"):
        assert local not in cleaned
    assert "tiny-instruct-pix2pix" in cleaned and "open_clip:tiny-open-clip" in cleaned
    assert "https://example.org/a/b.jpg" in cleaned
    assert "data/contrast/test-00000-of-00001.parquet" in cleaned
    assert public_text("see `/tmp/q/OP.tsv`, line 3") == "see `OP.tsv`, line 3"


def test_a_set_built_with_random_weights_is_refused_unless_acknowledged(
    tmp_path: Path, tiny_spec: str
) -> None:
    editor = tmp_path / "editor"
    mark_random_weights(editor)
    flags = build_weights({"edit": {"editor": str(editor)}, "filter": {"encoder": tiny_spec}})
    assert flags["random_weights"] == {"editor": True, "encoder": True}
    export = tmp_path / "export"
    export.mkdir()
    (export / "build_metadata.json").write_text(json.dumps({"configs": {}, **flags}))
    config = PublishConfig(export, "me/set")
    with pytest.raises(ConfigError, match="--i-know-these-are-random-weights") as error:
        publish(config)  # refused before any token or network is looked at
    assert str(error.value).startswith("allow_random_weights: ")
    check_publishable(PublishConfig(export, "me/set", allow_random_weights=True), flags)
    trained = build_weights({"edit": {"editor": "timbrooks/instruct-pix2pix"},
                             "filter": {"encoder": "open_clip:ViT-B-32/openai"}})  # fmt: skip
    assert trained == {"random_weights": {"editor": False, "encoder": False},
                       "weights_note": None}  # fmt: skip
    check_publishable(config, trained)
    cli = runner.invoke(app, ["publish", str(export), "--repo-id", "me/set"])
    assert cli.exit_code == 2 and "--i-know-these-are-random-weights" in cli.output
