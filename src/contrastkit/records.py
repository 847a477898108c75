"""Read tables of records from CSV, TSV, JSON Lines or JSON files, keeping line numbers.

Candidate pools and taxonomy extensions are small tables a person edits by hand or
exports from a spreadsheet; this module reads any of the usual formats into plain
``dict[str, str]`` records, each with the line it came from, so that a later check can
name the file, the line and the field at fault.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import unquote, urlsplit

from contrastkit.errors import DataFormatError

__all__ = [
    "FALSE_WORDS",
    "FOLLOW_LINKS_HINT",
    "MAX_ANNOTATION_BYTES",
    "MAX_JSON_BYTES",
    "MAX_LINE_BYTES",
    "TRUE_WORDS",
    "Record",
    "data_file",
    "follow_links",
    "following_links",
    "json_lines",
    "links_followed",
    "local_file_name",
    "parse_bool",
    "parse_json",
    "read_coco_json",
    "read_json",
    "read_json_object",
    "read_records",
    "relative_file_name",
    "text_lines",
]

#: The longest line (bytes, its line ending included) any line-by-line reader takes: a
#: longer one is a :class:`DataFormatError` naming the file and line, found without
#: reading more than this much of it, so memory stays a small multiple of the cap
#: whatever the file holds.
MAX_LINE_BYTES = 32 * 1024 * 1024

#: The largest single JSON document (or JSON table) a reader takes, in bytes: a larger
#: one is a :class:`DataFormatError` naming the file and the cap, found without reading
#: more than this much of it. Parsing costs up to about 30 times the file's size (a long
#: non-Latin string is held as bytes, text and a 4-byte-per-character ``str``), so the
#: cap bounds memory at about 2 GB.
MAX_JSON_BYTES = 64 * 1024 * 1024
#: The cap for the annotation files of public datasets read whole (COCO's
#: ``instances_train2017.json`` is 448 MB, ``captions_train2017.json`` 92 MB).
MAX_ANNOTATION_BYTES = 1024 * 1024 * 1024

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


_SINGLE_LINE_BREAKERS = ("\t", "\n", "\r")


def _check_text(path: Path, line: int | None, key: str | None, text: str, single_line: bool) -> str:
    """``text`` if it is a value a table may hold, else a located error: never a NUL or a
    lone surrogate (not text), and with ``single_line`` no tab or line break."""
    if "\0" in text:
        raise DataFormatError(path, line, key, "holds a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise DataFormatError(
            path, line, key, f"not valid Unicode text (a lone surrogate \\u{code:04x})"
        ) from None
    if single_line and any(ch in text for ch in _SINGLE_LINE_BREAKERS):
        raise DataFormatError(
            path, line, key, "holds a tab or a line break, which the TSV files cannot hold"
        )
    return text


def _scalar(path: Path, line: int | None, key: str, value: Any, single_line: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return _check_text(path, line, key, str(value).strip(), single_line)
    raise DataFormatError(
        path, line, key, f"expected a text or number, found {type(value).__name__}"
    )


def _normalize(
    path: Path, line: int | None, raw: Mapping[str, object], single_line: bool
) -> dict[str, str]:
    values: dict[str, str] = {}
    for key, value in raw.items():
        name = _check_text(path, line, None, str(key).strip().lower(), True)
        values[name] = _scalar(path, line, name or str(key), value, single_line)
    return values


def _read_text(path: Path, max_bytes: int = MAX_JSON_BYTES) -> str:
    """The file's text (a UTF-8 byte-order mark dropped), or a located error; never
    more than ``max_bytes`` of it is read (the one size cap of every whole-file reader)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except IsADirectoryError as exc:
        raise DataFormatError(path, None, None, "is a folder, not a table file") from exc
    if len(data) > max_bytes:
        raise DataFormatError(
            path, None, None,
            f"larger than {max_bytes:,} bytes, the most this file may hold (it is read whole)",
        )  # fmt: skip
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFormatError(path, line, None, f"not UTF-8 text ({exc.reason})") from exc
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise DataFormatError(path, line, None, "NUL byte: a binary file, not a table")
    return text


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a name given twice (which one counts is up to
    each parser, so a file could mean one thing to a checker and another here)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


def parse_json(path: Path, line: int | None, text: str, *, unique_keys: bool = False) -> Any:
    """``json.loads(text)``, every failure a located :class:`DataFormatError`: invalid
    JSON, nesting deeper than Python's recursion limit, an integer of more digits than
    Python converts, and with ``unique_keys`` a key given twice in one object. The one
    JSON parser of every reader of files a user gives."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys if unique_keys else None)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise DataFormatError(path, where, None, f"invalid JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise DataFormatError(path, line, None, "invalid JSON: nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise DataFormatError(path, line, None, f"invalid JSON: {exc}") from exc


def relative_file_name(path: Path, line: int | None, field: str | None, value: str) -> str:
    """``value`` as the data gives it, if it names a file inside the folder the data
    belongs to: a relative path whose parts are not ``..`` (nor empty, nor a drive or
    root). The one containment rule of every reader whose rows name image files: data
    never names a file outside the folder the user gave.

    Raises:
        DataFormatError: naming ``path``, ``line`` and ``field``.
    """
    windows = PureWindowsPath(value)
    if (
        not value.strip()
        or "\0" in value
        or PurePosixPath(value).is_absolute()
        or windows.drive
        or windows.root
        or any(part == ".." for part in windows.parts)
    ):
        raise DataFormatError(
            path, line, field, f"{value!r} names a file outside the data's folder"
        )
    return value


def local_file_name(
    path: Path, line: int | None, field: str | None, value: str, *, folder: Path | None = None
) -> str:
    """The name, relative to the folder of the data file ``path`` (or to ``folder``), of
    the local file ``value`` names: a relative name (checked by
    :func:`relative_file_name`), or an absolute path, a ``~/`` path or a ``file://`` URL
    of a file inside that folder (the form tools that write a table often use). The
    containment rule of :func:`relative_file_name`, for data that may give its files
    either way. A lexical check: :func:`data_file` adds the check of the resolved path.

    Raises:
        DataFormatError: naming ``path``, ``line`` and ``field``: ``value`` names a file
            outside the folder of ``path`` (or no file name at all).
    """
    parts = urlsplit(value)
    text = unquote(parts.path) if parts.scheme == "file" else value
    given = Path(text).expanduser() if text.startswith("~/") else Path(text)
    if "\0" in text or not given.is_absolute():
        return relative_file_name(path, line, field, text)
    folder = Path(path).parent if folder is None else Path(folder)
    for base, target in (
        (Path(os.path.normpath(folder.absolute())), Path(os.path.normpath(given))),
        (folder.resolve(), given.resolve()),  # the folder given through a link
    ):
        if target != base and target.is_relative_to(base):
            return relative_file_name(path, line, field, target.relative_to(base).as_posix())
    raise DataFormatError(
        path, line, field,
        f"{value!r} names a file outside the data's folder ({folder.absolute()}); keep the "
        "images in that folder (or below it) and name them relative to it",
    )  # fmt: skip


#: Whether :func:`data_file` lets a link inside a data folder lead out of it (the
#: ``--follow-symlinks`` option; :func:`following_links`).
_LINKS = {"follow": False}

FOLLOW_LINKS_HINT = (
    "links inside a data folder that lead out of it are followed only with "
    "`contrastkit --follow-symlinks COMMAND ...` (records.following_links() in Python)"
)
"""How to allow what :func:`data_file` refuses, in words for an error message."""


def follow_links(enabled: bool) -> None:
    """Set whether :func:`data_file` follows links out of a data folder, from now on
    (what ``contrastkit --follow-symlinks`` does for one command)."""
    _LINKS["follow"] = enabled


@contextmanager
def following_links(enabled: bool = True) -> Iterator[None]:
    """Within this block, :func:`data_file` follows links inside a data folder to files
    outside it (``contrastkit --follow-symlinks``): for a folder of links to a dataset on
    other storage. Every reader and exporter then reads, and an export embeds, whatever
    the links point to, so use it only for data you trust."""
    before = _LINKS["follow"]
    _LINKS["follow"] = enabled
    try:
        yield
    finally:
        _LINKS["follow"] = before


def links_followed() -> bool:
    """Whether links out of a data folder are followed now (:func:`following_links`)."""
    return _LINKS["follow"]


def data_file(
    path: Path, line: int | None, field: str | None, value: str, *, folder: Path | None = None
) -> Path:
    """The local file ``value`` names in the data file ``path``, checked to lie inside
    the data's folder (the folder of ``path``, or ``folder``): the one path rule of every
    reader and exporter (SECURITY.md, "Files a dataset names").

    ``value`` must pass :func:`local_file_name` (a relative name without ``..``, or an
    absolute, ``~/`` or ``file://`` name of a file inside the folder), name no hidden
    file or folder (a part starting with ``.``, such as ``.cache``), and the file it
    names, every link resolved, must lie inside the folder, itself resolved: the folder
    may be a link or sit under one, but a link inside it that leads out of it is refused,
    unless :func:`following_links` is on.

    Returns:
        The file, as the folder joined with the relative name (not resolved).

    Raises:
        DataFormatError: naming ``path``, ``line`` and ``field``.
    """
    base = Path(path).parent if folder is None else Path(folder)
    name = local_file_name(path, line, field, value, folder=base)
    hidden = [part for part in PurePosixPath(name).parts if part.startswith(".")]
    if hidden:  # .cache/huggingface/token, .ssh/id_rsa, .git/...: never an image
        raise DataFormatError(
            path, line, field,
            f"{value!r} names a hidden file or folder ({hidden[0]}); data files are never hidden",
        )  # fmt: skip
    file = base / name
    if _LINKS["follow"]:
        return file
    try:
        root, target = base.resolve(), file.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop
        raise DataFormatError(path, line, field, f"{value!r} cannot be resolved: {exc}") from exc
    if target == root or not target.is_relative_to(root):
        raise DataFormatError(
            path, line, field,
            f"{value!r} leads through a link to {target}, outside the data's folder "
            f"({root}); {FOLLOW_LINKS_HINT}",
        )  # fmt: skip
    return file


def read_json(path: str | Path, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON document in ``path``, of any type. Every way the file can be unusable
    (missing, a folder, larger than ``max_bytes`` (:data:`MAX_JSON_BYTES`; the annotation
    files of public datasets pass :data:`MAX_ANNOTATION_BYTES`), not UTF-8, a NUL byte,
    invalid or too deeply nested JSON, a huge integer) is a :class:`DataFormatError`
    naming the file, the cause chained."""
    path = Path(path)
    try:
        text = _read_text(path, max_bytes)
    except FileNotFoundError as exc:
        raise DataFormatError(path, None, None, "no such file") from exc
    return parse_json(path, None, text)


def text_lines(
    path: str | Path, *, max_line_bytes: int = MAX_LINE_BYTES, torn_tail: bool = False
) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a UTF-8 file, read one line at a time (a
    byte-order mark dropped, the line's LF or CRLF removed).

    Args:
        path: the file.
        max_line_bytes: a longer line is an error (see :data:`MAX_LINE_BYTES`).
        torn_tail: leave out a last line without a line ending (an append that never
            finished), instead of reading it.

    Raises:
        DataFormatError: the file is missing or a folder, a line is not UTF-8, holds a
            NUL byte or is longer than ``max_line_bytes``; each naming the line.
    """
    path = Path(path)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise DataFormatError(path, None, None, "no such file") from None
    except IsADirectoryError:
        raise DataFormatError(path, None, None, "is a folder, not a file") from None
    with handle:
        number = 0
        while raw := handle.readline(max_line_bytes + 1):
            number += 1
            if len(raw) > max_line_bytes:
                raise DataFormatError(
                    path, number, None, f"line longer than {max_line_bytes} bytes"
                )
            if not raw.endswith(b"\n") and torn_tail:
                return
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataFormatError(
                    path, number, None, f"not UTF-8 text ({exc.reason})"
                ) from None
            if "\0" in text:
                raise DataFormatError(path, number, None, "NUL byte: a binary file, not text")
            yield number, text.removesuffix("\n").removesuffix("\r")


def json_lines(
    path: str | Path,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    torn_tail: bool = False,
    unique_keys: bool = False,
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSON Lines file, parsed by
    :func:`parse_json` (``unique_keys`` passed on) and read as :func:`text_lines` reads
    (same arguments, same located errors). Only LF ends a line: U+2028 and friends may
    sit inside a string."""
    path = Path(path)
    for number, text in text_lines(path, max_line_bytes=max_line_bytes, torn_tail=torn_tail):
        if text.strip():
            yield number, parse_json(path, number, text, unique_keys=unique_keys)


def read_json_object(
    path: str | Path, what: str = "a JSON object", *, max_bytes: int = MAX_JSON_BYTES
) -> dict[str, Any]:
    """The JSON object in ``path`` (a build summary, COCO annotations, export metadata, a
    benchmark). Every way the file can be unusable — missing, a folder, not UTF-8, a NUL
    byte, invalid or too deeply nested JSON, another JSON type than ``what`` — is a
    :class:`DataFormatError` naming the file (and the line where JSON parsing stopped),
    the underlying error chained; as :func:`read_json`, at most ``max_bytes``."""
    data = read_json(path, max_bytes=max_bytes)
    if not isinstance(data, dict):
        raise DataFormatError(path, None, None, f"expected {what}")
    return data


def read_coco_json(path: str | Path) -> dict[str, Any]:
    """A COCO annotations file (instances, captions): :func:`read_json_object` with the
    larger cap :data:`MAX_ANNOTATION_BYTES`."""
    return read_json_object(path, "a COCO JSON object", max_bytes=MAX_ANNOTATION_BYTES)


def _read_delimited(path: Path, delimiter: str, single_line: bool) -> Iterator[Record]:
    # One line at a time (text_lines: the line cap, located UTF-8 and NUL errors); a
    # quoted field may span lines, each given back its newline.
    lines = (text + "\n" for _, text in text_lines(path))
    reader = csv.reader(lines, delimiter=delimiter)
    header: list[str] | None = None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DataFormatError(path, reader.line_num, None, f"malformed table: {exc}") from None
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [_check_text(path, line, None, cell.strip().lower(), True) for cell in row]
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
        values = {
            name: _check_text(path, line, name, value.strip(), single_line)
            for name, value in zip(header, row, strict=True)
        }
        yield Record(path, line, values)


def _read_jsonl(path: Path, single_line: bool) -> Iterator[Record]:
    for line, raw in json_lines(path):
        if not isinstance(raw, dict):
            raise DataFormatError(path, line, None, "each line must be a JSON object")
        yield Record(path, line, _normalize(path, line, raw, single_line))


def _read_json(path: Path, list_key: str | None, single_line: bool) -> Iterator[Record]:
    raw = parse_json(path, None, _read_text(path))
    if isinstance(raw, dict) and list_key is not None and list_key in raw:
        raw = raw[list_key]
    if not isinstance(raw, list):
        expected = f"a list (or an object with a {list_key!r} list)" if list_key else "a list"
        raise DataFormatError(path, None, None, f"expected {expected} of objects")
    for position, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DataFormatError(path, None, f"item {position}", "expected a JSON object")
        yield Record(path, None, _normalize(path, None, item, single_line))


def read_records(
    path: str | Path, *, list_key: str | None = None, single_line: bool = False
) -> Iterator[Record]:
    """Yield the records of a table file, chosen by its suffix.

    ``.csv`` (comma), ``.tsv`` / ``.tab`` (tab) need a header row; ``.jsonl`` /
    ``.ndjson`` hold one object per line; ``.json`` holds a list of objects, or an object
    whose ``list_key`` entry is that list. Field names are lower-cased and stripped, and
    so are values. Blank lines are skipped. A value never holds a NUL or a lone surrogate
    (text that cannot be written back as UTF-8); ``single_line=True`` refuses tabs and line
    breaks in values too (for tables whose values end up in TSV cells).

    Raises:
        DataFormatError: for an unknown suffix, a missing file, a file that is not UTF-8
            text, or a malformed line or value, naming the line (JSON: the item) and field.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such file")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _read_delimited(path, ",", single_line)
    if suffix in (".tsv", ".tab"):
        return _read_delimited(path, "\t", single_line)
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path, single_line)
    if suffix == ".json":
        return _read_json(path, list_key, single_line)
    raise DataFormatError(
        path, None, None, f"unknown file type {suffix!r}: use .csv, .tsv, .jsonl or .json"
    )
