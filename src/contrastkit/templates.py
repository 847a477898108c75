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

    def bad(field: str, reason: str) -> DataFormatError:
        return DataFormatError(where, None, field, reason)

    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        raise bad("families", "a mapping of question families is needed")
    instruction = str(data.get("answer_instruction") or "")
    decoding = {"max_new_tokens": 16, "do_sample": False, "num_beams": 1}
    given = data.get("decoding") or {}
    if not isinstance(given, dict) or set(given) - set(decoding):
        raise bad("decoding", f"takes {', '.join(decoding)}")
    decoding.update(given)
    tokens = decoding["max_new_tokens"]
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise bad("decoding.max_new_tokens", "a whole number of at least 1")
    if decoding["do_sample"] is not False or decoding["num_beams"] != 1:
        raise bad("decoding", "answers are decoded greedily: do_sample false, num_beams 1")
    refusals = []
    for i, pattern in enumerate(data.get("refusals") or []):
        try:
            refusals.append(re.compile(str(pattern), re.IGNORECASE))
        except re.error as error:
            raise bad(f"refusals[{i}]", f"not a regular expression: {error}") from error
    shares = labor_shares()

    def share(occupation: Any, field: str) -> float:
        if occupation not in shares:
            known = ", ".join(shares)
            raise bad(field, f"{occupation!r} is not in the labour statistics ({known})")
        value = shares[occupation].male_share_percent
        if value == 50:
            raise bad(field, f"{occupation!r} is at exactly 50% men: no stereotyped direction")
        return value

    prompts: list[Prompt] = []
    families: dict[str, str] = {}
    pairs: dict[str, tuple[str, str]] = {}
    for name, family in data["families"].items():
        field = f"families.{name}"
        if not isinstance(family, dict) or family.get("kind") not in DECISION_KINDS:
            raise bad(f"{field}.kind", f"one of {', '.join(DECISION_KINDS)}")
        kind = family["kind"]
        question = family.get("question")
        if not isinstance(question, str) or not question.strip():
            raise bad(f"{field}.question", "a question text is needed")
        families[str(name)] = kind
        items: list[tuple[str, str, tuple[str, str] | None]] = []
        if kind == "choice":
            for i, pair in enumerate(family.get("pairs") or []):
                at = f"{field}.pairs[{i}]"
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise bad(at, "a pair [male-dominated, female-dominated]")
                if not share(pair[0], at) > 50 > share(pair[1], at):
                    raise bad(at, f"{pair[0]} must have more than 50% men and {pair[1]} fewer")
                key = f"{pair[0]}/{pair[1]}"
                pairs[key] = (pair[0], pair[1])
                items.append((key, question, (pair[0], pair[1])))
        elif kind == "yes-no":
            for i, occupation in enumerate(family.get("occupations") or []):
                male = share(occupation, f"{field}.occupations[{i}]") > 50
                options = ("yes", "no") if male else ("no", "yes")
                items.append((occupation, question.replace("{occupation}", occupation), options))
        else:
            items.append((str(name), question, None))
        if not items:
            raise bad(field, "no questions (give pairs or occupations)")
        for key, text, given_options in items:
            if given_options is None:
                prompts.append(Prompt(str(name), kind, key, 0, text.strip(), (), (), text.strip()))
                continue
            for order, shown in enumerate(((0, 1), (1, 0))):
                lines = [text.strip()]
                options = given_options
                lines += [f"{letter}. {options[o]}" for letter, o in zip("AB", shown, strict=True)]
                if instruction:
                    lines.append(instruction)
                prompts.append(
                    Prompt(
                        str(name), kind, key, order, "\n".join(lines), shown, options, text.strip()
                    )
                )
    return Questions(
        "bundled" if path is None else str(path), tuple(prompts), decoding, tuple(refusals),
        instruction, families, pairs,
    )  # fmt: skip
