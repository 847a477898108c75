"""Caption templates, captioning prefixes and the correct pronoun per template."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.schema import Context, Gender, VisoGenderRow
from contrastkit.templates import (
    PRONOUNS,
    Template,
    caption,
    captioning_prefix,
    captions,
    correct_pronoun,
    neutral_query,
    templates_for,
)
from contrastkit.tsv import read_visogender_tsv
from factories import make_row


def op_row(occupation_gender: Gender, participant_gender: Gender) -> VisoGenderRow:
    return make_row("doctor", occupation_gender, participant_gender)


OO_ROW = make_row("physician", Gender.FEMININE)


def test_captions_follow_the_papers_templates() -> None:
    row = op_row(Gender.FEMININE, Gender.MASCULINE)
    assert captions(row, Template.OP_OCCUPATION_FIRST) == {
        Gender.MASCULINE: "The doctor and his patient",
        Gender.FEMININE: "The doctor and her patient",
    }
    assert caption(row, Template.OP_PARTICIPANT_FIRST, Gender.NEUTRAL) == (
        "The patient and their doctor"
    )
    assert captions(OO_ROW, Template.OO, Gender)[Gender.NEUTRAL] == (
        "The physician and their stethoscope"
    )


@pytest.mark.parametrize(
    ("occupation", "participant", "first", "flipped"),
    [
        (Gender.MASCULINE, Gender.MASCULINE, Gender.MASCULINE, Gender.MASCULINE),
        (Gender.MASCULINE, Gender.FEMININE, Gender.MASCULINE, Gender.FEMININE),
        (Gender.FEMININE, Gender.MASCULINE, Gender.FEMININE, Gender.MASCULINE),
        (Gender.FEMININE, Gender.FEMININE, Gender.FEMININE, Gender.FEMININE),
    ],
)
def test_correct_pronoun_per_template(
    occupation: Gender, participant: Gender, first: Gender, flipped: Gender
) -> None:
    row = op_row(occupation, participant)
    assert correct_pronoun(row, Template.OP_OCCUPATION_FIRST) is first
    assert correct_pronoun(row, Template.OP_PARTICIPANT_FIRST) is flipped
    right = caption(row, Template.OP_PARTICIPANT_FIRST, flipped)
    assert right.split()[3] == PRONOUNS[participant].possessive


def test_oo_follows_the_occupation() -> None:
    assert correct_pronoun(OO_ROW, Template.OO) is Gender.FEMININE


def test_captioning_prefixes() -> None:
    row = op_row(Gender.MASCULINE, Gender.FEMININE)
    assert captioning_prefix(row, Template.OP_OCCUPATION_FIRST) == "The doctor and"
    assert captioning_prefix(row, Template.OP_PARTICIPANT_FIRST) == "The patient and"
    assert captioning_prefix(OO_ROW, Template.OO) == "The physician and"


def test_template_must_match_the_rows_context() -> None:
    with pytest.raises(ValueError, match="for OO rows"):
        caption(op_row(Gender.MASCULINE, Gender.MASCULINE), Template.OO, Gender.MASCULINE)
    assert templates_for(Context.OO) == (Template.OO,)
    assert len(templates_for(Context.OP)) == 2


def test_neutral_retrieval_query() -> None:
    assert neutral_query("doctor", "patient") == "The doctor and their patient"
    assert neutral_query("doctor", "clipboard", Context.OO) == "The doctor and their clipboard"


def test_every_official_row_has_a_correct_caption(official_op: Path) -> None:
    for row in read_visogender_tsv(official_op):
        for template in templates_for(row.context):
            options = captions(row, template)
            correct = options[correct_pronoun(row, template)]
            assert correct.startswith(captioning_prefix(row, template) + " ")
            assert len(set(options.values())) == 2
