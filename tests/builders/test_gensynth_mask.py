"""Edits confined to the person (``--composite mask``): every pixel outside the dilated
COCO person mask is the source photo's own, in both versions, through lossy storage and
the export, checked on the images as the exported dataset returns them; the context
measure of the quality report and of ``contrastkit audit --build``."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.coco import read_coco, read_coco_cached, select_sources
from contrastkit.builders.export import ExportContrastConfig, export_contrast_set, load_export
from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.builders.gensynth.context import measure_context
from contrastkit.builders.manifest import Manifest, read_sources
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.curation.masks import decode_segmentation, dilate, dilation_pixels
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.models import load_scorer
from contrastkit.samples import OUTLINES, photo

runner = CliRunner()
MASK = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32, composite="mask")


def _build(
    coco_dir: Path, editor_dir: Path, clip_spec: str, out: Path, settings: EditSettings
) -> None:
    """Edit the first two sample sources, keep every edit (the filter's thresholds are
    off: here only the pixels matter), select."""
    editor = load_editor(editor_dir, ModelConfig(device="cpu", batch_size=4))
    run_edit_stage(EditStageConfig(coco_dir, out, settings, min_box_side=64, limit=2), editor)
    scorer = load_scorer(clip_spec, ModelConfig(device="cpu"))
    run_filter_stage(out, scorer, FilterSettings(k=3, tau_real=-1, tau_gender=-1))
    run_select_stage(out, seed=0)


def _outside(source_id: str, coco_dir: Path, dilation: float) -> np.ndarray:
    """The pixels outside the dilated person mask of a sample source."""
    source = {s.source_id: s for s in select_sources(read_coco(coco_dir)).sources}[source_id]
    mask = decode_segmentation(source.segmentation, source.width, source.height)
    box = source.box.xyxy(source.width, source.height)
    return ~dilate(mask, dilation_pixels(box, dilation))


@pytest.mark.slow
def test_mask_edits_keep_every_pixel_outside_the_person_through_storage_and_export(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    _build(coco_dir, tiny_editor_dir, tiny_clip_spec, out, MASK)
    records = Manifest(out).read()
    assert records and all(r.composite == "mask" for r in records)
    assert all(r.path.endswith(".webp") for r in records)  # lossy WebP, as by default
    export = tmp_path / "export"
    export_contrast_set(ExportContrastConfig(build=out, out=export))
    rows = load_export(export, "contrast")["test"]
    assert len(rows) == 4 and sorted(set(rows["source_id"])) == ["1", "2"]
    for row in rows:
        # the source photo as the build decodes it (the sample photos are JPEG files)
        file = coco_dir / "train2017" / f"{int(row['source_id']):012d}.jpg"
        decoded = np.asarray(Image.open(file).convert("RGB"))
        image = np.asarray(row["image"].convert("RGB"))
        outside = _outside(row["source_id"], coco_dir, MASK.mask_dilation)
        assert outside.mean() > 0.2  # a real share of the photo is context
        assert np.array_equal(image[outside], decoded[outside]), row["edit_id"]
        assert not np.array_equal(image, decoded)  # the person was edited
    # the stored edit holds only the person's pixels: lossy, but marked by its alpha
    stored = Image.open(out / records[0].path)
    assert stored.mode == "RGBA"

    # the context measure: 0 outside the mask by construction
    context = measure_context(out)
    assert context.summary["images"] == 4 and context.summary["composite"] == {"mask": 4}
    assert context.summary["changed_outside_mask"] == {"mean": 0.0, "max": 0.0}
    assert context.summary["box_context_change"] == {"mean": 0.0, "max": 0.0}


@pytest.mark.slow
def test_box_edits_repaint_context_and_the_measure_shows_it(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    box = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)
    _build(coco_dir, tiny_editor_dir, tiny_clip_spec, out, box)
    assert all(r.composite is None for r in Manifest(out).read())
    line = (out / "manifest.jsonl").read_text().splitlines()[0]
    assert "composite" not in json.loads(line)  # box lines are what they were
    assert (
        "composite" not in json.loads((out / "build_summary.json").read_text())["edit"]["settings"]
    )
    context = measure_context(out)
    assert context.summary["composite"] == {"box": 4}
    changed = context.summary["changed_outside_mask"]
    assert changed is not None and changed["mean"] > 0.01
    in_box = context.summary["box_context_change"]
    assert in_box is not None and in_box["mean"] > 1.0  # the editor repainted the box
    assert {row["edit_id"] for row in context.rows} == {
        item["edit_id"]
        for item in map(json.loads, (out / "contrast_set.jsonl").read_text().splitlines())
    }

    # `contrastkit audit EXPORT --build BUILD` reports the same measure
    export = tmp_path / "export"
    export_contrast_set(ExportContrastConfig(build=out, out=export))
    result = runner.invoke(
        app, ["audit", str(export), "--build", str(out), "--out", str(tmp_path / "audit"),
              "--only", "composition"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "outside the person mask changed" in result.output
    audited = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert {k: audited["context"][k] for k in context.summary} == context.summary
    assert len((tmp_path / "audit" / "context_change.jsonl").read_text().splitlines()) == 4
    assert "Context changed by the edits" in (tmp_path / "audit" / "audit.md").read_text()

    # a build made before segmentations were recorded: the measure reads them from the
    # COCO folder the build recorded
    sources = (out / "sources.jsonl").read_text().splitlines()
    stripped = [json.loads(line) for line in sources]
    for data in stripped:
        data.pop("segmentation")
    (out / "sources.jsonl").write_text("".join(json.dumps(d) + "\n" for d in stripped))
    assert all(s.segmentation is None for s in read_sources(out))
    assert measure_context(out).summary["without_mask"] == 4
    assert measure_context(out, coco=coco_dir).summary == context.summary


def test_rle_and_polygon_segmentations_decode_to_the_same_mask() -> None:
    from pycocotools import mask as coco_mask

    polygon = [[2.0, 2.0, 12.0, 2.0, 12.0, 9.0, 2.0, 9.0]]
    from_polygon = decode_segmentation(polygon, 16, 12)
    assert from_polygon.shape == (12, 16) and from_polygon[5, 5] and not from_polygon[0, 0]
    encoded = coco_mask.encode(np.asfortranarray(from_polygon.astype(np.uint8)))
    compressed = {"size": [12, 16], "counts": encoded["counts"].decode("ascii")}
    assert np.array_equal(decode_segmentation(compressed, 16, 12), from_polygon)
    # uncompressed RLE: column-major run lengths, starting with a run of zeros
    flat = from_polygon.flatten(order="F").astype(int)
    changes = np.flatnonzero(np.diff(flat)) + 1
    counts = np.diff(np.concatenate([[0], changes, [flat.size]])).tolist()
    assert np.array_equal(decode_segmentation({"size": [12, 16], "counts": counts}, 16, 12),
                          from_polygon)  # fmt: skip
    with pytest.raises(ValueError, match="size"):
        decode_segmentation({"size": [10, 10], "counts": counts}, 16, 12)


def test_mask_needs_a_segmentation_and_an_alpha_channel(coco_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="jpeg"):
        run_edit_stage(
            EditStageConfig(coco_dir, tmp_path / "a", MASK, image_format="jpeg"),
            object(),  # type: ignore[arg-type]
        )

    def strip(data: dict[str, Any]) -> None:
        for item in data["annotations"]:
            item.pop("segmentation", None)

    no_masks = _copy_coco(coco_dir, tmp_path / "coco", strip)
    with pytest.raises(DataFormatError, match="--composite box"):
        run_edit_stage(EditStageConfig(no_masks, tmp_path / "b", MASK, limit=1), object())  # type: ignore[arg-type]


def test_stored_mask_edits_cost_fewer_bytes_than_whole_images(tmp_path: Path) -> None:
    """The storage the docs state: a mask edit stores only the person's pixels."""
    from contrastkit.builders.manifest import composite_edit, encode_image

    image = photo("astronaut")
    pixels = np.asarray(image)
    alpha = np.zeros(pixels.shape[:2], np.uint8)
    alpha[50:450, 100:350] = 255
    stored = encode_image(Image.fromarray(np.dstack([pixels, alpha])), "webp", quality=90)
    whole = encode_image(image, "webp", quality=90)
    assert len(stored) < len(whole)
    back = composite_edit(Image.open(io.BytesIO(stored)).convert("RGBA"), image)
    outside = alpha == 0
    assert np.array_equal(np.asarray(back)[outside], pixels[outside])


def _copy_coco(coco_dir: Path, folder: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    (folder / "annotations").mkdir(parents=True)
    shutil.copytree(coco_dir / "train2017", folder / "train2017")  # a link would be refused
    for name in ("captions", "instances"):
        data = json.loads((coco_dir / "annotations" / f"{name}_train2017.json").read_text())
        if name == "instances":
            change(data)
        (folder / "annotations" / f"{name}_train2017.json").write_text(json.dumps(data))
    return folder


def test_segmentations_are_read_checked_and_kept_in_the_cached_table(
    coco_dir: Path, tmp_path: Path
) -> None:
    first = select_sources(read_coco_cached(coco_dir, tmp_path / "cache")).sources[0]
    again = select_sources(read_coco_cached(coco_dir, tmp_path / "cache")).sources[0]
    assert first.segmentation == again.segmentation == [OUTLINES["camera"]]
    assert (tmp_path / "cache" / "coco_table.parquet").is_file()

    def bad(data: dict[str, Any]) -> None:
        data["annotations"][0]["segmentation"] = [[1, 2, 3, 4]]

    broken = _copy_coco(coco_dir, tmp_path / "broken", bad)
    with pytest.raises(DataFormatError, match=r"annotations\[0\]\.segmentation\[0\]"):
        read_coco(broken)


@pytest.mark.slow
def test_the_cli_builds_in_mask_mode_and_its_quality_checks_measure_the_context(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    result = runner.invoke(
        app,
        ["build", "gensynth", "--out", str(out), "--coco", str(coco_dir), "--limit", "1",
         "--min-box-side", "64", "--editor", str(tiny_editor_dir), "--embedder", tiny_clip_spec,
         "--steps", "2", "--resolution", "32", "--scales", "9.5", "--k", "3",
         "--tau-real", "-1", "--tau-gender", "-1", "--device", "cpu",
         "--composite", "mask", "--mask-dilation", "0.1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "build_summary.json").read_text())
    assert summary["settings"]["edit"]["composite"] == "mask"
    context = summary["context"]
    assert context["composite"] == {"mask": 2} and context["mask_dilation"] == 0.1
    assert context["changed_outside_mask"]["max"] == 0.0
    assert len((out / "context_change.jsonl").read_text().splitlines()) == 2
    assert "of the pixels outside the person mask changed" in " ".join(result.output.split())
    # a rerun takes the recorded composite: nothing is edited again, no option repeated
    again = runner.invoke(app, ["build", "gensynth", "--out", str(out), "--stage", "edit"])
    assert again.exit_code == 0, again.output
    assert all(r.composite == "mask" for r in Manifest(out).read())
