"""COCO sources (GenSynth Sec. 4.1): one person box, defined label, counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contrastkit.builders.coco import find_split, read_coco, select_sources
from contrastkit.errors import DataFormatError
from contrastkit.schema import Gender


def test_select_sources_keeps_one_person_with_a_defined_label(coco_dir: Path) -> None:
    coco = read_coco(coco_dir)
    assert coco.split == "train2017" and len(coco.images) == 7
    selection = select_sources(coco, min_box_side=64)
    assert [s.source_id for s in selection.sources] == ["1", "2", "3"]
    assert [s.label for s in selection.sources] == [Gender.MASCULINE, Gender.FEMININE,
                                                    Gender.FEMININE]  # fmt: skip
    assert selection.sources[1].path.is_file()
    assert selection.counts == {
        "images": 7, "masculine": 3, "feminine": 2, "undefined": 2, "one_person": 6,
        "box_too_small": 1, "one_person_undefined": 2, "selected": 3,
        "selected_masculine": 1, "selected_feminine": 2,
    }  # fmt: skip
    # Without a minimum size the small box is kept; limit cuts in id order.
    assert [s.source_id for s in select_sources(coco).sources] == ["1", "2", "3", "7"]
    limited = select_sources(coco, limit=2)
    assert len(limited.sources) == 2 and limited.counts["limited_to"] == 2


def test_box_is_clipped_to_the_image(coco_dir: Path) -> None:
    source = select_sources(read_coco(coco_dir)).sources[2]
    assert source.box.xyxy(source.width, source.height) == (10, 20, 510, 600)


def _copy(coco_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "coco"
    (root / "annotations").mkdir(parents=True)
    for path in (coco_dir / "annotations").iterdir():
        (root / "annotations" / path.name).write_text(path.read_text())
    return root


def test_malformed_annotations_name_file_and_field(coco_dir: Path, tmp_path: Path) -> None:
    root = _copy(coco_dir, tmp_path)
    instances = root / "annotations" / "instances_train2017.json"
    data = json.loads(instances.read_text())
    data["annotations"][2]["bbox"] = [1, 2, 3]
    instances.write_text(json.dumps(data))
    with pytest.raises(DataFormatError) as info:
        read_coco(root)
    assert info.value.path == str(instances) and info.value.field == "annotations[2].bbox"

    captions = root / "annotations" / "captions_train2017.json"
    captions.write_text('{"images": [\n{"id": 1,}]}')
    with pytest.raises(DataFormatError) as info:
        read_coco(root)
    assert info.value.line == 2 and "invalid JSON" in str(info.value)


def test_split_must_be_chosen_when_several(coco_dir: Path, tmp_path: Path) -> None:
    root = _copy(coco_dir, tmp_path)
    for kind in ("captions", "instances"):
        src = root / "annotations" / f"{kind}_train2017.json"
        (root / "annotations" / f"{kind}_val2017.json").write_text(src.read_text())
    with pytest.raises(DataFormatError, match="several splits"):
        find_split(root)
    assert find_split(root, "val2017")[0] == "val2017"
    with pytest.raises(DataFormatError, match="no captions"):
        find_split(tmp_path)


def test_the_parsed_split_is_kept_and_reused_until_the_annotations_change(
    coco_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_coco_cached parses the JSON once into build/coco_table.parquet; a resumed run
    reads the table (the JSON parser is not called) and gets the same split; a changed
    annotation file makes it parse again."""
    import os

    from contrastkit.builders import coco as coco_module

    build = tmp_path / "build"
    parsed = read_coco(coco_dir)
    assert coco_module.read_coco_cached(coco_dir, build) == parsed
    assert (build / coco_module.SOURCE_TABLE).is_file()

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the JSON was parsed again")

    monkeypatch.setattr(coco_module, "read_coco", no_parsing)
    again = coco_module.read_coco_cached(coco_dir, build)
    assert again == parsed
    assert select_sources(again).sources == select_sources(parsed).sources

    captions = next((coco_dir / "annotations").glob("captions_*.json"))
    stat = captions.stat()
    os.utime(captions, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    try:
        with pytest.raises(AssertionError, match="parsed again"):
            coco_module.read_coco_cached(coco_dir, build)
    finally:
        os.utime(captions, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (lambda d: d["annotations"][0].__setitem__("bbox", [float("nan"), 1, 50, 50]),
         "annotations[0].bbox", "not a finite number"),
        (lambda d: d["annotations"][0].__setitem__("bbox", [1, 1, float("inf"), 50]),
         "annotations[0].bbox", "not a finite number"),
        (lambda d: d["annotations"][0].__setitem__("bbox", [-40, 1, 50, 50]),
         "annotations[0].bbox", "is not inside its"),
        (lambda d: d["annotations"][0].__setitem__("bbox", [1, 1, 5000, 50]),
         "annotations[0].bbox", "is not inside its"),
        (lambda d: d["images"][0].__setitem__("width", 0), "images[0].width", "must be > 0"),
    ],
)  # fmt: skip
def test_impossible_boxes_and_sizes_fail_before_any_model_loads(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, change: Any, field: str, words: str,
) -> None:  # fmt: skip
    """A box that is not finite or not inside its image, an image of width 0: the build
    stops with the file and field named before the editor loads (which takes a minute at
    the paper's scale; the editor is only found on disk before), and writes no edit."""
    from typer.testing import CliRunner

    from contrastkit.cli import app

    root = _copy(coco_dir, tmp_path)
    kind = "captions" if field.startswith("images") else "instances"
    path = root / "annotations" / f"{kind}_train2017.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))  # NaN and Infinity as Python's json writes them

    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model was loaded before the inputs were checked")

    monkeypatch.setattr("contrastkit.curation.editing.load_editor", no_model)
    out = tmp_path / "build"
    result = CliRunner().invoke(app, ["build", "gensynth", "--coco", str(root), "--out",
                                      str(out), "--editor", str(tiny_editor_dir),
                                      "--embedder", tiny_clip_spec, "--no-quality"])  # fmt: skip
    assert result.exit_code == 2, result.output
    shown = " ".join(result.output.split())
    assert field in shown and words in shown
    assert not (out / "manifest.jsonl").exists() and not (out / "edits").exists()
