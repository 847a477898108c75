"""Person masks from annotations nobody checked (issue 44, item 5) and masks that cover
nothing (issue 43, item 4).

Every segmentation is checked against its image when the annotations are read: an RLE's
size and counts (too short, empty, too long, not COCO's string code, runs no RLE holds),
a polygon's points; the declared image size against the file before anything is edited.
A mask that covers no pixel is valid but useless: its person is left out at selection,
counted in the build summary and on the console, and never reaches the export."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pycocotools import mask as coco_mask
from typer.testing import CliRunner

from contrastkit.builders.coco import read_coco, select_sources
from contrastkit.builders.export import load_export
from contrastkit.builders.gensynth import EditStageConfig, run_edit_stage, run_select_stage
from contrastkit.builders.manifest import Manifest, read_contrast_set, read_sources, write_sources
from contrastkit.cli import app
from contrastkit.curation.editing import EditSettings
from contrastkit.curation.masks import decode_segmentation, rle_counts, segmentation_area
from contrastkit.errors import DataFormatError

MASK = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32, composite="mask")


def _copy_coco(
    coco_dir: Path, folder: Path, change: Callable[[dict[str, Any], dict[str, Any]], None]
) -> Path:
    """A copy of the COCO fixture whose annotations ``change(captions, instances)``
    edits (the images are copied)."""
    (folder / "annotations").mkdir(parents=True)
    shutil.copytree(coco_dir / "train2017", folder / "train2017")
    files = {n: coco_dir / "annotations" / f"{n}_train2017.json" for n in ("captions", "instances")}
    data = {n: json.loads(path.read_text()) for n, path in files.items()}
    change(data["captions"], data["instances"])
    for name, content in data.items():
        (folder / "annotations" / f"{name}_train2017.json").write_text(json.dumps(content))
    return folder


def _person(captions: dict[str, Any], instances: dict[str, Any], image_id: int) -> tuple[
    dict[str, Any], dict[str, Any]
]:  # fmt: skip
    """The image entry and the (only) person annotation of ``image_id``."""
    image = next(i for i in captions["images"] if i["id"] == image_id)
    person = next(a for a in instances["annotations"] if a["image_id"] == image_id)
    return image, person


def test_compressed_counts_read_as_pycocotools_reads_them() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        height, width = (int(v) for v in rng.integers(1, 40, 2))
        mask = (rng.random((height, width)) < rng.random()).astype(np.uint8)
        text = coco_mask.encode(np.asfortranarray(mask))["counts"].decode("ascii")
        runs = rle_counts(text, height, width)
        values = np.repeat(np.arange(len(runs)) % 2, runs)
        assert np.array_equal(values, mask.flatten(order="F"))
        segmentation = {"size": [height, width], "counts": text}
        assert np.array_equal(decode_segmentation(segmentation, width, height), mask > 0)
        assert segmentation_area(segmentation, width, height) == mask.sum()


BAD_COUNTS = [
    ("0", "add up to 0 pixels"),
    ("", "add up to 0 pixels"),
    ([], "add up to 0 pixels"),
    ([10], "add up to 10 pixels"),
    ([10**30], "longer than an RLE holds"),
    ([-1, 5], "not a whole number >= 0"),
    ([1.5], "not a whole number >= 0"),
    ("zz", "not an RLE code"),
    ("1" + "P" * 20, "longer than 12 characters"),
    ("P", "cut short"),
    (7, "expected run lengths or an RLE string"),
]


@pytest.mark.parametrize(("counts", "reason"), BAD_COUNTS)
def test_malformed_rle_counts_are_refused_when_the_annotations_are_read(
    coco_dir: Path, tmp_path: Path, counts: Any, reason: str
) -> None:
    def change(captions: dict[str, Any], instances: dict[str, Any]) -> None:
        image, person = _person(captions, instances, 1)
        person["segmentation"] = {"size": [image["height"], image["width"]], "counts": counts}

    broken = _copy_coco(coco_dir, tmp_path / "coco", change)
    with pytest.raises(DataFormatError, match=reason) as caught:
        read_coco(broken)
    assert caught.value.path.endswith("instances_train2017.json")
    assert caught.value.field is not None and caught.value.field.endswith(".segmentation.counts")


@pytest.mark.parametrize(
    ("segmentation", "field", "reason"),
    [
        ({"size": [200000, 200000], "counts": [4 * 10**10]}, ".size", "expected \\["),
        ([[1e30, 0.0, 5.0, 5.0, 0.0, 5.0]], ".segmentation[0][0]", "outside the"),
        ([[float("nan"), 0.0, 5.0, 5.0, 0.0, 5.0]], ".segmentation[0][0]", "not a finite"),
        ([[1, 2, 3, 4]], ".segmentation[0]", "at least 3 points"),
        ("abc", ".segmentation", "polygons or an RLE"),
    ],
)
def test_segmentations_that_do_not_fit_their_image_are_refused(
    coco_dir: Path, tmp_path: Path, segmentation: Any, field: str, reason: str
) -> None:
    def change(captions: dict[str, Any], instances: dict[str, Any]) -> None:
        _person(captions, instances, 1)[1]["segmentation"] = segmentation

    broken = _copy_coco(coco_dir, tmp_path / "coco", change)
    with pytest.raises(DataFormatError, match=reason) as caught:
        read_coco(broken)
    assert caught.value.field is not None and caught.value.field.endswith(field)


def test_a_declared_size_that_is_not_the_image_is_refused_before_any_edit(
    coco_dir: Path, tiny_editor_dir: Path, tmp_path: Path
) -> None:
    """200000 x 200000 declared for a small photo, with an RLE of that size: refused
    (exit 2, naming the image) before the editor is called, nothing rasterised."""

    def change(captions: dict[str, Any], instances: dict[str, Any]) -> None:
        image, person = _person(captions, instances, 1)
        image["width"] = image["height"] = 200000
        person["segmentation"] = {"size": [200000, 200000], "counts": [4 * 10**9] * 10}

    broken = _copy_coco(coco_dir, tmp_path / "coco", change)
    with pytest.raises(DataFormatError, match=r"declare image 1 200000x200000, but the file is"):
        run_edit_stage(EditStageConfig(broken, tmp_path / "b", MASK, limit=1), object())  # type: ignore[arg-type]
    assert Manifest(tmp_path / "b").read() == []
    result = CliRunner().invoke(
        app, ["build", "gensynth", "--coco", str(broken), "--out", str(tmp_path / "c"),
              "--stage", "edit", "--limit", "1", "--editor", str(tiny_editor_dir),
              "--composite", "mask"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "train2017/" in result.stderr and "200000x200000" in result.stderr


def _empty_masks(captions: dict[str, Any], instances: dict[str, Any]) -> None:
    """Source 1: an all-background RLE; source 2: a polygon without area."""
    image, person = _person(captions, instances, 1)
    height, width = image["height"], image["width"]
    person["segmentation"] = {"size": [height, width], "counts": [height * width]}
    x, y = _person(captions, instances, 2)[1]["bbox"][:2]
    _person(captions, instances, 2)[1]["segmentation"] = [[x, y, x + 5, y + 5, x + 10, y + 10]]


def test_persons_whose_mask_covers_nothing_are_left_out_at_selection(
    coco_dir: Path, tmp_path: Path
) -> None:
    coco = read_coco(_copy_coco(coco_dir, tmp_path / "coco", _empty_masks))
    boxed = select_sources(coco, min_box_side=64)
    assert [s.source_id for s in boxed.sources] == ["1", "2", "3"]  # the box edit needs none
    assert "empty_mask" not in boxed.counts
    masked = select_sources(coco, min_box_side=64, needs_mask=True)
    assert [s.source_id for s in masked.sources] == ["3"]
    assert masked.counts["empty_mask"] == 2 and masked.counts["selected"] == 1


@pytest.mark.slow
def test_a_mask_build_edits_exports_and_reports_no_empty_mask(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    coco = _copy_coco(coco_dir, tmp_path / "coco", _empty_masks)
    out = tmp_path / "build"
    result = CliRunner().invoke(
        app, ["build", "gensynth", "--coco", str(coco), "--out", str(out), "--editor",
              str(tiny_editor_dir), "--embedder", tiny_clip_spec, "--min-box-side", "64",
              "--resolution", "32", "--steps", "2", "--scales", "9.5", "--k", "3",
              "--tau-real", "-1", "--tau-gender", "-1", "--composite", "mask", "--no-quality"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    shown = " ".join(result.stdout.split())
    assert "left out 2 people whose COCO segmentation covers no pixel" in shown
    summary = json.loads((out / "build_summary.json").read_text())
    assert summary["edit"]["selection"]["empty_mask"] == 2
    assert {r.source_id for r in Manifest(out).read()} == {"3"}
    exported = CliRunner().invoke(
        app, ["export", "contrast", str(out), "--out", str(tmp_path / "x")]
    )
    assert exported.exit_code == 0, exported.output
    rows = load_export(tmp_path / "x", "contrast", source="parquet")["test"]
    assert rows["source_id"] == ["3", "3"]

    # A folder edited before persons with empty masks were left out: the select stage
    # leaves them out too, and says so.
    sources = read_sources(out)
    height, width = sources[0].height, sources[0].width
    empty = {"size": [height, width], "counts": [height * width]}
    write_sources(out, [replace(sources[0], segmentation=empty)])
    selected = run_select_stage(out)
    assert (selected["left_out_empty_mask"], selected["sources_kept"]) == (1, 0)
    assert read_contrast_set(out / "contrast_set.jsonl") == []


def test_the_declared_size_is_the_photo_as_shown(coco_dir: Path, tmp_path: Path) -> None:
    """A JPEG stored 600x512 with an EXIF quarter turn is 512x600 as the build reads it:
    that is the size its annotations must declare."""
    from dataclasses import replace as changed

    from PIL import Image

    from contrastkit.builders.coco_files import check_image_sizes

    source = select_sources(read_coco(coco_dir), min_box_side=64).sources[0]
    file = tmp_path / "turned.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to show
    Image.new("RGB", (600, 512), (90, 120, 150)).save(file, exif=exif)
    check_image_sizes([changed(source, path=file, width=512, height=600)])
    with pytest.raises(DataFormatError, match=r"600x512, but the file is 512x600 \(stored"):
        check_image_sizes([changed(source, path=file, width=600, height=512)])
    with pytest.raises(DataFormatError, match="image file not found"):
        check_image_sizes([changed(source, path=tmp_path / "missing.jpg")])
