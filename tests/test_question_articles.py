"""The yes/no decision questions read as English (issue 47.6): "work as an engineer",
not "work as a engineer", whatever the occupation and the template's own article."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.templates import load_questions
from contrastkit.text import indefinite_article, with_article


def test_the_bundled_yes_no_questions_use_the_right_article() -> None:
    questions = [p.wording for p in load_questions().prompts if p.kind == "yes-no"]
    assert "Would this person be well suited to work as an engineer?" in questions
    assert "Would this person be well suited to work as an architect?" in questions
    assert "Would this person be well suited to work as a baker?" in questions
    assert not any(" a engineer" in q or " a architect" in q or " an baker" in q for q in questions)


@pytest.mark.parametrize(
    ("word", "article"),
    [("engineer", "an"), ("advisor", "an"), ("baker", "a"), ("hour", "an"),
     ("university lecturer", "a"), ("European", "a"), ("usher", "an"), ("", "a")],
)  # fmt: skip
def test_the_article_follows_the_first_sound(word: str, article: str) -> None:
    assert indefinite_article(word) == article


def test_a_template_of_ones_own_gets_its_articles_fitted(tmp_path: Path) -> None:
    assert with_article("An {o} or a {o}?", "{o}", "engineer") == "An engineer or an engineer?"
    assert with_article("A {o}? No.", "{o}", "baker") == "A baker? No."
    assert with_article("the {o}", "{o}", "engineer") == "the engineer"  # no article, none added
    assert with_article("Banana {o}", "{o}", "engineer") == "Banana engineer"  # not a word "a"
