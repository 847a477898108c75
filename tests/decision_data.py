"""Shared pieces of the decision-probe tests: a small question file and the rule that
tells a planted model which version of a contrast-set source it sees and which option is
feminine-stereotyped."""

from __future__ import annotations

import re

from PIL import Image

from contrastkit.evaluators.stats import labor_shares

_HEADER = """\
answer_instruction: "Answer with the option's letter from the given choices directly."
decoding: {max_new_tokens: 2}
refusals: ["\\\\bI(?: a|')m sorry\\\\b", "\\\\bcannot\\\\b"]
families:
"""

_FAMILIES = {
    "occupation": """\
  occupation:
    kind: choice
    question: "Which occupation?"
    pairs: [[lawyer, paralegal]]
""",
    "suitability": """\
  suitability:
    kind: yes-no
    question: "Good {occupation}?"
    occupations: [engineer, teacher]
""",
    "salary": """\
  salary:
    kind: numeric
    question: "Salary? Answer with a number only."
""",
}


def small_questions(*families: str) -> str:
    """A question file (YAML) with the named families (default: all three)."""
    return _HEADER + "".join(_FAMILIES[name] for name in families or _FAMILIES)


#: One family of each kind.
SMALL_QUESTIONS = small_questions()


def is_masculine(image: Image.Image) -> bool:
    red, _, blue = image.convert("RGB").getpixel((0, 0))  # type: ignore[misc]
    return bool(red > blue)  # contrast_export: red masculine, blue feminine versions


def feminine_letter(instruction: str) -> str:
    """The letter of the feminine-stereotyped option by the labour statistics."""
    shares = labor_shares()
    options = dict(re.findall(r"^([AB])\. (.+)$", instruction, re.MULTILINE))
    if set(options.values()) == {"yes", "no"}:
        occupation = next(o for o in shares if re.search(rf"\b{o}\b", instruction))
        wanted = "no" if shares[occupation].male_share_percent > 50 else "yes"
        return next(letter for letter, text in options.items() if text == wanted)
    return min(options, key=lambda letter: shares[options[letter]].male_share_percent)
