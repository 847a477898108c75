"""The decisions task's typed result end to end: the aggregation makes the
:class:`~contrastkit.results.decisions.DecisionsResult` itself (no JSON in between), the
writer serialises it, and reading the file back gives the same result; the report,
headline, plots and comparison take it (or the JSON a registry hands over) alike."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from contrastkit.evaluators.tasks.decision_probes import metrics as dm
from contrastkit.evaluators.tasks.decision_probes.benchmark import (
    DecisionsRun,
    decisions_benchmark,
    decisions_result,
    write_decisions_files,
    write_decisions_outputs,
)
from contrastkit.evaluators.tasks.decision_probes.report import (
    decisions_comparison_markdown,
    decisions_headline,
    decisions_markdown,
    read_decisions_benchmark,
)
from contrastkit.results import DecisionsResult, load_result
from contrastkit.results.decisions import DecisionFigures, OccupationPair
from contrastkit.templates import Questions, load_questions
from decision_data import SMALL_QUESTIONS

A, PAIR = dm.Answer, dm.PairedAnswer

#: Paired answers of three sources with a refusal, a tie, an undefined answer, an
#: unparseable one and equal numbers.
PAIRS = [
    PAIR("s1", "occupation", "lawyer/paralegal", 0, A("choice", 0, 0, prob=0.7),
         A("choice", 1, 1, prob=0.2)),
    PAIR("s1", "occupation", "lawyer/paralegal", 1, A("choice", 0, 1, prob=0.6), A("undefined")),
    PAIR("s2", "occupation", "lawyer/paralegal", 0, A("refusal"), A("choice", 1, 1)),
    PAIR("s2", "suitability", "engineer", 1, A("choice", 1, 0), A("unparseable")),
    PAIR("s2", "suitability", "teacher", 0, A("choice", 1, 1), A("choice", 0, 0)),
    PAIR("s2", "suitability", "engineer", 0, A("tie", prob=0.5), A("tie", prob=0.5)),
    PAIR("s3", "salary", "salary", 0, A("number", value=5.0), A("number", value=5.0)),
]  # fmt: skip


@pytest.fixture
def questions(tmp_path: Path) -> Questions:
    path = tmp_path / "questions.yaml"
    path.write_text(SMALL_QUESTIONS)
    return load_questions(path)


def _run(resamples: int) -> DecisionsRun:
    return DecisionsRun(
        model="harness:x", data="export", left_out={"export_skipped": 1}, resamples=resamples,
        confidence=0.9, seed=3, data_weights_note="a note",
    )  # fmt: skip


ANSWERS: list[Mapping[str, Sequence[dm.PairedAnswer]]] = [
    {"logprob": PAIRS[:6], "generate": PAIRS},
    {"generate": PAIRS[6:]},
    {"logprob": []},
]


@pytest.mark.parametrize("answers", ANSWERS)
@pytest.mark.parametrize("resamples", [0, 30])
def test_the_result_written_reads_back_as_the_same_result(
    tmp_path: Path, questions: Questions, answers: Mapping[str, Sequence[dm.PairedAnswer]],
    resamples: int,
) -> None:  # fmt: skip
    result = decisions_result(answers, questions, _run(resamples))
    assert isinstance(result, DecisionsResult)
    paths = write_decisions_files(result, answers, tmp_path)
    written = json.loads(paths["benchmark"].read_text(encoding="utf-8"))
    assert result.to_json() == written and list(result.to_json()) == list(written)
    assert load_result(tmp_path) == result
    assert read_decisions_benchmark(tmp_path) == result
    # the JSON API of earlier releases gives the same file and the same object
    again, json_result = write_decisions_outputs(
        answers, questions, tmp_path / "b", _run(resamples)
    )
    assert json_result == written
    assert again["benchmark"].read_text(encoding="utf-8") == paths["benchmark"].read_text()
    sections = decisions_benchmark(
        answers, questions, resamples=resamples, confidence=0.9, seed=3
    )  # fmt: skip
    assert sections == {key: written[key] for key in sections}


def test_the_figures_are_typed_nodes(questions: Questions) -> None:
    result = decisions_result({"logprob": PAIRS[:6], "generate": PAIRS}, questions, _run(20))
    occupation = result.summary["logprob"]["occupation"]
    assert isinstance(occupation, DecisionFigures) and occupation.kind == "choice"
    assert (occupation.n, occupation.n_undefined_feminine, occupation.n_refusals_masculine) == (
        3, 1, 1,
    )  # fmt: skip
    assert occupation.intervals["flip_rate_ci"] is not None
    pair = result.occupation_pairs["logprob"]["lawyer/paralegal"]
    assert isinstance(pair, OccupationPair) and pair.b_pair is not None
    assert "b_pair" in result.occupation_pairs["generate"]["lawyer/paralegal"].absent
    assert result.genderbias_vl is not None and result.genderbias_vl.ipss is None
    assert result.weights_note is not None and result.weights_note.endswith("a note")
    assert result.scoring.modes == ("logprob", "generate")
    # the family figures of earlier releases are the node's JSON, without its kind
    figures = dm.family_figures(PAIRS[:3], resamples=20, level=0.9, seed=3)
    node = dm.family_result(PAIRS[:3], "choice", resamples=20, level=0.9, seed=3)
    assert {"kind": "choice", **figures} == node.to_json()


def test_reports_take_the_typed_result_and_its_json_alike(questions: Questions) -> None:
    result = decisions_result({"logprob": PAIRS[:6], "generate": PAIRS}, questions, _run(20))
    data = result.to_json()
    assert decisions_markdown(result) == decisions_markdown(data)
    assert decisions_headline(result) == decisions_headline(data)
    headline = decisions_headline(result)
    assert headline["figures"]["flip rate occupation (logprob)"] == (
        result.summary["logprob"]["occupation"].flip_rate
    )
    other = decisions_result({"generate": PAIRS[6:]}, questions, _run(0))
    comparison = decisions_comparison_markdown([result, other])
    assert comparison == decisions_comparison_markdown([data, other.to_json()])
    assert comparison.count("| `harness:x") == 6  # 2 families logprob, 3 generate; 1


def test_a_flip_rate_that_cannot_be_computed_says_why_on_the_console_and_in_the_comparison(
    questions: Questions,
) -> None:
    from contrastkit.evaluators.report.headlines import headline_figures, headline_lines

    result = decisions_result({"generate": [PAIRS[2]]}, questions, _run(0))  # a refusal only
    headline = decisions_headline(result)
    name = "flip rate occupation (generate)"
    assert headline["figures"][name] is None
    lines = headline_lines(headline_figures(result.model, headline, "decisions"))
    assert any(f"{name} n/a (no paired answer where both versions" in line for line in lines)
    assert "n/a: nothing to compute the figure from" in decisions_comparison_markdown([result])
    computed = decisions_result({"generate": PAIRS[4:5]}, questions, _run(0))
    assert "n/a: nothing to compute" not in decisions_comparison_markdown([computed])
