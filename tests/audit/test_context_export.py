"""``contrastkit audit EXPORT --build BUILD`` measures the export's own images, refuses an
export of another build, and separates a lossy codec's noise from a real change
(issue 43 item 7)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.models import load_scorer

runner = CliRunner()


def _build(coco: Path, editor_dir: Path, clip: str, out: Path, seed: int = 0) -> None:
    """A box build (the paper's method, lossy WebP as by default) of two sample photos."""
    settings = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32, seed=seed)
    editor = load_editor(editor_dir, ModelConfig(device="cpu", batch_size=4))
    run_edit_stage(EditStageConfig(coco, out, settings, min_box_side=64, limit=2), editor)
    scorer = load_scorer(clip, ModelConfig(device="cpu"))
    run_filter_stage(out, scorer, FilterSettings(k=3, tau_real=-1, tau_gender=-1))
    run_select_stage(out, seed=0)


def _audit(data: Path, build: Path, out: Path) -> Any:
    return runner.invoke(
        app, ["audit", str(data), "--build", str(build), "--out", str(out), "--only",
              "composition"],
    )  # fmt: skip


def _leak(export: Path, fmt: str) -> str:
    """Paint a 16 x 16 square far from the person box of the first exported image (a
    256-pixel change the box composite never makes) and store it as ``fmt``, in the
    saved dataset the evaluation reads; return its edit id."""
    folder = export / "saved" / "contrast"
    loaded = datasets.load_from_disk(str(folder))
    split = loaded["test"].cast_column("image", datasets.Image(decode=False))
    rows = split.to_list()
    image = np.asarray(Image.open(io.BytesIO(rows[0]["image"]["bytes"])).convert("RGB")).copy()
    left, top, right, bottom = (int(v) for v in rows[0]["box"])
    height, width = image.shape[:2]
    x = 0 if left > width - right else width - 16
    y = 0 if top > height - bottom else height - 16
    assert not (x < right + 16 and x + 16 > left - 16 and y < bottom + 16 and y + 16 > top - 16)
    image[y : y + 16, x : x + 16] = np.clip(image[y : y + 16, x : x + 16].astype(int) + 90, 0, 255)
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format=fmt, **({"quality": 90} if fmt == "WEBP" else {}))
    rows[0]["image"] = {"bytes": buffer.getvalue(), "path": f"leak.{fmt.lower()}"}
    changed = datasets.Dataset.from_list(rows, features=split.features)
    scratch = export.parent / "scratch"
    datasets.DatasetDict({"test": changed}).save_to_disk(str(scratch))
    del loaded, split
    shutil.rmtree(folder)
    shutil.move(str(scratch), str(folder))
    return str(rows[0]["edit_id"])


def _same_in_parquet(export: Path) -> None:
    """Write the saved dataset's images into the export's parquet files too (a change
    made consistently in the whole export)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    saved = datasets.load_from_disk(str(export / "saved" / "contrast"))["test"]
    images = {
        row["edit_id"]: row["image"]
        for row in saved.cast_column("image", datasets.Image(decode=False)).to_list()
    }
    for file in (export / "data" / "contrast").glob("*.parquet"):
        table = pq.read_table(file)
        rows = table.to_pylist()
        for row in rows:
            row["image"] = images[row["edit_id"]]
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), file)


@pytest.mark.slow
def test_the_audit_measures_the_export_and_refuses_another_build(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    _build(coco_dir, tiny_editor_dir, tiny_clip_spec, build)
    export = tmp_path / "export"
    export_contrast_set(ExportContrastConfig(build=build, out=export))
    assert "build_fingerprint" in json.loads((export / "build_metadata.json").read_text())

    result = _audit(export, build, tmp_path / "audit")
    assert result.exit_code == 0, result.output
    context = json.loads((tmp_path / "audit" / "audit.json").read_text())["context"]
    assert context["measured_on"] == "export" and context["images"] == 4
    assert context["noise"]["codecs"] == {"lossy WebP, quality 90": 4}
    # the lossy codec alone changes most pixels; beyond its noise, only the repainted box
    raw, beyond = context["changed_outside_mask"]["mean"], context["changed_beyond_noise"]["mean"]
    assert raw > 0.5 and beyond < raw - 0.2
    assert context["changed_kept_pixels"] == {"pixels": 0, "images": 0}
    markdown = (tmp_path / "audit" / "audit.md").read_text()
    assert "beyond the codec's noise" in markdown and "lossy WebP, quality 90" in markdown
    assert "measured on the export" in " ".join(result.output.split())

    # a 256-pixel change made in the export afterwards is measured, stored losslessly or
    # re-encoded as lossy WebP
    for fmt in ("PNG", "WEBP"):
        edit = _leak(export, fmt)
        # changed in the saved dataset only: the parquet files disagree, refused
        torn = _audit(export, build, tmp_path / f"audit-torn-{fmt}")
        assert torn.exit_code == 2, torn.output
        assert "differs from the export's saved dataset" in " ".join(torn.output.split())
        _same_in_parquet(export)
        again = _audit(export, build, tmp_path / f"audit-{fmt}")
        assert again.exit_code == 0, again.output
        found = json.loads((tmp_path / f"audit-{fmt}" / "audit.json").read_text())["context"]
        assert found["changed_kept_pixels"]["images"] == 1, found
        assert 200 <= found["changed_kept_pixels"]["pixels"] <= 400, found
        rows = (tmp_path / f"audit-{fmt}" / "context_change.jsonl").read_text().splitlines()
        leaked = [json.loads(r) for r in rows if json.loads(r)["changed_kept_pixels"]]
        assert [r["edit_id"] for r in leaked] == [edit]

    # another build of the same photos (another seed): refused, naming the difference
    other = tmp_path / "other"
    _build(coco_dir, tiny_editor_dir, tiny_clip_spec, other, seed=1)
    refused = _audit(export, other, tmp_path / "audit-other")
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.output.split())
    assert "is not the export of this build" in message and "contrast set" in message
    # an export made before exports recorded their build's fingerprint: still refused
    metadata = json.loads((export / "build_metadata.json").read_text())
    del metadata["build_fingerprint"]
    (export / "build_metadata.json").write_text(json.dumps(metadata))
    refused = _audit(export, other, tmp_path / "audit-old")
    assert refused.exit_code == 2, refused.output
    assert "seed" in " ".join(refused.output.split())
    # data that is no export of the build
    elsewhere = _audit(coco_dir, build, tmp_path / "audit-coco")
    assert elsewhere.exit_code == 2, elsewhere.output
    assert "not an export of it" in " ".join(elsewhere.output.split())


def test_codec_noise_is_told_apart_from_a_256_pixel_change() -> None:
    """A box edit of a real photo stored as lossy WebP (quality 90, the build's default):
    nearly every pixel outside the person differs from the photo from the codec alone, so
    "any difference" moves by a few in ten thousand when 256 pixels really change; beyond
    the codec's measured noise the unchanged context is 0 and the 256 pixels are found."""
    from contrastkit.curation.codec_noise import BLOCK, Codec, noise_threshold, stored_codec
    from contrastkit.curation.masks import ContextRegions, context_change
    from contrastkit.samples import photo

    source = np.asarray(photo("astronaut").convert("RGB"), dtype=np.uint8)
    height, width = source.shape[:2]
    box = (width // 4, height // 4, width // 2, height // 2)
    edited = source.copy()
    edited[box[1] : box[3], box[0] : box[2]] = np.random.default_rng(0).integers(
        0, 255, (box[3] - box[1], box[2] - box[0], 3)
    )

    def webp(pixels: np.ndarray) -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="WEBP", quality=90)
        return buffer.getvalue()

    def decoded(data: bytes) -> np.ndarray:
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.uint8)

    stored = webp(edited)
    codec = stored_codec(stored, 90)
    assert codec == Codec("webp", lossless=False, quality=90)
    outside = np.ones((height, width), dtype=bool)
    outside[box[1] : box[3], box[0] : box[2]] = False
    kept = np.ones_like(outside)
    kept[box[1] - BLOCK : box[3] + BLOCK, box[0] - BLOCK : box[2] + BLOCK] = False
    regions = ContextRegions(outside=outside, box_context=np.zeros_like(outside), kept=kept)
    threshold = noise_threshold(source, codec, outside)
    assert threshold is not None and 0 < threshold < 80
    clean = context_change(source, decoded(stored), regions, threshold)
    assert clean["changed_outside_mask"] > 0.5  # the codec alone
    assert clean["changed_kept_pixels"] == 0
    leaked = decoded(stored).copy()
    leaked[:16, :16] = (source[:16, :16].astype(int) + 128) % 256  # 128 grey levels away
    found = context_change(source, leaked, regions, threshold)
    assert found["changed_outside_mask"] - clean["changed_outside_mask"] < 0.002
    assert found["changed_kept_pixels"] == 256
    # a lossless image: every difference counts
    lossless = stored_codec(b"\x89PNG\r\n\x1a\n" + b"\0" * 16, 90)
    assert lossless.lossless and noise_threshold(source, lossless, outside) == 0


def test_flat_audit_plots_say_why_they_are_empty(tmp_path: Path) -> None:
    """On a contrast set every baseline Bias@K / MaxSkew@K and every cluster's ΔM is 0
    and the caption map is a line: the plots had ±1e-16 axes and empty panels with no
    word; they now keep readable axes and say why (issue 43 item 12)."""
    from contrast_data import contrast_export

    data = contrast_export(tmp_path / "contrast", sources=2)
    out = tmp_path / "audit"
    result = runner.invoke(
        app, ["audit", str(data), "--out", str(out), "--clusters", "2", "--resamples", "20"]
    )
    assert result.exit_code == 0, result.output
    svg = {name: (out / "plots" / f"{name}.svg").read_text() for name in
           ("baselines", "clusters_factor", "clusters_map")}  # fmt: skip
    assert "every Bias@K here is 0" in svg["baselines"]
    assert "every MaxSkew@K here is 0" in svg["baselines"]
    assert "every cluster has ΔM = 0" in svg["clusters_factor"]
    assert "0 to rounding" in svg["clusters_map"]
    for text in svg.values():
        assert "1e−16" not in text and "1e−6" not in text  # no rounding-error axis
