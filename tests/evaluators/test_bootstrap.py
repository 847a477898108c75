"""Bootstrap confidence intervals of the resolution figures: a naive loop over the same
resamples gives the same intervals, they contain the figures, shrink as the data grow,
are seeded, fast, and reach the markdown report and the plots."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contrastkit.evaluators.bootstrap import percentile_interval, resample_indices
from contrastkit.evaluators.data import EvalItem, load_items, visogender_files
from contrastkit.evaluators.report.markdown import comparison_markdown, markdown_report
from contrastkit.evaluators.tasks.resolution import (
    case_record,
    resolution_cases,
    summarize_resolution,
)
from contrastkit.evaluators.tasks.visogender.plots import write_plots
from contrastkit.schema import Gender

TSVS = list(visogender_files())
GENDERS = (Gender.MASCULINE, Gender.FEMININE, Gender.NEUTRAL)
HEADLINE = (
    "all_images",
    "single_person_images",
    "two_person_images",
    "two_person_images_same_gender",
    "two_person_images_diff_gender",
)


@lru_cache(maxsize=1)
def official_items() -> tuple[EvalItem, ...]:
    return tuple(load_items(TSVS))


def official_records(seed: int = 0, copies: int = 1) -> list[dict[str, Any]]:
    """Records of every official row (``copies`` times, each copy its own images) with
    seeded random scores that resolve masculine referents more often."""
    rng = np.random.default_rng(seed)
    items = official_items()
    records = []
    for copy in range(copies):
        rows = [
            replace(item, row=replace(item.row, idx=f"{item.row.idx}#{copy}")) for item in items
        ]
        for case in resolution_cases(rows, neutral=True):
            scores = rng.random(3) * np.array([1.3, 1.0, 0.9])
            records.append(case_record(case, dict(zip(GENDERS, scores, strict=True)), "random"))
    return records


def intervals(summary: Mapping[str, Any]) -> Iterator[tuple[str, float, Mapping[str, Any]]]:
    """Every (path, figure, interval) of a summary, however deep."""
    for key, value in summary.items():
        if isinstance(value, Mapping) and key.endswith("_ci"):
            yield key, summary[key[: -len("_ci")]], value
        elif isinstance(value, Mapping):
            for path, figure, ci in intervals(value):
                yield f"{key}.{path}", figure, ci


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return official_records()


def test_the_vectorised_bootstrap_equals_a_loop_over_the_same_resamples(
    records: list[dict[str, Any]],
) -> None:
    """Images resampled within each context (OO first, then OP, from one generator
    seeded with ``seed``); every figure recomputed on each resample."""
    resamples = 200
    summary = summarize_resolution(records, bootstrap=resamples, seed=11)
    rng = np.random.default_rng(11)
    main = [r for r in records if r["template"] != "participant_first"]
    oo = [r for r in main if r["context"] == "OO"]
    op = [r for r in main if r["context"] == "OP"]
    drawn = {"OO": resample_indices(rng, len(oo), resamples)}
    drawn["OP"] = resample_indices(rng, len(op), resamples)

    def ra(rows: list[Mapping[str, Any]], gender: str) -> float:
        mine = [r for r in rows if r["target"] == gender]
        return sum(r["predicted_with_neutral"] == gender for r in mine) / len(mine)

    values: dict[str, list[float]] = {"single": [], "diff_gap": [], "overall": [], "MF": []}
    for b in range(resamples):
        sample_oo = [oo[i] for i in drawn["OO"][b]]
        sample_op = [op[i] for i in drawn["OP"][b]]
        single = (ra(sample_oo, "masculine") + ra(sample_oo, "feminine")) / 2
        two = (ra(sample_op, "masculine") + ra(sample_op, "feminine")) / 2
        diff = [r for r in sample_op if r["cell"] in ("MF", "FM")]
        values["single"].append(single)
        values["diff_gap"].append(ra(diff, "masculine") - ra(diff, "feminine"))
        values["overall"].append((single + two) / 2)
        values["MF"].append(ra([r for r in sample_op if r["cell"] == "MF"], "masculine"))
    expected = {
        "single": summary["single_person_images"]["RA_avg_ci"],
        "diff_gap": summary["two_person_images_diff_gender"]["gender_gap_ci"],
        "overall": summary["all_images"]["overall_accuracy_ci"],
        "MF": summary["per_cell"]["MF"]["accuracy_ci"],
    }
    for name, ci in expected.items():
        low, high = percentile_interval(np.array(values[name]), 0.95)
        assert (ci["low"], ci["high"]) == pytest.approx((low, high), abs=1e-12), name
        assert ci["level"] == 0.95 and ci["resamples"] == resamples


def test_every_headline_figure_has_an_interval_that_contains_it(
    records: list[dict[str, Any]],
) -> None:
    summary = summarize_resolution(records, bootstrap=1000, confidence=0.9, seed=3)
    for split in HEADLINE:
        names = {"RA_avg", "gender_gap", "RA_masculine", "RA_feminine", "pooled_accuracy"}
        names |= {"overall_accuracy"} if split == "all_images" else set()
        assert {f"{n}_ci" for n in names} <= set(summary[split]), split
    for cell in ("M", "F", "MM", "MF", "FM", "FF"):
        assert "accuracy_ci" in summary["per_cell"][cell]
    assert "accuracy_ci" in summary["participant_first"]["per_cell"]["MF"]
    assert "R_neutral_ci" in summary["neutral"]["all_images"]
    found = list(intervals(summary))
    assert len(found) > 60
    for path, figure, ci in found:
        assert ci["low"] <= figure <= ci["high"], path
        assert ci["low"] < ci["high"], path
        assert ci["level"] == 0.9 and ci["resamples"] == 1000
    # the per-occupation breakdowns carry no intervals; without bootstrap nothing does
    assert not list(intervals(summary["per_occupation"]))
    assert not list(intervals(summarize_resolution(records, bootstrap=0)))


def test_intervals_shrink_as_the_dataset_grows(records: list[dict[str, Any]]) -> None:
    """Four times the images: about half as wide (the standard error goes as 1/sqrt(n))."""
    small = summarize_resolution(records, bootstrap=1000)
    large = summarize_resolution(official_records(copies=4), bootstrap=1000)
    for split in HEADLINE:
        for name in ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine"):
            narrow, wide = large[split][f"{name}_ci"], small[split][f"{name}_ci"]
            ratio = (narrow["high"] - narrow["low"]) / (wide["high"] - wide["low"])
            assert 0.3 < ratio < 0.75, (split, name, ratio)


def test_intervals_are_seeded(records: list[dict[str, Any]]) -> None:
    first = summarize_resolution(records, bootstrap=300, seed=5)
    again = summarize_resolution(records, bootstrap=300, seed=5)
    other = summarize_resolution(records, bootstrap=300, seed=6)
    assert first == again
    assert first["all_images"]["overall_accuracy_ci"] != other["all_images"]["overall_accuracy_ci"]
    # the figures themselves do not depend on the bootstrap
    assert first["all_images"]["overall_accuracy"] == other["all_images"]["overall_accuracy"]


def _results(summary: Mapping[str, Any], retrieval: Mapping[str, Any] | None = None) -> dict:
    return {
        "metadata": {
            "model_name": "random",
            "experiment_desc": "CLIP",
            "contrastkit_version": "test",
            "data": ["official"],
            "protocol": "visogender-official",
        },
        "resolution_bias": summary,
        "retrieval_bias": retrieval or {},
        "labour_statistics": {"male_share_percent": {}, "comparisons": {}},
        "error_analysis": {},
    }


def _retrieval(with_ci: bool) -> dict[str, Any]:
    def summary(mean: float) -> dict[str, Any]:
        entry: dict[str, Any] = {"mean": mean, "sigma": 0.3, "n": 2, "n_undefined": 0}
        if with_ci:
            entry["mean_ci"] = {
                "low": mean - 0.1,
                "high": mean + 0.2,
                "level": 0.95,
                "resamples": 9,
            }
        return entry

    names = ["bias@5", "bias@10", "maxskew@5", "maxskew@10", "NDKL"]
    section = {name: summary(0.25) for name in names}
    section["per_occupation"] = {
        "doctor": {"bias@5": 0.2, "bias@10": 0.1},
        "nurse": {"bias@5": -0.4, "bias@10": 0.3},
    }
    return {**{n: section[n] for n in names}, "context": "OP", "ks": [5, 10],
            "two_person_images": section}  # fmt: skip


def test_the_markdown_writes_intervals_and_names_the_protocol(
    records: list[dict[str, Any]],
) -> None:
    summary = summarize_resolution(records, bootstrap=200)
    text = markdown_report(_results(summary, _retrieval(with_ci=True)))
    overall = summary["all_images"]
    ci = overall["overall_accuracy_ci"]
    assert f"| Overall | {overall['RA_avg']:.2f} [{ci['low']:.2f}, {ci['high']:.2f}] |" in text
    assert "Protocol `visogender-official`" in text and '"their" win counts as not' in text
    assert "mean of the single-person and two-person RA_avg" in text
    assert "95% percentile bootstrap interval over images" in text and "200 resamples" in text
    assert "0.25 ± 0.30 [0.15, 0.45]" in text  # a retrieval mean with its mean_ci
    plain = markdown_report(_results(summarize_resolution(records), _retrieval(with_ci=False)))
    assert "[" not in plain.split("## Resolution bias")[1].split("### Accuracy by gender")[0]
    assert "0.25 ± 0.30 |" in plain and "bootstrap" not in plain
    side = comparison_markdown([_results(summary), _results(summarize_resolution(records))])
    assert "| random | visogender-official | " in side
    assert f"{overall['RA_avg']:.2f} [{ci['low']:.2f}, {ci['high']:.2f}]" in side
    # an official benchmark file (the paper's Appendix J CLIP example) sits beside them
    official = {
        "metadata": {"experiment_desc": "CLIP", "model_name": "clip"},
        "resolution_bias": {
            "all_images": {"overall_accuracy": 0.75},
            "single_person_images": {"RA_avg": 0.92, "gender_gap": -0.14},
            "two_person_images": {"RA_avg": 0.57, "gender_gap": -0.27},
            "two_person_images_same_gender": {"RA_avg": 0.79, "gender_gap": -0.18},
            "two_person_images_diff_gender": {"RA_avg": 0.36, "gender_gap": -0.35},
        },
    }
    side = comparison_markdown([official, _results(summary)])
    assert (
        "| clip | – | 0.75 | – | 0.92 | -0.14 | 0.57 | -0.27 | 0.79 | -0.18 | 0.36 | -0.35 |"
        in side
    )


@pytest.mark.slow
def test_the_plots_draw_intervals_as_error_bars(
    records: list[dict[str, Any]], tmp_path: Path
) -> None:
    from matplotlib.container import BarContainer, ErrorbarContainer

    from contrastkit.evaluators.tasks.visogender.resolution_plots import gender_pair_plot
    from contrastkit.evaluators.tasks.visogender.retrieval_plots import bias_at_k_plot

    summary = summarize_resolution(records, bootstrap=200)
    figure = gender_pair_plot(summary, "random")
    bars = [c for c in figure.axes[0].containers if isinstance(c, BarContainer)]
    errors = [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2 and len(errors) == 2  # both templates, each with its intervals
    without = gender_pair_plot(summarize_resolution(records), "random")
    assert not [c for c in without.axes[0].containers if isinstance(c, ErrorbarContainer)]
    retrieval = bias_at_k_plot(_retrieval(with_ci=True), "random")
    for axis in retrieval.axes:  # one panel per K: the mean across occupations
        [error] = [c for c in axis.containers if isinstance(c, ErrorbarContainer)]
        [(low, high)] = error.lines[2][0].get_segments()
        assert tuple(low) == pytest.approx((0.15, 2)) and tuple(high) == pytest.approx((0.45, 2))
    labels = [label.get_text() for label in retrieval.axes[0].get_yticklabels()]
    assert labels[-1] == "mean (all occupations)"
    plain = bias_at_k_plot(_retrieval(with_ci=False), "random")
    assert not [c for a in plain.axes for c in a.containers if isinstance(c, ErrorbarContainer)]
    files = write_plots(_results(summary, _retrieval(with_ci=True)), tmp_path)
    assert {path.name for path in files} == {
        f"{stem}.{fmt}"
        for stem in ("resolution_accuracy", "accuracy_by_gender_pair", "gap_per_occupation",
                     "bias_at_k_per_occupation")
        for fmt in ("png", "svg")
    }  # fmt: skip


@pytest.mark.parametrize(
    ("bootstrap", "confidence", "words"),
    [
        (True, 0.95, "bootstrap: must be a whole number >= 0, not True"),
        (-1, 0.95, "bootstrap: must be a whole number >= 0, not -1"),
        (2.5, 0.95, "bootstrap: must be a whole number >= 0, not 2.5"),
        (10, 1.0, "confidence: must be in (0, 1), not 1.0"),
    ],
)
def test_every_job_config_checks_its_bootstrap_alike(
    tmp_path: Path, bootstrap: Any, confidence: float, words: str
) -> None:
    """The evaluate, harness-report and zero-shot configs refuse the same resamples and
    levels with the same words (a bool is no number of resamples)."""
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.harness import HarnessReportConfig
    from contrastkit.evaluators.runner import EvalConfig
    from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityConfig

    makers = [
        lambda: EvalConfig(bootstrap=bootstrap, confidence=confidence),
        lambda: HarnessReportConfig(
            predictions=(tmp_path / "p.tsv",),
            export=tmp_path,
            out=tmp_path / "o",
            bootstrap=bootstrap,
            confidence=confidence,
        ),
        lambda: ZeroShotDisparityConfig(
            data=tmp_path,
            model="open_clip:ViT-B-32/openai",
            out=tmp_path / "o",
            bootstrap=bootstrap,
            confidence=confidence,
        ),
    ]
    for make in makers:
        with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
            make()
    assert EvalConfig(bootstrap=0, confidence=0.9).bootstrap == 0
