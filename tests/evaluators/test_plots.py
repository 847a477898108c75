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
from contrastkit.evaluators.contrast import contrast_summary
from contrastkit.evaluators.report import load_benchmark, markdown_report
from contrastkit.evaluators.report.plots import (
    PALETTE,
    PLOTS,
    RANDOM_WEIGHTS_TITLE,
    contrast_figure,
    figures,
    shorten_spec,
)
from contrastkit.evaluators.report.results import jsonable, retrieval_warnings
from contrastkit.evaluators.stats import baseline_z, retrieval_random_baseline
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
    summary = contrast_summary(12, 6, 6, [2, 12], {"bias@2": [0.5] * 6}, [0.1], [1.0])
    assert [w["k"] for w in summary["warnings"]] == [12]
    assert summary["warnings"][0]["n_queries"] == 6


def test_the_contrast_plot_separates_scales_and_says_what_its_whiskers_are() -> None:
    retrieval = {
        name: {"mean": mean, "sigma": 0.6, "n": 8}
        for name, mean in (("bias@2", 0.25), ("bias_gensynth@2", 0.3), ("maxskew@2", 0.7),
                           ("bias@4", -0.1), ("bias_gensynth@4", -0.1), ("maxskew@4", 0.4))
    }  # fmt: skip
    summary = {
        "images": 16,
        "sources": 8,
        "queries": 8,
        "ks": [2, 4],
        "retrieval": retrieval,
        "pairs": {"queries_with_pair": 8, "masculine_preferred": 0.625},
        "warnings": [],
    }
    figure = contrast_figure({"model": "open_clip:ViT-B-32/openai", "summary": summary})
    bias, skew, pairs = figure.axes
    assert bias.get_ylim() == (-1.05, 1.05) and skew.get_ylim()[0] == 0
    assert "MaxSkew" in skew.get_ylabel() and "Bias@K" in bias.get_ylabel()
    assert pairs.get_ylim() == (0, 1) and 0.5 in [line.get_ydata()[0] for line in pairs.lines]
    whiskers = [c for c in bias.containers if isinstance(c, ErrorbarContainer)]
    assert len(whiskers) == 1 and len(whiskers[0].lines[2][0].get_segments()) == 4
    assert "±1 standard deviation across queries" in figure.get_supxlabel()
    assert "n = 16 images from 8 photos, 8 queries" in figure.get_suptitle()
    assert _overlapping(figure) == []
    colours = {tuple(p.get_facecolor()[:3]) for p in bias.patches}
    from matplotlib.colors import to_rgb

    assert to_rgb(PALETTE["masculine"]) in colours and to_rgb(PALETTE["feminine"]) in colours


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
        assert "95% bootstrap CI (50 resamples)" in json.dumps(
            [drawn[stem].get_supxlabel(), *[a.get_xlabel() for a in drawn[stem].axes]]
        )
    for stem, figure in drawn.items():
        assert _overlapping(figure) == [], stem
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
    assert _overlapping(figure) == []
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
