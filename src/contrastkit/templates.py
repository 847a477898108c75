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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.schema import Context, Gender, VisoGenderRow
from contrastkit.taxonomy import labor_shares

__all__ = [
    "DECISION_KINDS",
    "PRONOUNS",
    "Prompt",
    "PronounSet",
    "Questions",
    "Template",
    "caption",
    "captioning_prefix",
    "captions",
    "correct_pronoun",
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


def _decoding(given: Any, where: str) -> dict[str, Any]:
    """The templates' ``decoding`` over the defaults: greedy, at least one new token."""
    decoding: dict[str, Any] = {"max_new_tokens": 16, "do_sample": False, "num_beams": 1}
    given = given or {}
    if not isinstance(given, dict) or set(given) - set(decoding):
        raise DataFormatError(where, None, "decoding", f"takes {', '.join(decoding)}")
    decoding.update(given)
    tokens = decoding["max_new_tokens"]
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise DataFormatError(
            where, None, "decoding.max_new_tokens", "a whole number of at least 1"
        )
    if decoding["do_sample"] is not False or decoding["num_beams"] != 1:
        raise DataFormatError(
            where, None, "decoding", "answers are decoded greedily: do_sample false, num_beams 1"
        )
    return decoding


def _refusals(patterns: Any, where: str) -> list[re.Pattern[str]]:
    """The templates' refusal patterns, compiled case-insensitive."""
    refusals = []
    for i, pattern in enumerate(patterns or []):
        try:
            refusals.append(re.compile(str(pattern), re.IGNORECASE))
        except re.error as error:
            raise DataFormatError(
                where, None, f"refusals[{i}]", f"not a regular expression: {error}"
            ) from error
    return refusals


@dataclass(frozen=True)
class _Occupations:
    """The labour statistics the templates' occupations are checked against, and the
    file they came from (for the errors)."""

    where: str
    shares: Mapping[str, Any]

    def male_share(self, occupation: Any, field: str) -> float:
        """The share of men (percent) of an occupation with a stereotyped direction."""
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
    for i, pair in enumerate(family.get("pairs") or []):
        at = f"{field}.pairs[{i}]"
        if not (isinstance(pair, list) and len(pair) == 2):
            raise DataFormatError(
                occupations.where, None, at, "a pair [male-dominated, female-dominated]"
            )
        if not occupations.male_share(pair[0], at) > 50 > occupations.male_share(pair[1], at):
            raise DataFormatError(
                occupations.where, None, at,
                f"{pair[0]} must have more than 50% men and {pair[1]} fewer",
            )  # fmt: skip
        items.append((f"{pair[0]}/{pair[1]}", question, (pair[0], pair[1])))
    return items


def _yes_no_items(
    family: Mapping[str, Any], field: str, question: str, occupations: _Occupations
) -> list[_Item]:
    """A ``yes-no`` family's questions: one per occupation, the option of the stereotyped
    direction first ("yes" for a male-dominated occupation)."""
    items: list[_Item] = []
    for i, occupation in enumerate(family.get("occupations") or []):
        male = occupations.male_share(occupation, f"{field}.occupations[{i}]") > 50
        options = ("yes", "no") if male else ("no", "yes")
        items.append((occupation, question.replace("{occupation}", occupation), options))
    return items


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

    Raises:
        DataFormatError: naming the file and field: not YAML, an unknown kind, an
            occupation the labour statistics do not have (or at exactly 50%), a pair not
            ordered [male-dominated, female-dominated], a bad refusal pattern.
    """
    import yaml

    where = str(path) if path is not None else "contrastkit/data/decision_questions.yaml"
    try:
        text = Path(path).read_text(encoding="utf-8") if path is not None else _bundled_text()
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DataFormatError(where, None, None, f"not YAML: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        raise DataFormatError(where, None, "families", "a mapping of question families is needed")
    instruction = str(data.get("answer_instruction") or "")
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
