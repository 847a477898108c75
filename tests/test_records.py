"""Reading candidate-style tables from CSV, TSV, JSONL and JSON with located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.errors import DataFormatError
from contrastkit.records import parse_bool, read_records


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
