"""Figures that say only what is so (issue 43 item 12): a legend never says "no error
bars" beside a drawn error bar or after the bootstrap ran."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.contrast import ContrastCounts, QueryOutcomes, contrast_summary
from contrastkit.evaluators.report.figures import UNDEFINED_INTERVALS
from contrastkit.evaluators.report.plots import (
    NO_INTERVALS,
    contrast_comparison_figure,
    contrast_figure,
)
from eval_data import write_small_dataset


def _legend(figure: Figure) -> str:
    return " ".join(
        text.get_text().replace("\n", " ")
        for legend in figure.legends
        for text in legend.get_texts()
    )


def _bars(figure: Figure) -> int:
    return sum(isinstance(c, ErrorbarContainer) for a in figure.axes for c in a.containers)


def _summary(low: float, high: float, share: float = 0.0) -> dict[str, Any]:
    """A contrast summary whose every interval is [low, high] (the bootstrap ran)."""
    interval = {"low": low, "high": high, "level": 0.95, "resamples": 1000}
    summary = contrast_summary(
        ContrastCounts(8, 4, 4), [2], QueryOutcomes({}, [0.1] * 4, [share] * 4)
    )
    summary["retrieval"] = {
        name: {"mean": 0.0, "sigma": 0.0, "n": 4, "mean_ci": dict(interval)}
        for name in ("bias@2", "bias_gensynth@2", "maxskew@2")
    }
    summary["pairs"]["masculine_preferred_ci"] = dict(interval)
    return summary


def test_an_interval_starting_at_zero_is_an_interval_in_the_legend() -> None:
    """The tutorial's tab3.png drew the pair preference's [0.00, 0.67] as an error bar
    and said "no error bars ... evaluate with --bootstrap N" beside it: a bound of 0 was
    taken for no interval."""
    benchmark = {"model": "m", "summary": _summary(0.0, 0.67, share=0.25)}
    for figure in (contrast_figure(benchmark), contrast_comparison_figure([benchmark])):
        assert _bars(figure) > 0
        legend = _legend(figure)
        assert "error bars: 95% bootstrap CI (1000 resamples)" in legend
        assert NO_INTERVALS not in legend and "--bootstrap" not in legend


def test_a_bootstrap_without_a_defined_interval_is_not_told_to_bootstrap() -> None:
    """The default 1000 resamples ran, but every figure rests on one item: no error bar,
    and the legend says why instead of "evaluate with --bootstrap N"."""
    benchmark = {"model": "m", "summary": _summary(math.nan, math.nan)}
    for figure in (contrast_figure(benchmark), contrast_comparison_figure([benchmark])):
        assert _bars(figure) == 0
        legend = _legend(figure)
        assert UNDEFINED_INTERVALS in legend and "--bootstrap" not in legend


def test_a_k_covering_every_occupation_is_na_in_report_json_and_labour_plot(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    """The console said "bias@10 n/a: K covers all 8 candidates" while report.md printed
    0.00 for it (Tab. 3, Tab. 5, per occupation) and
    labour_statistics.png plotted every occupation at 0: it is n/a with its reason
    everywhere."""
    from contrastkit.evaluators.report.labour_plots import labour_panels, labour_plot

    vg = write_small_dataset(tmp_path / "visogender")  # 8 two-person images per occupation
    out = tmp_path / "results"
    run = CliRunner().invoke(
        app, ["evaluate", "--data", str(vg["OP"]), "--data", str(vg["OO"]), "--model",
              tiny_clip_spec, "--out", str(out), "--bootstrap", "0", "--subsample-runs", "2",
              "--baseline-runs", "5", "--device", "cpu", "--workers", "0"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "bias@10 (two people) n/a: K covers all 8 candidates" in run.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    [results] = json.loads((folder / "benchmark.json").read_text()).values()
    labour = results["labour_statistics"]["comparisons"]["retrieval_bias@10"]
    assert labour["n"] == 0 and labour["points"] == []
    assert labour["left_out"] == {"k_covers_all_candidates": ["doctor", "teacher"]}
    assert labour["caveat"].startswith("n/a: K covers all 8 candidates")

    report = (folder / "report.md").read_text()
    marking = "n/a: K covers all 8 candidates"
    tab3 = next(line for line in report.splitlines() if line.startswith("| two people |"))
    assert tab3.split(" | ")[2] == marking  # bias@10
    for occupation in ("teacher", "doctor"):
        row = next(line for line in report.splitlines() if line.startswith(f"| {occupation} |"))
        assert row.split(" | ")[4] == marking, row
    flipped = [line for line in report.splitlines() if line.startswith("| participant (e.g.")]
    assert flipped and all(line.split(" | ")[3] == marking for line in flipped)
    assert "retrieval_bias@10: n/a: K covers all 8 candidates" in report

    panels = labour_panels(results)
    assert "retrieval_bias@10" in panels
    figure = labour_plot(results["labour_statistics"]["comparisons"], panels, "m", results)
    axis = figure.axes[panels.index("retrieval_bias@10")]
    assert all(len(c.get_offsets()) == 0 for c in axis.collections)  # no point at 0
    assert any(marking in t.get_text().replace("\n", " ") for t in axis.texts)
    assert axis.get_title().startswith("n/a")


def _contrast_result(folder: Path, name: str, ks: list[int]) -> Path:
    summary = _summary(0.1, 0.4, share=0.5)
    summary["ks"] = ks
    summary["retrieval"] = {
        f"{metric}@{k}": {"mean": 0.2, "sigma": 0.1, "n": 4}
        for k in ks
        for metric in ("bias", "bias_gensynth", "maxskew")
    }
    data = {"task": "contrast", "model": f"open_clip:{name}", "data": f"sets/{name}",
            "dataset": {"kind": "gensynth"}, "random_weights": False,
            "summary": summary}  # fmt: skip
    path = folder / name / "benchmark.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data).replace("NaN", "null"))
    return path


def test_report_warns_when_results_share_no_k(tmp_path: Path, tiny_clip_spec: str) -> None:
    """`contrastkit report` put results of K = 2, 4 beside results of K = 5, 10 with "–"
    in each other's columns and no word about it."""
    a = _contrast_result(tmp_path, "a", [2, 4])
    b = _contrast_result(tmp_path, "b", [5, 10])
    out = tmp_path / "tab3.md"
    result = CliRunner().invoke(app, ["report", str(a), str(b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "They share no K" in text and "K = 2, 4" in text and "K = 5, 10" in text
    assert "They share no K" in out.read_text()
    loaded = [json.loads(path.read_text()) for path in (a, b)]
    assert "share no K" in contrast_comparison_figure(loaded).get_suptitle()
    c = _contrast_result(tmp_path, "c", [4, 10])
    partly = CliRunner().invoke(app, ["report", str(a), str(c)])
    assert "Only K = 4 is in every result" in " ".join(partly.output.split())
    same = CliRunner().invoke(app, ["report", str(a), str(a)])
    assert "Different K" not in same.output

    # VisoGender results of two evaluations at other K
    vg = write_small_dataset(tmp_path / "visogender")
    folders = []
    for k in ("2", "3"):
        run = CliRunner().invoke(
            app, ["evaluate", "visogender", "--data", str(vg["OP"]), "--model", tiny_clip_spec,
                  "--out", str(tmp_path / f"vg-{k}"), "--only", "retrieval", "--k", k,
                  "--bootstrap", "0", "--baseline-runs", "2", "--device", "cpu", "--workers", "0"],
        )  # fmt: skip
        assert run.exit_code == 0, run.output
        folders += [p for p in (tmp_path / f"vg-{k}").iterdir() if p.is_dir()]
    side = CliRunner().invoke(app, ["report", *map(str, folders)])
    assert side.exit_code == 0, side.output
    text = " ".join(side.output.split())
    assert "They share no K" in text
    assert "bias@2" in text and "bias@3" in text  # both results' columns, not the first's


def test_an_interval_on_one_image_is_na_with_its_reason(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    """A bootstrap over one image gives it back every time: report.md printed
    `1.00 [1.00, 1.00]` (or 0.00 [0.00, 0.00]) as if certain. It is n/a with the reason,
    in report.md, benchmark.json and on the console."""
    vg = write_small_dataset(tmp_path / "visogender")
    lines = vg["OO"].read_text().splitlines(keepends=True)
    masculine = next(line for line in lines if "\tmasculine\t" in line)
    feminine = next(line for line in lines if "\tfeminine\t" in line)
    vg["OO"].write_text(lines[0] + masculine + feminine)  # one single-person image of each
    out = tmp_path / "results"
    run = CliRunner().invoke(
        app, ["evaluate", "visogender", "--data", str(vg["OP"]), "--data", str(vg["OO"]),
              "--model", tiny_clip_spec, "--out", str(out), "--only", "resolution",
              "--bootstrap", "30", "--subsample-runs", "2", "--device", "cpu",
              "--workers", "0"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    [results] = json.loads((folder / "benchmark.json").read_text()).values()
    single = results["resolution_bias"]["single_person_images"]
    assert (single["n"], single["n_masculine"], single["n_feminine"]) == (2, 1, 1)
    for figure in ("RA_masculine", "RA_feminine", "RA_avg", "gender_gap"):
        assert single[f"{figure}_ci"]["low"] is None, figure
        assert single[f"{figure}_ci"]["reason"].startswith("1 item"), figure
    assert single["pooled_accuracy_ci"]["low"] is not None  # two images
    two = results["resolution_bias"]["two_person_images"]
    assert two["n"] > 2 and two["pooled_accuracy_ci"]["low"] is not None
    report = (folder / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| Single person |"))
    cells = row.split(" | ")[1:5]  # RA_avg, gap, RA_masculine, RA_feminine
    assert all("[n/a: 1 item" in cell for cell in cells), row
    # a cell with one image: the same
    per_cell = results["resolution_bias"]["per_cell"]
    one = [cell for cell, entry in per_cell.items() if entry["n"] == 1]
    assert one and all(per_cell[cell]["accuracy_ci"]["low"] is None for cell in one)
    assert "interval n/a: 1 item" in " ".join(run.output.split())


def test_a_zero_shot_concept_in_every_image_is_noted(tmp_path: Path, tiny_clip_spec: str) -> None:
    """Hair in every image of both groups: AP is 100 for men and women whatever the
    model scores (no image without it to rank). disparity.json and report.md say so."""
    from zero_shot_data import write_vg_entries

    entries = [
        (f"{1000 + i}", ["man.n.01", "hair.n.01", *(["necktie.n.01"] if i % 2 else [])])
        for i in range(8)
    ] + [
        (f"{2000 + i}", ["woman.n.01", "hair.n.01", *(["necktie.n.01"] if i % 3 else [])])
        for i in range(8)
    ]
    data = write_vg_entries(tmp_path / "vg", entries)
    out = tmp_path / "out"
    run = CliRunner().invoke(
        app, ["evaluate", "--task", "zero-shot-disparity", "--data", str(data), "--model",
              tiny_clip_spec, "--out", str(out), "--min-images", "2", "--bootstrap", "0",
              "--device", "cpu", "--workers", "0"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    [disparity] = out.rglob("disparity.json")
    concepts = {c["concept"]: c for c in json.loads(disparity.read_text())["concepts"]}
    hair = concepts["hair.n.01"]
    assert hair["ap_men"] == hair["ap_women"] == 100.0
    assert "AP is 100 by construction" in hair["note"] and "men and of women" in hair["note"]
    assert "note" not in concepts["necktie.n.01"]
    report = (disparity.parent / "report.md").read_text()
    assert "- hair.n.01: in every image of men and of women: AP is 100 by construction" in report
    # the plot of AP differences draws no bar of 0 for it, and says it left it out
    svg = (disparity.parent / "plots" / "ap_differences.svg").read_text()
    plot = " ".join(" ".join(re.findall(r">([^<>]+)</text>", svg)).split())
    assert "left out, in every image of a group" in plot, plot
    assert "top 1 of 1 concepts" in plot
