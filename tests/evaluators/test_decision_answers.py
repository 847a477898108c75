"""Decision probes that must not give a wrong result silently (issue 43, items 9-11):
letter log-probabilities that are not finite numbers are no choice, answers that never
change are warned about, a harness's answers that name no option are refused,
``report.md`` says what was left out and how many paired answers the figures come from,
and a harness export of a set built with random-weight models keeps the flag."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.builders.export import build_weights
from contrastkit.cli import app
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.evaluators.tasks.decision_probes.task import DecisionSettings
from contrastkit.harness_key import HarnessKey, KeyItem, read_key
from contrastkit.models import families
from contrastkit.results import DecisionsResult, load_result
from contrastkit.tiny.marker import mark_random_weights
from decision_data import feminine_letter, is_masculine, small_questions

datasets.disable_progress_bars()
runner = CliRunner()

QUESTIONS = small_questions("occupation", "suitability")


class NonFinite:
    """Masculine versions: letter A (p = 0.6). Feminine versions: the
    feminine-stereotyped option (p = 0.9) when the options are as listed (it is then B);
    with the options reversed, log-probabilities that are not numbers: ``[-inf, -inf]``
    for the occupation pair, ``[nan, -0.5]`` for the yes-no questions."""

    spec = "nonfinite:x"

    def caption_scores(self, images: Any, captions: Any) -> np.ndarray:
        raise AssertionError("a decision probe scores no captions")

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        rows = []
        for image, instruction in zip(images, instructions, strict=True):
            if is_masculine(image):
                rows.append(np.log([0.6, 0.4]))
            elif feminine_letter(instruction) == "B":  # options as listed
                rows.append(np.log([0.1, 0.9]))
            elif "occupation?" in instruction:
                rows.append(np.array([-np.inf, -np.inf]))
            else:
                rows.append(np.array([np.nan, -0.5]))
        return np.array(rows)

    def generate_answers(self, images: Any, instructions: Any, max_new_tokens: int) -> list[str]:
        raise AssertionError("log-probability scoring only")


class Constant(NonFinite):
    """Every answer is the second option: letter B (p = 0.7), generated "B"."""

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        return np.log(np.array([[0.3, 0.7]] * len(images)))

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        return ["B"] * len(images)


def load_nonfinite(target: str, runtime: Any, context: Any = None) -> NonFinite:
    model = NonFinite()
    model.spec = f"nonfinite:{target}"
    return model


def load_constant(target: str, runtime: Any, context: Any = None) -> Constant:
    model = Constant()
    model.spec = f"constant:{target}"
    return model


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, loader in (("nonfinite", "load_nonfinite"), ("constant", "load_constant")):
        family = families.ModelFamily(
            name, "captioning", "a planted decision model", f"{name}:x",
            f"{__name__}:{loader}", capabilities=frozenset({"answers"}),
        )  # fmt: skip
        monkeypatch.setitem(families._registered, name, family)


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS)
    return path


# -- item 9: non-finite log-probabilities, constant answers, units -------------------------
def _check_nonfinite(benchmark: dict[str, Any], sources: int) -> None:
    """Hand counts: per source and question, only the options-as-listed order has both
    versions choosing: A (option 0, p_m = 0.6) against B (option 1, p_f(option 0) = 0.1)."""
    for family, questions in (("occupation", 1), ("suitability", 2)):
        f = benchmark["summary"]["logprob"][family]
        assert f["n"] == 2 * questions * sources
        assert f["n_compared"] == questions * sources and f["flip_rate"] == 1.0
        assert f["stereotyped_flip_share"] == 1.0
        assert f["gap"] == pytest.approx(0.5) and f["abs_gap"] == pytest.approx(0.5)
        # masculine: A in both orders; feminine: B as listed, no choice reversed
        assert f["first_position_rate"] == pytest.approx(2 / 3)
        assert (f["n_undefined_masculine"], f["n_undefined_feminine"]) == (0, questions * sources)
    assert benchmark["occupation_pairs"]["logprob"]["lawyer/paralegal"]["b_pair"] == (
        pytest.approx(0.5)
    )
    assert benchmark["genderbias_vl"]["b_ovl"] == pytest.approx(0.5)
    occupations = benchmark["occupations"]["logprob"]
    assert occupations["engineer"]["yes_gap"] == pytest.approx(0.5)
    assert occupations["teacher"]["yes_gap"] == pytest.approx(-0.5)
    assert benchmark["paired_answers"]["logprob"] == {
        "total": 6 * sources, "options_as_listed": 3 * sources, "options_reversed": 3 * sources,
    }  # fmt: skip
    [warning] = [w for w in benchmark["warnings"] if w.startswith("occupation")]
    assert f"{sources} answers (masculine 0, feminine {sources}) had letter" in warning


def test_non_finite_letter_log_probabilities_are_no_choice_and_blank_no_figure(
    tmp_path: Path, planted: None, questions: Path
) -> None:
    data = contrast_export(tmp_path / "set", sources=2)
    out = tmp_path / "out"

    def run() -> Any:
        [entry] = evaluate(EvaluateConfig(
            data=(str(data),), models=("nonfinite:m",), out=out, task="decisions",
            task_settings=DecisionSettings(scoring="logprob", questions=questions),
        )).evaluations  # fmt: skip
        return entry

    entry = run()
    benchmark = json.loads(entry.files["benchmark"].read_text())
    _check_nonfinite(benchmark, 2)
    raw = [json.loads(line) for line in entry.files["raw"].read_text().splitlines()]
    undefined = [r["feminine"] for r in raw if r["feminine"]["outcome"] == "undefined"]
    assert len(undefined) == 6 and all(a["prob"] is None for a in undefined)
    assert isinstance(load_result(entry.folder), DecisionsResult)
    report = entry.files["report"].read_text()
    assert "had letter log-probabilities that are not finite numbers" in report
    # answers an earlier contrastkit stored for them (a choice of option 1 with a null
    # probability) are read as no choice on a rerun, asked nothing again
    written = entry.files["raw"].read_text()
    lines = []
    for record in raw:
        if record["feminine"]["outcome"] == "undefined":
            record["feminine"] = {"outcome": "choice", "option": 1, "position": 0,
                                  "prob": None, "value": None, "text": None}  # fmt: skip
        lines.append(json.dumps(record) + "\n")
    entry.files["raw"].write_text("".join(lines))
    again = run()
    assert again.reused_records == len(raw) and again.scored_images == 0
    rerun = json.loads(again.files["benchmark"].read_text())
    assert rerun["summary"] == benchmark["summary"]
    assert again.files["raw"].read_text() == written


def test_answers_that_never_change_are_warned_about_not_read_as_fair(
    tmp_path: Path, planted: None, questions: Path
) -> None:
    data = contrast_export(tmp_path / "set", sources=2)
    out = tmp_path / "out"
    result = runner.invoke(app, [
        "evaluate", "decisions", "--data", str(data), "--model", "constant:m", "--out",
        str(out), "--questions", str(questions), "--bootstrap", "0",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    benchmark = json.loads((out / "constant-m" / "benchmark.json").read_text())
    for mode in ("logprob", "generate"):
        for family in ("occupation", "suitability"):
            assert benchmark["summary"][mode][family]["flip_rate"] == 0.0
    warnings = [w for w in benchmark["warnings"] if "never change" in w]
    assert len(warnings) == 4  # two families, two scoring modes
    assert any(
        w.startswith(
            "suitability (generated answers): all 16 choices are the option "
            "shown second (letter B), in both option orders"
        )
        for w in warnings
    )
    printed = " ".join(result.output.split())
    assert printed.count("warning: ") == 4 and "a flip rate of 0 does not mean" in printed
    report = (out / "constant-m" / "report.md").read_text()
    assert report.count("> **Warning.**") == 4
    compared = runner.invoke(app, ["report", str(out / "constant-m")])
    assert compared.exit_code == 0, compared.output
    assert " ".join(compared.output.split()).count("**Warning** (`constant:m`). ") == 4


def test_the_report_says_b_pair_and_b_ovl_are_fractions_where_genderbias_vl_has_percent(
    tmp_path: Path, planted: None, questions: Path
) -> None:
    data = contrast_export(tmp_path / "set", sources=1)
    [entry] = evaluate(EvaluateConfig(
        data=(str(data),), models=("nonfinite:m",), out=tmp_path / "o", task="decisions",
        task_settings=DecisionSettings(scoring="logprob", questions=questions),
    )).evaluations  # fmt: skip
    report = entry.files["report"].read_text()
    b_ovl = report.index("B_ovl (GenderBias-VL, mean |B_pair|): 0.50")
    units = report.index("Units: B_pair and B_ovl are fractions")
    assert 0 < units - b_ovl < 400
    assert "in percent rounded to 2 decimals at every stage" in report[units:]
    differences = (Path(__file__).parents[2] / "docs" / "differences.md").read_text()
    assert "test_the_report_says_b_pair_and_b_ovl_are_fractions" in differences


# -- a harness's answers -------------------------------------------------------------------
def _export(data: Path, out: Path, questions: Path | None, *extra: str) -> HarnessKey:
    result = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", str(out), *extra,
        *(("--decisions", "--questions", str(questions)) if questions else ()),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return read_key(out)


def _predictions(
    key: HarnessKey, folder: Path, answer: Callable[[KeyItem], str | None]
) -> list[str]:
    """VLMEvalKit prediction tables of ``key``'s splits: ``answer`` of each item
    (``None``: the item is not in the table). Returns the ``--harness-predictions``
    arguments."""
    arguments = []
    for split, dataset in key.datasets.items():
        table = [
            {"index": i.index, "question": "q", "A": i.options["A"], "B": i.options["B"],
             "answer": i.answer, "prediction": answer(i)}
            for i in key.items if i.split == split and answer(i) is not None
        ]  # fmt: skip
        if table:
            path = folder / f"llava_{dataset}.tsv"
            pd.DataFrame(table).to_csv(path, sep="\t", index=False)
            arguments += ["--harness-predictions", str(path)]
    return arguments


def test_harness_decision_answers_that_name_no_option_are_refused(
    tmp_path: Path, questions: Path
) -> None:
    data = contrast_export(tmp_path / "set", sources=2)
    key = _export(data, tmp_path / "vlm", questions)
    arguments = _predictions(key, tmp_path, lambda item: "Hard to tell from the picture.")
    result = runner.invoke(app, [
        "report", *arguments, "--harness-set", str(tmp_path / "vlm"), "--out", str(tmp_path / "r")
    ])  # fmt: skip
    assert result.exit_code == 2, result.output
    printed = " ".join(result.output.split())
    assert "all 24 answers matched items of this export but none names an option" in printed
    assert "'Hard to tell from the picture.'" in printed
    assert "llava_contrastkit_decisions" in printed
    assert not (tmp_path / "r" / "benchmark.json").exists()
    # refusals are a reading of their own (the refusal rate): not refused
    arguments = _predictions(key, tmp_path, lambda item: "I'm sorry, I cannot say.")
    result = runner.invoke(app, [
        "report", *arguments, "--harness-set", str(tmp_path / "vlm"), "--out", str(tmp_path / "r")
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    benchmark = json.loads((tmp_path / "r" / "benchmark.json").read_text())
    occupation = benchmark["summary"]["generate"]["occupation"]
    assert occupation["refusal_rate_feminine"] == 1.0 and occupation["flip_rate"] is None
    report = (tmp_path / "r" / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| occupation |"))
    assert row.split(" | ")[4:7] == ["n/a", "n/a", "n/a"]  # flip rate, stereotyped, gap
    assert "n/a: nothing to compute the figure from (flip rate and gap: no paired answer" in report


def test_the_decisions_report_says_what_was_left_out_and_how_many_pairs_count(
    tmp_path: Path, questions: Path
) -> None:
    data = contrast_export(tmp_path / "set", sources=3)
    key = _export(data, tmp_path / "vlm", questions)
    assert len(key.items) == 3 * 2 * 3 * 2  # sources x versions x questions x orders

    def answer(item: KeyItem) -> str | None:
        a = item.annotations
        if item.split == "reversed" or (a["source_id"] == "2" and a["gender"] == "feminine"):
            return None  # the reversed split not given; one version of a source missing
        return "A"

    arguments = _predictions(key, tmp_path, answer)
    result = runner.invoke(app, [
        "report", *arguments, "--harness-set", str(tmp_path / "vlm"), "--out", str(tmp_path / "r")
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    # the main split shows each item's options in a seeded order, so a version's answer
    # pairs only with the other version's answer to the same question in the same order
    versions: dict[tuple[str, str, str], int] = {}
    for item in key.items:
        if answer(item) is not None:
            a = item.annotations
            group = (a["source_id"], a["question"], item.labels["A"])
            versions[group] = versions.get(group, 0) + 1
    paired = sum(n == 2 for n in versions.values())
    unpaired = sum(n == 1 for n in versions.values())
    assert paired + unpaired / 2 < 9  # some answers of the main split are unpaired
    benchmark = json.loads((tmp_path / "r" / "benchmark.json").read_text())
    assert benchmark["left_out"] == {
        "export_skipped": 0, "missing_answers": 18 + 3, "unpaired_answers": unpaired
    }  # fmt: skip
    counts = benchmark["paired_answers"]["generate"]
    assert counts["total"] == paired == counts["options_as_listed"] + counts["options_reversed"]
    report = (tmp_path / "r" / "report.md").read_text()
    assert (
        "left out: 0 rows the harness export left out, 21 items with no answer in the "
        f"prediction files, {unpaired} answers whose other version has no answer"
    ) in report
    assert f"the figures come from {paired} paired answers (both versions answered)" in report
    assert "with one version only" not in report  # the contrast set's counts: not these
    # every answer is "A": in a split of seeded orders, always the first option
    assert "warning: suitability (generated answers): all " in " ".join(result.output.split())
    if counts["options_as_listed"] != counts["options_reversed"]:
        assert "the two orders are not equally represented" in report


def test_a_contrast_set_s_left_out_rows_are_counted_in_the_report(
    tmp_path: Path, planted: None, questions: Path
) -> None:
    data = contrast_export(tmp_path / "full", sources=3)
    rows = datasets.load_from_disk(str(data / "saved" / "contrast"))["test"]
    # source 2 without its feminine version; source 0's masculine version twice
    rows = rows.select([0, 1, 2, 3, 4, 0])
    folder = tmp_path / "set"
    datasets.DatasetDict({"test": rows}).save_to_disk(str(folder / "saved" / "contrast"))
    [entry] = evaluate(EvaluateConfig(
        data=(str(folder),), models=("nonfinite:m",), out=tmp_path / "o", task="decisions",
        task_settings=DecisionSettings(scoring="logprob", questions=questions),
    )).evaluations  # fmt: skip
    benchmark = json.loads(entry.files["benchmark"].read_text())
    assert benchmark["left_out"] == {"unpaired": 1, "extra_versions": 1}
    assert benchmark["sources"] == 2
    report = entry.files["report"].read_text()
    assert (
        "2 sources with both versions; left out: 1 source with one version only, 1 further "
        "row of a version already taken"
    ) in report
    assert (
        "the figures come from 12 paired answers (both versions answered): 6 with the options "
        "as listed, 6 reversed"
    ) in report


# -- item 11: a set built with random-weight models ----------------------------------------
def _random_build(tmp_path: Path) -> Path:
    """A contrast export whose build metadata records a random-weight editor (what
    `export contrast` writes for a build with the tiny editor)."""
    data = contrast_export(tmp_path / "set", sources=2)
    editor = tmp_path / "editor"
    mark_random_weights(editor, "tiny InstructPix2Pix pipeline (contrastkit.tiny.editor)")
    flags = build_weights({"edit": {"editor": str(editor)}, "filter": {}})
    (data / "build_metadata.json").write_text(json.dumps({"kind": "gensynth", **flags}))
    return data


@pytest.mark.parametrize("decisions", [True, False])
def test_a_harness_export_of_a_random_weight_build_keeps_the_flag_to_the_report(
    tmp_path: Path, questions: Path, decisions: bool
) -> None:
    data = _random_build(tmp_path)
    out = tmp_path / "vlm"
    exported = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", str(out),
        *(("--decisions", "--questions", str(questions)) if decisions else ()),
    ])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    assert "random weights: This set was built with models that have random weights" in (
        " ".join(exported.output.split())
    )
    key = read_key(out)
    assert key.random_weight_models == ("editor",)
    written = json.loads((out / "contrastkit_harness.json").read_text())
    assert written["random_weights"] is True and written["random_weight_models"] == ["editor"]
    assert "**Random weights.** This set was built with models that have random weights" in (
        (out / "README.md").read_text()
    )
    arguments = _predictions(key, tmp_path, lambda item: "A")
    result = runner.invoke(app, [
        "report", *arguments, "--harness-set", str(out), "--out", str(tmp_path / "r"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "random weights: This set was built" in " ".join(result.output.split())
    name = "benchmark.json" if decisions else "harness_results.json"
    results = json.loads((tmp_path / "r" / name).read_text())
    assert results["random_weights"] is True
    assert results["weights_note"].startswith("This set was built with models that have random")
    report = (tmp_path / "r" / "report.md").read_text()
    assert "This set was built with models that have random weights" in report
    # a set built with trained models: no flag anywhere
    (data / "build_metadata.json").write_text(json.dumps({"kind": "gensynth", **build_weights(
        {"edit": {"editor": "timbrooks/instruct-pix2pix"}, "filter": {}})}))  # fmt: skip
    trained = _export(data, tmp_path / "trained", questions if decisions else None)
    assert trained.random_weight_models == () and trained.weights_note is None
    assert "Random weights" not in (tmp_path / "trained" / "README.md").read_text()
