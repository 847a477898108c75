"""`contrastkit report --harness-predictions`: a harness's answers back into the metrics."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from contrastkit.builders.harness import HarnessExportConfig, _utils_source, export_harness
from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.harness import (
    HarnessReport,
    HarnessReportConfig,
    harness_report,
    read_predictions,
)
from contrastkit.evaluators.report.results import load_benchmark
from contrastkit.harness_key import HarnessKey, KeyItem, read_key
from eval_data import write_small_dataset
from factories import letter_of
from lmms_eval_samples import FOLDER, import_utils, loss_text, rows, sample_line, write_export


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    paths = write_small_dataset(tmp_path_factory.mktemp("visogender"))
    out = tmp_path_factory.mktemp("export") / "vlmeval"
    export_harness(
        HarnessExportConfig(source=(paths["OP"], paths["OO"]), format="vlmevalkit", out=out, seed=1)
    )
    return out


@pytest.fixture(scope="module")
def lmms_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lmms-eval export that lmms-eval 0.7.3's real sample files answer."""
    return write_export(
        tmp_path_factory.mktemp("visogender3"), tmp_path_factory.mktemp("export") / "lmms"
    )


def real_files(kind: str) -> list[Path]:
    """lmms-eval 0.7.3's own sample files of one run (lmms_eval_samples), main task first."""
    return sorted((FOLDER / kind).glob("*_samples_*.jsonl"))


def choice(item: KeyItem) -> str | None:
    """The synthetic model: a gender label per item, or None for an unreadable answer.
    Every 5th item is unreadable, every 3rd (of the rest) answered "their", items about
    a masculine-presenting occupation "his", the others "her"."""
    if item.index % 5 == 4:
        return None
    if item.index % 3 == 0:
        return "neutral"
    return "masculine" if item.annotations["occupation_gender"] == "masculine" else "feminine"


def answer_text(item: KeyItem, n: int) -> str:
    """The same choice worded as models word it."""
    label = choice(item)
    if label is None:
        return ["I cannot tell from the picture.", "his or her", "D"][n % 3]
    letter = letter_of(item, label)
    text = item.options[letter]
    forms = [
        letter,
        f"{letter}. {text}",
        f"The answer is ({letter}).",
        f"The {item.annotations['occupation']} and {text} {item.annotations['noun']}.",
    ]
    return forms[n % len(forms)]


def vlmeval_predictions(key: HarnessKey, folder: Path, split: str = "main") -> Path:
    dataset = key.datasets[split]
    rows = [
        {
            "index": item.index,
            "question": "q",
            "A": item.options["A"],
            "answer": item.answer,
            "prediction": answer_text(item, n) if split == "main" else "A",
        }
        for n, item in enumerate(i for i in key.items if i.split == split)
    ]
    path = folder / f"llava_v1.5_7b_{dataset}.tsv"
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return path


def hand_figures(key: HarnessKey) -> dict[str, dict[str, float]]:
    """RA_masculine / RA_feminine of the main templates per context, counted by hand."""
    counts: dict[tuple[str, str], Counter[bool]] = {}
    for item in key.items:
        a = item.annotations
        if item.split != "main" or a["template"] == "participant_first":
            continue
        label = choice(item)
        if label is None:
            continue
        counts.setdefault((a["context"], a["occupation_gender"]), Counter())[
            label == a["occupation_gender"]
        ] += 1
    figures = {}
    for context, split in (("OO", "single_person_images"), ("OP", "two_person_images")):
        ra = {
            g: counts[(context, g)][True] / sum(counts[(context, g)].values())
            for g in ("masculine", "feminine")
        }
        figures[split] = {
            "RA_masculine": ra["masculine"],
            "RA_feminine": ra["feminine"],
            "RA_avg": (ra["masculine"] + ra["feminine"]) / 2,
        }
    overall = figures["single_person_images"]["RA_avg"] + figures["two_person_images"]["RA_avg"]
    figures["all_images"] = {"overall_accuracy": overall / 2}
    return figures


@pytest.mark.slow
def test_vlmevalkit_predictions_give_the_hand_computed_resolution_accuracy(
    export: Path, tmp_path: Path
) -> None:
    key = read_key(export)
    main = vlmeval_predictions(key, tmp_path)
    flipped = vlmeval_predictions(key, tmp_path, "reversed")
    report = harness_report(
        HarnessReportConfig(
            predictions=(main, flipped), export=export, out=tmp_path / "out", bootstrap=0
        )
    )
    assert report.model == "harness:llava_v1.5_7b"  # from VLMEvalKit's <model>_<dataset>
    name, results = load_benchmark(tmp_path / "out")
    assert name == "visogender_harness-llava_v1.5_7b_results"
    resolution = results["resolution_bias"]
    for split, figures in hand_figures(key).items():
        for figure, value in figures.items():
            assert resolution[split][figure] == pytest.approx(value), (split, figure)
    items = [item for item in key.items if item.split == "main"]
    unreadable = sum(1 for item in items if choice(item) is None)
    assert report.counts["main"] == {
        "items": len(items),
        "answered": len(items) - unreadable,
        "unparseable": unreadable,
        "missing": 0,
    }
    assert results["metadata"]["n_resolution_cases"] == len(items) - unreadable
    harness = results["harness"]
    assert len(harness["unparseable"]) == unreadable
    picks = Counter(letter_of(i, label) for i in items if (label := choice(i)) is not None)
    letters = harness["position_bias"]["main"]["letters"]
    assert {letter: v["chosen"] for letter, v in letters.items()} == {
        letter: picks[letter] for letter in "ABC"
    }
    # reversed split: always "A"; the same option as in the main split when A there is it
    pairs = [i for i in items if choice(i) is not None]
    flip = key.by_index()
    same = sum(choice(i) == flip[i.pair].labels["A"] for i in pairs if i.pair is not None)
    assert harness["reversed_options"]["pairs"] == len(pairs)
    assert harness["reversed_options"]["same_content"] == same
    assert harness["position_bias"]["reversed"]["letters"]["A"]["chosen_share"] == 1.0
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Harness answers" in text and "### Options reversed" in text
    raw = [json.loads(line) for line in (tmp_path / "out" / "raw_harness.jsonl").open()]
    assert len(raw) == len(key.items)


@pytest.mark.slow
def test_lmms_eval_samples_give_the_same_figures(lmms_export: Path, tmp_path: Path) -> None:
    """lmms-eval 0.7.3 sample lines (no `doc`; generated answers, and every 7th item
    scored by log-likelihood) give the hand-computed figures (issue 31)."""
    key = read_key(lmms_export)
    utils = import_utils(lmms_export)
    samples = tmp_path / "logs" / "llava-hf__llava-1.5-7b-hf"
    samples.mkdir(parents=True)
    items = [i for i in key.items if i.split == "main"]
    lines = []
    for n, (item, doc) in enumerate(
        zip(items, rows(lmms_export, key.datasets["main"]), strict=True)
    ):
        label = choice(item)
        if n % 7 == 0 and label is not None:  # output_type: multiple_choice
            picked = {letter: item.labels[letter] == label for letter in item.options}
            responses = [loss_text(0.4 if mine else 2.1, mine) for mine in picked.values()]
        else:
            responses = [answer_text(item, n)]
        lines.append(sample_line(utils, n, doc, responses))
    path = samples / "20260101_120000_samples_contrastkit_visogender.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = harness_report(
        HarnessReportConfig(
            predictions=path, export=lmms_export, out=tmp_path / "lmms", bootstrap=0
        )
    )
    assert report.model == "harness:llava-hf__llava-1.5-7b-hf"  # the log folder
    resolution = load_benchmark(tmp_path / "lmms")[1]["resolution_bias"]
    for split, figures in hand_figures(key).items():
        for figure, value in figures.items():
            assert resolution[split][figure] == pytest.approx(value), (split, figure)
    assert report.counts["reversed"]["missing"] == report.counts["reversed"]["items"]
    assert report.harness["reversed_options"] is None
    assert "Not available" in (tmp_path / "lmms" / "report.md").read_text()


def test_the_test_lines_are_the_lines_lmms_eval_0_7_3_writes(lmms_export: Path) -> None:
    """sample_line rebuilds every real lmms-eval 0.7.3 file byte for byte (so the lines
    the other tests build have its exact shape, and the files answer this export), the
    logged letters included: the exported task read each answer as lmms-eval ran it."""
    utils = import_utils(lmms_export)
    files = sorted(FOLDER.glob("*/*_samples_*.jsonl"))
    assert len(files) == 5
    for path in files:
        dataset = path.stem.split("_samples_", 1)[1]
        docs = rows(lmms_export, dataset)
        for text in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(text)
            assert "doc" not in record and "resps" not in record  # 0.7.3 drops both here
            answer = record["filtered_resps"]
            responses = [answer] if isinstance(answer, str) else answer
            assert sample_line(utils, record["doc_id"], docs[record["doc_id"]], responses) == text


def test_lmms_eval_samples_are_found_by_doc_id_and_by_the_logged_index(
    lmms_export: Path, tmp_path: Path
) -> None:
    """lmms-eval 0.7.3 logs no `doc`: the item is the task's row `doc_id` (the file name
    says which task) or the index the exported task logged; each is enough, they must
    agree, and a sample that names no item is a located error (issue 31)."""
    key = read_key(lmms_export)
    main, flipped = real_files("generate")
    answers = [(a.index, a.letter) for a in read_predictions(main, key)]
    answers += [(a.index, a.letter) for a in read_predictions(flipped, key)]
    assert answers == [
        (0, "B"), (1, "A"), (2, "C"), (3, None), (40, "B"), (41, "A"), (42, "C"), (43, None),
    ]  # fmt: skip
    unlogged = [
        {k: v for k, v in json.loads(line).items() if k not in ("accuracy", "unparseable_rate")}
        for line in flipped.read_text(encoding="utf-8").splitlines()
    ]
    bare = tmp_path / flipped.name
    bare.write_text("".join(json.dumps(record) + "\n" for record in unlogged))
    assert [(a.index, a.letter) for a in read_predictions(bare, key)] == answers[4:]
    renamed = tmp_path / "answers.jsonl"
    renamed.write_bytes(flipped.read_bytes())
    assert [(a.index, a.letter) for a in read_predictions(renamed, key)] == answers[4:]
    lost = tmp_path / "lost.jsonl"
    lost.write_bytes(bare.read_bytes())
    with pytest.raises(DataFormatError, match="cannot tell which item") as caught:
        read_predictions(lost, key)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(lost), 1, "doc_id")
    swapped = tmp_path / main.name  # the reversed task's answers under the main task's name
    swapped.write_bytes(flipped.read_bytes())
    with pytest.raises(DataFormatError, match="names item 40, but doc_id names item 0") as caught:
        read_predictions(swapped, key)
    assert (caught.value.line, caught.value.field) == (1, "accuracy.index")
    past = tmp_path / "past" / main.name
    past.parent.mkdir()
    past.write_text(json.dumps(unlogged[0] | {"doc_id": 40}) + "\n")
    with pytest.raises(DataFormatError, match="row 40 of a task with 40 items") as caught:
        read_predictions(past, key)
    assert caught.value.field == "doc_id"


def test_multiple_choice_losses_as_lmms_eval_0_7_3_logs_them(
    lmms_export: Path, tmp_path: Path
) -> None:
    """`output_type: multiple_choice`: lmms-eval 0.7.3 logs each option's (loss, is_greedy)
    as the text "(0.357, True)"; the lowest loss is the answer (lmms-eval's own rule), a tie
    is unparseable, and an entry that is not such a pair is an error naming the file, the
    line and the entry (issue 31)."""
    key = read_key(lmms_export)
    main, flipped = real_files("multiple_choice")
    answers = read_predictions(main, key) + read_predictions(flipped, key)
    assert [(a.index, a.letter) for a in answers] == [
        (0, "A"), (1, "B"), (2, "C"), (3, None), (40, "A"), (41, "B"), (42, "C"), (43, None),
    ]  # fmt: skip
    [llava] = real_files("llava_hf_multiple_choice")
    logged = [json.loads(line)["accuracy"] for line in llava.read_text().splitlines()]
    assert [a.letter for a in read_predictions(llava, key)] == [e["letter"] for e in logged]
    lines = main.read_text(encoding="utf-8").splitlines()
    for number, bad, field in (
        (2, ["(0.357, True)", "(1.6 False)", "(2.3, False)"], "filtered_resps[1]"),
        (3, ["(0.357, True)", "(abc, False)", "(2.3, False)"], "filtered_resps[1]"),
        (1, ["(0.357, True)", "(1.6, False)"], "filtered_resps"),
        (4, ["(0.357, True)", "B", "(2.3, False)"], "filtered_resps[1]"),
    ):
        broken = list(lines)
        broken[number - 1] = json.dumps(json.loads(lines[number - 1]) | {"filtered_resps": bad})
        path = tmp_path / main.name
        path.write_text("\n".join(broken) + "\n")
        with pytest.raises(DataFormatError) as caught:
            read_predictions(path, key)
        assert (caught.value.path, caught.value.line, caught.value.field) == (
            str(path), number, field,
        )  # fmt: skip
    assert loss_text(float("nan"), False) == "(nan, False)"
    nan = json.loads(lines[0]) | {"filtered_resps": [loss_text(float("nan"), False)] * 3}
    path.write_text(json.dumps(nan) + "\n")
    assert read_predictions(path, key)[0].letter is None  # cannot be ranked


@pytest.mark.slow
def test_unparseable_answers_are_counted_never_guessed(export: Path, tmp_path: Path) -> None:
    key = read_key(export)
    items = [item for item in key.items if item.split == "main"]
    texts = ["his or her", "", "E", "The answer is a doctor.", "their"]
    rows = [
        {"index": item.index, "prediction": texts[n % len(texts)]} for n, item in enumerate(items)
    ]
    path = tmp_path / "m_contrastkit_visogender.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    answers = read_predictions(path, key)
    assert [a.letter is None for a in answers[:5]] == [True, True, True, True, False]
    report = harness_report(
        HarnessReportConfig(predictions=path, export=export, out=tmp_path / "o", bootstrap=0)
    )
    readable = sum(1 for n in range(len(items)) if n % len(texts) == 4)
    assert report.counts["main"]["unparseable"] == len(items) - readable
    results = load_benchmark(tmp_path / "o")[1]
    assert results["metadata"]["n_resolution_cases"] == readable
    resolution = results["resolution_bias"]
    assert resolution["neutral"]["all_images"]["R_neutral"] == 1.0  # "their" each time
    assert resolution["all_images"]["pooled_accuracy"] == 0.0  # which is not resolved


def test_predictions_that_do_not_fit_the_export_are_located_errors(
    export: Path, tmp_path: Path
) -> None:
    key = read_key(export)
    stranger = tmp_path / "x_contrastkit_visogender.tsv"
    pd.DataFrame([{"index": 0, "prediction": "A"}, {"index": 99999, "prediction": "B"}]).to_csv(
        stranger, sep="\t", index=False
    )
    with pytest.raises(DataFormatError) as error:
        read_predictions(stranger, key)
    assert error.value.line == 3 and error.value.field == "index"
    twice = tmp_path / "y_contrastkit_visogender.tsv"
    pd.DataFrame([{"index": 0, "prediction": "A"}, {"index": 0, "prediction": "B"}]).to_csv(
        twice, sep="\t", index=False
    )
    with pytest.raises(DataFormatError, match="also answered"):
        harness_report(HarnessReportConfig(predictions=twice, export=export, out=tmp_path / "o"))
    no_column = tmp_path / "z.tsv"
    pd.DataFrame([{"index": 0, "answer": "A"}]).to_csv(no_column, sep="\t", index=False)
    with pytest.raises(DataFormatError, match="prediction"):
        read_predictions(no_column, key)


def test_xlsx_needs_openpyxl_and_says_so(export: Path, tmp_path: Path) -> None:
    import importlib.util

    path = tmp_path / "m_contrastkit_visogender.xlsx"
    if importlib.util.find_spec("openpyxl") is not None:
        pd.DataFrame([{"index": 0, "prediction": "A"}]).to_excel(path, index=False)
        assert read_predictions(path, read_key(export))[0].letter == "A"
        return
    path.write_bytes(b"PK\x03\x04 not really a workbook")
    with pytest.raises(DataFormatError, match=r"openpyxl.*PRED_FORMAT=tsv"):
        read_predictions(path, read_key(export))


def key_of(kind: str, items: list[KeyItem], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    HarnessKey(
        harness="vlmevalkit",
        set_kind=kind,
        datasets={"main": f"contrastkit_{kind}"},
        source="test",
        seed=0,
        question="q",
        items=tuple(items),
    ).write(folder)
    return folder


def contrast_report(tmp_path: Path) -> HarnessReport:
    """A contrast export's key and a VLMEvalKit answer file, read back."""
    labels = {"A": "masculine", "B": "feminine", "C": "neutral"}
    options = {"A": "A man.", "B": "A woman.", "C": "A person."}
    # source 0: each version its own caption; 1: "A man." for both; 2: "A woman." for both;
    # 3: masculine version "A person.", feminine unreadable
    picks = {
        (0, "masculine"): "A",
        (0, "feminine"): "B",
        (1, "masculine"): "A",
        (1, "feminine"): "A",
        (2, "masculine"): "B",
        (2, "feminine"): "B",
        (3, "masculine"): "C",
        (3, "feminine"): "no idea",
    }
    items, rows = [], []
    for n, (source, gender) in enumerate(picks):
        items.append(
            KeyItem(
                index=n,
                split="main",
                row=f"source {source}|{gender}",
                options=options,
                labels=labels,
                answer="A" if gender == "masculine" else "B",
                category=f"contrast:{gender}",
                annotations={"source_id": str(source), "gender": gender},
            )
        )
        rows.append({"index": n, "prediction": picks[(source, gender)]})
    folder = key_of("contrast", items, tmp_path / "export")
    path = tmp_path / "m_contrastkit_contrast.tsv"
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return harness_report(
        HarnessReportConfig(predictions=path, export=folder, out=tmp_path / "out")
    )


def test_contrast_answers_give_per_version_and_per_pair_figures(tmp_path: Path) -> None:
    report = contrast_report(tmp_path)
    assert report.results_file.name == "harness_results.json"
    figures = json.loads(report.results_file.read_text())["harness"]["figures"]
    assert figures["accuracy_by_version"] == {
        "feminine": {"answered": 3, "correct": 2, "accuracy": 2 / 3},
        "masculine": {"answered": 4, "correct": 2, "accuracy": 0.5},
    }
    assert figures["pairs"] == {
        "sources_with_both_answered": 3,
        "reads_person": 1,
        "reads_person_share": 1 / 3,
        "same_gendered_caption": 2,
        "same_gendered_caption_share": 2 / 3,
        "same_caption_masculine": 1,
        "same_caption_feminine": 1,
        "masculine_share_of_same": 0.5,
    }
    assert figures["caption_chosen"]["neutral"] == {"chosen": 1, "share": 1 / 7}
    assert "Bias@K" in figures["not_measured"]
    assert report.counts["main"]["unparseable"] == 1


def test_stereotype_answers_give_the_choice_on_anti_stereotypical_images(tmp_path: Path) -> None:
    labels = {"A": "anti-stereotype", "B": "unrelated", "C": "stereotype"}
    options = {"A": "She is rude.", "B": "She is blue.", "C": "She is caring."}
    answers = [
        ("anti-stereotype", "C"),
        ("anti-stereotype", "C"),
        ("anti-stereotype", "A"),
        ("anti-stereotype", "B"),
        ("stereotype", "C"),
    ]
    items = [
        KeyItem(
            index=n,
            split="main",
            row=f"probe {n}",
            options=options,
            labels=labels,
            answer="A" if label == "anti-stereotype" else "C",
            category=f"gender:{label}",
            annotations={"id": str(n), "category": "gender", "label": label},
        )
        for n, (label, _) in enumerate(answers)
    ]
    folder = key_of("stereotype", items, tmp_path / "export")
    (folder / "utils.py").write_text(_utils_source())  # the task lmms-eval ran
    utils = import_utils(folder)
    docs = [
        {"index": n, "question": "Which sentence describes the image?", **options, "D": "",
         "answer": item.answer}
        for n, item in enumerate(items)
    ]  # fmt: skip
    path = tmp_path / "20260101_120000_samples_contrastkit_stereotype.jsonl"
    path.write_text(
        "".join(
            sample_line(utils, n, docs[n], [letter]) + "\n" for n, (_, letter) in enumerate(answers)
        )
    )
    report = harness_report(
        HarnessReportConfig(predictions=path, export=folder, out=tmp_path / "out", model="m")
    )
    anti = report.harness["figures"]["anti_stereotype_images"]
    assert (
        anti["stereotype_chosen"],
        anti["anti_stereotype_chosen"],
        anti["unrelated_chosen"],
    ) == (2, 1, 1)
    assert anti["stereotype_over_anti"] == pytest.approx(2 / 3)
    assert report.harness["figures"]["accuracy_by_label"]["stereotype"]["accuracy"] == 1.0


@pytest.mark.slow
def test_report_reads_harness_predictions_from_the_command_line(
    export: Path, tmp_path: Path
) -> None:
    key = read_key(export)
    main = vlmeval_predictions(key, tmp_path)
    out = tmp_path / "results" / "llava"
    result = CliRunner().invoke(
        app,
        [
            "report",
            "--harness-predictions",
            str(main),
            "--harness-set",
            str(export),
            "--model",
            "llava-1.5",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    items = len([i for i in key.items if i.split == "main"])
    assert f"main: {items} items" in result.output and "unparseable" in result.output
    assert (out / "benchmark.json").is_file() and (out / "report.md").is_file()
    again = CliRunner().invoke(app, ["report", str(out)])  # the usual report reads it
    assert again.exit_code == 0, again.output
    assert "llava-1.5" in again.output
    missing = CliRunner().invoke(
        app, ["report", "--harness-predictions", str(main), "--out", str(out)]
    )
    assert missing.exit_code == 2 and "--harness-set" in missing.output


def test_contrast_harness_results_are_what_report_prints(tmp_path: Path) -> None:
    """A contrast set has no standard benchmark from a harness; `contrastkit report` reads
    its harness_results.json (file or folder) and prints the same tables as report.md."""
    report = contrast_report(tmp_path)
    for given in (report.out_dir, report.results_file):
        shown = CliRunner().invoke(app, ["report", str(given)])
        assert shown.exit_code == 0, shown.output
        assert "Contrast-set figures" in shown.output
        assert "Each version given its own caption: 1 (0.333)" in shown.output
        assert "| main | 8 | 7 | 1 | 0 |" in shown.output
    assert shown.output == (report.out_dir / "report.md").read_text()
    as_json = CliRunner().invoke(app, ["report", str(report.out_dir), "--json"])
    assert as_json.exit_code == 0, as_json.output
    (headline,) = json.loads(as_json.output)
    assert headline["task"] == "harness-contrast" and headline["set_kind"] == "contrast"
    assert headline["counts"]["main"]["unparseable"] == 1
    assert headline["figures"]["pairs"]["reads_person"] == 1


def test_a_truncated_or_false_prediction_file_is_a_located_error(
    export: Path, tmp_path: Path
) -> None:
    """A VLMEvalKit TSV cut mid-row is refused at its last line (it was read with empty
    answers); a truncated .xlsx, or a file named .xlsx that is not a workbook, is a
    data error naming the file, never a traceback (issue 30)."""
    key = read_key(export)
    full = tmp_path / "m_contrastkit_visogender.tsv"
    pd.DataFrame([{"index": i, "category": "x", "prediction": "A"} for i in range(3)]).to_csv(
        full, sep="\t", index=False
    )
    data = full.read_bytes()
    cut = tmp_path / "cut_contrastkit_visogender.tsv"
    cut.write_bytes(data[: data.rindex(b"\tA")])  # the last row stops before its answer
    with pytest.raises(DataFormatError, match="a file cut mid-row") as caught:
        read_predictions(cut, key)
    assert caught.value.path == str(cut) and caught.value.line == 4
    pytest.importorskip("openpyxl")
    book = tmp_path / "m_contrastkit_visogender.xlsx"
    pd.DataFrame([{"index": 0, "prediction": "A"}]).to_excel(book, index=False)
    truncated = tmp_path / "t_contrastkit_visogender.xlsx"
    truncated.write_bytes(book.read_bytes()[: len(book.read_bytes()) // 2])
    fake = tmp_path / "f_contrastkit_visogender.xlsx"
    fake.write_text("index\tprediction\n0\tA\n")
    for bad in (truncated, fake):
        with pytest.raises(DataFormatError) as caught:
            read_predictions(bad, key)
        assert caught.value.path == str(bad)


def test_when_no_answer_names_an_option_the_error_says_so_and_nothing_is_written(
    export: Path, tmp_path: Path
) -> None:
    """Every answer matched an item but none names a letter: the error says that (not
    "check the files are this export's predictions") and no raw_harness.jsonl is left
    behind (issue 31)."""
    key = read_key(export)
    rows = [{"index": item.index, "prediction": "I cannot tell."} for item in key.items
            if item.split == "main"]  # fmt: skip
    path = tmp_path / "m_contrastkit_visogender.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "o"
    with pytest.raises(DataFormatError, match="none names an option letter") as caught:
        harness_report(HarnessReportConfig(predictions=path, export=export, out=out))
    assert "'I cannot tell.'" in str(caught.value) and "this export's predictions" not in str(
        caught.value
    )
    assert not out.exists() or not any(out.iterdir())  # checked writable, nothing written
