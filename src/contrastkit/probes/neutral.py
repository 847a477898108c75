"""Neutralised captions (VLStereoSet Sec. 3.5): the target term of a caption replaced by
a neutral one (:func:`neutralise`), from the default gender table (:data:`NEUTRAL_TERMS`)
or a user's table (:func:`read_neutral_terms`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from contrastkit.errors import DataFormatError
from contrastkit.gender_words import WORD_TABLE, is_determiner_use, match_case
from contrastkit.records import text_lines

__all__ = [
    "EXTRA_GENDER_TERMS",
    "NEUTRAL_TERMS",
    "neutral_term",
    "neutralise",
    "read_neutral_terms",
]


def _gender_terms() -> dict[str, str]:
    terms: dict[str, str] = {}
    for masculine, feminine, neutral in WORD_TABLE:
        terms[masculine] = neutral
        terms[feminine] = neutral
    return terms


EXTRA_GENDER_TERMS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "mom": "parent",
        "mommy": "parent",
        "dad": "parent",
        "daddy": "parent",
        "grandfather": "grandparent",
        "grandmother": "grandparent",
        "grandpa": "grandparent",
        "grandma": "grandparent",
        "stepfather": "stepparent",
        "stepmother": "stepparent",
        "schoolboy": "schoolchild",
        "schoolgirl": "schoolchild",
        "gentlemen": "people",
        "ladies": "people",
        "sisters": "siblings",
        "brothers": "siblings",
        "himself": "themselves",
        "herself": "themselves",
        "bride": "spouse",
        "groom": "spouse",
        "fiance": "partner",
        "fiancee": "partner",
        "nephew": "nibling",
        "niece": "nibling",
        "uncle": "relative",
        "aunt": "relative",
    }
)
"""StereoSet gender targets outside GenSynth's Tab. 4, with the neutral word used for
them (contrastkit's choice, not the paper's): ``mommy -> parent``, ``schoolgirl ->
schoolchild``, ``herself -> themselves``, ``bride -> spouse`` ..."""

NEUTRAL_TERMS: Final[Mapping[str, str]] = MappingProxyType(
    {**_gender_terms(), **EXTRA_GENDER_TERMS}
)
"""The default target -> neutral term table, for the ``gender`` category (lower case).

Derived from the Table 4 word table of GenSynth (:data:`contrastkit.curation.
gender_words.WORD_TABLE`): every masculine and feminine word maps to the neutral word of
its row (``sister -> sibling``, ``mother -> parent``, ``she -> they``, ``her -> them``;
``his`` / ``her`` before a noun become ``their``), plus :data:`EXTRA_GENDER_TERMS`. The
other categories have no defaults (a neutral word for *Ethiopia* or *chess player* depends
on the sentence): give them with ``--neutral-terms FILE`` (:func:`read_neutral_terms`),
whose entries apply to every category and override these.
"""


def neutral_term(
    target: str, category: str, mapping: Mapping[str, str] | None = None
) -> str | None:
    """The neutral term for ``target`` (case-insensitive): the user's ``mapping`` first,
    then :data:`NEUTRAL_TERMS` for the gender category; ``None`` when there is none."""
    key = " ".join(target.split()).casefold()
    if mapping:
        for name, value in mapping.items():
            if " ".join(name.split()).casefold() == key:
                return value
    if category == "gender":
        return NEUTRAL_TERMS.get(key)
    return None


def _term_pattern(target: str) -> re.Pattern[str]:
    words = [re.escape(word) for word in target.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def neutralise(
    caption: str, target: str, category: str, mapping: Mapping[str, str] | None = None
) -> str:
    """``caption`` with every whole-word occurrence of ``target`` replaced by its neutral
    term (VLStereoSet Sec. 3.5, Fig. 2: *My sister is rude* -> *My sibling is rude*).

    The neutral term comes from :func:`neutral_term` (``mapping`` overrides the default
    :data:`NEUTRAL_TERMS`). Matching ignores case and the replacement takes the case of
    the word it replaces (*Sister* -> *Sibling*, *SISTER* -> *SIBLING*); only whole words
    match (*sisterhood* is kept). For the Tab. 4 pronouns ``his`` / ``her`` without a
    user mapping the GenSynth rule picks the form: ``their`` before a noun, else
    ``theirs`` / ``them`` (``hers`` -> ``theirs``). Only the target is replaced, as in
    the paper: other gendered words in the sentence stay.

    Returns:
        The neutralised caption, or ``""`` when the target has no neutral term or does not
        occur in the caption (such rows have no ``S'_s`` / ``S'_a``).
    """
    neutral = neutral_term(target, category, mapping)
    if neutral is None or not neutral.strip():
        return ""
    pattern = _term_pattern(target)
    if pattern.search(caption) is None:
        return ""
    pronoun = target.strip().casefold() if category == "gender" else ""
    user_given = neutral_term(target, "", mapping) is not None

    def replace(match: re.Match[str]) -> str:
        word = match.group(0)
        value = neutral
        if pronoun == "hers" and not user_given:
            value = "theirs"
        elif pronoun in ("his", "her") and not user_given:
            if is_determiner_use(caption, match.end()):
                value = "their"
            else:
                value = "theirs" if pronoun == "his" else "them"
        return match_case(value, word)

    return pattern.sub(replace, caption)


def read_neutral_terms(path: str | Path) -> dict[str, str]:
    """Read a user's neutral-term table: UTF-8 TSV lines ``target<TAB>neutral``.

    An optional header ``target<TAB>neutral`` is skipped, and so are blank lines and lines
    starting with ``#``. Targets are matched case-insensitively.

    Raises:
        DataFormatError: a line without exactly two fields, an empty value, or a target
            given twice (located).
    """
    path = Path(path)
    terms: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, text in text_lines(path):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        values = text.split("\t")
        if number == 1 and [v.strip().lower() for v in values] == ["target", "neutral"]:
            continue
        if len(values) != 2:
            raise DataFormatError(
                path,
                number,
                None,
                f"expected 2 tab-separated fields (target, neutral), found {len(values)}",
            )
        target, neutral = (" ".join(v.split()) for v in values)
        for name, value in (("target", target), ("neutral", neutral)):
            if not value:
                raise DataFormatError(path, number, name, "empty value")
        key = target.casefold()
        if key in lines:
            raise DataFormatError(
                path, number, "target", f"{target!r} is also given on line {lines[key]}"
            )
        lines[key] = number
        terms[target] = neutral
    return terms
