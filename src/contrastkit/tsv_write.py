"""Writing official-format VisoGender TSVs (:mod:`contrastkit.tsv` re-exports these):
:func:`render_visogender_tsv` renders rows as the text of a file, :func:`write_visogender_tsv`
writes it atomically, in the line style of :class:`TSVStyle`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from contrastkit.io import atomic_write_text
from contrastkit.schema import Context, VisoGenderRow, columns_for

__all__ = ["TSVStyle", "render_visogender_tsv", "write_visogender_tsv"]


def render_visogender_tsv(
    rows: Iterable[VisoGenderRow],
    context: Context,
    *,
    newline: str = "\n",
    final_newline: bool = True,
    bom: bool = False,
) -> str:
    """Render rows as the text of an official ``context`` file (header included).

    ``newline`` (``"\n"`` or ``"\r\n"``) ends each line; ``final_newline=False`` leaves
    the last line unterminated, as in the official files; ``bom=True`` opens the text with
    a byte-order mark (U+FEFF), as some spreadsheet programs write it.

    Raises:
        ValueError: if a row has another context, or a value holds a tab, a line break or
            a NUL (the format cannot represent them).
    """
    lines = ["\t".join(columns_for(context))]
    for row in rows:
        if row.context is not context:
            raise ValueError(f"row {row.idx!r} is {row.context.value}, not {context.value}")
        values = row.to_fields()
        for column, value in zip(columns_for(context), values, strict=True):
            if any(ch in value for ch in "\t\n\r\0"):
                raise ValueError(
                    f"row {row.idx!r} field {column!r}: tabs and line breaks (and NUL) "
                    "cannot be written to a TSV"
                )
        lines.append("\t".join(values))
    if newline not in ("\n", "\r\n"):
        raise ValueError(f"newline must be \\n or \\r\\n, not {newline!r}")
    return ("\ufeff" if bom else "") + newline.join(lines) + (newline if final_newline else "")


@dataclass(frozen=True)
class TSVStyle:
    """How a TSV's text is laid out around its rows (:func:`render_visogender_tsv`).

    Attributes:
        newline: ``"\n"`` or ``"\r\n"``, ending each line.
        final_newline: whether the last line is terminated (``False``: as in the
            official files).
        bom: whether the text opens with a byte-order mark (U+FEFF), as some
            spreadsheet programs write it.
    """

    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False


def write_visogender_tsv(
    path: str | Path,
    rows: Iterable[VisoGenderRow],
    context: Context,
    *,
    style: TSVStyle | None = None,
) -> Path:
    """Write rows as an official-format ``context`` TSV, atomically.

    Everything is rendered and checked before the file is touched: on error the previous
    file stays as it was. Pass the ``style`` of the file the rows were read from (a
    table's ``newline`` and ``final_newline``, a :class:`TSVStream`'s or
    :class:`TSVDocument`'s ``bom``) to keep it; default: ``"\n"`` line ends, a final
    newline, no byte-order mark.

    Returns:
        The path written.
    """
    style = style or TSVStyle()
    text = render_visogender_tsv(
        rows, context, newline=style.newline, final_newline=style.final_newline, bom=style.bom
    )
    atomic_write_text(path, text)
    return Path(path)
