"""Reading and writing the official VisoGender TSV files.

The two official annotation files of VisoGender (Hall et al., 2023, arXiv:2306.12424;
repository README "The Dataset") are tab-separated, one image per line, with the headers
of :data:`contrastkit.schema.OP_COLUMNS` and :data:`~contrastkit.schema.OO_COLUMNS`.
:func:`read_visogender_tsv` reads either (the context is told by the header),
:func:`write_visogender_tsv` writes one back atomically. Reading an official file and
writing it back reproduces its rows and columns. Malformed input raises one
:class:`~contrastkit.errors.DataFormatError` that names the file, the line and the field.

:func:`parse_visogender_tsv` streams a file (the validator's reader: memory does not grow
with the file, a line is never longer than :data:`MAX_LINE_BYTES`), and
:func:`read_tsv_document` keeps every byte of one (byte-order mark, each line's ending, the
final newline or its absence) so that an edit of some rows leaves every other byte as it
was (the maintenance job's reader).
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import BinaryIO

from contrastkit.errors import DataFormatError, StateError
from contrastkit.schema import (
    URL_COLUMN,
    Context,
    Gender,
    VisoGenderRow,
    VisoGenderTable,
    columns_for,
)
from contrastkit.tsv_write import TSVStyle, render_visogender_tsv, write_visogender_tsv

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_BYTES",
    "VISOGENDER",
    "VISOGENDER_FILES",
    "FileFingerprint",
    "TSVDocument",
    "TSVStream",
    "TSVStyle",
    "is_bundled",
    "is_unusable",
    "parse_visogender_tsv",
    "read_tsv_document",
    "read_visogender_tsv",
    "render_visogender_tsv",
    "resolve_data",
    "visogender_files",
    "write_visogender_tsv",
]

#: The name every command that takes VisoGender data (``evaluate --data``, ``validate``,
#: ``export harness``; ``EvaluateConfig.data``) gives the official sets bundled with
#: contrastkit (:func:`visogender_files`; :func:`resolve_data`).
VISOGENDER = "visogender"

#: The bundled official VisoGender TSVs (oxai/visogender; see ``SOURCE.md`` beside them):
#: the OP (occupation-participant) release of 11 January 2024 and the OO
#: (occupation-object) release of 10 May 2025.
VISOGENDER_FILES = ("OP_Visogender_11012024.tsv", "OO_Visogender_10052025.tsv")


def visogender_files() -> tuple[Path, ...]:
    """The official VisoGender annotation TSVs bundled with contrastkit, OP then OO
    (:data:`VISOGENDER_FILES`; Hall et al. 2023, CC BY 4.0, benchmark use only: see the
    ``SOURCE.md`` beside them). ``EvaluateConfig(data=("visogender",), ...)`` and
    ``contrastkit evaluate --data visogender`` read these.

    Example:
        >>> op, oo = visogender_files()
        >>> op.name
        'OP_Visogender_11012024.tsv'

    Raises:
        StateError: the installation lacks them (reinstall contrastkit).
    """
    folder = resources.files("contrastkit").joinpath("data", "visogender")
    paths = tuple(Path(str(folder.joinpath(name))) for name in VISOGENDER_FILES)
    for path in paths:
        if not path.is_file():
            raise StateError(
                f"{path}: the bundled VisoGender file is missing from this installation; "
                "reinstall contrastkit"
            )
    return paths


def is_bundled(item: str | os.PathLike[str]) -> bool:
    """Whether a data argument names the official VisoGender sets bundled with
    contrastkit: exactly ``visogender`` (:data:`VISOGENDER`). A local file or folder of
    that name is given as ``./visogender`` on the command line."""
    return os.fspath(item) == VISOGENDER


def resolve_data(items: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """Data arguments as local paths, the one rule of every command that takes them
    (``evaluate --data``, ``validate``, ``export harness``): ``visogender``
    (:func:`is_bundled`) is the bundled OP and OO files (:func:`visogender_files`),
    anything else the path it names; in the order given. Their images' store follows
    :func:`contrastkit.store.image_store_for`.

    Example:
        >>> [path.name for path in resolve_data(["visogender"])]
        ['OP_Visogender_11012024.tsv', 'OO_Visogender_10052025.tsv']
    """
    paths: list[Path] = []
    for item in items:
        paths.extend(visogender_files() if is_bundled(item) else (Path(item),))
    return tuple(paths)


def _context_from_header(path: Path, header: list[str]) -> Context:
    names = [name.strip() for name in header]
    if "Participant" in names or "Participant_perceived_gender" in names:
        context = Context.OP
    elif "Object" in names or "LICENSE OK?" in names:
        context = Context.OO
    else:
        raise DataFormatError(
            path,
            1,
            None,
            "header is neither the VisoGender OP format (has 'Participant') nor the OO "
            "format (has 'Object')",
        )
    expected = columns_for(context)
    for position, name in enumerate(expected):
        if name not in names:
            unknown = [n for n in names if n not in expected]
            close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.5)
            hint = f" (found {close[0]!r}: rename it)" if close else ""
            raise DataFormatError(
                path, 1, name, f"missing column in the {context.value} header{hint}"
            )
        if position >= len(names) or names[position] != name:
            raise DataFormatError(
                path,
                1,
                name,
                f"column out of place: expected it in position {position + 1} of the "
                f"{context.value} header, found {names.index(name) + 1}",
            )
    if len(names) > len(expected):
        extra = names[len(expected)]
        raise DataFormatError(
            path, 1, extra, f"unexpected column after the {context.value} official columns"
        )
    return context


def _parse_row(path: Path, line: int, values: list[str], context: Context) -> VisoGenderRow:
    columns = columns_for(context)
    if len(values) != len(columns):
        field_name = columns[len(values)] if len(values) < len(columns) else None
        raise DataFormatError(
            path,
            line,
            field_name,
            f"expected {len(columns)} tab-separated fields, found {len(values)}",
        )
    record = dict(zip(columns, values, strict=True))
    for required in ("IDX", "Occupation", URL_COLUMN, columns[4]):
        if not record[required].strip():
            raise DataFormatError(path, line, required, "empty value")
    genders: dict[str, Gender] = {}
    for column in ("Occupation_perceived_gender", "Participant_perceived_gender"):
        if column not in record:
            continue
        raw = record[column]
        if raw not in ("masculine", "feminine"):
            try:
                Gender.parse_label(raw)
            except ValueError as exc:
                raise DataFormatError(path, line, column, str(exc)) from None
            raise DataFormatError(
                path,
                line,
                column,
                f"gender label {raw!r} is not in the official spelling; write masculine or "
                "feminine",
            )
        genders[column] = Gender(raw)
    licence_column = columns[6]
    return VisoGenderRow(
        idx=record["IDX"],
        context=context,
        sector=record["Sector"],
        specialisation=record["Specialisation"],
        occupation=record["Occupation"],
        participant=record["Participant"] if context is Context.OP else None,
        object=record["Object"] if context is Context.OO else None,
        url=record[URL_COLUMN],
        licence=record[licence_column],
        occupation_gender=genders["Occupation_perceived_gender"],
        participant_gender=genders.get("Participant_perceived_gender"),
        error_codes=record["Error codes"],
        annotator=record["Annotator"],
        line=line,
    )


MAX_LINE_BYTES = 4 * 2**20
"""Longest line read (4 MiB; an official row is about 200 bytes): a longer one is an error
of that line, and is never held in memory whole."""

MAX_DOCUMENT_BYTES = 256 * 2**20
"""Largest TSV :func:`read_tsv_document` keeps whole in memory (256 MiB, over a million
official rows; the maintenance job's reader, which holds each line's text and its parsed
row, about ten times the file's size)."""

_BOM = b"\xef\xbb\xbf"


class _UnusableFileError(DataFormatError):
    """A problem that makes the whole file unusable (not UTF-8, a NUL byte): raised, even
    by the lazy row iterator, rather than yielded as a row's error."""


def _physical_lines(
    handle: BinaryIO, path: Path, first: int = 1, *, skip_long: bool = True
) -> Iterator[tuple[int, str | DataFormatError, str]]:
    """Yield ``(number, text, terminator)`` for each physical line of ``handle``.

    Only LF (optionally preceded by CR) ends a line: ``str.splitlines`` would also split
    on U+2028, U+0085 and form feeds, which can sit inside a field. ``terminator`` is
    ``"\r\n"``, ``"\n"``, ``"\r"`` or ``""`` (an unterminated last line). A UTF-8
    byte-order mark opening the file (``first == 1``) is not part of the text. A line
    longer than :data:`MAX_LINE_BYTES` is yielded as its :class:`DataFormatError`, once
    the rest of it is skipped (read in pieces of the cap), or with ``skip_long=False`` at
    once, nothing past the cap read (for a reader that stops at the first error).

    Raises:
        DataFormatError: a line that is not UTF-8 or holds a NUL byte (a binary file).
    """
    number = first - 1
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        elif number == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise _UnusableFileError(path, 1, None, "UTF-16 text: save the file as UTF-8")
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            ended = not skip_long
            while not ended:
                more = handle.readline(MAX_LINE_BYTES)
                ended = not more or more.endswith(b"\n")
            reason = f"line longer than {MAX_LINE_BYTES} bytes"
            yield number, DataFormatError(path, number, None, reason), "\n"
            continue
        if b"\0" in raw:
            raise _UnusableFileError(path, number, None, "NUL byte: a binary file, not a TSV")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _UnusableFileError(
                path,
                number,
                None,
                f"not UTF-8 text ({exc.reason}, byte {exc.start + 1} of the line)",
            ) from None
        if text.endswith("\r\n"):
            yield number, text[:-2], "\r\n"
        elif text.endswith(("\n", "\r")):
            yield number, text[:-1], text[-1]
        else:
            yield number, text, ""


class TSVStream:
    """An opened official-format TSV: its context, its line style and its lazily parsed
    rows.

    ``rows`` yields each row, or the :class:`DataFormatError` of a malformed line, in file
    order, reading the file as it goes (memory does not grow with the file). It raises a
    :class:`DataFormatError` for a problem that makes the whole file unusable (a line that
    is not UTF-8, a NUL byte). ``newline`` (``"\r\n"`` when any line ends so) and
    ``final_newline`` describe the whole file once ``rows`` is exhausted; ``bom`` (the file
    opens with a UTF-8 byte-order mark) is known at once.
    """

    def __init__(self, path: Path, context: Context, bom: bool, header_end: str, offset: int):
        self.path = path
        self.context = context
        self.bom = bom
        self.newline = "\r\n" if header_end == "\r\n" else "\n"
        self.final_newline = header_end != ""
        self.rows: Iterator[VisoGenderRow | DataFormatError] = self._rows(offset)

    def _rows(self, offset: int) -> Iterator[VisoGenderRow | DataFormatError]:
        if not self.final_newline:
            return  # the header is the last line
        with self.path.open("rb") as handle:
            handle.seek(offset)
            for number, text, end in _physical_lines(handle, self.path, first=2):
                if end == "\r\n":
                    self.newline = "\r\n"
                self.final_newline = end != ""
                if isinstance(text, DataFormatError):
                    yield text
                elif text.strip():
                    try:
                        yield _parse_row(self.path, number, text.split("\t"), self.context)
                    except DataFormatError as error:
                        yield error


def _check_input_file(path: Path) -> None:
    if path.is_dir():
        raise _UnusableFileError(path, None, None, "is a folder, not a TSV file")
    if not path.exists():
        raise _UnusableFileError(path, None, None, "no such file")
    if not path.is_file():
        raise _UnusableFileError(path, None, None, "not a regular file")


def parse_visogender_tsv(path: str | Path) -> TSVStream:
    """Open an official-format TSV: check its header now, parse its rows lazily.

    Row-level problems are yielded as :class:`DataFormatError` values rather than raised,
    so a validator can report every one of them; :func:`read_visogender_tsv` raises the
    first instead.

    Raises:
        DataFormatError: if the file is missing, a folder, empty, binary, not UTF-8, or its
            header is not the official OP or OO header.
    """
    path = Path(path)
    _check_input_file(path)
    with path.open("rb") as handle:
        bom = handle.read(len(_BOM)) == _BOM
        handle.seek(0)
        for number, text, end in _physical_lines(handle, path):
            if isinstance(text, DataFormatError):
                raise _UnusableFileError(path, number, None, text.reason)
            if not text.strip():
                continue
            if number != 1:
                raise DataFormatError(path, 1, None, "the header must be on line 1")
            context = _context_from_header(path, text.split("\t"))
            return TSVStream(path, context, bom, end, handle.tell())
    raise _UnusableFileError(path, 1, None, "empty file: the header row is missing")


def is_unusable(error: DataFormatError) -> bool:
    """Whether ``error`` (from :func:`parse_visogender_tsv` or its rows) means the file
    cannot be used at all: missing, a folder, empty, binary or not UTF-8."""
    return isinstance(error, _UnusableFileError)


def read_visogender_tsv(path: str | Path) -> VisoGenderTable:
    """Read an official VisoGender OP or OO TSV.

    The context is told by the header. Blank lines are skipped; a UTF-8 byte-order mark
    and CRLF line ends are accepted, and the line style is kept on the table so that
    :func:`write_visogender_tsv` can reproduce the file byte for byte
    (:func:`read_tsv_document` keeps every byte, the byte-order mark included).

    Args:
        path: the TSV file.

    Returns:
        The table: its context and its rows in file order.

    Raises:
        DataFormatError: naming file, line and field, for the first of: a missing or
            misplaced column, a wrong number of fields, an empty IDX / occupation /
            noun / URL, a gender label other than ``masculine`` / ``feminine``, a line
            that is not UTF-8 or holds a NUL byte.
    """
    path = Path(path)
    _check_input_file(path)
    with path.open("rb") as handle:
        return _read_table(path, handle)


@dataclass(frozen=True)
class FileFingerprint:
    """What a file was when it was read: size, modification time (ns) and sha256 of its
    bytes. Two fingerprints differ when the file was changed in between (the hash
    catches a change that keeps size and time)."""

    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: str | Path, data: bytes | None = None) -> FileFingerprint:
        """The fingerprint of ``path`` now (``data``: its bytes, when already read; else
        the file is hashed in pieces, never held whole)."""
        status = Path(path).stat()
        if data is not None:
            return cls(status.st_size, status.st_mtime_ns, hashlib.sha256(data).hexdigest())
        digest = hashlib.sha256()
        with Path(path).open("rb") as handle:
            while piece := handle.read(1 << 20):
                digest.update(piece)
        return cls(status.st_size, status.st_mtime_ns, digest.hexdigest())


@dataclass(frozen=True)
class TSVDocument:
    """An official-format TSV exactly as read: its table, and every physical line with its
    own line ending, so that an edit changes only the lines it touches.

    Attributes:
        table: The parsed rows (:class:`~contrastkit.schema.VisoGenderTable`).
        bom: The file opens with a UTF-8 byte-order mark.
        lines: Each physical line's text and ending (``"\r\n"``, ``"\n"``, ``""``...);
            line ``n`` is ``lines[n - 1]``.
        fingerprint: The file when it was read.
    """

    table: VisoGenderTable
    bom: bool
    lines: tuple[tuple[str, str], ...]
    fingerprint: FileFingerprint

    @property
    def path(self) -> Path:
        return self.table.path

    def fields(self, line: int) -> tuple[str, ...]:
        """The tab-separated fields of line ``line`` as written."""
        return tuple(self.lines[line - 1][0].split("\t"))

    def to_bytes(self) -> bytes:
        """The file's bytes, as read."""
        return self.render({})

    def render(self, edits: Mapping[int, Sequence[str] | None]) -> bytes:
        """The file's bytes with ``edits`` applied, every other byte as read.

        ``edits`` maps a line number to the line's new fields (written with the line's own
        ending) or to None (the line is removed; the file keeps or lacks its final newline
        as before).

        Raises:
            ValueError: a new field holds a tab, a line break or a NUL.
        """
        kept: list[list[str]] = []
        for number, (text, end) in enumerate(self.lines, start=1):
            if number not in edits:
                kept.append([text, end])
                continue
            values = edits[number]
            if values is None:
                continue
            for value in values:
                if any(ch in value for ch in "\t\n\r\0"):
                    raise ValueError(
                        f"{self.path}:{number}: tabs, line breaks and NUL cannot be written "
                        "to a TSV"
                    )
            kept.append(["\t".join(values), end])
        if self.lines and kept and self.lines[-1][1] == "" and kept[-1][1] != "":
            kept[-1][1] = ""  # the last line was removed: keep the missing final newline
        body = "".join(text + end for text, end in kept).encode("utf-8")
        return (_BOM if self.bom else b"") + body


class _HashingReader:
    """A binary file whose ``readline`` also hashes what it gives and refuses to give
    more than ``limit`` bytes in all (a file that grows while it is read)."""

    def __init__(self, handle: BinaryIO, path: Path, limit: int) -> None:
        self.handle, self.path, self.limit = handle, path, limit
        self.digest = hashlib.sha256()
        self.read = 0

    def readline(self, size: int = -1) -> bytes:
        raw = self.handle.readline(size)
        self.read += len(raw)
        if self.read > self.limit:
            raise _too_large(self.path, self.limit)
        self.digest.update(raw)
        return raw


def _too_large(path: Path, limit: int) -> DataFormatError:
    return DataFormatError(
        path, None, None,
        f"larger than {limit:,} bytes, the most a TSV kept whole in memory may hold "
        "(urls maintain rewrites it byte for byte); split it into several files",
    )  # fmt: skip


def read_tsv_document(path: str | Path, *, max_bytes: int | None = None) -> TSVDocument:
    """Read an official-format TSV keeping every byte (see :class:`TSVDocument`), in one
    pass over the open file: the first malformed line ends the read (a line over
    :data:`MAX_LINE_BYTES` after the cap, nothing past it read), and a file over
    ``max_bytes`` (default :data:`MAX_DOCUMENT_BYTES`) is refused by its size before any
    of it is read.

    Raises:
        DataFormatError: as :func:`read_visogender_tsv`, or a file over ``max_bytes``.
    """
    path = Path(path)
    limit = MAX_DOCUMENT_BYTES if max_bytes is None else max_bytes
    _check_input_file(path)
    with path.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise _too_large(path, limit)
        bom = handle.read(len(_BOM)) == _BOM
        handle.seek(0)
        reader = _HashingReader(handle, path, limit)
        lines: list[tuple[str, str]] = []
        table = _read_table(path, reader, lines)  # type: ignore[arg-type]
        status = os.fstat(handle.fileno())
    fingerprint = FileFingerprint(status.st_size, status.st_mtime_ns, reader.digest.hexdigest())
    return TSVDocument(table, bom, tuple(lines), fingerprint)


def _read_table(
    path: Path, handle: BinaryIO, lines: list[tuple[str, str]] | None = None
) -> VisoGenderTable:
    """Parse the whole of ``handle`` (the bytes of ``path``), raising the first error (a
    line over the cap at once); with ``lines``, collect each physical line and its
    ending there too."""
    context: Context | None = None
    rows: list[VisoGenderRow] = []
    newline, final_newline = "\n", True
    for number, text, end in _physical_lines(handle, path, skip_long=False):
        if isinstance(text, DataFormatError):
            raise text
        if lines is not None:
            lines.append((text, end))
        newline = "\r\n" if end == "\r\n" else newline
        final_newline = end != ""
        if not text.strip():
            continue
        if context is None:
            if number != 1:
                raise DataFormatError(path, 1, None, "the header must be on line 1")
            context = _context_from_header(path, text.split("\t"))
            continue
        rows.append(_parse_row(path, number, text.split("\t"), context))
    if context is None:
        raise _UnusableFileError(path, 1, None, "empty file: the header row is missing")
    return VisoGenderTable(path, context, tuple(rows), newline, final_newline)
