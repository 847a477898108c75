"""A decisions harness export reads as what it is and travels (issue 47.5): its README
says what contrastkit computes from the answers, rows left out are listed with their own
reason, and question templates given by a relative path are copied into the export, so
the answers read back from another folder."""

from __future__ import annotations

from pathlib import Path

import datasets
import pandas as pd
import pytest
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from contrastkit.harness_key import read_key

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


def _one_source_lacks_a_version(folder: Path) -> Path:
    """A contrast export whose second source has its masculine version only."""
    data = contrast_export(folder / "full", sources=2)
    saved = datasets.load_from_disk(str(data / "saved" / "contrast"))
    saved["test"] = saved["test"].select([0, 1, 2])  # source 0 both, source 1 masculine
    out = folder / "partial"
    saved.save_to_disk(str(out / "saved" / "contrast"))
    return out


def test_a_decisions_export_travels_and_says_what_it_left_out_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _one_source_lacks_a_version(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "q.yaml").write_text(QUESTIONS)
    monkeypatch.chdir(work)
    exported = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", "vlm",
        "--decisions", "--questions", "q.yaml",  # relative to this folder
    ])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    assert "left out 1 row (1: the source has no version of the other gender" in exported.output
    assert "whose image is not available" not in exported.output
    readme = (work / "vlm" / "README.md").read_text()
    assert "does not: ," not in readme and "flip rate" in readme
    assert "whose image is not available" not in readme
    assert (work / "vlm" / "decision_questions.yaml").read_text() == QUESTIONS
    # another machine: the export alone, read from another folder
    moved = tmp_path / "elsewhere" / "vlm"
    moved.parent.mkdir()
    (work / "vlm").rename(moved)
    (work / "q.yaml").unlink()
    monkeypatch.chdir(tmp_path / "elsewhere")
    key = read_key(moved)
    predictions = []
    for split, dataset in key.datasets.items():
        table = [{"index": i.index, "question": "q", "A": i.options["A"], "B": i.options["B"],
                  "answer": i.answer, "prediction": "A"}
                 for i in key.items if i.split == split]  # fmt: skip
        predictions.append(tmp_path / f"model_{dataset}.tsv")
        pd.DataFrame(table).to_csv(predictions[-1], sep="\t", index=False)
    report = runner.invoke(app, [
        "report", "--harness-predictions", str(predictions[0]), "--harness-predictions",
        str(predictions[1]), "--harness-set", str(moved), "--out", "results",
    ])  # fmt: skip
    assert report.exit_code == 0, report.output
