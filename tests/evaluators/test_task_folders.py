"""A second task evaluated into the same --out does not replace the first one's results
(issue 43 item 8): evaluate refuses it before scoring, and report refuses a folder that
an older contrastkit mixed up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from eval_data import write_small_dataset

runner = CliRunner()
FAST = ("--bootstrap", "0", "--device", "cpu", "--workers", "0")


def test_a_second_task_into_the_same_out_is_refused_and_the_first_is_kept(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    vg = write_small_dataset(tmp_path / "visogender")
    out = tmp_path / "results"
    first = runner.invoke(
        app, ["evaluate", "visogender", "--data", str(vg["OP"]), "--model", tiny_clip_spec,
              "--out", str(out), "--only", "resolution", *FAST],
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert "benchmark.json" in before and "raw_resolution.jsonl" in before

    contrast = contrast_export(tmp_path / "contrast")
    second = runner.invoke(
        app, ["evaluate", "contrast", "--data", str(contrast), "--model", tiny_clip_spec,
              "--out", str(out), "--k", "2", *FAST],
    )  # fmt: skip
    assert second.exit_code == 2, second.output
    message = " ".join(second.output.split())
    assert "task visogender" in message and "task contrast" in message
    assert "another --out" in message
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert after == before  # nothing of the first task's results was touched

    # the same task again into the same folder (a rerun) is not refused
    again = runner.invoke(
        app, ["evaluate", "visogender", "--data", str(vg["OP"]), "--model", tiny_clip_spec,
              "--out", str(out), "--only", "resolution", *FAST],
    )  # fmt: skip
    assert again.exit_code == 0, again.output

    # another --out works, and report reads each task's folder
    elsewhere = tmp_path / "results-contrast"
    third = runner.invoke(
        app, ["evaluate", "contrast", "--data", str(contrast), "--model", tiny_clip_spec,
              "--out", str(elsewhere), "--k", "2", *FAST],
    )  # fmt: skip
    assert third.exit_code == 0, third.output
    [contrast_folder] = [p for p in elsewhere.iterdir() if p.is_dir()]
    report = runner.invoke(app, ["report", str(folder), str(contrast_folder)])
    assert report.exit_code == 0, report.output

    # a folder an older contrastkit mixed up: the contrast run replaced benchmark.json
    # and report.md beside VisoGender's raw files; report says so and refuses
    for name in ("benchmark.json", "report.md", "raw_contrast.jsonl"):
        shutil.copy(contrast_folder / name, folder / name)
    assert json.loads((folder / "benchmark.json").read_text())["task"] == "contrast"
    for given in (folder, folder / "benchmark.json"):
        mixed = runner.invoke(app, ["report", str(given)])
        assert mixed.exit_code == 2, mixed.output
        text = " ".join(mixed.output.split())
        assert "visogender (raw_resolution.jsonl)" in text and "contrast (benchmark.json)" in text
