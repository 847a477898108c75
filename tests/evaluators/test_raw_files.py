"""Raw score files (contrastkit.evaluators.raw), the resumable JSONL format the runner and
the stereotype task share, and the input-size reading of image processors
(contrastkit.models.image_size)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.evaluators.raw import RawAppender, dumps_jsonl, read_raw
from contrastkit.models.image_size import processor_input_size, size_of


def test_an_interrupted_file_resumes_with_its_complete_records(tmp_path: Path) -> None:
    raw = tmp_path / "out" / "raw.jsonl"
    records = [
        {"key": "a", "model": "m1", "scores": [1.0]},
        {"key": "b", "model": "m2", "scores": [2.0]},
        {"key": "c", "model": "m1"},  # no scores
        ["not", "an", "object"],
        {"model": "m1", "scores": []},  # no key
    ]
    raw.parent.mkdir()
    raw.write_text(
        "".join(json.dumps(r) + "\n" for r in records) + '{"key": "d", "mod', encoding="utf-8"
    )
    assert list(read_raw(raw)) == ["a", "b", "c"]
    assert list(read_raw(raw, "m1")) == ["a", "c"]
    assert list(read_raw(raw, "m1", required=("scores",))) == ["a"]
    assert read_raw(tmp_path / "missing.jsonl") == {}

    kept = read_raw(raw, "m1", required=("scores",))
    with RawAppender(raw, kept.values()) as appender:
        assert raw.read_text(encoding="utf-8") == dumps_jsonl(kept.values())  # rewritten
        appender.write([])
        appender.write([{"key": "é", "model": "m1", "scores": [3.0]}])
        assert "é" in raw.read_text(encoding="utf-8")  # on disk after each batch, not \\u00e9
    assert list(read_raw(raw)) == ["a", "é"]


def test_raw_records_land_in_a_new_folder(tmp_path: Path) -> None:
    raw = tmp_path / "new" / "deeper" / "raw.jsonl"
    with RawAppender(raw, []) as appender:
        appender.write([{"key": "x", "model": "m"}])
    assert read_raw(raw) == {"x": {"key": "x", "model": "m"}}


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (224, (224, 224)),
        ((240, 320), (320, 240)),  # torchvision order: (height, width)
        ({"height": 384, "width": 512}, (512, 384)),
        ({"shortest_edge": 336}, (336, 336)),
        ({"longest_edge": 1000}, None),
        (None, None),
        ("224", None),
    ],
)
def test_size_settings_read_as_width_and_height(setting: object, expected: object) -> None:
    assert size_of(setting) == expected


def test_a_processor_size_is_its_crop_when_it_crops_else_its_resize() -> None:
    from transformers import BlipImageProcessor, CLIPImageProcessor, ViltImageProcessor

    cropping = CLIPImageProcessor(size={"shortest_edge": 40}, crop_size={"height": 32, "width": 24})
    assert processor_input_size(cropping) == (24, 32)
    cropping.do_center_crop = False
    assert processor_input_size(cropping) == (40, 40)
    assert processor_input_size(BlipImageProcessor(size={"height": 48, "width": 64})) == (64, 48)
    vilt = ViltImageProcessor(size={"shortest_edge": 32}, size_divisor=8)  # type: ignore[call-arg]
    assert processor_input_size(vilt) == (32, 32)
    assert processor_input_size(object()) is None
