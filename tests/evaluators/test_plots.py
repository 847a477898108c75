"""Plots as a paper shows them (PNG + SVG, titles with the model and n, labelled axes,
error bars from the bootstrap intervals, no overlapping text), and the statistics edge
cases the reports warn about (a z from a flat baseline, K at least a query's pool)."""

from __future__ import annotations

import json
import math
import re
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.text import Text
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.contrast import ContrastCounts, QueryOutcomes, contrast_summary
from contrastkit.evaluators.report.plots import (
    NO_INTERVALS,
    PALETTE,
    RANDOM_WEIGHTS_TITLE,
    contrast_figure,
    shorten_spec,
)
from contrastkit.evaluators.report.results import jsonable, retrieval_warnings
from contrastkit.evaluators.tasks.visogender.baselines import baseline_z, retrieval_random_baseline
from contrastkit.evaluators.tasks.visogender.benchmark import load_benchmark
from contrastkit.evaluators.tasks.visogender.plots import PLOTS, figures
from contrastkit.evaluators.tasks.visogender.report import markdown_report
from eval_data import write_small_dataset

runner = CliRunner()


def _texts(figure: Figure) -> list[tuple[str, Any]]:
    """Every text ``figure`` draws (tick labels only of ticks in view), with its extent in
    display pixels."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    ticks, shown = set(), []
    for axes in figure.axes:
        for axis in (axes.xaxis, axes.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick, where in zip(axis.get_major_ticks(), axis.get_majorticklocs(), strict=False):
                ticks.update({id(tick.label1), id(tick.label2)})
                if low - 1e-9 <= where <= high + 1e-9:
                    shown += [label for label in (tick.label1, tick.label2) if label.get_visible()]
    texts = [t for t in figure.findobj(Text) if id(t) not in ticks and t.get_visible()] + shown
    # the text itself (an annotation's extent would include its leader line)
    return [
        (text.get_text(), Text.get_window_extent(text, renderer))
        for text in texts
        if text.get_text().strip()
    ]


def _overlapping(figure: Figure) -> list[tuple[str, str]]:
    texts = _texts(figure)
    return [(a, b) for (a, box_a), (b, box_b) in combinations(texts, 2) if box_a.overlaps(box_b)]


def _labour_results(occupations: int, seed: int = 3) -> dict[str, Any]:
    """A results object with ``occupations`` per-occupation points, some of them in tight
    clusters, and a long model spec."""
    rng = np.random.default_rng(seed)
    names = [
        f"{word}{'_' + str(i) if i >= 20 else ''}"
        for i, word in enumerate(
            ["administrative_assistant", "engineer", "nurse", "doctor", "paralegal", "lawyer",
             "hairdresser", "carpenter", "electrician", "receptionist", "pharmacist", "chef",
             "librarian", "firefighter", "dietitian", "pilot", "dentist", "plumber", "mechanic",
             "accountant"] * 3
        )
    ][:occupations]  # fmt: skip
    shares = np.concatenate([rng.uniform(0, 100, occupations - 8), np.full(8, 48.0)])
    values = np.concatenate([rng.uniform(-1, 1, occupations - 8), np.linspace(0.1, 0.2, 8)])
    points = [
        {"occupation": n, "value": float(v), "male_share": float(s)}
        for n, v, s in zip(names, values, shares, strict=True)
    ]
    comparison = {"pearson_r": 0.31, "pearson_p": 0.04, "kendall_tau": 0.2, "kendall_p": 0.05,
                  "n": occupations, "points": points}  # fmt: skip
    return {
        "metadata": {
            "model_name": "open_clip:/home/someone/experiments/2026-11-23/checkpoints/"
            "run-0042-with-a-long-name/ViT-B-32-quickgelu/epoch_32.pt",
            "protocol": "two-way",
        },
        "random_weights": True,
        "labour_statistics": {
            "comparisons": {"resolution_gap": comparison, "retrieval_bias@10": comparison}
        },
    }


@pytest.mark.parametrize("occupations", [23, 45])
def test_the_labour_scatter_labels_many_occupations_without_overlapping_text(
    occupations: int, tmp_path: Path
) -> None:
    results = _labour_results(occupations)
    figure = figures(results)["labour_statistics"]
    assert _overlapping(figure) == []
    labels = {text for text, _ in _texts(figure)}
    names = {p["occupation"] for p in results["labour_statistics"]["comparisons"][
        "resolution_gap"]["points"]}  # fmt: skip
    labelled = names & labels
    assert len(labelled) >= 0.6 * occupations  # most points carry their name
    titles = " ".join(axis.get_title() for axis in figure.axes)
    assert "p = 0.04" in titles and f"n = {occupations} occupations" in titles
    if labelled != names:  # points left unlabelled are said to be
        assert "unlabelled (see report.md)" in titles
    suptitle = figure.get_suptitle()
    assert RANDOM_WEIGHTS_TITLE in suptitle
    assert all(len(line) <= 80 for line in suptitle.splitlines())  # a long spec is wrapped
    assert [a.get_xlabel() for a in figure.axes] == [
        "share of men in the occupation, US labour statistics (%)"
    ] * 2
    figure.savefig(tmp_path / "labour.png")  # (to look at)


def test_long_specs_are_wrapped_or_shortened_never_lost() -> None:
    assert shorten_spec("open_clip:ViT-B-32/openai") == "open_clip:ViT-B-32/openai"
    spec = "open_clip:" + "/".join(f"folder{i}" for i in range(12)) + "/model.pt"
    lines = shorten_spec(spec).splitlines()
    assert len(lines) == 2 and all(len(line) <= 64 for line in lines)
    assert "".join(lines) == spec
    very = "hf:" + "x" * 300 + "/the-actual-model"
    short = shorten_spec(very)
    assert "…" in short and short.replace("\n", "").endswith("/the-actual-model")
    assert all(len(line) <= 64 for line in short.splitlines())


def test_a_flat_random_baseline_has_no_z_but_a_reason() -> None:
    assert baseline_z(0.1, 0.0, 1e-16) == (pytest.approx(math.nan, nan_ok=True),
                                           "baseline spread ~0")  # fmt: skip
    assert math.isnan(baseline_z(0.1, 5e6, 1e-7)[0])  # noise relative to the scale
    assert baseline_z(0.3, 0.1, 0.1) == (pytest.approx(2.0), None)
    assert baseline_z(0.3, math.nan, 0.1)[1] == "baseline undefined"
    # ten images per occupation (VisoGender OO): Bias@10 is the same in every relabelling
    rng = np.random.default_rng(0)
    records = [
        {"context": "OO", "occupation": f"job{q}", "score": float(rng.random()),
         "label": "masculine" if i < 5 else "feminine"}
        for q in range(6) for i in range(10)
    ]  # fmt: skip
    baseline = jsonable(retrieval_random_baseline(records, (5, 10), runs=50))
    single = baseline["single_person_images"]
    assert single["bias@10"]["z"] is None and single["bias@10"]["z_reason"] == "baseline spread ~0"
    assert single["bias@5"]["z"] is not None and "z_reason" not in single["bias@5"]
    results = {
        "metadata": {"model_name": "m", "experiment_desc": "CLIP", "data": ["d"],
                     "contrastkit_version": "t"},
        "retrieval_bias": {"ks": [5, 10]},
        "labour_statistics": {"male_share_percent": {}, "comparisons": {}},
        "error_analysis": {"retrieval_random_baseline": baseline, "retrieval_baseline_runs": 50},
        "warnings": retrieval_warnings(records, (5, 10)),
    }  # fmt: skip
    report = markdown_report(results)
    assert re.search(r"\| bias@10 \| 0\.00 \| 0\.00 \| 0\.00 \| n/a \(baseline spread ~0\) \|",
                     report)  # fmt: skip
    assert "## Warnings" in report and "K = 10 is at least the number of candidates" in report


def test_a_k_at_or_above_a_query_pool_is_warned_about() -> None:
    records = [
        {"context": context, "occupation": job, "score": 0.5, "label": "masculine"}
        for context, job, n in (("OP", "doctor", 20), ("OP", "nurse", 8), ("OO", "chef", 10))
        for _ in range(n)
    ]
    warnings = retrieval_warnings(records, (5, 10))
    assert [(w["section"], w["k"], w["queries"]) for w in warnings] == [
        ("two_person_images", 10, ["nurse"]),
        ("single_person_images", 10, ["chef"]),
    ]
    assert "1 of 2 queries (8 candidates each)" in warnings[0]["message"]
    assert "every query (10 candidates each)" in warnings[1]["message"]
    assert retrieval_warnings(records, (5,)) == []
    summary = contrast_summary(
        ContrastCounts(12, 6, 6), [2, 12], QueryOutcomes({"bias@2": [0.5] * 6}, [0.1], [1.0])
    )
    assert [w["k"] for w in summary["warnings"]] == [12]
    assert summary["warnings"][0]["n_queries"] == 6


def _outside(figure: Figure) -> list[str]:
    """Every text ``figure`` draws (legend entries, footers, titles, tick labels in view)
    that does not lie wholly inside the figure: what a saved PNG would clip."""
    box = figure.bbox
    return [
        text
        for text, extent in _texts(figure)
        if extent.x0 < box.x0 - 0.5 or extent.y0 < box.y0 - 0.5
        or extent.x1 > box.x1 + 0.5 or extent.y1 > box.y1 + 0.5
    ]  # fmt: skip


def _legend_texts(figure: Figure) -> str:
    return " ".join(
        text.get_text().replace("\n", " ")
        for legend in [*figure.legends, *(a.get_legend() for a in figure.axes)]
        if legend is not None
        for text in legend.get_texts()
    )


def _error_bars(axis: Any) -> list[tuple[float, float]]:
    """The (low, high) of each vertical error bar drawn on ``axis``."""
    found = []
    for container in axis.containers:
        if isinstance(container, ErrorbarContainer):
            for segment in container.lines[2][0].get_segments():
                found.append((round(float(segment[0][1]), 6), round(float(segment[1][1]), 6)))
    return found


def _contrast_summary(ks: list[int], *, images: int = 16, ci: bool = True) -> dict[str, Any]:
    level = {"level": 0.95, "resamples": 200}
    retrieval = {}
    for k in ks:
        for name, mean in ((f"bias@{k}", 0.25), (f"bias_gensynth@{k}", 0.3),
                           (f"maxskew@{k}", 0.7)):  # fmt: skip
            retrieval[name] = {"mean": mean, "sigma": 0.6, "n": 8}
            if ci:
                retrieval[name]["mean_ci"] = {"low": mean - 0.1, "high": mean + 0.2, **level}
    summary = contrast_summary(
        ContrastCounts(images, 8, 8), ks, QueryOutcomes({}, [0.1] * 8, [1, 1, 1, 1, 1, 0, 0, 0.5])
    )
    summary["retrieval"] = retrieval
    if ci:
        summary["pairs"]["masculine_preferred_ci"] = {"low": 0.3, "high": 0.9, **level}
    return summary


def test_the_contrast_plot_draws_bootstrap_intervals_and_says_what_its_error_bars_are() -> None:
    """Error bars are the bootstrap intervals (of Bias@K, MaxSkew@K and the pair
    preference), never the spread across queries, and the legend says so; without
    intervals there are none and the legend says that (issue 31)."""
    summary = _contrast_summary([2, 4])
    figure = contrast_figure({"model": "open_clip:ViT-B-32/openai", "summary": summary})
    bias, skew, pairs = figure.axes
    assert bias.get_ylim() == (-1.1, 1.1) and skew.get_ylim()[0] == 0
    assert "MaxSkew" in skew.get_ylabel() and "Bias@K" in bias.get_ylabel()
    assert pairs.get_ylim()[0] == 0 and 0.5 in [line.get_ydata()[0] for line in pairs.lines]
    assert sorted(_error_bars(bias)) == [(0.15, 0.45)] * 2 + [(0.2, 0.5)] * 2
    assert _error_bars(skew) == [(0.6, 0.9)] * 2
    assert _error_bars(pairs) == [(0.3, 0.9)]  # the pair preference's interval
    legend = _legend_texts(figure)
    assert "error bars: 95% bootstrap CI (200 resamples) of the mean over queries" in legend
    assert "standard deviation" not in legend + figure.get_supxlabel()
    assert "n = 16 images from 8 photos, 8 queries" in figure.get_suptitle()
    # each bar carries its value, each tick its K
    values = {t.get_text() for t in bias.texts}
    assert {"+0.25", "+0.30"} <= values and {"0.70"} <= {t.get_text() for t in skew.texts}
    assert [t.get_text() for t in skew.get_xticklabels()] == ["MaxSkew@2", "MaxSkew@4"]
    assert _overlapping(figure) == [] and _outside(figure) == []
    colours = {tuple(p.get_facecolor()[:3]) for p in pairs.patches}
    from matplotlib.colors import to_rgb

    assert colours == {to_rgb(PALETTE["masculine"])}  # leans masculine, as in the legend
    assert "leans masculine (Bias@K > 0; share > 0.5)" in legend

    bare = contrast_figure({"model": "m", "summary": _contrast_summary([2, 4], ci=False)})
    assert not [c for a in bare.axes for c in a.containers if isinstance(c, ErrorbarContainer)]
    assert NO_INTERVALS in _legend_texts(bare)


def test_a_narrow_contrast_plot_keeps_its_legend_and_footer_inside_the_figure() -> None:
    """One K and a pair-preference-only summary give the narrowest figure: no text is
    clipped at its edges (issue 31: contrast_bias.png lost its footer)."""
    narrow = contrast_figure({"model": "m", "summary": _contrast_summary([5])})
    assert _outside(narrow) == [] and _overlapping(narrow) == []
    summary = _contrast_summary([5], ci=False)
    summary["retrieval"] = {}
    summary["retrieval_note"] = "not computed"
    pairs_only = contrast_figure({"model": "vlm:llava-hf/llava-1.5-7b-hf", "summary": summary})
    assert _outside(pairs_only) == []


def test_a_k_covering_the_whole_contrast_set_is_marked_not_drawn() -> None:
    """Bias@10 on 8 images is the set's own balance: the plot draws no bar for it and
    says so with the words of the reports (issue 31)."""
    summary = _contrast_summary([2, 10], images=8)
    assert [w["k"] for w in summary["warnings"]] == [10]
    figure = contrast_figure({"model": "m", "summary": summary})
    bias, skew, _ = figure.axes
    assert len(_error_bars(bias)) == 2 and len(_error_bars(skew)) == 1  # K = 2 only
    assert len(bias.patches) == 2 and len(skew.patches) == 1
    marked = [t.get_text() for a in (bias, skew) for t in a.texts]
    assert marked.count("n/a: K covers all 8 candidates") == 2
    assert "Bias@10" in [t.get_text() for t in bias.get_xticklabels()]
    assert _outside(figure) == []


def _benchmark(folder: Path, name: str, kind: str, images: int, ks: list[int]) -> Path:
    summary = _contrast_summary(ks, images=images)
    if kind == "originals":
        summary["pairs"] = {
            "applicable": False,
            "queries_with_pair": 0,
            "masculine_preferred": float("nan"),
            "note": "not applicable",
        }
    data = {"task": "contrast", "model": "open_clip:ViT-B-32/openai", "data": f"sets/{name}",
            "dataset": {"kind": kind}, "random_weights": False, "summary": summary}  # fmt: skip
    path = folder / name / "benchmark.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data).replace("NaN", "null"))
    return path


def test_report_on_contrast_sets_marks_a_k_covering_a_set_and_writes_its_plot(
    tmp_path: Path,
) -> None:
    """`contrastkit report` on an original, a balanced and a contrast set: a K at or
    above a set's images is shown as "n/a: K covers all 6 candidates" in the table and
    the plot, listed under Warnings, and the plot the README promises is written beside
    the markdown (issue 31)."""
    paths = [
        _benchmark(tmp_path, "gensynth", "gensynth", 16, [2, 10]),
        _benchmark(tmp_path, "original", "originals", 8, [2, 10]),
        _benchmark(tmp_path, "balanced", "originals", 6, [2, 10]),
    ]
    out = tmp_path / "tab3.md"
    result = runner.invoke(app, ["report", *(str(p.parent) for p in paths), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = {line.split(" | ")[0].strip("| "): line for line in out.read_text().splitlines()
            if line.startswith(("| gensynth", "| original", "| balanced"))}  # fmt: skip
    assert "n/a: K covers all 8 candidates" in rows["original"]
    assert "n/a: K covers all 6 candidates" in rows["balanced"]
    assert "n/a" not in rows["gensynth"] and "0.30 [0.20, 0.50]" in rows["gensynth"]
    text = out.read_text()
    assert "## Warnings" in text and "K = 10 is at least the number of candidates" in text
    assert "![original vs balanced vs contrast set](tab3.png)" in text
    assert (tmp_path / "tab3.png").read_bytes()[:4] == b"\x89PNG"
    svg = (tmp_path / "tab3.svg").read_text()
    assert "n/a: K covers all 6 candidates" in svg and "K = 2: +0.30" in svg
    assert "error bars: 95% bootstrap CI (200 resamples)" in svg
    from contrastkit.evaluators.contrast import read_contrast_benchmark
    from contrastkit.evaluators.report.plots import contrast_comparison_figure

    benchmarks = [read_contrast_benchmark(p) for p in paths]
    figure = contrast_comparison_figure([b for b in benchmarks if b is not None])
    assert _outside(figure) == []


@pytest.mark.slow
def test_an_evaluation_writes_every_plot_as_png_and_svg_with_titles_axes_and_error_bars(
    tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    data = tmp_path / "data"
    write_small_dataset(data)
    out = tmp_path / "out"
    args = ["--out", str(out), "--bootstrap", "50", "--subsample-runs", "5", "--json"]
    result = runner.invoke(
        app, ["evaluate", "--data", str(data), "--model", tiny_specs["open_clip"], *args]
    )
    assert result.exit_code == 0, result.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    _, results = load_benchmark(folder)
    model = results["metadata"]["model_name"]
    assert set(PLOTS) <= {p.stem for p in (folder / "plots").iterdir()}
    for stem in PLOTS:
        png, svg = folder / "plots" / f"{stem}.png", folder / "plots" / f"{stem}.svg"
        assert png.read_bytes()[:4] == b"\x89PNG"
        text = svg.read_text()
        assert shorten_spec(model).splitlines()[0] in text, stem  # model in the title
        assert re.search(r"n = \d+|\d+ queries", text), stem  # and n
    accuracy = (folder / "plots" / "resolution_accuracy.svg").read_text()
    assert "resolution accuracy (share resolved correctly)" in accuracy
    assert "chance, 3-way (his / her / their)" in accuracy  # the official protocol
    drawn = figures(results)
    for stem in ("resolution_accuracy", "accuracy_by_gender_pair", "bias_at_k_per_occupation"):
        bars = [c for a in drawn[stem].axes for c in a.containers
                if isinstance(c, ErrorbarContainer)]  # fmt: skip
        assert bars, f"{stem}: the bootstrap intervals are drawn"
    for stem, figure in drawn.items():  # one convention: the legend says what a bar is
        if stem != "labour_statistics":  # (a scatter: no bars)
            assert "error bars: 95% bootstrap CI (50 resamples)" in _legend_texts(figure), stem
    for stem, figure in drawn.items():
        assert _overlapping(figure) == [], stem
        assert _outside(figure) == [], stem
        assert figure.axes[0].get_ylabel() and all(a.get_xlabel() for a in figure.axes), stem
    # the small set has 4 single-person images per occupation: K = 5 and 10 are trivial
    assert [(w["section"], w["k"]) for w in results["warnings"]] == [
        ("two_person_images", 10),
        ("single_person_images", 5),
        ("single_person_images", 10),
    ]
    report = (folder / "report.md").read_text()
    assert "## Warnings" in report and "## Plots" in report
    assert "![resolution_accuracy](plots/resolution_accuracy.png)" in report
    assert "(plots/labour_statistics.svg)" in report
    [entry] = json.loads(result.stdout)
    assert entry["files"]["labour_statistics_svg"].endswith("labour_statistics.svg")


def test_the_comparison_figure_puts_models_side_by_side_with_their_own_chance_lines(
    tmp_path: Path,
) -> None:
    def result(model: str, protocol: str, *, retrieval: bool, random: bool = False) -> dict:
        ci = {"level": 0.95, "resamples": 100}
        overall = {"n": 690, "RA_masculine": 0.8, "RA_feminine": 0.6,
                   "RA_masculine_ci": {"low": 0.75, "high": 0.85, **ci},
                   "RA_feminine_ci": {"low": 0.55, "high": 0.65, **ci}}  # fmt: skip
        entry: dict[str, Any] = {
            "metadata": {"model_name": model, "protocol": protocol},
            "resolution_bias": {"all_images": overall},
            "random_weights": random,
        }
        if retrieval:
            bias = {"mean": 0.2, "mean_ci": {"low": 0.1, "high": 0.3, **ci}}
            entry["retrieval_bias"] = {"context": "OP", "ks": [5, 10], "bias@5": bias,
                                       "bias@10": bias}  # fmt: skip
        return entry

    results = [
        result("open_clip:ViT-B-32/openai", "visogender-official", retrieval=True),
        result("open_clip:/a/very/long/path/to/checkpoints/of/an/experiment/run-0042/epoch_32.pt",
               "two-way", retrieval=True, random=True),
        result("hf:Salesforce/blip-image-captioning-base", "two-way", retrieval=False),
    ]  # fmt: skip
    from contrastkit.evaluators.report.plots import comparison_figure, write_comparison_plots

    figure = comparison_figure(results)
    resolution, retrieval = figure.axes
    labels = [label.get_text() for label in resolution.get_yticklabels()]
    assert labels[0] == "open_clip:ViT-B-32/openai\n(n = 690 images)"
    assert "random weights" in labels[1] and "random weights" not in labels[2]
    chance = {
        round(float(segment[0][0]), 3): len(collection.get_segments())
        for collection in resolution.collections
        if collection.get_label().startswith("chance")
        for segment in collection.get_segments()[:1]
    }
    assert chance == {0.333: 1, 0.5: 2}  # each model at its own protocol's chance
    errors = [c for a in figure.axes for c in a.containers if isinstance(c, ErrorbarContainer)]
    assert len(errors) == 4  # RA_m, RA_f; Bias@5, Bias@10
    assert "no retrieval" in " ".join(t.get_text() for t in retrieval.texts)
    labels = [t.get_text() for t in retrieval.texts]  # each K's bar says which K it is
    assert labels.count("K = 5: +0.20") == 2 and labels.count("K = 10: +0.20") == 2
    assert "error bars: 95% bootstrap CI (100 resamples)" in _legend_texts(figure)
    assert "error bars" not in figure.get_suptitle()
    assert _overlapping(figure) == [] and _outside(figure) == []
    paths = write_comparison_plots(results, tmp_path)
    assert [p.name for p in paths] == ["comparison.png", "comparison.svg"]
    assert "open_clip:ViT-B-32/openai" in paths[1].read_text()


def test_the_labour_scatter_of_too_few_occupations_has_no_fit_and_no_p_value(
    tmp_path: Path,
) -> None:
    """With a caveat (fewer than MIN_LABOUR_OCCUPATIONS occupations) the panel shows the
    points only: no fitted line, no coefficient or p-value in its title (issue 31)."""
    results = _labour_results(9)
    for comparison in results["labour_statistics"]["comparisons"].values():
        comparison["points"] = comparison["points"][:3]
        comparison["n"] = 3
        comparison["caveat"] = "only 3 occupation(s) with labour statistics: too few"
    figure = figures(results)["labour_statistics"]
    titles = " ".join(axis.get_title() for axis in figure.axes)
    assert "too few for a correlation" in titles and "p =" not in titles
    for axis in figure.axes:
        assert not [line for line in axis.get_lines() if line.get_linestyle() == ":"]
    assert "least-squares" not in " ".join(text for text, _ in _texts(figure))


def test_the_console_headline_marks_a_k_covering_every_candidate() -> None:
    """`evaluate` prints no Bias@10 of a 6-image set as a reading: it says "n/a: K covers
    all 6 candidates" (the words of the report's warning) and shows the largest K that
    is a reading before it; a K covering some occupations' images only keeps its value
    with the note beside it (issue 31)."""
    from contrastkit.evaluators.report.headlines import headline_figures, headline_lines
    from contrastkit.evaluators.report.results import headline

    summary = _contrast_summary([2, 10], images=6)
    found = headline_figures("open_clip:ViT-B-32/openai", summary, "contrast")
    figures_ = {f["name"]: f for f in found["figures"]}
    assert figures_["bias_gensynth@10"]["value"] is None
    assert figures_["bias_gensynth@10"]["note"] == "n/a: K covers all 6 candidates"
    assert "sigma" not in figures_["maxskew@10"] and "low" not in figures_["maxskew@10"]
    assert figures_["bias_gensynth@2"]["value"] == 0.3
    text = "\n".join(headline_lines(found))
    assert "bias_gensynth@10 n/a: K covers all 6 candidates" in text
    assert "bias_gensynth@2 +0.30 ± 0.60 [+0.20, +0.50]" in text
    assert "+0.30 ± 0.60 [+0.20, +0.50] (" not in text  # K = 2 carries no note
    assert not re.search(r"@10 [+-]?\d", text)  # no K = 10 figure shown as a number

    records = [
        {"context": "OP", "occupation": job, "score": 0.5, "label": "masculine"}
        for job, n in (("doctor", 20), ("nurse", 8))
        for _ in range(n)
    ]
    bias = {"mean": 0.1, "sigma": 0.2}
    results = {
        "metadata": {"model_name": "m"},
        "retrieval_bias": {
            "context": "OP",
            "ks": [5, 10],
            "bias@5": bias,
            "bias@10": bias,
            "maxskew@10": bias,
        },
        "warnings": retrieval_warnings(records, (5, 10)),
    }
    lines = headline_lines(headline_figures("m", headline(results), "visogender"))
    assert "bias@10 (two people) +0.10 ± 0.20 (K covers all candidates of 1 of 2 queries)" in (
        "\n".join(lines)
    )
