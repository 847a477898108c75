"""Read tables of records from CSV, TSV, JSON Lines or JSON files, keeping line numbers.

Candidate pools and taxonomy extensions are small tables a person edits by hand or
exports from a spreadsheet; this module reads any of the usual formats into plain
``dict[str, str]`` records, each with the line it came from, so that a later check can
name the file, the line and the field at fault.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError

__all__ = ["FALSE_WORDS", "TRUE_WORDS", "Record", "parse_bool", "read_records"]

TRUE_WORDS = frozenset({"1", "true", "yes", "y", "ok", "t"})
FALSE_WORDS = frozenset({"0", "false", "no", "n", "f", ""})


@dataclass(frozen=True)
class Record:
    """One record: its values by (lower-cased, stripped) field name, and where it was."""

    path: Path
    line: int | None
    values: dict[str, str]

    def get(self, name: str, default: str = "") -> str:
        """The stripped value of ``name``, or ``default`` when absent."""
        return self.values.get(name, default)

    def error(self, field: str | None, reason: str) -> DataFormatError:
        """A :class:`DataFormatError` located at this record."""
        return DataFormatError(self.path, self.line, field, reason)


def parse_bool(record: Record, name: str) -> bool:
    """Read a yes/no field (``yes``/``no``, ``true``/``false``, ``1``/``0``, ...).

    Raises:
        DataFormatError: if the value is none of these words.
    """
    text = record.get(name).lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise record.error(name, f"expected yes or no, found {record.get(name)!r}")


def _scalar(path: Path, line: int | None, key: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value).strip()
    raise DataFormatError(
        path, line, key, f"expected a text or number, found {type(value).__name__}"
    )


def _normalize(path: Path, line: int | None, raw: dict[str, Any]) -> dict[str, str]:
    return {
        str(key).strip().lower(): _scalar(path, line, str(key), value)
        for key, value in raw.items()
        if key is not None
    }


def _read_delimited(path: Path, delimiter: str) -> Iterator[Record]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        header: list[str] | None = None
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [cell.strip().lower() for cell in row]
                seen: set[str] = set()
                for name in header:
                    if not name:
                        raise DataFormatError(path, line, None, "empty column name in header")
                    if name in seen:
                        raise DataFormatError(path, line, name, "column named twice in header")
                    seen.add(name)
                continue
            if len(row) != len(header):
                raise DataFormatError(
                    path,
                    line,
                    header[len(row)] if len(row) < len(header) else None,
                    f"expected {len(header)} fields as in the header, found {len(row)}",
                )
            yield Record(path, line, {k: v.strip() for k, v in zip(header, row, strict=True)})


def _read_jsonl(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8-sig") as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataFormatError(path, line, None, f"invalid JSON: {exc.msg}") from None
            if not isinstance(raw, dict):
                raise DataFormatError(path, line, None, "each line must be a JSON object")
            yield Record(path, line, _normalize(path, line, raw))


def _read_json(path: Path, list_key: str | None) -> Iterator[Record]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    if isinstance(raw, dict) and list_key is not None and list_key in raw:
        raw = raw[list_key]
    if not isinstance(raw, list):
        expected = f"a list (or an object with a {list_key!r} list)" if list_key else "a list"
        raise DataFormatError(path, None, None, f"expected {expected} of objects")
    for position, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DataFormatError(path, None, f"item {position}", "expected a JSON object")
        yield Record(path, None, _normalize(path, None, item))


def read_records(path: str | Path, *, list_key: str | None = None) -> Iterator[Record]:
    """Yield the records of a table file, chosen by its suffix.

    ``.csv`` (comma), ``.tsv`` / ``.tab`` (tab) need a header row; ``.jsonl`` /
    ``.ndjson`` hold one object per line; ``.json`` holds a list of objects, or an object
    whose ``list_key`` entry is that list. Field names are lower-cased and stripped, and
    so are values. Blank lines are skipped.

    Raises:
        DataFormatError: for an unknown suffix, a missing file, or a malformed line.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_delimited(path, ",")
    if suffix in (".tsv", ".tab"):
        return _read_delimited(path, "\t")
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if suffix == ".json":
        return _read_json(path, list_key)
    raise DataFormatError(
        path, None, None, f"unknown file type {suffix!r}: use .csv, .tsv, .jsonl or .json"
    )
