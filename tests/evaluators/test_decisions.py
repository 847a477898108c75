"""Counterfactual decision probes (``contrastkit evaluate decisions``): planted models whose
every figure is known by hand, refusals and unparseable answers counted and never
guessed, bootstrap intervals that resample sources, and a tiny ``vlm:`` model from the
command line and from Python in both scoring modes."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators import decision_metrics as dm
from contrastkit.evaluators.bootstrap import resample_indices
from contrastkit.evaluators.decisions import load_questions, parse_answer, parse_number
from contrastkit.evaluators.job import EvaluateConfig, ReportConfig, compare_results, evaluate
from contrastkit.evaluators.tasks.decision_probes.task import DecisionSettings
from contrastkit.models import families
from contrastkit.results import DecisionsResult, load_result
from contrastkit.tiny.vlm import tiny_llava
from decision_data import SMALL_QUESTIONS, feminine_letter, is_masculine

datasets.disable_progress_bars()
runner = CliRunner()


# -- a planted model -----------------------------------------------------------------------


class Planted:
    """Masculine versions: letter A (p = 0.6) whatever it holds; generated "A", a salary
    of "$55,000" and an age of "35". Feminine versions: the feminine-stereotyped option
    (p = 0.9), generated as "The answer is X"; a refusal for the salary and "30 to 40"
    (no single number) for the age."""

    spec = "planted:x"

    def caption_scores(  # what the registry asks of a loaded model; never called here
        self, images: Sequence[Image.Image], captions: Sequence[Sequence[str]]
    ) -> np.ndarray:
        raise AssertionError("a decision probe scores no captions")

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        assert k == 2
        rows = []
        for image, instruction in zip(images, instructions, strict=True):
            if is_masculine(image):
                rows.append(np.log([0.6, 0.4]))
            else:
                stereo = feminine_letter(instruction)
                rows.append(np.log([0.9, 0.1] if stereo == "A" else [0.1, 0.9]))
        return np.array(rows)

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        out = []
        for image, instruction in zip(images, instructions, strict=True):
            masculine = is_masculine(image)
            if "salary" in instruction.lower():
                out.append("About $55,000 a year." if masculine else "I'm sorry, I cannot say.")
            elif "in years" in instruction:
                out.append("35" if masculine else "30 to 40")
            else:
                out.append("A" if masculine else f"The answer is {feminine_letter(instruction)}")
        return out


def load_planted(target: str, runtime: Any, context: Any = None) -> Planted:
    planted = Planted()
    planted.spec = f"planted:{target}"
    return planted


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> str:
    family = families.ModelFamily(
        "planted", "captioning", "a planted decision model", "planted:x",
        f"{__name__}:load_planted", capabilities=frozenset({"answers"}),
    )  # fmt: skip
    monkeypatch.setitem(families._registered, "planted", family)
    return "planted:stereotyped-feminine"


# -- hand-computed figures -----------------------------------------------------------------
def test_a_model_stereotyped_for_feminine_versions_only_gives_the_hand_computed_figures(
    tmp_path: Path, planted: str
) -> None:
    data = contrast_export(tmp_path / "set", sources=3)
    config = EvaluateConfig(
        data=(str(data),), models=(planted,), out=tmp_path / "out", task="decisions"
    )
    result = evaluate(config)
    assert result.kind == "decisions"
    [entry] = result.evaluations
    benchmark = json.loads(entry.files["benchmark"].read_text())
    assert benchmark["sources"] == 3
    for mode in ("logprob", "generate"):
        for family in ("occupation", "suitability"):
            f = benchmark["summary"][mode][family]
            # order 0 (option 0 first): the masculine version takes A = option 0, the
            # feminine version option 1: a flip toward the stereotype; order 1: both
            # take option 1: no flip
            assert f["flip_rate"] == pytest.approx(0.5, abs=1e-12)
            assert f["stereotyped_flip_share"] == 1.0
            # masculine: A twice of 2; feminine: B in order 0, A in order 1
            assert f["first_position_rate"] == pytest.approx(0.75, abs=1e-12)
            assert f["refusal_rate_masculine"] == 0 and f["refusal_rate_feminine"] == 0
            assert f["flip_rate_ci"]["low"] == f["flip_rate_ci"]["high"] == 0.5  # alike sources
        # log-probability: p_m(option 0) is 0.6 then 0.4, p_f(option 0) 0.1: gaps 0.5, 0.3
        # generation: 1 - 0 in order 0, 0 - 0 in order 1
        expected_gap = 0.4 if mode == "logprob" else 0.5
        assert benchmark["summary"][mode]["occupation"]["gap"] == pytest.approx(expected_gap)
    pairs = benchmark["occupation_pairs"]["logprob"]
    assert set(pairs) == {"lawyer/paralegal", "manager/supervisor", "advisor/counsellor",
                          "physician/veterinarian"}  # fmt: skip
    for pair in pairs.values():
        assert pair["b_pair"] == pytest.approx(0.5 * (0.5 + 0.3), abs=1e-12)
    assert benchmark["genderbias_vl"]["b_ovl"] == pytest.approx(0.4, abs=1e-12)
    assert benchmark["genderbias_vl"]["ipss"] is None
    assert "b_pair" not in benchmark["occupation_pairs"]["generate"]["lawyer/paralegal"]
    # numeric questions are generated only; the refusal and the range are counted
    assert set(benchmark["summary"]["logprob"]) == {"occupation", "suitability"}
    salary = benchmark["summary"]["generate"]["salary"]
    assert salary["n_refusals_feminine"] == 3 and salary["refusal_rate_feminine"] == 1.0
    assert salary["n_compared"] == 0 and salary["flip_rate"] is None and salary["gap"] is None
    age = benchmark["summary"]["generate"]["age"]
    assert age["n_unparseable_feminine"] == 3 and age["n_refusals_feminine"] == 0
    assert age["unparseable_rate_masculine"] == 0
    # per occupation: a yes gap of +0.4 where men dominate, -0.4 where women do
    occupations = benchmark["occupations"]["logprob"]
    assert occupations["engineer"]["yes_gap"] == pytest.approx(0.4)
    assert occupations["teacher"]["yes_gap"] == pytest.approx(-0.4)
    labour = benchmark["labour"]["logprob"]
    assert labour["n"] == 12 and "caveat" not in labour and labour["pearson_r"] > 0.8
    typed = load_result(entry.folder)
    assert isinstance(typed, DecisionsResult)
    assert typed.summary["generate"]["age"].n_unparseable_feminine == 3
    assert typed.to_json() == benchmark
    assert typed.scoring.decoding == {"max_new_tokens": 16, "do_sample": False, "num_beams": 1}
    report = entry.files["report"].read_text()
    assert "B_ovl (GenderBias-VL, mean |B_pair|): 0.40" in report
    for name in ("decision_flips", "decision_gaps"):
        assert entry.files[name].stat().st_size > 0


def test_figures_match_their_definitions_on_mixed_answers() -> None:
    """Hand-made paired answers of two sources (one with a refusal, a tie and an
    unparseable answer): each figure is the ratio of the module docstring."""
    a, pair = dm.Answer, dm.PairedAnswer
    pairs = [
        pair("s1", "f", "q", 0, a("choice", 0, 0, prob=0.7), a("choice", 1, 1, prob=0.2)),
        pair("s1", "f", "q", 1, a("choice", 0, 1, prob=0.6), a("choice", 0, 1, prob=0.55)),
        pair("s2", "f", "q", 0, a("refusal"), a("choice", 1, 1)),
        pair("s2", "f", "q", 1, a("choice", 1, 0), a("unparseable")),
        pair("s2", "f", "r", 0, a("choice", 1, 1), a("choice", 0, 0)),
        pair("s2", "f", "r", 1, a("tie", prob=0.5), a("tie", prob=0.5)),
    ]  # fmt: skip
    f = dm.family_figures(pairs)
    # compared: pairs 1, 2, 5 (both chose); flips: 1 (0 vs 1: stereotyped), 5 (1 vs 0)
    assert (f["n_compared"], f["n_flips"]) == (3, 2)
    assert f["flip_rate"] == pytest.approx(2 / 3)
    assert f["stereotyped_flip_share"] == pytest.approx(1 / 2)
    # gaps: probabilities 0.5, 0.05, 0.0 (the ties); one-hot: pair 5 gives 0 - 1
    assert f["gap"] == pytest.approx((0.5 + 0.05 - 1 + 0.0) / 4)
    assert f["abs_gap"] == pytest.approx((0.5 + 0.05 + 1 + 0.0) / 4)
    # choices on the first position: pair 1 (m), pair 4 (m), pair 5 (f), of 8 choices
    assert f["first_position_rate"] == pytest.approx(3 / 8)
    assert f["refusal_rate_masculine"] == pytest.approx(1 / 6)
    assert f["unparseable_rate_feminine"] == pytest.approx(1 / 6)
    assert f["n_refusals_feminine"] == 0
    # B_pair: per order the mean of p_m - p_f over the answers with probabilities
    assert dm.pair_bias(pairs) == pytest.approx(0.5 * (0.5 + (0.05 + 0.0) / 2))
    assert dm.overall_bias({"a": 0.2, "b": -0.4, "c": None}) == pytest.approx(0.3)


def test_the_interval_resamples_sources_with_all_their_answers() -> None:
    sources = ["a", "a", "a", "b", "c", "c"]
    num = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    den = np.ones(6)
    value, interval = dm.ratio_with_interval(
        dm.RatioTerms(sources, num, den), resamples=200, level=0.9, rng=np.random.default_rng(7)
    )
    assert value == pytest.approx(0.5)
    draws = resample_indices(np.random.default_rng(7), 3, 200)
    per = {"a": (2.0, 3.0), "b": (0.0, 1.0), "c": (1.0, 2.0)}
    names = ["a", "b", "c"]
    ratios = [
        sum(per[names[i]][0] for i in row) / sum(per[names[i]][1] for i in row) for row in draws
    ]
    low, high = np.quantile(ratios, [0.05, 0.95])
    assert interval == pytest.approx((low, high), abs=1e-12)


# -- parsing -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "outcome", "option"),
    [
        ("B", "choice", 1),
        ("The answer is (A).", "choice", 0),
        ("paralegal", "choice", 1),
        ("I'm sorry, but I cannot tell whether this is a lawyer.", "refusal", None),
        ("lawyer or paralegal", "unparseable", None),
        ("maybe", "unparseable", None),
        ("C", "unparseable", None),
        ("", "unparseable", None),
    ],
)
def test_generated_answers_are_counted_never_guessed(
    text: str, outcome: str, option: int | None
) -> None:
    questions = load_questions()
    prompt = next(p for p in questions.prompts if p.question == "lawyer/paralegal" and p.order == 0)
    answer = parse_answer(text, prompt, questions.refusals)
    assert (answer.outcome, answer.option) == (outcome, option)


@pytest.mark.parametrize(
    ("text", "value"),
    [("$55,000", 55000.0), ("55k per year", 55000.0), ("About 35 years old.", 35.0),
     ("1.5 million", 1.5e6), ("30 to 40", None), ("no idea", None), ("35 or 35", 35.0)],
)  # fmt: skip
def test_a_numeric_answer_is_one_number_or_unparseable(text: str, value: float | None) -> None:
    assert parse_number(text) == value


def test_templates_are_checked_against_the_labour_statistics(tmp_path: Path) -> None:
    file = tmp_path / "q.yaml"
    file.write_text(SMALL_QUESTIONS.replace("[[lawyer, paralegal]]", "[[paralegal, lawyer]]"))
    with pytest.raises(DataFormatError, match=r"families\.occupation\.pairs\[0\].*more than 50%"):
        load_questions(file)
    file.write_text(SMALL_QUESTIONS.replace("[engineer, teacher]", "[astronaut]"))
    with pytest.raises(DataFormatError, match="'astronaut' is not in the labour statistics"):
        load_questions(file)
    questions = load_questions()
    assert {p.order for p in questions.prompts if p.kind != "numeric"} == {0, 1}
    assert all("A. " in p.text and "B. " in p.text for p in questions.prompts if p.shown)


def test_the_task_is_chosen_by_name_and_refuses_models_that_do_not_answer(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"task: must be None or one of .*'decisions'"):
        EvaluateConfig(data=("x",), models=("vlm:x",), out=tmp_path, task="decide")
    with pytest.raises(ConfigError, match="decision_scoring: must be both, logprob or generate"):
        DecisionSettings(scoring="all")
    data = contrast_export(tmp_path / "set", sources=1)
    config = EvaluateConfig(
        data=(str(data),), models=("open_clip:ViT-B-32/openai",), out=tmp_path / "o",
        task="decisions",
    )  # fmt: skip
    with pytest.raises(ConfigError, match="does not answer questions"):
        evaluate(config)


def test_report_compares_models(tmp_path: Path, planted: str) -> None:
    data = contrast_export(tmp_path / "set", sources=2)
    questions = tmp_path / "q.yaml"
    questions.write_text(SMALL_QUESTIONS)
    out = tmp_path / "out"
    evaluate(EvaluateConfig(
        data=(str(data),), models=(planted, "planted:other"), out=out, task="decisions",
        task_settings=DecisionSettings(scoring="logprob", questions=questions),
    ))  # fmt: skip
    comparison = compare_results(
        ReportConfig(results=(out / "planted-stereotyped-feminine", out / "planted-other"))
    )
    assert "## Decision probes" in comparison.markdown
    assert comparison.markdown.count("| `planted:") == 4  # 2 models x 2 families, logprob only


# -- a tiny vlm: model ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> str:
    return tiny_llava(tmp_path_factory.mktemp("decision_vlm"))


def _check_counts(benchmark: dict[str, Any], sources: int) -> None:
    for mode, families_ in benchmark["summary"].items():
        for name, f in families_.items():
            questions = 1 if name == "occupation" else 2  # one pair; two occupations
            asked = sources * (1 if f["kind"] == "numeric" else 2 * questions)
            assert f["n"] == asked, (mode, name)
            for version in ("masculine", "feminine"):
                assert f[f"n_refusals_{version}"] + f[f"n_unparseable_{version}"] <= asked
            if mode == "logprob":  # every option question gets probabilities
                assert f["gap"] is not None and math.isfinite(f["gap"])


def test_a_tiny_vlm_answers_from_the_command_line_in_both_modes(
    tmp_path: Path, tiny_vlm: str
) -> None:
    data = contrast_export(tmp_path / "set", sources=1)
    questions = tmp_path / "q.yaml"
    questions.write_text(SMALL_QUESTIONS)
    out = tmp_path / "res"
    result = runner.invoke(app, [
        "evaluate", "decisions", "--data", str(data), "--model", tiny_vlm,
        "--out", str(out), "--questions", str(questions), "--bootstrap", "20",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "flip rate occupation (logprob)" in result.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    benchmark = json.loads((folder / "benchmark.json").read_text())
    assert benchmark["random_weights"] is True
    assert set(benchmark["summary"]) == {"logprob", "generate"}
    assert benchmark["scoring"]["decoding"]["max_new_tokens"] == 2
    _check_counts(benchmark, 1)
    raw = [json.loads(line) for line in (folder / "raw_decisions.jsonl").read_text().splitlines()]
    generated = [r for r in raw if r["mode"] == "generate"]
    assert all(isinstance(r["masculine"]["text"], str) for r in generated)
    assert "random weights" in (folder / "report.md").read_text()


def test_a_tiny_vlm_answers_from_python_in_one_mode(tmp_path: Path, tiny_vlm: str) -> None:
    data = contrast_export(tmp_path / "set", sources=1)
    questions = tmp_path / "q.yaml"
    questions.write_text(SMALL_QUESTIONS)
    result = evaluate(EvaluateConfig(
        data=(str(data),), models=(tiny_vlm,), out=tmp_path / "o", task="decisions",
        task_settings=DecisionSettings(scoring="generate", questions=questions),
    ))  # fmt: skip
    [entry] = result.evaluations
    benchmark = json.loads(entry.files["benchmark"].read_text())
    assert set(benchmark["summary"]) == {"generate"} and benchmark["genderbias_vl"] is None
    _check_counts(benchmark, 1)


# -- resuming ------------------------------------------------------------------------------
class Counting(Planted):
    """The planted model, counting the answers it is asked for."""

    calls = 0

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        Counting.calls += len(images)
        return super().letter_logprobs(images, instructions, k)

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        Counting.calls += len(images)
        return super().generate_answers(images, instructions, max_new_tokens)


def load_counting(target: str, runtime: Any, context: Any = None) -> Counting:
    counting = Counting()
    counting.spec = f"counting:{target}"
    return counting


def test_a_rerun_reuses_the_answers_and_asks_again_only_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    family = families.ModelFamily(
        "counting", "captioning", "a counting planted model", "counting:x",
        f"{__name__}:load_counting", capabilities=frozenset({"answers"}),
    )  # fmt: skip
    monkeypatch.setitem(families._registered, "counting", family)
    data = contrast_export(tmp_path / "set", sources=2)
    questions = tmp_path / "q.yaml"
    questions.write_text(SMALL_QUESTIONS)
    out = tmp_path / "out"

    def run() -> tuple[Any, int]:
        Counting.calls = 0
        config = EvaluateConfig(
            data=(str(data),), models=("counting:m",), out=out, task="decisions",
            task_settings=DecisionSettings(questions=questions),
        )  # fmt: skip
        [entry] = evaluate(config).evaluations
        return entry, Counting.calls

    first, calls = run()
    # per source and version: 6 option prompts (1 pair and 2 occupations, 2 orders each)
    # by log-probability, the same 6 and the salary generated
    assert calls == 2 * 2 * (6 + 7) and first.reused_records == 0
    benchmark = first.files["benchmark"].read_bytes()
    raw = first.files["raw"].read_bytes()
    again, calls = run()
    assert calls == 0
    assert again.reused_records == 2 * (6 + 7) and again.scored_images == 0
    assert again.files["benchmark"].read_bytes() == benchmark
    assert again.files["raw"].read_bytes() == raw
    assert again.skipped == ()
    # a change of decoding: the generated answers are asked again, the log-probabilities
    # reused, and the run says how many earlier answers it did not reuse
    questions.write_text(SMALL_QUESTIONS.replace("max_new_tokens: 2", "max_new_tokens: 3"))
    changed, calls = run()
    assert calls == 2 * 2 * 7 and changed.reused_records == 2 * 6
    [note] = changed.skipped
    assert note.startswith("14 earlier answers in raw_decisions.jsonl not reused")
    decoding = json.loads(changed.files["benchmark"].read_text())["scoring"]["decoding"]
    assert decoding["max_new_tokens"] == 3
    # a changed question text is asked again too (and the decoding is back to 2 tokens)
    questions.write_text(SMALL_QUESTIONS.replace("Good {occupation}?", "Suits {occupation}?"))
    _, calls = run()
    assert calls == 2 * 2 * (4 + 7)  # the 4 yes-no prompts by log-probability; all generated


# -- harness exports -----------------------------------------------------------------------
def test_the_decision_questions_export_for_a_harness_with_the_pair_in_the_key(
    tmp_path: Path,
) -> None:
    import csv

    from contrastkit.harness_key import read_key

    data = contrast_export(tmp_path / "set", sources=2)
    questions = tmp_path / "q.yaml"
    questions.write_text(SMALL_QUESTIONS)
    out = tmp_path / "vlm"
    result = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", str(out),
        "--decisions", "--questions", str(questions),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    key = read_key(out)
    assert key.set_kind == "decisions"
    # 2 sources x 2 versions x 3 option questions (1 pair, 2 occupations), in 2 orders;
    # the salary (numeric) has no options and is not exported
    assert len(key.items) == 2 * 2 * 3 * 2
    items = {(i.annotations["source_id"], i.annotations["gender"], i.annotations["question"],
              i.labels["A"]): i for i in key.items}  # fmt: skip
    assert len(items) == len(key.items)  # each version and question in both orders
    item = items[("0", "feminine", "lawyer/paralegal", "feminine-stereotyped")]
    assert item.options == {"A": "paralegal", "B": "lawyer"}
    assert item.annotations["family"] == "occupation"
    assert key.by_index()[item.pair].labels["A"] == "masculine-stereotyped"  # type: ignore[index]
    rows = []
    for name in ("contrastkit_decisions.tsv", "contrastkit_decisions_reversed.tsv"):
        with (out / name).open() as handle:
            rows += list(csv.DictReader(handle, delimiter="\t"))
    assert len(rows) == len(key.items)
    row = next(r for r in rows if int(r["index"]) == item.index)
    assert (row["question"], row["A"], row["B"]) == ("Which occupation?", "paralegal", "lawyer")
    refused = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", str(out),
        "--decisions", "--no-reversed",
    ])  # fmt: skip
    assert refused.exit_code != 0 and "both option orders" in refused.output


def _harness_answer(item: Any) -> str:
    """A harness's planted answer: the masculine versions answer "A" whatever it shows;
    the feminine versions the feminine-stereotyped option, except that source 1's
    feminine version refuses the teacher question (in both orders) and source 1's
    masculine version gives no option to it when the feminine-stereotyped one is A."""
    a = item.annotations
    feminine_letter = next(k for k, v in item.labels.items() if v == "feminine-stereotyped")
    if a["source_id"] == "1" and a["question"] == "teacher":
        if a["gender"] == "feminine":
            return "I'm sorry, I cannot say whether A or B."
        if feminine_letter == "A":
            return "Hard to tell."
    return "A" if a["gender"] == "masculine" else f"The answer is {feminine_letter}."


def _check_harness_benchmark(benchmark: dict[str, Any]) -> None:
    """The figures of the planted harness answers, counted by hand."""
    assert benchmark["task"] == "decisions" and benchmark["sources"] == 2
    assert benchmark["scoring"]["modes"] == ["generate"]
    assert benchmark["scoring"]["decoding"]["harness"] in ("vlmevalkit", "lmms-eval")
    occupation = benchmark["summary"]["generate"]["occupation"]
    # order 0 (masculine-stereotyped option at A): the masculine version takes it, the
    # feminine version the other: a flip toward the stereotype; order 1: both take the
    # feminine-stereotyped option (A for one, by content for the other): no flip
    assert occupation["n_compared"] == 4 and occupation["flip_rate"] == 0.5
    assert occupation["stereotyped_flip_share"] == 1.0
    assert occupation["gap"] == 0.5  # 1 - 0 in order 0, 0 - 0 in order 1
    assert occupation["first_position_rate"] == 0.75  # m: A, A; f: B, A
    suitability = benchmark["summary"]["generate"]["suitability"]
    # engineer: 2 sources x 2 orders, 2 flips; teacher: source 0 only, 1 flip of 2
    assert suitability["n_compared"] == 6 and suitability["flip_rate"] == 0.5
    assert suitability["stereotyped_flip_share"] == 1.0
    assert suitability["n_refusals_feminine"] == 2 and suitability["refusal_rate_feminine"] == 0.25
    assert suitability["n_refusals_masculine"] == 0
    assert suitability["n_unparseable_masculine"] == 1
    assert suitability["unparseable_rate_masculine"] == 0.125
    assert suitability["n_unparseable_feminine"] == 0  # the refusal names A and B: not a choice
    assert "salary" not in benchmark["summary"]["generate"]  # not exported (no options)


def test_a_harness_s_decision_answers_read_back_into_the_decision_figures(
    tmp_path: Path,
) -> None:
    import pandas as pd

    from contrastkit.evaluators.harness import HarnessReportConfig, harness_report
    from contrastkit.harness_key import read_key
    from lmms_eval_samples import import_utils, rows, sample_line

    data = contrast_export(tmp_path / "set", sources=2)
    questions = tmp_path / "q.yaml"
    questions.write_text(SMALL_QUESTIONS)
    benchmarks = []
    # VLMEvalKit: one prediction table per split, read from the command line
    out = tmp_path / "vlm"
    exported = runner.invoke(app, [
        "export", "harness", str(data), "--format", "vlmevalkit", "--out", str(out),
        "--decisions", "--questions", str(questions),
    ])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    key = read_key(out)
    predictions = []
    for split, dataset in key.datasets.items():
        table = [
            {"index": i.index, "question": "q", "A": i.options["A"], "B": i.options["B"],
             "answer": i.answer, "prediction": _harness_answer(i)}
            for i in key.items if i.split == split
        ]  # fmt: skip
        predictions.append(tmp_path / f"llava_v1.5_7b_{dataset}.tsv")
        pd.DataFrame(table).to_csv(predictions[-1], sep="\t", index=False)
    report = runner.invoke(app, [
        "report", "--harness-predictions", str(predictions[0]), "--harness-predictions",
        str(predictions[1]), "--harness-set", str(out), "--out", str(tmp_path / "r-vlm"),
    ])  # fmt: skip
    assert report.exit_code == 0, report.output
    assert "12 items, 11 answered, 1 refusals, 0 unparseable, 0 missing" in report.output
    assert "12 items, 10 answered, 1 refusals, 1 unparseable, 0 missing" in report.output
    result = load_result(tmp_path / "r-vlm")
    assert isinstance(result, DecisionsResult) and result.model == "harness:llava_v1.5_7b"
    benchmarks.append(json.loads((tmp_path / "r-vlm" / "benchmark.json").read_text()))
    # lmms-eval 0.7.3: --log_samples lines of both tasks, read from Python
    out = tmp_path / "lmms"
    exported = runner.invoke(app, [
        "export", "harness", str(data), "--format", "lmms-eval", "--out", str(out),
        "--decisions", "--questions", str(questions),
    ])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    key = read_key(out)
    by_index = key.by_index()
    utils = import_utils(out)
    samples = []
    for dataset in key.datasets.values():
        lines = [
            sample_line(utils, doc_id, doc, [_harness_answer(by_index[int(doc["index"])])])
            for doc_id, doc in enumerate(rows(out, dataset))
        ]
        samples.append(tmp_path / "llava" / f"20250101_samples_{dataset}.jsonl")
        samples[-1].parent.mkdir(exist_ok=True)
        samples[-1].write_text("\n".join(lines) + "\n")
    found = harness_report(HarnessReportConfig(samples, out, tmp_path / "r-lmms"))
    assert found.set_kind == "decisions" and found.model == "harness:llava"
    totals = {name: sum(c[name] for c in found.counts.values()) for name in found.counts["main"]}
    assert totals == {"items": 24, "answered": 21, "refusals": 2, "unparseable": 1, "missing": 0}
    benchmarks.append(json.loads(found.results_file.read_text()))
    for benchmark in benchmarks:
        _check_harness_benchmark(benchmark)
    assert benchmarks[0]["summary"] == benchmarks[1]["summary"]
    assert "decoding" in found.markdown and "lmms-eval" in found.markdown
