"""StereoSet's intrasentence items (Nadeem et al., 2021), read from its public
``dev.json`` / ``test.json`` (:func:`read_stereoset`), and the attribute term each
sentence fills into its context (:func:`attribute_term`): the first input of
:func:`contrastkit.builders.stereoset.build_stereoset`, whose module docstring describes
the layout and the rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.probes import BLANK, CATEGORIES
from contrastkit.records import read_json

__all__ = ["Statement", "attribute_term", "read_stereoset"]

_GOLD = ("stereotype", "anti-stereotype", "unrelated")
_TRAILING = ".!?;:,… \t"


@dataclass(frozen=True)
class Statement:
    """One StereoSet intrasentence item: target, context and the three filled sentences."""

    id: str
    target: str
    category: str
    context: str
    sentences: tuple[str, str, str]  # stereotype, anti-stereotype, unrelated
    terms: tuple[str, str, str]
    sentence_ids: tuple[str, str, str]
    problem: DataFormatError | None = field(default=None, compare=False)
    """Why the item cannot be used (a sentence that does not line up with its context),
    when read with ``strict=False``."""


def _loose(text: str) -> str:
    """A regex for ``text`` ignoring case, with any run of spaces matching any other."""
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", text))


def attribute_term(context: str, sentence: str) -> str | None:
    """The attribute term that fills ``context``'s ``BLANK`` in ``sentence``, or ``None``
    when they do not line up.

    The sentence must start with the context's text before the blank and end with its
    text after the blank, compared without case and with runs of spaces as one; final
    punctuation (``.``, ``!``, ``?`` ...) the sentence leaves out or adds is tolerated. The
    term must hold a letter or digit.
    ``attribute_term("My sister is BLANK.", "My sister is caring.") == "caring"``.
    """
    if context.count(BLANK) != 1:
        return None
    before, after = context.split(BLANK)
    pattern = (
        r"\s*"
        + _loose(before)
        + r"(?P<term>.+?)"
        + _loose(after.rstrip(_TRAILING))
        + f"[{re.escape(_TRAILING)}]*"
    )
    match = re.fullmatch(pattern, sentence.strip(), re.IGNORECASE | re.DOTALL)
    if match is None:
        return None
    term = match.group("term").strip()
    return term if re.search(r"\w", term) else None  # a word, not punctuation alone


def _json_error(path: Path, where: str, reason: str) -> DataFormatError:
    return DataFormatError(path, None, where, reason)


def read_stereoset(path: str | Path, *, strict: bool = True) -> tuple[list[Statement], str]:
    """Read StereoSet's intrasentence items; return them and the file's ``version``.

    With ``strict=False`` an item whose sentence does not line up with its context is
    returned with the error in :attr:`Statement.problem` instead of raising it (the
    builder raises it only when an image uses that item).

    Raises:
        DataFormatError: not JSON (with its line), no ``data.intrasentence`` list, an
            item without a field, an unknown ``bias_type``, a missing or repeated gold
            label, an ID used twice, a sentence that does not line up with the context.
    """
    path = Path(path)
    document = read_json(path)
    data = document.get("data") if isinstance(document, dict) else None
    items = data.get("intrasentence") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise _json_error(path, "data.intrasentence", "missing: not StereoSet's layout")
    statements: list[Statement] = []
    ids: dict[str, str] = {}
    for n, item in enumerate(items):
        statement, where = _read_item(path, n, item, strict)
        for key in (statement.id, *statement.sentence_ids):
            if key in ids:
                raise _json_error(path, f"{where}.id", f"ID {key!r} also used by {ids[key]}")
            ids[key] = where
        statements.append(statement)
    version = document.get("version", "")
    return statements, version if isinstance(version, str) else str(version)


def _require_text(path: Path, where: str, value: Any, names: tuple[str, ...]) -> None:
    """Refuse ``value`` (at ``where``) unless it is an object whose ``names`` are
    non-empty strings."""
    if not isinstance(value, dict):
        raise _json_error(path, where, "expected an object")
    for name in names:
        if not isinstance(value.get(name), str) or not value[name].strip():
            raise _json_error(path, f"{where}.{name}", "missing or empty")


def _read_item(path: Path, n: int, item: Any, strict: bool) -> tuple[Statement, str]:
    """Item ``n`` of ``data.intrasentence`` as a :class:`Statement`, and where it is (its
    position and ID, for later errors)."""
    where = f"data.intrasentence[{n}]"
    _require_text(path, where, item, ("id", "target", "bias_type", "context"))
    where = f"{where} (id {item['id']!r})"
    if item["bias_type"] not in CATEGORIES:
        raise _json_error(
            path,
            f"{where}.bias_type",
            f"unknown bias type {item['bias_type']!r}; one of {', '.join(CATEGORIES)}",
        )
    if item["context"].count(BLANK) != 1:
        raise _json_error(path, f"{where}.context", f"needs exactly one {BLANK}")
    sentences = item.get("sentences")
    if not isinstance(sentences, list):
        raise _json_error(path, f"{where}.sentences", "missing: expected a list")
    by_label, problem = _read_sentences(path, where, item["context"], sentences, strict)
    s, a, i = (by_label[g] for g in _GOLD)
    statement = Statement(
        id=item["id"],
        target=item["target"],
        category=item["bias_type"],
        context=item["context"],
        sentences=(s[0], a[0], i[0]),
        terms=(s[1], a[1], i[1]),
        sentence_ids=(s[2], a[2], i[2]),
        problem=problem,
    )
    return statement, where


def _read_sentences(
    path: Path, where: str, context: str, sentences: list[Any], strict: bool
) -> tuple[dict[str, tuple[str, str, str]], DataFormatError | None]:
    """An item's sentences by gold label, each as (sentence, attribute term, ID), one of
    each label; and the first sentence that does not line up with ``context`` (raised
    when ``strict``)."""
    by_label: dict[str, tuple[str, str, str]] = {}
    problem: DataFormatError | None = None
    for m, sentence in enumerate(sentences):
        at = f"{where}.sentences[{m}]"
        _require_text(path, at, sentence, ("sentence", "id", "gold_label"))
        gold = sentence["gold_label"]
        if gold not in _GOLD:
            raise _json_error(
                path, f"{at}.gold_label", f"{gold!r} is not one of {', '.join(_GOLD)}"
            )
        if gold in by_label:
            raise _json_error(path, f"{at}.gold_label", f"a second {gold!r} sentence")
        term = attribute_term(context, sentence["sentence"])
        if term is None and problem is None:
            problem = _json_error(
                path,
                f"{at}.sentence",
                f"{sentence['sentence']!r} does not line up with the context "
                f"{context!r} at {BLANK}",
            )
            if strict:
                raise problem
        by_label[gold] = (sentence["sentence"], term or "", sentence["id"])
    for gold in _GOLD:
        if gold not in by_label:
            raise _json_error(path, f"{where}.sentences", f"no {gold!r} sentence")
    return by_label, problem
