"""Small wording helpers for what people read: counts with the right noun form, and the
pieces of every markdown report: a number for a table cell (:func:`format_number`), a
cell that cannot break its table (:func:`escape_cell`) and the table itself
(:func:`markdown_table`, :func:`table_header`, :func:`table_row`); and the one way
files people read are rendered from jinja2 templates shipped as package data
(:func:`template_environment`: the dataset cards, the harness exports' READMEs, task
YAMLs and lmms-eval ``utils.py``).

They live in this shared module so that every layer's reports (the evaluators', the
audit's, dataset curation's, the builders') write numbers and tables one way; the
report toolkit of the evaluators (:mod:`contrastkit.evaluators.report.tables`) builds on
them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

__all__ = [
    "MISSING",
    "UNDEFINED",
    "count",
    "escape_cell",
    "format_number",
    "format_p",
    "indefinite_article",
    "markdown_table",
    "table_header",
    "table_row",
    "template_environment",
    "with_article",
]

#: How a table cell shows a figure that was not computed or does not apply (no interval
#: without resampling, a metric a model's task has no value for): the default of
#: :func:`format_number` for ``None``, NaN and inf.
MISSING = "–"

#: How a report shows a figure that was computed but is undefined (a mean over no queries,
#: a correlation of too few occupations, an AUC that is not reported): where a report
#: tells the two apart it passes ``missing=UNDEFINED``.
UNDEFINED = "n/a"

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
    value: Any,
    digits: int = 2,
    *,
    sign: bool = False,
    missing: str = MISSING,
    significant: bool = False,
) -> str:
    """``value`` for a table cell: a float to ``digits`` places (with ``+`` before a
    positive one when ``sign``), or, when ``significant``, any number to ``digits``
    significant digits (values that can be tiny); a missing or undefined number
    (``None``, NaN, inf) as ``missing`` (:data:`MISSING`, ``–``, unless told, e.g.
    ``n/a``); anything else as ``str(value)`` (an int stays an int).

    >>> format_number(0.8249), format_number(0.1, 3, sign=True), format_number(None)
    ('0.82', '+0.100', '–')
    >>> format_number(0.000123456, 3, significant=True)
    '0.000123'
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing
    if significant and isinstance(value, int | float):
        return _unsigned_zero(f"{value:{'+' if sign else ''}.{digits}g}", sign)
    if isinstance(value, float):
        return _unsigned_zero(f"{value:{'+' if sign else ''}.{digits}f}", sign)
    return str(value)


def _unsigned_zero(text: str, sign: bool) -> str:
    """``-0.00`` (a tiny negative number, or -0.0, rounded) as ``0.00`` (``+0.00`` with
    ``sign``, as Python writes a positive zero): no number reads as negative zero."""
    if text.startswith("-") and not any(c in "123456789" for c in text.partition("e")[0]):
        return ("+" if sign else "") + text[1:]
    return text


def format_p(value: Any, *, missing: str = MISSING, coarse_from: float | None = None) -> str:
    """A p-value as it follows "p" in a report: ``< 0.001`` below 0.001, else ``=`` and
    the value to 3 places, or to 2 from ``coarse_from`` up where given (the plots'
    panel titles: 0.01); ``missing`` when undefined (``None``, NaN).

    >>> format_p(0.0004), format_p(0.0123), format_p(0.0123, coarse_from=0.01)
    ('< 0.001', '= 0.012', '= 0.01')
    """
    if not isinstance(value, int | float) or not math.isfinite(value):
        return missing
    if value < 0.001:
        return "< 0.001"
    return f"= {value:.{2 if coarse_from is not None and value >= coarse_from else 3}f}"


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
    """One row of a markdown table; each cell as given (already formatted), an empty
    one as ``| |``.

    >>> table_row(["images", 3, ""])
    '| images | 3 | |'
    """
    return "|" + "".join(f" {cell} |" if str(cell) else " |" for cell in cells)


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


def template_environment(
    package: str, folder: str = "templates", *, html: bool = False
) -> jinja2.Environment:
    """The jinja2 environment of the ``*.j2`` templates in ``folder`` of ``package``
    (package data: pyproject's ``package-data`` must list them), by file name.

    One set of rules for every template: a value the template names and the caller did
    not give is an error (``StrictUndefined``), nothing is HTML-escaped (with ``html``:
    every value is, unless marked safe), a ``{% ... %}`` tag alone on its line leaves no
    line behind (``trim_blocks``, ``lstrip_blocks``) and the template's last line break
    is kept."""
    import jinja2

    templates = resources.files(package) / folder
    loader = jinja2.DictLoader(
        {item.name: item.read_text(encoding="utf-8") for item in templates.iterdir()
         if item.name.endswith(".j2")}
    )  # fmt: skip
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=html,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


#: Words whose first letter misleads: a vowel sounded as a consonant ("a university",
#: "a European"), and a silent h ("an hour").
_A_BEFORE = ("uni", "use", "usu", "ure", "uro", "eu", "one", "once", "ewe", "u-")
_AN_BEFORE = ("hour", "honest", "honor", "honour", "heir")


def indefinite_article(word: str) -> str:
    """``a`` or ``an`` for ``word`` by its first sound (spelling, with the usual
    exceptions).

    >>> indefinite_article("engineer"), indefinite_article("baker"), indefinite_article("hour")
    ('an', 'a', 'an')
    """
    lower = word.strip().lower()
    if lower.startswith(_AN_BEFORE):
        return "an"
    if lower.startswith(_A_BEFORE):
        return "a"
    return "an" if lower[:1] in ("a", "e", "i", "o", "u") else "a"


def with_article(text: str, placeholder: str, word: str) -> str:
    """``text`` with ``placeholder`` replaced by ``word``, and an ``a`` or ``an`` written
    just before the placeholder made to fit the word (its capital kept).

    >>> with_article("Work as a {occupation}?", "{occupation}", "engineer")
    'Work as an engineer?'
    """

    def article(match: re.Match[str]) -> str:
        fitting = indefinite_article(word)
        written = match.group(1)
        return (fitting.capitalize() if written[0].isupper() else fitting) + match.group(2)

    fitted = re.sub(
        rf"\b([Aa]n?)(\s+){re.escape(placeholder)}", lambda m: article(m) + placeholder, text
    )
    return fitted.replace(placeholder, word)
