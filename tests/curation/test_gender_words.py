"""Caption gender words (GenSynth Sec. 3.2, Tab. 4 and Tab. 5): paper examples and
properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contrastkit.gender_words import (
    FEMININE_WORDS,
    MASCULINE_WORDS,
    WORD_TABLE,
    gendered_words,
    image_label,
    match_case,
    neutralize,
    text_label,
    to_gender,
)
from contrastkit.schema import Gender

M, F, N = Gender.MASCULINE, Gender.FEMININE, Gender.NEUTRAL


def test_word_table_is_the_papers_table_4() -> None:
    assert len(WORD_TABLE) == 14
    assert WORD_TABLE[0] == ("man", "woman", "person")
    assert WORD_TABLE[-1] == ("him", "her", "them")
    assert ("boyfriend", "girlfriend", "partner") in WORD_TABLE
    assert len(MASCULINE_WORDS) == len(FEMININE_WORDS) == 14


@pytest.mark.parametrize(
    ("original", "neutral"),
    [
        # Tab. 5 (the paper prints "car" for "cat" in the second example: a typo).
        (
            "The woman brushes her teeth in the bathroom.",
            "The person brushes their teeth in the bathroom.",
        ),
        (
            "A man sleeping with his cat next to him .",
            "A person sleeping with their cat next to them .",
        ),
        (
            "Two women and two girls in makeup and one is talking on a cellphone.",
            "Two people and two children in makeup and one is talking on a cellphone.",
        ),
    ],
)
def test_neutralise_reproduces_table_5(original: str, neutral: str) -> None:
    assert neutralize(original) == neutral


def test_image_label_joins_all_captions() -> None:
    # Sec. 3.2: only masculine -> masculine; only feminine -> feminine; both/neither -> None.
    assert image_label(["A man on a skateboard.", "Someone skating."]) is M
    assert image_label(["A lady holding an umbrella.", "Her dog."]) is F
    assert image_label(["A man riding.", "A woman riding."]) is None
    assert image_label(["A person riding a horse.", "Someone on a horse."]) is None
    assert text_label("HIS bike") is M


def test_words_match_whole_words_only() -> None:
    assert gendered_words("A snowman near a manhole, the Woman's bag; MEN.") == ["woman", "men"]
    assert text_label("A female and male-looking statue") is None  # both


@pytest.mark.parametrize(
    ("text", "target", "expected"),
    [
        ("A man sleeping with his cat next to him.", F,
         "A woman sleeping with her cat next to her."),
        ("She hands her phone to her brother.", M, "He hands his phone to his brother."),
        ("The woman looks at her.", M, "The man looks at him."),
        ("The bag is hers.", M, "The bag is his."),
        ("The bag is his, not yours.", F, "The bag is hers, not yours."),
        ("The bag is his.", N, "The bag is theirs."),
        ("He gives her a hug and her mother smiles", M,
         "He gives him a hug and his father smiles"),
        ("A Gentleman and HIS son", F, "A Lady and HER daughter"),
        ("A boy's kite.", F, "A girl's kite."),
    ],
)  # fmt: skip
def test_to_gender_maps_rows_and_resolves_pronouns(
    text: str, target: Gender, expected: str
) -> None:
    assert to_gender(text, target) == expected


def test_match_case() -> None:
    assert match_case("she", "HE") == "SHE"
    assert match_case("she", "He") == "She"
    assert match_case("she", "he") == "she"


# -- properties ---------------------------------------------------------------------------

_ALL_WORDS = sorted(MASCULINE_WORDS | FEMININE_WORDS)
_FILLER = ["a", "the", "dog", "on", "skateboard", "with", "cat", "to", "and", "park", "next"]
_NOUN_ROWS = [row for row in WORD_TABLE if row[0] not in ("he", "his", "him")]


def _cased(word: str, style: int) -> str:
    return (word, word.upper(), word.capitalize())[style]


_words = st.tuples(st.sampled_from(_ALL_WORDS + _FILLER), st.integers(0, 2)).map(
    lambda pair: _cased(*pair)
)
_punct = st.sampled_from([" ", " ", ", ", ". ", "! ", "'s ", " (", ") ", "-", "\n"])
_captions = st.lists(st.tuples(_words, _punct), max_size=12).map(
    lambda items: "".join(word + sep for word, sep in items)
)


@given(_captions, st.sampled_from([M, F, N]))
def test_rewritten_captions_only_hold_target_words(caption: str, target: Gender) -> None:
    out = to_gender(caption, target)
    words = set(gendered_words(out))
    if target is M:
        assert not words & (FEMININE_WORDS - MASCULINE_WORDS)
    elif target is F:
        assert not words & (MASCULINE_WORDS - FEMININE_WORDS)
    else:
        assert not words
        assert text_label(out) is None
    # Idempotent; non-word characters kept in place.
    assert to_gender(out, target) == out
    assert re.sub(r"[A-Za-z]", "", out) == re.sub(r"[A-Za-z]", "", caption)


@given(_captions, st.sampled_from([M, F]))
def test_label_of_a_swapped_caption_is_the_target(caption: str, target: Gender) -> None:
    out = to_gender(caption, target)
    if gendered_words(caption):
        assert text_label(out) is target
    else:
        assert out == caption


@given(
    st.lists(
        st.tuples(st.sampled_from(_NOUN_ROWS), st.integers(0, 1), st.integers(0, 2)),
        min_size=1,
        max_size=6,
    )
)
def test_swap_round_trip_for_noun_rows(items: list[tuple[tuple[str, str, str], int, int]]) -> None:
    words = [_cased(row[side], style) for row, side, style in items]
    caption = " near ".join(words) + "."
    back = to_gender(to_gender(caption, M), F)
    assert back == to_gender(caption, F)
    masculine = to_gender(caption, M)
    assert to_gender(to_gender(masculine, F), M) == masculine
    # Case kept word by word.
    for before, after in zip(caption.split(), to_gender(caption, N).split(), strict=True):
        assert before.isupper() == after.isupper() or len(before.strip(".")) == 1
        assert before[:1].isupper() == after[:1].isupper()


def test_the_old_import_path_is_the_moved_module_with_a_warning() -> None:
    import importlib
    import sys

    import contrastkit.gender_words as new

    sys.modules.pop("contrastkit.curation.gender_words", None)
    with pytest.warns(DeprecationWarning, match="moved to contrastkit.gender_words"):
        old = importlib.import_module("contrastkit.curation.gender_words")
    assert old is new and old.to_gender is new.to_gender
