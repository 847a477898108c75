"""Caption templates and pronoun sets of VisoGender (Hall et al., 2023, arXiv:2306.12424).

Templates (Sec. 3.2 and the template-flipping ablation, Appendix D):

* OP occupation-first: ``The {occupation} and {pronoun} {participant}`` — the pronoun
  refers to the occupation, so the correct pronoun follows the occupation's perceived
  gender ("The doctor and her patient").
* OP participant-first: ``The {participant} and {pronoun} {occupation}`` — the pronoun
  refers to the participant, so it follows the participant's perceived gender
  ("The patient and his doctor").
* OO: ``The {occupation} and {pronoun} {object}`` — follows the occupation's gender.

Captioning models are scored on the continuation after a prefix that stops before the
pronoun: ``The {occupation} and`` (or ``The {participant} and`` for the flipped OP
template). The pronoun sets are masculine he/his/him, feminine she/her/her and neutral
they/their/them; captions use the possessive form. The neutral caption
("The doctor and their patient") is also the gender-neutral retrieval query (Sec. 3.5).

The decision question templates (:func:`load_questions`, ``data/decision_questions.yaml``)
are read here too, so that the decision probes (:mod:`contrastkit.evaluators.decisions`)
and their harness exports (:mod:`contrastkit.builders.harness`) ask the same questions.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

from contrastkit.errors import DataFormatError
from contrastkit.schema import Context, Gender, VisoGenderRow
from contrastkit.taxonomy import labor_shares
from contrastkit.text import with_article

__all__ = [
    "DECISION_KINDS",
    "MAX_NEW_TOKENS",
    "PRONOUNS",
    "REFUSAL_WINDOW",
    "Prompt",
    "PronounSet",
    "Questions",
    "Template",
    "caption",
    "captioning_prefix",
    "captions",
    "correct_pronoun",
    "is_refusal",
    "load_questions",
    "neutral_query",
    "templates_for",
]


@dataclass(frozen=True)
class PronounSet:
    """The nominative, possessive and accusative forms of one pronoun."""

    nominative: str
    possessive: str
    accusative: str


PRONOUNS: dict[Gender, PronounSet] = {
    Gender.MASCULINE: PronounSet("he", "his", "him"),
    Gender.FEMININE: PronounSet("she", "her", "her"),
    Gender.NEUTRAL: PronounSet("they", "their", "them"),
}


class Template(str, Enum):
    """The caption templates; the value is the format string."""

    OP_OCCUPATION_FIRST = "The {occupation} and {pronoun} {participant}"
    OP_PARTICIPANT_FIRST = "The {participant} and {pronoun} {occupation}"
    OO = "The {occupation} and {pronoun} {object}"

    @property
    def context(self) -> Context:
        """The scene type this template describes."""
        return Context.OO if self is Template.OO else Context.OP

    @property
    def key(self) -> str:
        """Short name used in files and on the command line."""
        return {
            Template.OP_OCCUPATION_FIRST: "occupation_first",
            Template.OP_PARTICIPANT_FIRST: "participant_first",
            Template.OO: "object",
        }[self]


def templates_for(context: Context) -> tuple[Template, ...]:
    """The templates that apply to rows of ``context``."""
    if context is Context.OO:
        return (Template.OO,)
    return (Template.OP_OCCUPATION_FIRST, Template.OP_PARTICIPANT_FIRST)


def _check(row: VisoGenderRow, template: Template) -> None:
    if template.context is not row.context:
        raise ValueError(
            f"template {template.key!r} is for {template.context.value} rows; row "
            f"{row.idx!r} is {row.context.value}"
        )


def _fill(template: Template, occupation: str, noun: str, pronoun: str) -> str:
    pattern: str = template.value
    if template is Template.OO:
        return pattern.format(occupation=occupation, pronoun=pronoun, object=noun)
    return pattern.format(occupation=occupation, pronoun=pronoun, participant=noun)


def caption(row: VisoGenderRow, template: Template, gender: Gender) -> str:
    """The caption of ``row`` under ``template`` with the possessive pronoun of ``gender``,
    e.g. "The doctor and her patient" for an OP doctor/patient row and ``Gender.FEMININE``.
    """
    _check(row, template)
    return _fill(template, row.occupation, row.noun, PRONOUNS[gender].possessive)


def captions(
    row: VisoGenderRow, template: Template, genders: Sequence[Gender] | None = None
) -> dict[Gender, str]:
    """Candidate captions of ``row``: his/her by default, plus their when asked."""
    wanted = Gender.binary() if genders is None else tuple(genders)
    return {gender: caption(row, template, gender) for gender in wanted}


def captioning_prefix(row: VisoGenderRow, template: Template) -> str:
    """The prefix a captioning model continues with a pronoun: ``The doctor and``.

    Occupation-first and OO templates start with the occupation; the participant-first
    template starts with the participant (``The patient and``).
    """
    _check(row, template)
    subject = row.noun if template is Template.OP_PARTICIPANT_FIRST else row.occupation
    return f"The {subject} and"


def correct_pronoun(row: VisoGenderRow, template: Template) -> Gender:
    """The gender of the pronoun a correct resolution picks for ``row``.

    Occupation-first and OO captions follow the occupation's perceived gender;
    participant-first captions follow the participant's.
    """
    _check(row, template)
    if template is Template.OP_PARTICIPANT_FIRST:
        assert row.participant_gender is not None
        return row.participant_gender
    return row.occupation_gender


def neutral_query(occupation: str, noun: str, context: Context = Context.OP) -> str:
    """The gender-neutral retrieval query for an occupation: ``The doctor and their patient``
    (OP) or ``The doctor and their stethoscope`` (OO)."""
    template = Template.OO if context is Context.OO else Template.OP_OCCUPATION_FIRST
    return _fill(template, occupation, noun, PRONOUNS[Gender.NEUTRAL].possessive)


# -- decision question templates ----------------------------------------------------------------
#: The decision question families' kinds (:mod:`contrastkit.evaluators.decisions`).
DECISION_KINDS = ("choice", "yes-no", "numeric")


@dataclass(frozen=True)
class Prompt:
    """One question as asked: its family, id and kind, the option order, the text the
    model reads, and which option (0: masculine-stereotyped) each letter shows."""

    family: str
    kind: str
    question: str
    order: int
    text: str
    shown: tuple[int, ...]
    options: tuple[str, ...]
    wording: str = ""
    """The question alone, without the lettered options and the instruction."""


class Decoding(TypedDict):
    """How answers are decoded: greedily (``do_sample`` false, ``num_beams`` 1), with at
    most ``max_new_tokens`` new tokens."""

    max_new_tokens: int
    do_sample: bool
    num_beams: int


@dataclass(frozen=True)
class Questions:
    """The question templates, read and checked (:func:`load_questions`)."""

    source: str
    prompts: tuple[Prompt, ...]
    decoding: Mapping[str, Any]
    refusals: tuple[re.Pattern[str], ...]
    answer_instruction: str
    families: Mapping[str, str]
    pairs: Mapping[str, tuple[str, str]]


def _bundled_text() -> str:
    bundled = resources.files("contrastkit").joinpath("data/decision_questions.yaml")
    return bundled.read_text("utf-8")


#: A question of a family before its options are lettered: its id, its text, and its
#: options (masculine-stereotyped first), or ``None`` for a numeric question.
_Item = tuple[str, str, tuple[str, str] | None]


#: The most new tokens a decision answer may be given (``decoding.max_new_tokens``).
MAX_NEW_TOKENS = 1024
#: Refusal patterns are searched in the first this many characters of an answer
#: (:func:`is_refusal`): a refusal is said up front, and the bound keeps each search short
#: whatever the answer's length.
REFUSAL_WINDOW = 1000
#: The most refusal patterns, and the longest one (characters).
MAX_REFUSALS, MAX_PATTERN_CHARS = 200, 500
#: The most ways (:func:`_paths`) a refusal pattern may try to match from one position.
MAX_PATTERN_PATHS = 10_000

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
_sre: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")


class _SlowPatternError(Exception):
    """A refusal pattern whose matching time can grow out of bounds; the reason."""


def _paths(items: Any, repeated: bool) -> int:
    """How many ways a parsed pattern (``re``'s parser's items) can try to match at one
    position of a text of :data:`REFUSAL_WINDOW` characters, at most: each quantifier a
    count, each alternation an alternative.

    Raises:
        _SlowPatternError: a quantifier or an alternation inside a repeated group
            (``(a+)+``, ``(a|aa)*``, ``(a?){30}``): the tries multiply with the text's
            length (catastrophic backtracking).
    """
    total = 1
    for op, av in items:
        name = str(op)
        if repeated and (name in _REPEATS or name in ("BRANCH", "GROUPREF_EXISTS")):
            raise _SlowPatternError(
                "a quantifier or an alternation (|) inside a repeated group: matching time "
                "can grow exponentially with the answer's length"
            )
        if name in _REPEATS:
            low, high, body = av
            if high > 1:
                _paths(body, True)
                total *= min(high, REFUSAL_WINDOW) - min(low, REFUSAL_WINDOW) + 1
            else:
                total *= _paths(body, repeated) + 1
        elif name == "BRANCH":
            total *= sum(_paths(alternative, repeated) for alternative in av[1])
        elif name == "GROUPREF_EXISTS":
            total *= _paths(av[1], repeated) + (_paths(av[2], repeated) if av[2] else 1)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            total *= _paths(av[-1], repeated)
        elif name in ("ASSERT", "ASSERT_NOT"):
            total *= _paths(av[1], repeated)
    return total


def _bounded(pattern: str) -> None:
    """Refuse a pattern whose search could take long (:func:`_paths`): exponential
    backtracking, or more ways to match than :data:`MAX_PATTERN_PATHS` (two unbounded
    quantifiers, ``\\s*\\s*x``, already give a million).

    Raises:
        _SlowPatternError: why.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise _SlowPatternError(f"longer than {MAX_PATTERN_CHARS} characters")
    if _paths(_sre.parse(pattern), False) > MAX_PATTERN_PATHS:
        raise _SlowPatternError(
            "too many ways to match (more than one unbounded quantifier such as * or +, or "
            "many alternatives): matching time grows with a power of the answer's length; "
            "use at most one * or +"
        )


def is_refusal(text: str, refusals: Sequence[re.Pattern[str]]) -> bool:
    """Whether a refusal pattern matches within the first :data:`REFUSAL_WINDOW`
    characters of the answer ``text``."""
    window = text[:REFUSAL_WINDOW]
    return any(pattern.search(window) for pattern in refusals)


def _decoding(given: Any, where: str) -> Decoding:
    """The templates' ``decoding`` over the defaults: greedy, at least one new token."""
    defaults: Decoding = {"max_new_tokens": 16, "do_sample": False, "num_beams": 1}
    given = given or {}
    if not isinstance(given, dict) or set(given) - set(defaults):
        raise DataFormatError(where, None, "decoding", f"takes {', '.join(defaults)}")
    decoding = {**defaults, **given}
    tokens = decoding["max_new_tokens"]
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= MAX_NEW_TOKENS:
        raise DataFormatError(
            where, None, "decoding.max_new_tokens",
            f"a whole number from 1 to {MAX_NEW_TOKENS}, not {tokens!r}",
        )  # fmt: skip
    if decoding["do_sample"] is not False or decoding["num_beams"] != 1:
        raise DataFormatError(
            where, None, "decoding", "answers are decoded greedily: do_sample false, num_beams 1"
        )
    return {
        "max_new_tokens": tokens,
        "do_sample": decoding["do_sample"],
        "num_beams": decoding["num_beams"],
    }


def _refusals(patterns: Any, where: str) -> list[re.Pattern[str]]:
    """The templates' refusal patterns, compiled case-insensitive; each a string, whose
    search time stays bounded (:func:`_bounded`)."""
    if patterns is None:
        return []
    if not isinstance(patterns, list):
        raise DataFormatError(
            where, None, "refusals", f"a list of patterns, not {type(patterns).__name__}"
        )
    if len(patterns) > MAX_REFUSALS:
        raise DataFormatError(where, None, "refusals", f"more than {MAX_REFUSALS} patterns")
    refusals = []
    for i, pattern in enumerate(patterns):
        field = f"refusals[{i}]"
        if not isinstance(pattern, str) or not pattern:
            raise DataFormatError(
                where, None, field, f"a pattern (quoted text), not {pattern!r:.80}"
            )
        try:
            refusals.append(re.compile(pattern, re.IGNORECASE))
            _bounded(pattern)
        except re.error as error:
            raise DataFormatError(
                where, None, field, f"not a regular expression: {error}"
            ) from error
        except (_SlowPatternError, RecursionError, OverflowError) as error:
            raise DataFormatError(where, None, field, f"refused: {error}") from None
    return refusals


@dataclass(frozen=True)
class _Occupations:
    """The labour statistics the templates' occupations are checked against, and the
    file they came from (for the errors)."""

    where: str
    shares: Mapping[str, Any]

    def male_share(self, occupation: Any, field: str) -> float:
        """The share of men (percent) of an occupation with a stereotyped direction."""
        if not isinstance(occupation, str):
            raise DataFormatError(
                self.where, None, field,
                f"an occupation's name (text), not a {type(occupation).__name__}",
            )  # fmt: skip
        if occupation not in self.shares:
            known = ", ".join(self.shares)
            raise DataFormatError(
                self.where, None, field, f"{occupation!r} is not in the labour statistics ({known})"
            )
        value: float = self.shares[occupation].male_share_percent
        if value == 50:
            raise DataFormatError(
                self.where, None, field,
                f"{occupation!r} is at exactly 50% men: no stereotyped direction",
            )  # fmt: skip
        return value


def _choice_items(
    family: Mapping[str, Any], field: str, question: str, occupations: _Occupations
) -> list[_Item]:
    """A ``choice`` family's questions: one per pair [male-dominated, female-dominated],
    its id ``male/female``."""
    items: list[_Item] = []
    for i, pair in enumerate(_listed(family, "pairs", field, occupations.where)):
        at = f"{field}.pairs[{i}]"
        if not (isinstance(pair, list) and len(pair) == 2):
            raise DataFormatError(
                occupations.where, None, at, "a pair [male-dominated, female-dominated]"
            )
        men = occupations.male_share(pair[0], f"{at}[0]")
        if not men > 50 > occupations.male_share(pair[1], f"{at}[1]"):
            raise DataFormatError(
                occupations.where, None, at,
                f"{pair[0]} must have more than 50% men and {pair[1]} fewer",
            )  # fmt: skip
        items.append((f"{pair[0]}/{pair[1]}", question, (pair[0], pair[1])))
    _once(items, field, "pairs", occupations.where)
    return items


def _yes_no_items(
    family: Mapping[str, Any], field: str, question: str, occupations: _Occupations
) -> list[_Item]:
    """A ``yes-no`` family's questions: one per occupation, the option of the stereotyped
    direction first ("yes" for a male-dominated occupation)."""
    items: list[_Item] = []
    for i, occupation in enumerate(_listed(family, "occupations", field, occupations.where)):
        male = occupations.male_share(occupation, f"{field}.occupations[{i}]") > 50
        options = ("yes", "no") if male else ("no", "yes")
        items.append((occupation, with_article(question, "{occupation}", occupation), options))
    _once(items, field, "occupations", occupations.where)
    return items


def _listed(family: Mapping[str, Any], key: str, field: str, where: str) -> list[Any]:
    """A family's ``pairs`` or ``occupations``: a list (or nothing)."""
    given = family.get(key)
    if given is None:
        return []
    if not isinstance(given, list):
        raise DataFormatError(where, None, f"{field}.{key}", f"a list, not {type(given).__name__}")
    return given


def _once(items: Sequence[_Item], field: str, key: str, where: str) -> None:
    """Refuse a question asked twice in one family (an occupation or a pair listed twice)."""
    seen: set[str] = set()
    for i, (question, _, _) in enumerate(items):
        if question in seen:
            raise DataFormatError(
                where, None, f"{field}.{key}[{i}]", f"{question!r} is listed twice"
            )
        seen.add(question)


def _family_items(name: Any, family: Any, occupations: _Occupations) -> tuple[str, list[_Item]]:
    """A family's kind and its questions, checked."""
    field = f"families.{name}"
    if not isinstance(family, dict) or family.get("kind") not in DECISION_KINDS:
        raise DataFormatError(
            occupations.where, None, f"{field}.kind", f"one of {', '.join(DECISION_KINDS)}"
        )
    kind = family["kind"]
    question = family.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataFormatError(
            occupations.where, None, f"{field}.question", "a question text is needed"
        )
    if kind == "choice":
        items = _choice_items(family, field, question, occupations)
    elif kind == "yes-no":
        items = _yes_no_items(family, field, question, occupations)
    else:
        items = [(str(name), question, None)]
    if not items:
        raise DataFormatError(
            occupations.where, None, field, "no questions (give pairs or occupations)"
        )
    return kind, items


def _family_prompts(name: str, kind: str, items: Sequence[_Item], instruction: str) -> list[Prompt]:
    """The prompts of a family's questions: a numeric question once, a question with
    options twice, the options lettered A and B as listed and reversed, then the
    answer instruction."""
    prompts: list[Prompt] = []
    for key, text, options in items:
        if options is None:
            prompts.append(Prompt(name, kind, key, 0, text.strip(), (), (), text.strip()))
            continue
        for order, shown in enumerate(((0, 1), (1, 0))):
            lines = [text.strip()]
            lines += [f"{letter}. {options[o]}" for letter, o in zip("AB", shown, strict=True)]
            if instruction:
                lines.append(instruction)
            prompts.append(
                Prompt(name, kind, key, order, "\n".join(lines), shown, options, text.strip())
            )
    return prompts


def load_questions(path: Path | None = None) -> Questions:
    """The question templates of ``path`` (YAML, the layout of the bundled
    ``data/decision_questions.yaml``), or the bundled ones.

    The file is read by :func:`contrastkit.yaml_input.read_yaml` (at most 1 MiB, no
    aliases, bounded nesting and integers, no key twice).

    Raises:
        DataFormatError: naming the file and field: not UTF-8 YAML (or an alias, deep
            nesting, a huge integer, a key twice), an unknown kind, a value of the wrong
            type, an occupation the labour statistics do not have (or at exactly 50%), a
            pair not ordered [male-dominated, female-dominated], an occupation or pair
            listed twice, ``max_new_tokens`` above :data:`MAX_NEW_TOKENS`, a refusal
            pattern that is not a list of strings, not a regular expression, or whose
            search time could grow out of bounds (a quantifier or an alternation inside a
            repeated group; more than one unbounded quantifier).
    """
    from contrastkit.yaml_input import read_yaml

    where = str(path) if path is not None else "contrastkit/data/decision_questions.yaml"
    bundled = _bundled_text() if path is None else None
    data = read_yaml(None if path is None else Path(path), where, bundled)
    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        raise DataFormatError(where, None, "families", "a mapping of question families is needed")
    instruction = data.get("answer_instruction") or ""
    if not isinstance(instruction, str):
        raise DataFormatError(
            where, None, "answer_instruction", f"a text, not {type(instruction).__name__}"
        )
    decoding = _decoding(data.get("decoding"), where)
    refusals = _refusals(data.get("refusals"), where)
    occupations = _Occupations(where, labor_shares())
    prompts: list[Prompt] = []
    families: dict[str, str] = {}
    pairs: dict[str, tuple[str, str]] = {}
    for name, family in data["families"].items():
        kind, items = _family_items(name, family, occupations)
        families[str(name)] = kind
        if kind == "choice":
            pairs.update((key, options) for key, _, options in items if options is not None)
        prompts += _family_prompts(str(name), kind, items, instruction)
    return Questions(
        "bundled" if path is None else str(path), tuple(prompts), decoding, tuple(refusals),
        instruction, families, pairs,
    )  # fmt: skip
