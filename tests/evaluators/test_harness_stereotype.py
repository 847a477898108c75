"""`contrastkit report --harness-predictions` on a stereotype probe export: the standard
benchmark from the answers, and side by side with an evaluated model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.harness import (
    HarnessReport,
    HarnessReportConfig,
    harness_report,
)
from contrastkit.evaluators.stereotype import (
    read_stereotype_benchmark,
    stereotype_benchmark,
    write_stereotype_outputs,
)
from contrastkit.harness_key import HarnessKey, KeyItem
from factories import letter_of

#: Stereotype probes answered by the synthetic harness model: (category, image label,
#: caption role chosen in the main split, in the reversed split); None: unreadable.
PROBE_ANSWERS = [
    ("gender", "anti-stereotype", "stereotype", "stereotype"),
    ("gender", "anti-stereotype", "stereotype", "stereotype"),
    ("gender", "anti-stereotype", "anti-stereotype", "stereotype"),
    ("gender", "anti-stereotype", "unrelated", "stereotype"),
    ("gender", "stereotype", "stereotype", "stereotype"),
    ("gender", "stereotype", None, "stereotype"),
    ("race", "anti-stereotype", "anti-stereotype", "anti-stereotype"),
    ("race", "stereotype", "unrelated", "stereotype"),
]


def probe_export(folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A stereotype export's key (main and reversed splits) and the answer rows."""
    main = {"A": "anti-stereotype", "B": "unrelated", "C": "stereotype"}
    flipped = {"A": "stereotype", "B": "unrelated", "C": "anti-stereotype"}
    n = len(PROBE_ANSWERS)
    items, rows = [], []
    for i, (category, label, first, second) in enumerate(PROBE_ANSWERS):
        for split, labels, pick, index, pair in (
            ("main", main, first, i, i + n),
            ("reversed", flipped, second, i + n, i),
        ):
            options = {letter: f"caption {role}" for letter, role in labels.items()}
            answer = next(letter for letter, role in labels.items() if role == label)
            items.append(
                KeyItem(
                    index=index, split=split, row=f"probe {i}", options=options,
                    labels=labels, answer=answer, category=f"{category}:{label}",
                    pair=pair,
                    annotations={"id": str(i), "category": category, "label": label},
                )
            )  # fmt: skip
            said = "no idea" if pick is None else f"The answer is {letter_of(items[-1], pick)}."
            rows.append({"index": index, "split": split, "prediction": said})
    folder.mkdir(parents=True, exist_ok=True)
    HarnessKey(
        harness="vlmevalkit", set_kind="stereotype",
        datasets={"main": "contrastkit_stereotype", "reversed": "contrastkit_stereotype_rev"},
        source="test", seed=0, question="q", items=tuple(items),
    ).write(folder)  # fmt: skip
    return folder, rows


def stereotype_harness(tmp_path: Path) -> HarnessReport:
    folder, rows = probe_export(tmp_path / "export")
    files = []
    for split, dataset in (("main", "contrastkit_stereotype"),
                           ("reversed", "contrastkit_stereotype_rev")):  # fmt: skip
        path = tmp_path / f"llava_{dataset}.tsv"
        pd.DataFrame([r for r in rows if r["split"] == split]).to_csv(path, sep="\t", index=False)
        files.append(path)
    return harness_report(
        HarnessReportConfig(
            predictions=tuple(files), export=folder, out=tmp_path / "llava", bootstrap=200
        )
    )


def test_stereotype_answers_give_a_standard_benchmark_with_hand_computed_scores(
    tmp_path: Path,
) -> None:
    report = stereotype_harness(tmp_path)
    assert report.results_file == tmp_path / "llava" / "benchmark.json"
    benchmark = read_stereotype_benchmark(report.results_file)
    assert benchmark is not None and benchmark["model"] == "harness:llava"
    # 7 answered main-split images (the unreadable one left out): 5 chose S_s or S_a;
    # of the 5 anti-stereotypical ones, 2 chose S_s.
    overall = benchmark["summary"]["overall"]
    assert overall["n"] == 7 and overall["n_anti_stereotype"] == 5
    assert overall["vlrs"] == pytest.approx(100 * 5 / 7)
    assert overall["vlbs"] == pytest.approx(100 * 2 / 5)
    vlrs, unbiased = 100 * 5 / 7, 100 - 40
    assert overall["ivlas"] == pytest.approx(2 * vlrs * unbiased / (vlrs + unbiased))
    assert overall["vlrs_ci"]["low"] <= overall["vlrs"] <= overall["vlrs_ci"]["high"]
    gender, race = (benchmark["summary"]["categories"][c] for c in ("gender", "race"))
    assert (gender["n"], gender["vlrs"], gender["vlbs"]) == (5, 80.0, 50.0)
    assert (race["n"], race["vlrs"], race["vlbs"]) == (2, 50.0, 0.0)
    assert benchmark["reference_models"]["BIM"]["overall"]["vlbs"] == 100.0
    # lmss / vlss are not faked: marked unavailable with the reason
    shifting = benchmark["shifting"]
    assert shifting["available"] is False and "neutralised" in shifting["reason"]
    assert shifting["lmss"]["n"] == 0 and shifting["instances"] == []
    assert benchmark["metadata"]["n_unparseable"] == 1
    section = benchmark["harness"]
    assert section["counts"]["main"] == {"items": 8, "answered": 7, "unparseable": 1,
                                         "missing": 0}  # fmt: skip
    # the reversed split: every readable answer but one is S_s
    assert section["stereotype_by_split"]["reversed"]["vlbs"] == pytest.approx(100 * 4 / 5)
    assert section["stereotype_by_split"]["main"]["vlrs"] == pytest.approx(overall["vlrs"])
    assert section["reversed_options"]["pairs"] == 7
    assert section["position_bias"]["main"]["answered"] == 7
    markdown = (tmp_path / "llava" / "report.md").read_text()
    assert "Not available from a harness" in markdown and "histograms" not in markdown
    assert "| harness:llava | 71.4" in markdown and "### Position bias" in markdown


def test_report_puts_harness_and_evaluated_stereotype_results_side_by_side(
    tmp_path: Path,
) -> None:
    harness = stereotype_harness(tmp_path)
    # an evaluated model's benchmark on the same probes, from its raw records
    records = [
        {
            "id": str(i), "category": category, "label": label,
            "scores": [0.3, 0.2 + 0.2 * (i % 2), 0.1],
            "neutral_scores": [0.25, 0.2], "blank_scores": [0.2, 0.2],
            "score_kind": "cosine similarity", "blank_size": [32, 32],
        }
        for i, (category, label, _, _) in enumerate(PROBE_ANSWERS)
    ]  # fmt: skip
    evaluated = stereotype_benchmark(records, model="open_clip:ViT-B-32", data=["probes.tsv"])
    write_stereotype_outputs(evaluated, tmp_path / "clip")
    shown = CliRunner().invoke(app, ["report", str(harness.out_dir), str(tmp_path / "clip")])
    assert shown.exit_code == 0, shown.output
    assert "# Stereotype probing (VLStereoSet Tables 3 and 4)" in shown.output
    table3 = shown.output.split("## Overall")[1]
    assert "| harness:llava | 71.4" in table3 and "| open_clip:ViT-B-32 |" in table3
    as_json = CliRunner().invoke(
        app, ["report", str(harness.out_dir), str(tmp_path / "clip"), "--json"]
    )
    assert as_json.exit_code == 0, as_json.output
    first, second = json.loads(as_json.output)
    assert (first["task"], second["task"]) == ("stereotype", "stereotype")
    assert first["vlbs"] == pytest.approx(40.0) and first["lmss"]["n"] == 0
    assert second["lmss"]["n"] > 0
    # the same comparison in one command: the harness's answers read and compared at once
    predictions = sorted(tmp_path.glob("llava_contrastkit_stereotype*.tsv"))
    args = ["report", str(tmp_path / "clip"), "--harness-set", str(tmp_path / "export")]
    for path in predictions:
        args += ["--harness-predictions", str(path)]
    at_once = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "again"), "--json"])
    assert at_once.exit_code == 0, at_once.output
    decoder, text, documents = json.JSONDecoder(), at_once.output.strip(), []
    while text:  # the harness's own summary, then the comparison's headlines
        document, end = decoder.raw_decode(text)
        documents.append(document)
        text = text[end:].strip()
    assert documents[0]["set_kind"] == "stereotype"
    assert [entry["task"] for entry in documents[-1]] == ["stereotype", "stereotype"]
