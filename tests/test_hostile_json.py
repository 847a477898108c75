"""Hostile JSON through every reader of JSON and JSON Lines files (issue 30): deep nesting
(past Python's recursion limit), integers with thousands of digits, huge values and one
huge line. Each reader goes through the one strict reader of :mod:`contrastkit.records`
and may only raise a :class:`~contrastkit.errors.DataFormatError` naming the file (or,
for a sniffer, answer no); a line longer than the cap is refused with its number, read no
further than the cap.
"""

from __future__ import annotations

import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contrastkit.builders.manifest import Manifest, read_contrast_set, read_sources
from contrastkit.builders.stereoset import read_stereoset
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.zero_shot.jsonstream import iter_json_array
from contrastkit.evaluators.tasks.zero_shot.predictions import load_predictions
from contrastkit.harness_key import read_key
from contrastkit.probes import is_probe_set, read_probes
from contrastkit.records import (
    MAX_LINE_BYTES,
    json_lines,
    read_json,
    read_json_object,
    read_records,
    text_lines,
)
from contrastkit.tiny.marker import marked_random


def _nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


#: JSON texts a hostile or broken writer might leave: nested past the recursion limit (in
#: a list, in an object), integers Python refuses to convert, long strings, valid bits.
VALUES = st.one_of(
    st.integers(1_000, 200_000).map(_nested),
    st.integers(1_000, 100_000).map(lambda d: '{"a": ' + _nested(d) + "}"),
    st.integers(4_400, 60_000).map(lambda n: "9" * n),
    st.integers(4_400, 60_000).map(lambda n: '{"image_id": ' + "7" * n + "}"),
    st.integers(1, 300_000).map(lambda n: '{"x": "' + "a" * n + '"}'),
    st.sampled_from(["{}", "[]", "null", '{"stereotype_caption": 1}', '"text"', "1e999"]),
)

#: Every reader of a JSON (``.json``) or JSON Lines (``.jsonl``) file the user gives.
READERS: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "records-jsonl": (".jsonl", read_records),
    "records-json": (".json", read_records),
    "json-lines": (".jsonl", lambda p: list(json_lines(p))),
    "json": (".json", read_json),
    "json-object (build summary)": (".json", read_json_object),
    "probe set": (".jsonl", read_probes),
    "stereoset": (".json", read_stereoset),
    "visual genome (streamed)": (".json", lambda p: list(iter_json_array(p))),
    "predictions": (".jsonl", lambda p: load_predictions(p, ["1"], ["a"])),
    "harness key": (".json", read_key),
    "contrast set": (".jsonl", read_contrast_set),
}

#: Readers of a fixed file name inside a folder.
FOLDER_READERS: dict[str, tuple[str, Callable[[Path], Any]]] = {
    "manifest": ("manifest.jsonl", lambda folder: Manifest(folder).read()),
    "sources": ("sources.jsonl", read_sources),
}

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _located(path: Path, call: Callable[[], Any]) -> None:
    try:
        call()
    except DataFormatError as error:
        assert error.path == str(path), (error.path, str(path))
        assert error.reason


@pytest.mark.parametrize("name", sorted(READERS))
@SETTINGS
@given(values=st.lists(VALUES, min_size=1, max_size=3))
def test_every_json_reader_gives_a_located_error_or_a_result(name: str, values: list[str]) -> None:
    suffix, reader = READERS[name]
    path = Path(tempfile.mkdtemp(prefix="hostile-json-")) / f"data{suffix}"
    text = "\n".join(values) + "\n" if suffix == ".jsonl" else values[0]
    path.write_text(text, encoding="utf-8")
    _located(path, lambda: reader(path))


@pytest.mark.parametrize("name", sorted(FOLDER_READERS))
@SETTINGS
@given(values=st.lists(VALUES, min_size=1, max_size=3))
def test_every_build_folder_file_reader_gives_a_located_error(name: str, values: list[str]) -> None:
    file_name, reader = FOLDER_READERS[name]
    folder = Path(tempfile.mkdtemp(prefix="hostile-json-"))
    (folder / file_name).write_text("\n".join(values) + "\n", encoding="utf-8")
    _located(folder / file_name, lambda: reader(folder))


@SETTINGS
@given(value=VALUES)
def test_sniffers_answer_instead_of_raising(value: str) -> None:
    """A sniffer looks at a header only: it answers yes or no, whatever the file holds
    (a yes is then checked in full by the reader, above)."""
    folder = Path(tempfile.mkdtemp(prefix="hostile-json-"))
    (folder / "probes.jsonl").write_text(value + "\n", encoding="utf-8")
    assert is_probe_set(folder / "probes.jsonl") in (True, False)
    (folder / "dataset_info.json").write_text(value, encoding="utf-8")
    assert is_probe_set(folder) in (True, False)
    (folder / "random_weights.json").write_text(value, encoding="utf-8")
    assert marked_random(folder) in (True, False)


def test_a_line_longer_than_the_cap_is_refused_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "' + b"x" * 5000 + b'"}\n{"c": 3}\n')
    with pytest.raises(DataFormatError, match=r"rows\.jsonl:2: line longer than 1000 bytes"):
        list(json_lines(path, max_line_bytes=1000))
    assert [n for n, _ in json_lines(path, max_line_bytes=6000)] == [1, 2, 3]
    # A torn last line (no newline) is left out only where asked.
    path.write_bytes(b'{"a": 1}\n{"b": 2')
    assert [n for n, _ in json_lines(path, torn_tail=True)] == [1]
    with pytest.raises(DataFormatError, match=r"rows\.jsonl:2: invalid JSON"):
        list(json_lines(path))
    path.write_bytes(b'{"a": 1}\r\n\xef\xbb\xbf\xff\n')
    with pytest.raises(DataFormatError, match=r"rows\.jsonl:2: not UTF-8"):
        list(text_lines(path))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["probes.jsonl", "candidates.csv"])
def test_one_huge_line_is_refused_in_a_small_multiple_of_the_cap(tmp_path: Path, name: str) -> None:
    """A probe set (JSON Lines) or a candidate table (CSV) whose first line is one value
    bigger than the line cap: refused naming line 1, with peak memory under three times
    the cap (not 25x the line)."""
    path = tmp_path / name
    reader = read_probes if name.endswith(".jsonl") else read_records
    with path.open("wb") as handle:
        handle.write(b'{"stereotype_caption": "' if name.endswith(".jsonl") else b'"')
        chunk = b"x" * (1 << 20)
        for _ in range(MAX_LINE_BYTES // len(chunk) + 8):
            handle.write(chunk)
        handle.write(b'"}\n' if name.endswith(".jsonl") else b'"\n')
    tracemalloc.start()
    try:
        with pytest.raises(DataFormatError, match=rf"{name}:1: line longer than"):
            list(reader(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_LINE_BYTES, peak


# -- data never names a file outside the folder the user gave ------------------------------


@pytest.mark.parametrize(
    "name", ["../outside.jpg", "/etc/passwd", "a/../../outside.jpg", "C:\\x.jpg", "\\\\host\\x", ""]
)
@pytest.mark.parametrize("reader", ["build", "audit", "zero-shot"])
def test_a_coco_file_name_outside_the_images_folder_is_refused(
    tmp_path: Path, name: str, reader: str
) -> None:
    """Every COCO reader (GenSynth sources, the dataset audit, the zero-shot analysis)
    refuses a ``file_name`` that is absolute or climbs out with ``..``, naming the file
    and the field, before any image is opened."""
    import json

    from contrastkit.audit.data import read_coco_captions
    from contrastkit.builders.coco import read_coco
    from contrastkit.evaluators.tasks.zero_shot.groups import GroupingOptions, load_grouped
    from contrastkit.samples import write_coco

    root = write_coco(tmp_path / "coco")
    (tmp_path / "outside.jpg").write_bytes(b"not yours")
    for kind in ("captions", "instances"):
        path = root / "annotations" / f"{kind}_train2017.json"
        data = json.loads(path.read_text())
        data["images"][1]["file_name"] = name
        path.write_text(json.dumps(data))
    readers = {
        "build": (lambda: read_coco(root), "captions"),
        "audit": (lambda: read_coco_captions(root), "captions"),
        "zero-shot": (
            lambda: load_grouped(root, GroupingOptions(layout="coco", min_images=1)),
            "instances",
        ),
    }
    call, kind = readers[reader]
    with pytest.raises(DataFormatError, match="names a file outside") as caught:
        call()
    assert caught.value.path == str(root / "annotations" / f"{kind}_train2017.json")
    assert caught.value.field == "images[1].file_name"


@pytest.mark.parametrize(
    ("kind", "where", "value"),
    [
        ("instances", ("images", 1, "id"), "2"),
        ("instances", ("images", 1, "id"), 2.0),
        ("instances", ("annotations", 0, "image_id"), [1]),
        ("captions", ("annotations", 0, "image_id"), True),
    ],
)
def test_a_coco_id_of_the_wrong_type_is_a_located_error(
    tmp_path: Path, kind: str, where: tuple[str, int, str], value: object
) -> None:
    """In the zero-shot analysis a COCO id that is not an integer silently matched
    nothing or the wrong image: now it is an error naming the file and the field."""
    import json

    from contrastkit.evaluators.tasks.zero_shot.groups import GroupingOptions, load_grouped
    from contrastkit.samples import write_coco

    root = write_coco(tmp_path / "coco")
    path = root / "annotations" / f"{kind}_train2017.json"
    data = json.loads(path.read_text())
    key, index, name = where
    data[key][index][name] = value
    path.write_text(json.dumps(data))
    with pytest.raises(DataFormatError, match="expected an integer id") as caught:
        load_grouped(root, GroupingOptions(layout="coco", min_images=1))
    assert caught.value.path == str(path)
    assert caught.value.field == f"{key}[{index}].{name}"
