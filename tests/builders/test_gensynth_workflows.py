"""The documented GenSynth workflows end to end through `export contrast` (issue 44, item
3), with the tiny models and the shipped COCO photos: the sharded one (shards, `build
merge`, filter, select, export) and a filter rerun (the export refuses the contrast set
the new decisions outdated until the select stage runs again)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import load_export
from contrastkit.builders.manifest import read_contrast_set
from contrastkit.cli import app

FILTER = ["--k", "10", "--tau-real", "-1", "--tau-gender", "-1"]


def _edit_options(coco_dir: Path, out: Path, editor: Path, clip: str) -> list[str]:
    return ["build", "gensynth", "--coco", str(coco_dir), "--out", str(out), "--editor",
            str(editor), "--embedder", clip, "--min-box-side", "64", "--resolution", "32",
            "--steps", "2", "--scales", "9.5", "--batch-size", "1", "--limit", "2",
            *FILTER]  # fmt: skip


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _export_refused_then_reselected(out: Path, tmp_path: Path) -> None:
    """After a filter rerun the export is refused (exit 2, naming the stage to run), and
    after the select stage it succeeds."""
    _run("build", "gensynth", "--out", str(out), "--stage", "filter")
    refused = CliRunner().invoke(
        app, ["export", "contrast", str(out), "--out", str(tmp_path / "a")]
    )
    message = " ".join(refused.stderr.split())
    assert refused.exit_code == 2, refused.output
    assert "made before the latest filter stage" in message and "--stage select" in message
    assert not (tmp_path / "a").exists()
    _run("build", "gensynth", "--out", str(out), "--stage", "select")
    _run("export", "contrast", str(out), "--out", str(tmp_path / "b"))
    assert load_export(tmp_path / "b", "contrast", source="parquet")["test"].num_rows == 4


def _check_export(out: Path, export: Path) -> str:
    """The exported rows are the contrast set's images, byte for byte; returns the card."""
    rows = load_export(export, "contrast", source="parquet")["test"]
    items = read_contrast_set(out)
    assert rows.num_rows == len(items) == 4
    for item, row in zip(items, rows, strict=True):
        assert row["edit_id"] == item.edit_id
        with Image.open(out / item.image) as stored:
            assert np.array_equal(
                np.asarray(row["image"].convert("RGB")), np.asarray(stored.convert("RGB"))
            )
    return (export / "README.md").read_text()


@pytest.mark.slow
def test_the_sharded_workflow_ends_in_an_export(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    for shard in ("1/2", "2/2"):
        _run(*_edit_options(coco_dir, out, tiny_editor_dir, tiny_clip_spec), "--shard", shard,
             "--stage", "edit")  # fmt: skip
    _run("build", "merge", str(out))
    summary = json.loads((out / "build_summary.json").read_text())
    edit = summary["edit"]  # the merged set's, as a single worker's edit stage writes it
    assert (edit["sources"], edit["planned"], edit["edited"]) == (2, 16, 16)
    assert edit["editor"] == str(tiny_editor_dir) and edit["editor_random_weights"] is True
    assert edit["selection"]["selected"] == 3 and edit["merged_shards"] == [1, 2]
    _run("build", "gensynth", "--out", str(out), "--stage", "filter")
    shown = " ".join(_run("build", "gensynth", "--out", str(out), "--stage", "select").split())
    assert "edit: 2 sources, 16 edits planned, 16 made" in shown
    _run("export", "contrast", str(out), "--out", str(tmp_path / "export"))
    card = " ".join(_check_export(out, tmp_path / "export").split())
    # the editor as the export records it: its folder relative to the build (no path of
    # this machine), ending in the folder's name
    assert f"/{tiny_editor_dir.name}` (InstructPix2Pix" in card and "16 edits planned" in card
    assert "/tmp/" not in card
    assert "Built with random-weight models" in card and "(the editor and" in card
    _export_refused_then_reselected(out, tmp_path)


@pytest.mark.slow
def test_an_export_after_a_filter_rerun_asks_for_the_select_stage(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    _run(*_edit_options(coco_dir, out, tiny_editor_dir, tiny_clip_spec))  # with the checks
    assert "quality" in json.loads((out / "build_summary.json").read_text())
    _run("export", "contrast", str(out), "--out", str(tmp_path / "export"))
    _check_export(out, tmp_path / "export")
    _export_refused_then_reselected(out, tmp_path)
