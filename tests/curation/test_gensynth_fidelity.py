"""contrastkit's GenSynth caption words and retrieval metrics beside the official GenSynth
repository (github.com/oxai/debias-gensynth, ``measure_bias.py``).

The repository's behaviour is re-implemented here, independently, from what its code does:
a caption's words are ``caption.lower().split()`` (whitespace tokens, punctuation kept on
the word), its word lists (``REPO_MASCULINE`` / ``REPO_FEMININE`` below, data copied as
word lists) differ from the paper's Tab. 4, an image is labelled from its captions'
labels, neutral captions replace each listed word with ``re.sub(r"\\bword\\b", ...)``
after lower-casing, and its ``bias_at_k`` computes Bias@K and MaxSkew@K. Each test backs
one line of docs/differences.md.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from contrastkit.evaluators.metrics import retrieval_metrics
from contrastkit.gender_words import (
    FEMININE_WORDS,
    MASCULINE_WORDS,
    image_label,
    neutralize,
    text_label,
)
from contrastkit.schema import Gender

# The repository's lists (measure_bias.py, MALE_GENDERED_WORDS / FEMALE_GENDERED_WORDS).
_REPO_MASCULINE_TEXT = (
    "man boy male gentleman his he him son father brother uncle nephew husband boys men "
    "gentlemen sons fathers brothers uncles nephews husbands"
)
_REPO_FEMININE_TEXT = (
    "woman girl female lady her she hers daughter mother sister aunt niece wife girls women "
    "ladies daughters mothers sisters aunts nieces wives"
)
REPO_MASCULINE = frozenset(_REPO_MASCULINE_TEXT.split())
REPO_FEMININE = frozenset(_REPO_FEMININE_TEXT.split())
# Its neutral word for each listed word (MALE_GENDERED_BANK / FEMALE_GENDERED_BANK), for
# the words the tests below use.
REPO_NEUTRAL = {"man": "person", "woman": "person", "her": "their", "him": "them"}


def repo_caption_label(caption: str) -> str | None:
    """The repository's per-caption label: whitespace tokens of the lower-cased caption."""
    words = set(caption.lower().split())
    masculine, feminine = bool(words & REPO_MASCULINE), bool(words & REPO_FEMININE)
    if masculine and feminine:
        return "both"
    return "masculine" if masculine else "feminine" if feminine else None


def repo_image_label(captions: list[str]) -> str | None:
    """The repository's image label: undefined if any caption names both genders or the
    captions disagree, else the one gender found."""
    labels = {repo_caption_label(caption) for caption in captions} - {None}
    return labels.pop() if len(labels) == 1 and "both" not in labels else None


def repo_neutral(caption: str) -> str:
    text = caption.lower()
    for word, neutral in REPO_NEUTRAL.items():
        text = re.sub(rf"\b{word}\b", neutral, text)
    return text


def test_the_repository_word_lists_differ_from_table_4() -> None:
    # Tab. 4 words the repository lacks: the boyfriend / girlfriend row
    only_table_4 = (MASCULINE_WORDS - REPO_MASCULINE, FEMININE_WORDS - REPO_FEMININE)
    assert only_table_4 == ({"boyfriend"}, {"girlfriend"})
    # repository words Tab. 4 lacks: uncle / aunt, nephew / niece and plurals
    only_repo = (REPO_MASCULINE - MASCULINE_WORDS, REPO_FEMININE - FEMININE_WORDS)
    assert only_repo == (
        {"uncle", "nephew", "gentlemen", "sons", "fathers", "brothers", "uncles", "nephews",
         "husbands"},
        {"aunt", "niece", "ladies", "daughters", "mothers", "sisters", "aunts", "nieces",
         "wives"},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("caption", "ours", "repo"),
    [
        ("A boyfriend and a dog on a bench", Gender.MASCULINE, None),  # Tab. 4 only
        ("A girlfriend holding an umbrella", Gender.FEMININE, None),
        ("An uncle cutting a cake", None, "masculine"),  # repository only
        ("Two sisters playing tennis", None, "feminine"),
    ],
)
def test_word_list_differences_change_labels(
    caption: str, ours: Gender | None, repo: str | None
) -> None:
    assert text_label(caption) is ours
    assert repo_caption_label(caption) == repo


@pytest.mark.parametrize(
    ("caption", "ours"),
    [
        ("A surfer riding a wave next to a man.", Gender.MASCULINE),  # "man." token
        ("Woman, child and dog walking", Gender.FEMININE),  # "woman," token
        ("The woman's bag is on the table", Gender.FEMININE),  # "woman's" token
        ('A sign that says "he" on it', Gender.MASCULINE),  # '"he"' token
    ],
)
def test_whitespace_tokens_miss_words_with_punctuation(caption: str, ours: Gender) -> None:
    """The repository splits on whitespace, so a word with punctuation attached is not
    matched; contrastkit matches whole words (``\\b`` boundaries)."""
    assert text_label(caption) is ours
    assert repo_caption_label(caption) is None


def test_whole_word_matching_also_reads_hyphenated_compounds() -> None:
    """The other side of ``\\b`` matching: a hyphen is a word boundary, so contrastkit
    reads "man-made" as the word "man" where the repository's token "man-made" is not."""
    assert text_label("A man-made lake in a park") is Gender.MASCULINE
    assert repo_caption_label("A man-made lake in a park") is None


def test_both_combine_caption_labels_alike_when_tokens_are_clean() -> None:
    for captions in (
        ["a man rides a horse", "a person on a horse"],
        ["a man rides a horse", "a woman rides a horse"],
        ["a man and a woman", "a horse"],
        ["a horse in a field", "a field"],
    ):
        ours = image_label(captions)
        assert (ours.value if ours else None) == repo_image_label(captions)


def test_neutral_captions_her_and_case() -> None:
    """The repository lower-cases the caption and maps "her" to "their" always;
    contrastkit keeps the case and reads "her" before a noun as "their", otherwise as
    "them" (see contrastkit.gender_words)."""
    assert repo_neutral("A man hugging her.") == "a person hugging their."
    assert neutralize("A man hugging her.") == "A person hugging them."
    assert repo_neutral("The woman brushes her teeth") == "the person brushes their teeth"
    assert neutralize("The woman brushes her teeth") == "The person brushes their teeth"


def repo_bias_at_k(scores: np.ndarray, labels: list[str], k: int) -> tuple[float, float]:
    """The repository's ``bias_at_k`` for one query on untied scores: Bias@K over all
    images (undefined ones take slots, 0 if none is labelled) and MaxSkew@K over the
    labelled images only, the maximum over the genders present in the top K."""
    order = np.argsort(-scores)
    top = [labels[i] for i in order[:k]]
    men, women = top.count("masculine"), top.count("feminine")
    bias = 0.0 if men + women == 0 else (men - women) / (men + women)
    labelled = [i for i in order if labels[i] in ("masculine", "feminine")]
    pool = [labels[i] for i in labelled]
    top_labelled = pool[:k]
    skews = [
        np.log((top_labelled.count(g) / len(top_labelled)) / (pool.count(g) / len(pool)))
        for g in ("masculine", "feminine")
        if g in top_labelled
    ]
    return bias, float(max(skews))


def test_bias_and_maxskew_equal_the_repository_on_untied_scores() -> None:
    rng = np.random.default_rng(8)
    labels = ["masculine"] * 30 + ["feminine"] * 20 + [""] * 25
    for _ in range(30):
        scores = rng.random(len(labels))
        ours = retrieval_metrics(scores, np.array(labels, dtype=object), (1, 5, 10, 25))
        for k in (1, 5, 10, 25):
            bias, maxskew = repo_bias_at_k(scores, labels, k)
            assert ours[f"bias_gensynth@{k}"] == pytest.approx(bias, abs=1e-15)
            assert ours[f"maxskew@{k}"] == pytest.approx(maxskew, abs=1e-15)
