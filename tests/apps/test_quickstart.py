"""The quickstart: through the console script on a machine with no models (every report
file exists and parses, and it says it fell back to tiny models), and from Python (a model
asked for that does not load is an error, never a silent tiny substitute)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from contrastkit.apps.quickstart import QuickstartConfig, quickstart
from contrastkit.cli import app
from contrastkit.errors import ConfigError, ModelNotFoundError
from factories import console_script


@pytest.mark.slow
def test_quickstart_runs_offline_and_writes_reports_that_parse(tmp_path: Path) -> None:
    exe = console_script()
    out = tmp_path / "quickstart"
    # An empty home and Hugging Face cache: neither default model is on "this machine".
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "HF_HOME": str(home / "hf"),
           "HF_HUB_CACHE": str(home / "hf" / "hub"), "HF_HUB_OFFLINE": "1"}  # fmt: skip
    run = subprocess.run(
        [exe, "quickstart", "--out", str(out), "--device", "cpu"], capture_output=True,
        text=True, check=False, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pipeline check, not a measurement" in run.stdout
    # Its last line names the HTML report, which opens from file:// (pages, thumbnails).
    last = run.stdout.strip().splitlines()[-1]
    assert last == f"HTML report: {out / 'report' / 'index.html'} (open it in a browser)"
    assert (out / "report" / "gallery-contrast.html").is_file()
    assert len(list((out / "report" / "thumbs").glob("*.webp"))) == 6
    assert run.stderr.count("is not available") == 2 and "using a tiny one" in run.stderr

    report = json.loads((out / "quickstart.json").read_text())
    assert report["tiny_models"] is True and len(report["fallbacks"]) == 2
    assert report["summary"]["images"] == 2 * report["summary"]["sources_kept"] == 6
    assert report["summary"]["hub_tree_loads"] == {"contrast": {"test": 6}}
    for path in report["files"].values():
        assert Path(path).exists(), path

    markdown = (out / "QUICKSTART.md").read_text()
    assert "pipeline check, not a measurement" in markdown and "bias_gensynth@2" in markdown
    assert "the default editor is not available" in markdown
    benchmark = json.loads(Path(report["files"]["evaluation_benchmark"]).read_text())
    assert benchmark["task"] == "contrast" and benchmark["summary"]["images"] == 6
    assert benchmark["note"].startswith("No real models were available")
    # its figures have the bootstrap intervals of `contrastkit evaluate`'s default (the
    # plot's legend said "no error bars: ... evaluate with --bootstrap N", issue 43.12)
    assert benchmark["summary"]["bootstrap"]["resamples"] == 1000
    assert "mean_ci" in benchmark["summary"]["retrieval"]["bias@2"]
    assert "masculine_preferred_ci" in benchmark["summary"]["pairs"]
    raw = Path(report["files"]["evaluation_raw"]).read_text().splitlines()
    assert len(raw) == benchmark["summary"]["queries"] and json.loads(raw[0])["top"]
    card = (out / "export" / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["configs"][0]["config_name"] == "contrast"
    assert "Quality checks (GenSynth Sec. 4.3, Tab. 2)" in card
    assert Path(report["files"]["evaluation_plot"]).read_bytes()[:4] == b"\x89PNG"
    # The card says the set was built with random weights, names the photos it was built
    # from (the bundled public-domain ones, not COCO), and, like the metadata uploaded
    # beside it, names no local path.
    assert "Built with random-weight models" in card and "random weights" in card
    assert "Grace Hopper" in card and "public domain" in card and "CC0" in card
    assert "Creative Commons" not in card and "Sources: COCO" not in card
    for published in (card, (out / "export" / "build_metadata.json").read_text()):
        assert str(tmp_path) not in published and "/tmp" not in published
    assert report["summary"]["edits"] == 48  # 3 sources x 4 instructions x 2 genders x 2
    assert report["summary"]["sources_edited"] == 3
    assert "then without --dry-run" not in markdown
    assert "--i-know-these-are-random-weights" in markdown
    refused = subprocess.run(
        [exe, "publish", str(out / "export"), "--repo-id", "me/quickstart"],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert refused.returncode == 2 and "--i-know-these-are-random-weights" in refused.stderr

    # A rerun, in this process (the same command as the console script runs).
    again = CliRunner().invoke(app, ["quickstart", "--out", str(out), "--tiny", "--json"])
    assert again.exit_code == 0, again.output[-3000:]
    rerun = json.loads(again.stdout)
    # Reruns reuse the edits; the note now says tiny models were asked for.
    assert {**rerun["summary"], "note": None} == {**report["summary"], "note": None}
    assert rerun["summary"]["note"].startswith("Tiny models with random weights were used")
    assert rerun["fallbacks"] == []  # tiny models asked for: no fallback to explain


@pytest.mark.slow
def test_a_model_asked_for_that_does_not_load_is_an_error_not_a_tiny_fallback(
    tmp_path: Path,
) -> None:
    lines: list[str] = []
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        quickstart(QuickstartConfig(tmp_path / "a", editor=str(tmp_path / "no-editor")),
                   log=lines.append)  # fmt: skip
    assert not (tmp_path / "a" / "models").exists()  # no tiny model was built
    assert not any("tiny" in line for line in lines)

    broken = tmp_path / "broken-clip"
    broken.mkdir()
    (broken / "open_clip_config.json").write_text("{ not json")
    with pytest.raises(ModelNotFoundError) as caught:
        quickstart(QuickstartConfig(tmp_path / "b", editor=str(tmp_path / "no-editor"),
                                    model=f"open_clip:{broken}"))  # fmt: skip
    assert "no-editor" in str(caught.value)  # the editor is loaded (and fails) first


def test_quickstart_config_checks_its_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="editor: tiny=True"):
        QuickstartConfig(tmp_path, editor="timbrooks/instruct-pix2pix", tiny=True)
    with pytest.raises(ConfigError, match="steps: must be >= 1"):
        QuickstartConfig(tmp_path, steps=0)
    with pytest.raises(ConfigError, match="captioning model"):
        QuickstartConfig(tmp_path, model="blip:Salesforce/blip-image-captioning-large")
    (tmp_path / "file").write_text("x")
    from contrastkit.errors import ResourceError

    with pytest.raises(ResourceError, match="cannot write the quickstart folder"):
        quickstart(QuickstartConfig(tmp_path / "file", tiny=True))
