"""A model that only answers questions (a plugin's, issue 47.6) loads, and is used for
the tasks that ask questions; the others refuse it, saying why."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from contrastkit.interfaces import AnswerScorer
from contrastkit.models import families, load_model

runner = CliRunner()

QUESTIONS = """\
answer_instruction: "Answer with the option's letter."
decoding: {max_new_tokens: 2}
refusals: ["\\\\bsorry\\\\b"]
families:
  occupation:
    kind: choice
    question: "Which occupation?"
    pairs: [[lawyer, paralegal]]
"""


class AnswersOnly:
    """Answers A, whatever it is asked: letter_logprobs and generate_answers, nothing else."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        return np.tile(np.log([0.7, 0.3][:k]), (len(images), 1))

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        return ["A"] * len(images)


def load_answers_only(target: str, runtime: Any, context: Any = None) -> AnswersOnly:
    return AnswersOnly(f"asks:{target}")


@pytest.fixture
def answers_only(monkeypatch: pytest.MonkeyPatch) -> str:
    family = families.ModelFamily(
        "asks", "captioning", "a model that only answers questions", "asks:x",
        f"{__name__}:load_answers_only", capabilities=frozenset({"answers"}),
    )  # fmt: skip
    monkeypatch.setitem(families._registered, "asks", family)
    return "asks:model"


def test_a_model_that_only_answers_loads_and_answers_decision_questions(
    tmp_path: Path, answers_only: str
) -> None:
    model = load_model(answers_only)
    assert isinstance(model, AnswerScorer)
    data = contrast_export(tmp_path / "set", sources=1)
    questions = tmp_path / "q.yaml"
    questions.write_text(QUESTIONS)
    out = tmp_path / "res"
    result = runner.invoke(app, [
        "evaluate", "decisions", "--data", str(data), "--model", answers_only, "--out", str(out),
        "--questions", str(questions), "--bootstrap", "0",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    benchmark = json.loads((folder / "benchmark.json").read_text())
    assert benchmark["summary"]["logprob"]["occupation"]["flip_rate"] == 0.0
    refused = runner.invoke(app, [
        "evaluate", "contrast", "--data", str(data), "--model", answers_only,
        "--out", str(tmp_path / "contrast"),
    ])  # fmt: skip
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "only answers questions" in refused.output and "evaluate decisions" in refused.output
    visogender = runner.invoke(app, [
        "evaluate", "visogender", "--data", "visogender", "--model", answers_only,
        "--out", str(tmp_path / "vg"),
    ])  # fmt: skip
    assert visogender.exit_code == 2 and "only answers questions" in visogender.output
