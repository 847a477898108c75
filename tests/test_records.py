"""Reading candidate-style tables from CSV, TSV, JSONL and JSON with located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.errors import DataFormatError
from contrastkit.records import local_file_name, parse_bool, read_records


def test_csv_keeps_line_numbers_and_normalises_names(tmp_path: Path) -> None:
    path = tmp_path / "pool.csv"
    path.write_text(' URL ,Occupation\n\n"https://x/a.jpg", doctor \n"https://x/b,c.jpg",nurse\n')
    records = list(read_records(path))
    assert [r.line for r in records] == [3, 4]
    assert records[0].values == {"url": "https://x/a.jpg", "occupation": "doctor"}
    assert records[1].get("url") == "https://x/b,c.jpg"


@pytest.mark.parametrize(
    ("name", "text", "line", "field", "words"),
    [
        ("a.csv", "url,occupation\nx\n", 2, "occupation", "expected 2 fields"),
        ("a.csv", "url,url\nx,y\n", 1, "url", "named twice"),
        ("a.jsonl", '{"url": "x"}\n[1, 2]\n', 2, None, "JSON object"),
        ("a.jsonl", '{"url": "x"}\n{"url": \n', 2, None, "invalid JSON"),
        ("a.jsonl", '{"url": {"nested": 1}}\n', 1, "url", "text or number"),
        ("a.json", '{"rows": []}', None, None, "expected a list"),
        ("a.xlsx", "", None, None, "unknown file type"),
    ],
)
def test_malformed_tables(
    tmp_path: Path, name: str, text: str, line: int | None, field: str | None, words: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataFormatError) as caught:
        list(read_records(path))
    assert (caught.value.line, caught.value.field) == (line, field)
    assert words in str(caught.value)


def test_yes_no_words(tmp_path: Path) -> None:
    path = tmp_path / "flags.jsonl"
    path.write_text('{"ok": "Yes"}\n{"ok": false}\n{"ok": 1}\n{"ok": "maybe"}\n')
    records = list(read_records(path))
    assert [parse_bool(r, "ok") for r in records[:3]] == [True, False, True]
    with pytest.raises(DataFormatError, match="expected yes or no") as caught:
        parse_bool(records[3], "ok")
    assert caught.value.line == 4


@pytest.mark.parametrize(
    ("name", "data", "line", "field", "words"),
    [
        ("a.csv", b"url,occupation\nx,Jos\xe9\n", 2, None, "not UTF-8"),
        ("a.jsonl", b'{"url": "x"}\n{"url": "\xff"}\n', 2, None, "not UTF-8"),
        ("a.csv", b"url,occupation\nx,do\x00ctor\n", 2, None, "NUL byte"),
        ("a.jsonl", b'{"url": "do\\u0000c"}\n', 1, "url", "NUL character"),
        ("a.jsonl", b'{"url": "\\udcff"}\n', 1, "url", "lone surrogate \\udcff"),
        ("a.json", b'[{"url": "x"}, {"\\ud800": "y"}]', None, None, "lone surrogate"),
        ("a.jsonl", b"[" * 100_000 + b"\n", 1, None, "nested too deeply"),
        ("a.jsonl", b'{"n": ' + b"9" * 5000 + b"}\n", 1, None, "invalid JSON"),
        ("a.json", b"[" * 100_000, None, None, "nested too deeply"),
        ("a.csv", b'url,occupation\n"x,' + b"y" * 200_000 + b'"\n', 2, None, "malformed table"),
        ("a.csv", b"url\tx,occupation\n", 1, None, "tab or a line break"),
    ],
)
def test_hostile_bytes_are_located_errors(
    tmp_path: Path, name: str, data: bytes, line: int | None, field: str | None, words: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DataFormatError) as caught:
        list(read_records(path))
    assert (caught.value.line, caught.value.field) == (line, field)
    assert words in str(caught.value)


def test_single_line_refuses_tabs_and_line_breaks_in_values(tmp_path: Path) -> None:
    path = tmp_path / "pool.csv"
    path.write_text('url,annotator\nx,"two\nlines"\ny,"a\tb"\n')
    assert [r.get("annotator") for r in read_records(path)] == ["two\nlines", "a\tb"]
    with pytest.raises(DataFormatError, match="tab or a line break") as caught:
        list(read_records(path, single_line=True))
    assert (caught.value.line, caught.value.field) == (3, "annotator")


def test_a_folder_is_a_located_error(tmp_path: Path) -> None:
    folder = tmp_path / "pool.csv"
    folder.mkdir()
    with pytest.raises(DataFormatError, match="no such file"):
        list(read_records(folder))


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"a": 1,\n  "b": }', "invalid JSON"),
        (b"[1, 2]", "expected a build summary"),
        (b'{"a": "\xff"}', "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_a_json_object_file_fails_as_a_located_error(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    from contrastkit.records import read_json_object

    path = tmp_path / "build_summary.json"
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match=reason) as caught:
        read_json_object(path, "a build summary")
    assert caught.value.path == str(path)
    with pytest.raises(DataFormatError, match="no such file"):
        read_json_object(tmp_path / "missing.json")


def test_a_local_file_is_named_relative_to_the_datas_folder_or_refused(tmp_path: Path) -> None:
    """Data may name its images by relative names, absolute paths or ``file://`` URLs;
    each is the file's name inside the data's folder, and anything outside is refused."""
    data = tmp_path / "set" / "oo.tsv"
    inside = tmp_path / "set" / "img" / "a b.jpg"
    for value in ("img/a b.jpg", str(inside), inside.as_uri(), f"{tmp_path}/set/x/../img/a b.jpg"):
        assert local_file_name(data, 2, "URL", value) == "img/a b.jpg", value
    for value in ("../a.jpg", str(tmp_path / "a.jpg"), (tmp_path / "a.jpg").as_uri(),
                  str(tmp_path / "set"), "file:///set/%00a.jpg", "", "/etc/passwd"):  # fmt: skip
        with pytest.raises(DataFormatError, match="outside the data's folder") as caught:
            local_file_name(data, 2, "URL", value)
        assert (caught.value.line, caught.value.field) == (2, "URL"), value
