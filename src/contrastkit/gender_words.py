"""Gendered caption words: image labels from captions, neutral and gender-swapped captions.

Implements the caption processing of GenSynth ("Balancing the picture: debiasing
vision-language datasets with synthetic contrast sets", seeds/001, Sec. 3.2 and
Appendix A.1):

* :data:`WORD_TABLE` is Tab. 4 verbatim: 14 rows of (masculine, feminine, neutral) words.
* :func:`image_label` is the function ``g`` of Sec. 3.1/3.2: all captions of an image are
  joined into one paragraph; only masculine words gives ``masculine``, only feminine
  words ``feminine``, both or neither ``None`` (the paper's *undefined*).
* :func:`neutralize` and :func:`to_gender` map each gendered word across its Tab. 4 row
  ("she" -> "he" or "they"), by whole-word replacement (``\\b`` boundaries), keeping the
  case of the word (``Man`` -> ``Person``, ``MAN`` -> ``PERSON``) and every character
  around it (punctuation, spacing, ``'s``).

**Pronoun rows.** Tab. 4's last two rows are ``his / hers / their`` and ``him / her /
them``, but English "her" is both the object pronoun (row ``him``) and the possessive
determiner (row ``his``), and "his" is both a determiner ("his cat") and a standalone
pronoun ("it is his"). Mapping by row alone would turn "his cat" into "hers cat". We
resolve this by the word that follows (:func:`is_determiner_use`): a pronoun followed by
another word that is not in :data:`NON_NOUN_FOLLOWERS` (prepositions, conjunctions,
articles, auxiliaries, other pronouns) is a determiner; followed by punctuation, the end
of the caption or such a word it stands alone. Then

================= ================= ================= =================
use               masculine         feminine          neutral
================= ================= ================= =================
determiner        his               her               their
standalone poss.  his               hers              theirs
object            him               her               them
================= ================= ================= =================

so "The woman brushes her teeth" -> "The person brushes their teeth" and "A man sleeping
with his cat next to him" -> "A person sleeping with their cat next to them" (Tab. 5;
the paper's "car" for "cat" is a typo). The rule is a heuristic: "saw her cross the
road" reads "her" as a determiner. Labels are unaffected (every Tab. 4 word counts).
Verb agreement is not changed ("she is" -> "they is"), as in the paper's word mapping.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Final

from contrastkit.schema import Gender

__all__ = [
    "FEMININE_WORDS",
    "MASCULINE_WORDS",
    "NEUTRAL_WORDS",
    "NON_NOUN_FOLLOWERS",
    "WORD_TABLE",
    "gendered_words",
    "image_label",
    "is_determiner_use",
    "match_case",
    "neutralise",
    "neutralize",
    "text_label",
    "to_gender",
]

#: GenSynth Tab. 4, verbatim: (masculine, feminine, neutral) per row.
WORD_TABLE: Final[tuple[tuple[str, str, str], ...]] = (
    ("man", "woman", "person"),
    ("men", "women", "people"),
    ("male", "female", "person"),
    ("boy", "girl", "child"),
    ("boys", "girls", "children"),
    ("gentleman", "lady", "person"),
    ("father", "mother", "parent"),
    ("husband", "wife", "partner"),
    ("boyfriend", "girlfriend", "partner"),
    ("brother", "sister", "sibling"),
    ("son", "daughter", "child"),
    ("he", "she", "they"),
    ("his", "hers", "their"),
    ("him", "her", "them"),
)

MASCULINE_WORDS: Final[frozenset[str]] = frozenset(row[0] for row in WORD_TABLE)
FEMININE_WORDS: Final[frozenset[str]] = frozenset(row[1] for row in WORD_TABLE)
NEUTRAL_WORDS: Final[frozenset[str]] = frozenset(row[2] for row in WORD_TABLE)

#: Words after which "his" / "her" is read as standing alone (object or possessive
#: pronoun) rather than as a determiner before a noun.
NON_NOUN_FOLLOWERS: Final[frozenset[str]] = frozenset(
    """
    a an the this that these those some any and or but nor so yet as than then while
    when where who whom whose which what why how because if though although
    to in on at by for from with without of off up down out over under into onto upon
    near next behind beside besides between among around through across along against
    toward towards after before during until about above below past like
    is are was were be been being am has have had do does did will would can could
    shall should may might must
    he she it they we you i me him them us his hers its their theirs our ours your
    yours mine her himself herself themselves itself
    too also again there here now back away together not
    """.split()  # noqa: SIM905 (a word list reads better as text)
)

_PRONOUNS: Final[dict[Gender, tuple[str, str, str]]] = {
    # determiner, standalone possessive, object
    Gender.MASCULINE: ("his", "his", "him"),
    Gender.FEMININE: ("her", "hers", "her"),
    Gender.NEUTRAL: ("their", "theirs", "them"),
}
_COLUMN: Final[dict[Gender, int]] = {Gender.MASCULINE: 0, Gender.FEMININE: 1, Gender.NEUTRAL: 2}
# Non-pronoun rows: gendered word -> its row.
_ROW_OF: Final[dict[str, tuple[str, str, str]]] = {
    word: row for row in WORD_TABLE[:-2] for word in row[:2]
}
_GENDERED: Final[frozenset[str]] = MASCULINE_WORDS | FEMININE_WORDS
_WORD_RE: Final[re.Pattern[str]] = re.compile(
    r"\b(" + "|".join(sorted(_GENDERED, key=len, reverse=True)) + r")\b", re.IGNORECASE
)
_NEXT_WORD_RE: Final[re.Pattern[str]] = re.compile(r"[ \t]+([A-Za-z][A-Za-z'’-]*)")


def gendered_words(text: str) -> list[str]:
    """The Tab. 4 masculine and feminine words in ``text``, lower-cased, in order.

    Matching is case-insensitive and by whole word: "Woman's" contains "woman",
    "snowman" and "manhole" contain nothing.
    """
    return [match.group(1).lower() for match in _WORD_RE.finditer(text)]


def text_label(text: str) -> Gender | None:
    """The label of a text by Sec. 3.2: ``masculine`` if it holds only masculine Tab. 4
    words, ``feminine`` if only feminine ones, ``None`` (undefined) for both or neither."""
    words = set(gendered_words(text))
    has_masculine = bool(words & MASCULINE_WORDS)
    has_feminine = bool(words & FEMININE_WORDS)
    if has_masculine == has_feminine:
        return None
    return Gender.MASCULINE if has_masculine else Gender.FEMININE


def image_label(captions: Iterable[str]) -> Gender | None:
    """The gender label ``g(I)`` of an image from all its captions (GenSynth Sec. 3.2).

    The captions are concatenated into one paragraph and labelled with
    :func:`text_label`: only masculine words -> ``Gender.MASCULINE``, only feminine ->
    ``Gender.FEMININE``, both or neither -> ``None`` (undefined).
    """
    return text_label("\n".join(captions))


def match_case(word: str, like: str) -> str:
    """``word`` in the case pattern of ``like``: ``HE`` -> ``SHE``, ``He`` -> ``She``,
    ``he`` -> ``she`` (a one-letter capital such as ``I`` counts as title case)."""
    if len(like) > 1 and like.isupper():
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def is_determiner_use(text: str, end: int) -> bool:
    """Whether the pronoun ending at ``text[end]`` is a determiner ("her *teeth*").

    It is when the next thing in the text, after spaces only, is a word outside
    :data:`NON_NOUN_FOLLOWERS`; punctuation, a line end or the end of the text, or a
    function word ("next to her *and*") make it a standalone pronoun.
    """
    match = _NEXT_WORD_RE.match(text, end)
    return match is not None and match.group(1).lower() not in NON_NOUN_FOLLOWERS


def _replacement(word: str, target: Gender, text: str, end: int) -> str:
    lower = word.lower()
    if lower in _ROW_OF:
        return _ROW_OF[lower][_COLUMN[target]]
    determiner, standalone, objective = _PRONOUNS[target]
    if lower == "him":
        return objective
    if lower == "hers":
        return standalone
    if lower == "his":
        return determiner if is_determiner_use(text, end) else standalone
    # "her": possessive determiner before a noun, object pronoun otherwise.
    return determiner if is_determiner_use(text, end) else objective


def to_gender(text: str, target: Gender) -> str:
    """Rewrite ``text`` so that every gendered Tab. 4 word is ``target``'s word of its row.

    ``Gender.NEUTRAL`` gives the gender-neutral caption of Sec. 3.2 (:func:`neutralize`);
    ``Gender.MASCULINE`` / ``Gender.FEMININE`` give the gender-adjusted captions of an
    edit (Sec. 4.3, "the reverse procedure"). Words are replaced in place, in the case of
    the original; everything else is kept character for character. Pronouns follow the
    rule in the module docstring.
    """

    def replace(match: re.Match[str]) -> str:
        word = match.group(1)
        return match_case(_replacement(word, target, text, match.end()), word)

    return _WORD_RE.sub(replace, text)


def neutralize(text: str) -> str:
    """The gender-neutral caption (GenSynth Sec. 3.2, Tab. 5): "The woman brushes her
    teeth in the bathroom." -> "The person brushes their teeth in the bathroom."."""
    return to_gender(text, Gender.NEUTRAL)


def neutralise(text: str) -> str:
    """Deprecated British spelling of :func:`neutralize` (public in 0.1.0)."""
    warnings.warn("neutralise() is deprecated; use neutralize()", DeprecationWarning, stacklevel=2)
    return neutralize(text)
