"""Hostile decision question files (``--questions``, issue 44 item 6): every one a located
error (file, line or field) and exit 2, quickly and in little memory, never a traceback,
never accepted in silence.

The file is read by :func:`contrastkit.yaml_input.read_yaml` (no aliases, bounded size,
nesting and integers, no key twice) and checked by :func:`contrastkit.templates.load_questions`
(types, duplicates, ``max_new_tokens``, refusal patterns whose search time is bounded).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.templates import MAX_NEW_TOKENS, REFUSAL_WINDOW, is_refusal, load_questions
from contrastkit.yaml_input import MAX_YAML_BYTES, read_yaml
from decision_data import SMALL_QUESTIONS

runner = CliRunner()

GOOD = SMALL_QUESTIONS

#: An alias chain ("billion laughs"): 9**4 = 6,561 strings here, 9**9 with five more
#: lines (gigabytes) for the same few hundred bytes.
LAUGHS = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 4)
)


def _refusal(pattern: str) -> str:
    return GOOD.replace('"\\\\bcannot\\\\b"', f"'{pattern}'")


# name -> (file text, the field the error names, words of its reason)
HOSTILE: dict[str, tuple[str, str, str]] = {
    "alias bomb in the instruction": (
        LAUGHS + GOOD.replace('answer_instruction: "', 'answer_instruction: *l3\nx: "'),
        "l1[0]", "alias",
    ),
    "alias bomb in the refusals": (
        LAUGHS + GOOD.replace("refusals: [", "refusals: *l3\nx: ["), "l1[0]", "alias",
    ),
    "a list as an occupation": (
        GOOD.replace("[engineer, teacher]", "[[engineer], teacher]"),
        "families.suitability.occupations[0]", "not a list",
    ),
    "a mapping in a pair": (
        GOOD.replace("[[lawyer, paralegal]]", "[[lawyer, {a: 1}]]"),
        "families.occupation.pairs[0][1]", "not a dict",
    ),
    "a string for the occupations": (
        GOOD.replace("[engineer, teacher]", "engineer"),
        "families.suitability.occupations", "a list, not str",
    ),
    "100,000 levels of nesting": (
        GOOD + "extra: " + "[" * 100_000 + "]" * 100_000 + "\n", "extra[0][0]", "nested more",
    ),
    "a 5000-digit integer": (
        GOOD.replace("max_new_tokens: 2", "max_new_tokens: " + "7" * 5000),
        "decoding.max_new_tokens", "5000 digits",
    ),
    "refusals: abc": (
        GOOD.replace("refusals: [", "refusals: abc\nx: ["), "refusals", "a list of patterns",
    ),
    "a number as a refusal": (GOOD.replace("refusals: [", "refusals: [12, "), "refusals[0]", "12"),
    "nested quantifiers": (_refusal("(a+)+$"), "refusals[1]", "inside a repeated group"),
    "a repeated alternation": (_refusal("(a|aa)*b"), "refusals[1]", "inside a repeated group"),
    "an optional inside a count": (
        _refusal("(a?){30}a{30}"), "refusals[1]", "inside a repeated group",
    ),
    "three adjacent stars": (_refusal(r"\s*\s*\s*x"), "refusals[1]", "at most one * or +"),
    "max_new_tokens of 10^12": (
        GOOD.replace("max_new_tokens: 2", "max_new_tokens: 1000000000000"),
        "decoding.max_new_tokens", f"from 1 to {MAX_NEW_TOKENS}",
    ),
    "a family twice": (
        GOOD + "  salary:\n    kind: numeric\n    question: Pay?\n",
        "families.salary", "given twice",
    ),
    "an occupation twice": (
        GOOD.replace("[engineer, teacher]", "[engineer, teacher" + ", engineer" * 10_000 + "]"),
        "families.suitability.occupations[2]", "'engineer' is listed twice",
    ),
    "a pair twice": (
        GOOD.replace("[[lawyer, paralegal]]", "[[lawyer, paralegal], [lawyer, paralegal]]"),
        "families.occupation.pairs[1]", "listed twice",
    ),
    "a list as the instruction": (
        GOOD.replace('answer_instruction: "', 'answer_instruction: [a]\nx: "'),
        "answer_instruction", "a text, not list",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_question_file_is_a_located_error(tmp_path: Path, name: str) -> None:
    text, field, reason = HOSTILE[name]
    file = tmp_path / "questions.yaml"
    file.write_text(text, encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(DataFormatError) as caught:
        load_questions(file)
    assert time.monotonic() - started < 5
    error = caught.value
    assert error.path == str(file)
    assert error.field is not None and error.field.startswith(field), error
    assert reason in error.reason, error


def test_bytes_that_are_not_utf8_text_or_too_many_are_located_errors(tmp_path: Path) -> None:
    file = tmp_path / "questions.yaml"
    file.write_bytes(GOOD.replace("Which", "Wh\xe9ch").encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"questions\.yaml:7: not UTF-8 text"):
        load_questions(file)
    file.write_bytes(GOOD.encode() + b"#" * MAX_YAML_BYTES)
    with pytest.raises(DataFormatError, match=f"larger than {MAX_YAML_BYTES} bytes"):
        load_questions(file)
    with pytest.raises(DataFormatError, match="no such file"):
        load_questions(tmp_path / "missing.yaml")


def test_the_strict_reader_reads_plain_yaml_as_safe_load_does(tmp_path: Path) -> None:
    file = tmp_path / "x.yaml"
    file.write_text("\ufeffa: &anchor [1, 2.5, true, null, 'x']\nb: {c: -0x10}\n")
    assert read_yaml(file, str(file)) == {"a": [1, 2.5, True, None, "x"], "b": {"c": -16}}
    with pytest.raises(DataFormatError, match=r"x\.yaml:2: not YAML"):
        read_yaml(None, str(file), "a: [1\nb: ]")
    questions = load_questions()  # the bundled file passes every check
    assert len(questions.refusals) == 7 and questions.decoding["max_new_tokens"] == 16


def test_refusals_are_searched_in_the_start_of_an_answer_only() -> None:
    refusals = load_questions().refusals
    assert is_refusal("I'm sorry, I cannot tell.", refusals)
    assert not is_refusal("B", refusals)
    late = "B. " + "x" * REFUSAL_WINDOW + " I'm sorry"
    assert not is_refusal(late, refusals)
    # a pattern that passes the checks stays fast on a long hostile answer
    one = [re.compile(r"I.*sorry", re.IGNORECASE)]
    started = time.monotonic()
    assert not is_refusal("I" * 5_000_000, one)
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("name", ["alias bomb in the refusals", "100,000 levels of nesting",
                                  "a 5000-digit integer", "a mapping in a pair"])  # fmt: skip
def test_the_command_line_exits_2_naming_the_file(tmp_path: Path, name: str) -> None:
    data = contrast_export(tmp_path / "set", sources=1)
    questions = tmp_path / "q.yaml"
    questions.write_text(HOSTILE[name][0], encoding="utf-8")
    result = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", str(tmp_path / "o"),
        "--decisions", "--questions", str(questions),
    ])  # fmt: skip
    assert result.exit_code == 2, (result.output, result.exception)
    assert "q.yaml" in result.output and HOSTILE[name][1] in result.output
    assert not (tmp_path / "o").exists()
