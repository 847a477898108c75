"""Reading and writing the official VisoGender TSV files.

The two official annotation files of VisoGender (Hall et al., 2023, arXiv:2306.12424;
repository README "The Dataset") are tab-separated, one image per line, with the headers
of :data:`contrastkit.schema.OP_COLUMNS` and :data:`~contrastkit.schema.OO_COLUMNS`.
:func:`read_visogender_tsv` reads either (the context is told by the header),
:func:`write_visogender_tsv` writes one back atomically. Reading an official file and
writing it back reproduces its rows and columns. Malformed input raises one
:class:`~contrastkit.errors.DataFormatError` that names the file, the line and the field.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text
from contrastkit.schema import (
    URL_COLUMN,
    Context,
    Gender,
    VisoGenderRow,
    VisoGenderTable,
    columns_for,
)

__all__ = [
    "TSVStream",
    "parse_visogender_tsv",
    "read_visogender_tsv",
    "render_visogender_tsv",
    "write_visogender_tsv",
]


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


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFormatError(path, line, None, f"not UTF-8 text ({exc.reason})") from None


def _split_lines(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, tab-split fields) for the non-blank lines of ``text``."""
    # Only LF (optionally preceded by CR) ends a line: str.splitlines would also split on
    # U+2028, U+0085 and form feeds, which can sit inside a field.
    if text.endswith("\n"):
        text = text[:-1]
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if not raw.strip():
            continue
        yield number, raw.split("\t")


@dataclass(frozen=True)
class TSVStream:
    """An opened official-format TSV: its context, line style and lazily parsed rows.

    ``rows`` yields each row, or the :class:`DataFormatError` of a malformed line, in
    file order.
    """

    context: Context
    newline: str
    final_newline: bool
    rows: Iterator[VisoGenderRow | DataFormatError]


def parse_visogender_tsv(path: str | Path) -> TSVStream:
    """Open an official-format TSV: check its header now, parse its rows lazily.

    Row-level problems are yielded as :class:`DataFormatError` values rather than raised,
    so a validator can report every one of them; :func:`read_visogender_tsv` raises the
    first instead.

    Raises:
        DataFormatError: if the file is missing, empty, not UTF-8, or its header is not
            the official OP or OO header.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such file")
    text = _read_text(path)
    lines = _split_lines(text)
    first = next(lines, None)
    if first is None:
        raise DataFormatError(path, 1, None, "empty file: the header row is missing")
    number, header = first
    if number != 1:
        raise DataFormatError(path, 1, None, "the header must be on line 1")
    context = _context_from_header(path, header)

    def rows() -> Iterator[VisoGenderRow | DataFormatError]:
        for line, values in lines:
            try:
                yield _parse_row(path, line, values, context)
            except DataFormatError as error:
                yield error

    return TSVStream(
        context=context,
        newline="\r\n" if "\r\n" in text else "\n",
        final_newline=text.endswith(("\n", "\r")),
        rows=rows(),
    )


def read_visogender_tsv(path: str | Path) -> VisoGenderTable:
    """Read an official VisoGender OP or OO TSV.

    The context is told by the header. Blank lines are skipped; a UTF-8 byte-order mark
    and CRLF line ends are accepted, and the line style is kept on the table so that
    :func:`write_visogender_tsv` can reproduce the file byte for byte.

    Args:
        path: the TSV file.

    Returns:
        The table: its context and its rows in file order.

    Raises:
        DataFormatError: naming file, line and field, for the first of: a missing or
            misplaced column, a wrong number of fields, an empty IDX / occupation /
            noun / URL, or a gender label other than ``masculine`` / ``feminine``.
    """
    stream = parse_visogender_tsv(path)
    rows: list[VisoGenderRow] = []
    for item in stream.rows:
        if isinstance(item, DataFormatError):
            raise item
        rows.append(item)
    return VisoGenderTable(
        path=Path(path),
        context=stream.context,
        rows=tuple(rows),
        newline=stream.newline,
        final_newline=stream.final_newline,
    )


def render_visogender_tsv(
    rows: Iterable[VisoGenderRow],
    context: Context,
    *,
    newline: str = "\n",
    final_newline: bool = True,
) -> str:
    """Render rows as the text of an official ``context`` file (header included).

    ``newline`` (``"\n"`` or ``"\r\n"``) ends each line; ``final_newline=False`` leaves
    the last line unterminated, as in the official files.

    Raises:
        ValueError: if a row has another context, or a value holds a tab or a line break
            (the format cannot represent them).
    """
    lines = ["\t".join(columns_for(context))]
    for row in rows:
        if row.context is not context:
            raise ValueError(f"row {row.idx!r} is {row.context.value}, not {context.value}")
        values = row.to_fields()
        for column, value in zip(columns_for(context), values, strict=True):
            if "\t" in value or "\n" in value or "\r" in value:
                raise ValueError(
                    f"row {row.idx!r} field {column!r}: tabs and line breaks cannot be "
                    "written to a TSV"
                )
        lines.append("\t".join(values))
    if newline not in ("\n", "\r\n"):
        raise ValueError(f"newline must be \\n or \\r\\n, not {newline!r}")
    return newline.join(lines) + (newline if final_newline else "")


def write_visogender_tsv(
    path: str | Path,
    rows: Iterable[VisoGenderRow],
    context: Context,
    *,
    newline: str = "\n",
    final_newline: bool = True,
) -> Path:
    """Write rows as an official-format ``context`` TSV, atomically.

    Everything is rendered and checked before the file is touched: on error the previous
    file stays as it was. Pass a table's ``newline`` and ``final_newline`` to keep the
    line style of the file it was read from.

    Returns:
        The path written.
    """
    text = render_visogender_tsv(rows, context, newline=newline, final_newline=final_newline)
    atomic_write_text(path, text)
    return Path(path)
