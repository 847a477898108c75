"""GenSwap baseline (GenSynth Sec. 4.3, App. A.2) end to end on the shipped photos."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from contrastkit.builders.genswap import swap_faces
from contrastkit.builders.genswap_job import GenSwapConfig
from contrastkit.builders.manifest import Manifest, read_contrast_set
from contrastkit.curation.faces import FaceDetector


@pytest.mark.model_outputs
@pytest.mark.slow
def test_genswap_replaces_the_astronauts_face_and_resumes(
    coco_dir: Path, face_bank: Path, face_detector: FaceDetector, tmp_path: Path
) -> None:
    out = tmp_path / "swap"
    summary = swap_faces(
        GenSwapConfig(coco_dir, face_bank, out, min_box_side=64), detector=face_detector
    )
    assert summary["sources"] == 3 and summary["no_face"] == 0
    assert summary["swapped"] == 6 and summary["sources_kept"] == 3
    records = {r.edit_id: r for r in Manifest(out).read()}
    assert set(records) == {f"{s}-{g}swap" for s in "123" for g in "MF"}
    # Adults only: the minor's row (camera.png, 10-19) is never a donor of the wrong label,
    # and each donor has the target gender's label.
    assert all(Path(r.donor or "").name in ("astronaut.png", "hopper.png")
               for r in records.values() if r.target == "feminine")  # fmt: skip
    assert all(Path(r.donor or "").name == "camera.png"
               for r in records.values() if r.target == "masculine")  # fmt: skip
    original = np.asarray(Image.open(coco_dir / "train2017" / "000000000002.jpg")).astype(int)
    swapped = np.asarray(Image.open(out / records["2-Mswap"].path)).astype(int)
    changed = np.argwhere(np.abs(swapped - original).sum(axis=2) > 0)
    (top, left), (bottom, right) = changed.min(axis=0), changed.max(axis=0)
    assert top >= 55 and bottom <= 180 and left >= 175 and right <= 275  # the face box only
    assert np.abs(swapped[100:140, 205:245] - original[100:140, 205:245]).mean() > 10
    items = read_contrast_set(out)
    assert [(i.source_id, i.gender) for i in items][:2] == [("1", "masculine"), ("1", "feminine")]
    assert items[1].captions[0] == "A woman takes a picture with a camera on a tripod."
    # A rerun does nothing again; the summary says so.
    again = swap_faces(
        GenSwapConfig(coco_dir, face_bank, out, min_box_side=64), detector=face_detector
    )
    assert again["swapped"] == 0 and again["skipped_finished"] == 6
    assert json.loads((out / "build_summary.json").read_text())["genswap"]["images"] == 6


@pytest.mark.slow
def test_genswap_cli_with_quality_checks(
    coco_dir: Path, face_bank: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from contrastkit.cli import app

    out = tmp_path / "cli"
    result = CliRunner().invoke(
        app,
        ["build", "genswap", "--coco", str(coco_dir), "--faces", str(face_bank), "--out",
         str(out), "--limit", "1", "--embedder", tiny_clip_spec, "--device", "cpu", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["genswap"]["images"] == 2
    quality = summary["quality"]["contrast_set"]
    assert quality["images"] == 2 and quality["captions"] == 6
    assert 0 <= quality["zero_shot_gender_accuracy"] <= 1
    bad = CliRunner().invoke(
        app, ["build", "genswap", "--coco", str(coco_dir), "--faces", str(tmp_path / "no.csv"),
              "--out", str(out)],
    )  # fmt: skip
    assert bad.exit_code == 2 and "no such file" in bad.stderr
    assert json.loads((out / "build_summary.json").read_text())["quality"] == summary["quality"]
    # The card of a GenSwap export states its quality checks too.
    from contrastkit.builders.export import ExportContrastConfig, export_contrast_set

    export_contrast_set(ExportContrastConfig(out, tmp_path / "export"))
    card = (tmp_path / "export" / "README.md").read_text()
    assert "Quality checks (GenSynth Sec. 4.3, Tab. 2)" in card and "| contrast_set | 2 |" in card
