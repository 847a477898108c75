"""``contrastkit quickstart``, the README's main command, on a machine with no models: it
runs through the console script and every report file exists and parses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from factories import console_script


def test_quickstart_runs_offline_and_writes_reports_that_parse(tmp_path: Path) -> None:
    exe = console_script()
    out = tmp_path / "quickstart"
    run = subprocess.run(
        [exe, "quickstart", "--out", str(out), "--tiny"], capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pipeline check, not a measurement" in run.stdout

    report = json.loads((out / "quickstart.json").read_text())
    assert report["tiny_models"] is True
    assert report["summary"]["images"] == 2 * report["summary"]["sources_kept"] == 6
    assert report["summary"]["hub_tree_loads"] == {"contrast": {"test": 6}}
    for path in report["files"].values():
        assert Path(path).exists(), path

    markdown = (out / "QUICKSTART.md").read_text()
    assert "pipeline check, not a measurement" in markdown and "bias_gensynth@2" in markdown
    benchmark = json.loads(Path(report["files"]["evaluation_benchmark"]).read_text())
    assert benchmark["task"] == "contrast" and benchmark["summary"]["images"] == 6
    assert benchmark["note"].startswith("No real models were available")
    raw = Path(report["files"]["evaluation_raw"]).read_text().splitlines()
    assert len(raw) == benchmark["summary"]["queries"] and json.loads(raw[0])["top"]
    card = (out / "export" / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["configs"][0]["config_name"] == "contrast"
    assert Path(report["files"]["evaluation_plot"]).read_bytes()[:4] == b"\x89PNG"

    again = subprocess.run(
        [exe, "quickstart", "--out", str(out), "--tiny", "--json"], capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["summary"] == report["summary"]  # reruns reuse the edits
