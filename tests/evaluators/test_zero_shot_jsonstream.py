"""Visual Genome's several-GB ``objects.json`` is read one entry at a time
(:mod:`contrastkit.evaluators.tasks.zero_shot.jsonstream`): the same elements as ``json.load``,
the same verdict on malformed files, located errors."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.zero_shot.jsonstream import iter_json_array

_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


def _read(text: str, chunk: int) -> list[object] | DataFormatError:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "objects.json"
        path.write_text(text, encoding="utf-8", newline="")
        try:
            return list(iter_json_array(path, "images", chunk=chunk))
        except DataFormatError as error:
            assert Path(error.path) == path
            return error


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.lists(_VALUES, max_size=6) | _VALUES,
    indent=st.sampled_from([None, 0, 2]),
    chunk=st.integers(1, 9),
)
def test_the_elements_are_those_json_load_gives_whatever_the_chunk_size(
    value: object, indent: int | None, chunk: int
) -> None:
    text = json.dumps(value, indent=indent)
    read = _read(text, chunk)
    if isinstance(value, list):
        assert json.dumps(read) == json.dumps(value)
    else:
        assert isinstance(read, DataFormatError) and "expected a list of images" in str(read)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(
        _TEXT, st.builds(lambda t: "[" + t, _TEXT), st.builds(lambda t: "[1," + t, _TEXT)
    ),
    chunk=st.integers(1, 5),
)
def test_any_text_is_read_as_json_load_reads_it_or_is_a_located_error(
    text: str, chunk: int
) -> None:
    try:
        expected = json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError:
        expected = None
    read = _read(text, chunk)
    if isinstance(expected, list):
        assert json.dumps(read) == json.dumps(expected)
    else:
        assert isinstance(read, DataFormatError)


def test_errors_name_the_line_and_elements_come_before_the_end_is_read(tmp_path: Path) -> None:
    path = tmp_path / "objects.json"
    path.write_text('[\n {"image_id": 1},\n {"image_id": 2},\n {"image_id": ]\n', encoding="utf-8")
    entries = iter_json_array(path, "images", chunk=4)
    assert next(entries) == {"image_id": 1}  # before the malformed part is even read
    assert next(entries) == {"image_id": 2}
    with pytest.raises(DataFormatError, match=r"objects\.json:4: not valid JSON"):
        next(entries)
    path.write_text("[1, 2] 3", encoding="utf-8")
    with pytest.raises(DataFormatError, match="extra data after the list"):
        list(iter_json_array(path))
    path.write_bytes(b'[{"a": "\xff"}]')
    with pytest.raises(DataFormatError, match="not valid UTF-8"):
        list(iter_json_array(path))
    with pytest.raises(DataFormatError, match="file not found"):
        list(iter_json_array(tmp_path / "missing.json"))
