"""Small wording helpers for what people read: counts with the right noun form, and the
pieces of every markdown report: a number for a table cell (:func:`format_number`), a
cell that cannot break its table (:func:`escape_cell`) and the table itself
(:func:`markdown_table`, :func:`table_header`, :func:`table_row`).

They live in this shared module so that every layer's reports (the evaluators', the
audit's, dataset curation's, the builders') write numbers and tables one way; the
report toolkit of the evaluators (:mod:`contrastkit.evaluators.report.tables`) builds on
them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "MISSING",
    "count",
    "escape_cell",
    "format_number",
    "markdown_table",
    "table_header",
    "table_row",
]

#: How a table cell shows a number that is missing or undefined (``None``, NaN, inf).
MISSING = "–"

#: Plurals that are not the singular plus "s".
_IRREGULAR = {"query": "queries", "child": "children", "person": "people"}


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun in the form that number takes: ``count(1, "error")`` ->
    ``"1 error"``, ``count(2, "error")`` -> ``"2 errors"``, ``count(0, "query")`` ->
    ``"0 queries"``. ``plural`` overrides the plural form; nouns ending in a capital
    (``URL``) take a plain ``s``."""
    if n == 1:
        return f"{n} {singular}"
    if plural is None:
        plural = _IRREGULAR.get(singular)
    if plural is None:
        ends_y = singular.endswith("y") and singular[-2:-1] not in "aeiou"
        plural = singular[:-1] + "ies" if ends_y else singular + "s"
    return f"{n} {plural}"


def format_number(
    value: Any, digits: int = 2, *, sign: bool = False, missing: str = MISSING
) -> str:
    """``value`` for a table cell: a float to ``digits`` places (with ``+`` before a
    positive one when ``sign``), a missing or undefined number (``None``, NaN, inf) as
    ``missing`` (:data:`MISSING`, ``–``, unless told, e.g. ``n/a``), anything else as
    ``str(value)`` (an int stays an int).

    >>> format_number(0.8249), format_number(0.1, 3, sign=True), format_number(None)
    ('0.82', '+0.100', '–')
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    if isinstance(value, float):
        return f"{value:{'+' if sign else ''}.{digits}f}"
    return str(value)


def escape_cell(value: Any) -> str:
    """``value`` as the text of a markdown table cell that cannot break its table: ``|``
    escaped as ``\\|``, and line breaks flattened to spaces (a newline inside a cell
    ends the row).

    >>> escape_cell("a|b\\nc")
    'a\\\\|b c'
    """
    text = str(value).replace("|", "\\|")
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def table_header(header: Sequence[str], align: str | None = None) -> list[str]:
    """The two header lines of a markdown table: the column names and the rule under
    them. ``align`` has one letter per column, ``l`` (``---``) or ``r`` (``---:``, for
    numbers); without it every column is ``---``."""
    align = align or "l" * len(header)
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(f"align {align!r} does not fit {len(header)} columns")
    rule = "".join("---:|" if a == "r" else "---|" for a in align)
    return [table_row(header), "|" + rule]


def table_row(cells: Sequence[Any]) -> str:
    """One row of a markdown table; each cell as given (already formatted)."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def markdown_table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    align: str | None = None,
    cell: Callable[[Any], str] = format_number,
) -> list[str]:
    """A markdown table as lines, followed by an empty line: :func:`table_header`, then
    one row per entry of ``rows``, each cell formatted by ``cell`` (default
    :func:`format_number`) and escaped (:func:`escape_cell`)."""
    lines = table_header(header, align)
    lines += [table_row([escape_cell(cell(value)) for value in row]) for row in rows]
    return [*lines, ""]
