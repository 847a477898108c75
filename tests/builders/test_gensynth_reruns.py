"""A build folder's edits are all made one way (issue 43, items 1-3): a rerun with a
setting that changes an edit's pixels is refused, naming the difference, instead of
mixing its edits with the old ones; each source photo's content hash is recorded at
build time and checked by the export; a photo with an EXIF rotation is edited, composed
and exported in the orientation a viewer shows it."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from datasets import Image as DatasetImage
from PIL import Image, ImageOps
from typer.testing import CliRunner

from contrastkit.builders.export import ExportContrastConfig, export_contrast_set, load_export
from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.builders.manifest import Manifest, read_sources
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.curation.masks import decode_segmentation, dilate, dilation_pixels
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.models import load_scorer
from contrastkit.samples import write_coco

SMALL = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)
runner = CliRunner()


def _edit(
    coco_dir: Path, editor_dir: Path, out: Path, settings: EditSettings, **options: object
) -> object:
    editor = load_editor(editor_dir, ModelConfig(device="cpu", batch_size=4))
    config = EditStageConfig(coco_dir, out, settings, min_box_side=64, **options)  # type: ignore[arg-type]
    return run_edit_stage(config, editor)


def _state(out: Path) -> tuple[str, str]:
    return (out / "manifest.jsonl").read_text(), (out / "build_summary.json").read_text()


@pytest.mark.slow
def test_a_rerun_with_a_setting_that_changes_the_pixels_is_refused_and_adds_nothing(
    coco_dir: Path, tiny_editor_dir: Path, tmp_path: Path
) -> None:
    """Box edits resumed as mask (the issue's case), and every other setting that
    decides an edit's pixels: refused before anything is edited or recorded."""
    out = tmp_path / "build"
    _edit(coco_dir, tiny_editor_dir, out, SMALL, limit=1)
    before = _state(out)
    assert len(Manifest(out).read()) == 8
    changes = {
        "--composite box (recorded), mask (this run)": {"composite": "mask"},
        "--steps 2 (recorded), 3 (this run)": {"steps": 3},
        "--seed 0 (recorded), 7 (this run)": {"seed": 7},
        "--resolution 32 (recorded), 64 (this run)": {"resolution": 64},
        "--margin 0.1 (recorded), 0.2 (this run)": {"margin": 0.2},
        "--scales 9.5 (recorded), 15 (this run)": {"text_guidance_scales": (15.0,)},
        "--image-guidance 1.5 (recorded), 2 (this run)": {"image_guidance_scale": 2.0},
    }
    for expected, change in changes.items():
        with pytest.raises(ConfigError, match="holds 8 edits made with other settings") as error:
            _edit(coco_dir, tiny_editor_dir, out, replace(SMALL, **change), limit=2)  # type: ignore[arg-type]
        assert expected in str(error.value), str(error.value)
        assert "another --out" in str(error.value)
        assert _state(out) == before
    for storage, expected in (
        ({"image_format": "png"}, "--image-format webp (recorded), png (this run)"),
        ({"image_quality": 80}, "--image-quality 90 (recorded), 80 (this run)"),
    ):
        with pytest.raises(ConfigError) as error:
            _edit(coco_dir, tiny_editor_dir, out, SMALL, limit=2, **storage)
        assert expected in str(error.value)
        assert _state(out) == before
    # the recorded settings resume: only the new source is edited
    report = _edit(coco_dir, tiny_editor_dir, out, SMALL, limit=2)
    assert (report.skipped_finished, report.edited) == (8, 8)  # type: ignore[attr-defined]
    assert {r.composite for r in Manifest(out).read()} == {None}


@pytest.mark.slow
def test_a_mask_build_refuses_another_dilation_on_every_stage_of_the_cli(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """Dilation 0.3 -> 0.02 (the issue's case): exit 2 naming both values, on the edit
    stage and on a later stage alone (which would record the new dilation for the
    context measure and the card); the build summary is left as it was."""
    out = tmp_path / "build"
    base = ["build", "gensynth", "--out", str(out), "--coco", str(coco_dir), "--editor",
            str(tiny_editor_dir), "--embedder", tiny_clip_spec, "--min-box-side", "64",
            "--resolution", "32", "--steps", "2", "--scales", "9.5", "--device", "cpu"]  # fmt: skip
    first = runner.invoke(
        app, [*base, "--stage", "edit", "--limit", "1", "--composite", "mask",
              "--mask-dilation", "0.3"],
    )  # fmt: skip
    assert first.exit_code == 0, first.output
    before = _state(out)
    for stage in ("edit", "filter", "all"):
        result = runner.invoke(
            app, [*base, "--stage", stage, "--limit", "2", "--mask-dilation", "0.02"]
        )
        assert result.exit_code == 2, result.output
        assert "--mask-dilation 0.3 (recorded), 0.02 (this run)" in result.stderr
        assert _state(out) == before
    box = runner.invoke(app, [*base, "--stage", "filter", "--composite", "box"])
    assert box.exit_code == 2 and "--composite mask (recorded), box (this run)" in box.stderr
    settings = json.loads(_state(out)[1])["settings"]
    assert settings["edit"]["mask_dilation"] == 0.3 and settings["edit"]["composite"] == "mask"
    # without the option, the recorded settings apply and the edit stage resumes
    again = runner.invoke(app, ["build", "gensynth", "--out", str(out), "--stage", "edit",
                                "--limit", "2", "--device", "cpu", "--json"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["edit"]["skipped_finished"] == 8


def _select(out: Path, clip_spec: str) -> None:
    """Keep every edit (the thresholds are off: here only the photos matter), select."""
    scorer = load_scorer(clip_spec, ModelConfig(device="cpu"))
    run_filter_stage(out, scorer, FilterSettings(k=3, tau_real=-1, tau_gender=-1))
    run_select_stage(out, seed=0)


@pytest.mark.slow
def test_a_photo_replaced_after_the_build_is_refused_by_the_export_and_the_edit_stage(
    tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """A photo replaced by a flipped copy of the same size (the issue's case): the mask
    export (which puts the edits onto it), the originals export and a resumed edit stage
    refuse it, naming the file; put back, everything works again."""
    coco = write_coco(tmp_path / "coco", image_ids=(1, 3))
    out = tmp_path / "build"
    _edit(coco, tiny_editor_dir, out, replace(SMALL, composite="mask"), limit=1)
    _select(out, tiny_clip_spec)
    (source,) = read_sources(out)
    photo_file = coco / "train2017" / "000000000001.jpg"
    assert source.sha256 == hashlib.sha256(photo_file.read_bytes()).hexdigest()

    kept = photo_file.read_bytes()
    with Image.open(photo_file) as image:
        image.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(photo_file, quality=92)
    for originals in (False, True):
        config = ExportContrastConfig(build=out, out=tmp_path / "set", originals=originals)
        with pytest.raises(DataFormatError, match="source 1 changed after the build") as error:
            export_contrast_set(config)
        assert str(photo_file) in str(error.value)
        assert not (tmp_path / "set").exists()
    with pytest.raises(DataFormatError, match="source 1 changed after the build"):
        _edit(coco, tiny_editor_dir, out, replace(SMALL, composite="mask"), limit=2)

    photo_file.write_bytes(kept)
    export_contrast_set(ExportContrastConfig(build=out, out=tmp_path / "set"))
    export_contrast_set(ExportContrastConfig(build=out, out=tmp_path / "orig", originals=True))


def _turned_coco(folder: Path) -> Path:
    """A COCO folder whose one photo (512x600 as shown, the annotation's size) is stored
    600x512 with an EXIF tag that turns it upright (Orientation 6), as cameras write."""
    coco = write_coco(folder, image_ids=(3,))
    file = coco / "train2017" / "000000000003.jpg"
    with Image.open(file) as image:
        upright = image.convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to show
    upright.transpose(Image.Transpose.ROTATE_90).save(file, quality=95, exif=exif)
    with Image.open(file) as stored:
        assert stored.size == (600, 512)
        assert ImageOps.exif_transpose(stored).size == (512, 600)
    return coco


@pytest.mark.slow
@pytest.mark.parametrize("composite", ["box", "mask"])
def test_a_photo_with_an_exif_rotation_is_edited_and_exported_as_shown(
    composite: str, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """The edits and the --originals photo come out in one orientation (512x600, as a
    viewer shows the photo), whether read through datasets or from the raw bytes, and
    every pixel outside the person (box or dilated mask) is the photo's."""
    coco = _turned_coco(tmp_path / "coco")
    out = tmp_path / "build"
    _edit(coco, tiny_editor_dir, out, replace(SMALL, composite=composite), image_format="png")
    _select(out, tiny_clip_spec)
    export_contrast_set(ExportContrastConfig(build=out, out=tmp_path / "set"))
    export_contrast_set(ExportContrastConfig(build=out, out=tmp_path / "orig", originals=True))
    edits = load_export(tmp_path / "set", "contrast")["test"].cast_column(
        "image", DatasetImage(decode=False)
    )
    (original,) = load_export(tmp_path / "orig", "contrast")["test"].cast_column(
        "image", DatasetImage(decode=False)
    )
    shown = np.asarray(Image.open(io.BytesIO(original["image"]["bytes"])).convert("RGB"))
    assert shown.shape == (600, 512, 3)
    (source,) = read_sources(out)
    box = source.box.xyxy(512, 600)
    person = np.zeros((600, 512), dtype=bool)
    person[box[1] : box[3], box[0] : box[2]] = True
    if composite == "mask":
        person = decode_segmentation(source.segmentation, 512, 600)
        person = dilate(person, dilation_pixels(box, SMALL.mask_dilation))
    outside = ~person
    assert outside.mean() > 0.02
    assert len(edits) == 2
    for row in edits:
        with Image.open(io.BytesIO(row["image"]["bytes"])) as stored:
            assert stored.size == (512, 600)
            assert ImageOps.exif_transpose(stored).size == (512, 600)
            edit = np.asarray(stored.convert("RGB"))
        assert np.array_equal(edit[outside], shown[outside]), row["edit_id"]
        assert not np.array_equal(edit, shown)
