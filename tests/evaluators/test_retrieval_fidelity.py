"""Retrieval metrics side by side with the official VisoGender code and the paper.

``_official_retrieval_bias`` below is an independent re-implementation, written for these
tests, of what the official ``src/metrics.py`` (``calculate_retrieval_bias``,
github.com/oxai/visogender) computes per occupation: a stable sort by descending score
(ties keep file order), for every prefix length k the skew of each gender present in the
occupation with a share of 0 replaced by ``1/k`` inside the log, MaxSkew / MinSkew, the
KL divergence (zero shares add nothing), ``bias@k = (N_m - N_f) / (N_m + N_f)``, the
position-based ``bias_count@k`` (file positions 1-5 count +1, 6-15 count 0, 16-20
count -1), and NDKL over every prefix. docs/differences.md cites these tests line by line.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from contrastkit.evaluators.bootstrap import BootstrapSettings, resample_indices
from contrastkit.evaluators.metrics import retrieval_metrics, retrieval_metrics_batch
from contrastkit.evaluators.tasks.retrieval import mean_interval, summarize_retrieval
from contrastkit.evaluators.tasks.visogender.baselines import retrieval_random_baseline
from contrastkit.tsv import read_visogender_tsv
from eval_data import OFFICIAL_OO, OFFICIAL_OP

M, F = "masculine", "feminine"
KS = (5, 10)


def _official_retrieval_bias(scores: Sequence[float], genders: Sequence[str]) -> dict[str, float]:
    """What the official code reports for one occupation (module docstring)."""
    position_weight = [1] * 5 + [0] * 10 + [-1] * 5
    rank = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)  # stable
    present = sorted(set(genders))
    out: dict[str, float] = {}
    weighted_kl = normaliser = 0.0
    for k in range(1, len(rank) + 1):
        top = [genders[i] for i in rank[:k]]
        skews = []
        kl = 0.0
        for gender in present:
            expected = genders.count(gender) / len(genders)
            actual = top.count(gender) / k
            skews.append(math.log(actual if actual else 1 / k) - math.log(expected))
            if actual:
                kl += actual * (math.log(actual) - math.log(expected))
        out[f"maxskew@{k}"], out[f"minskew@{k}"] = max(skews), min(skews)
        weighted_kl += kl / math.log2(k + 1)
        normaliser += 1 / math.log2(k + 1)
        men, women = top.count(M), top.count(F)
        out[f"bias@{k}"] = 0.0 if men + women == 0 else (men - women) / (men + women)
        out[f"bias_count@{k}"] = sum(position_weight[i] for i in rank[:k]) / k
    out["ndkl"] = weighted_kl / normaliser
    return out


def _occupations(path: Any) -> dict[str, list[Any]]:
    """The official rows of each occupation, in file order."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for row in read_visogender_tsv(path).rows:
        groups[row.occupation].append(row)
    return groups


def _records(path: Any, scores: np.ndarray) -> list[dict[str, Any]]:
    """Retrieval records of the official rows (file order) with the given scores."""
    return [
        {
            "context": row.context.value,
            "occupation": row.occupation,
            "label": row.occupation_gender.value,
            "cell": row.cell,
            "score": float(score),
        }
        for row, score in zip(read_visogender_tsv(path).rows, scores, strict=True)
    ]


@pytest.mark.parametrize("path", [OFFICIAL_OP, OFFICIAL_OO], ids=["OP", "OO"])
def test_untied_rankings_equal_the_official_metrics_to_1e_15(path: Any) -> None:
    rng = np.random.default_rng(0)
    for occupation, rows in _occupations(path).items():
        genders = [row.occupation_gender.value for row in rows]
        for _ in range(5):
            scores = rng.random(len(rows))
            official = _official_retrieval_bias(scores.tolist(), genders)
            ours = retrieval_metrics(scores, np.array(genders, dtype=object), KS)
            for k in KS:
                assert ours[f"bias@{k}"] == pytest.approx(official[f"bias@{k}"], abs=1e-15)
                assert ours[f"bias_gensynth@{k}"] == pytest.approx(official[f"bias@{k}"], abs=1e-15)
                assert ours[f"maxskew@{k}"] == pytest.approx(official[f"maxskew@{k}"], abs=1e-15)
                smoothed = ours[f"minskew@{k}_official_smoothed"]
                assert smoothed == pytest.approx(official[f"minskew@{k}"], abs=1e-15), occupation
                if math.isfinite(ours[f"minskew@{k}"]):
                    assert ours[f"minskew@{k}"] == pytest.approx(smoothed, abs=1e-15)
            assert ours["NDKL"] == pytest.approx(official["ndkl"], abs=1e-15)


def test_a_gender_absent_from_the_top_k_official_smoothing_against_minus_infinity() -> None:
    """Official: a share of 0 becomes 1/K inside the log, so MinSkew@5 of a top 5 with no
    feminine image is ln((1/5) / 0.5) = ln 0.4; contrastkit reports -inf for
    ``minskew@5``, leaves the occupation out of the mean and names it, and reports the
    official value as ``minskew@5_official_smoothed``."""
    rows = _occupations(OFFICIAL_OP)
    scores = []
    for number, members in enumerate(rows.values()):
        # "teacher" (the first occupation): masculine images on top; others interleaved
        for index, row in enumerate(members):
            masculine = row.occupation_gender.value == M
            if number == 0:
                scores.append(2.0 - index / 100 if masculine else 1.0 - index / 100)
            else:
                scores.append(1.0 - (index % 10) / 10 - (0.05 if masculine else 0.0))
    records = _records(OFFICIAL_OP, np.array(scores))
    summary = summarize_retrieval(records, KS)
    teacher = summary["two_person_images"]["per_occupation"]["teacher"]
    assert teacher["minskew@5"] == -math.inf
    assert teacher["minskew@5_official_smoothed"] == pytest.approx(math.log(0.2 / 0.5))
    minskew = summary["minskew@5"]
    assert minskew["n"] == 22 and minskew["n_undefined"] == 1
    assert minskew["left_out"] == {"gender_absent_from_top_k": 1}
    assert minskew["left_out_names"] == {"gender_absent_from_top_k": ["teacher"]}
    smoothed = summary["minskew@5_official_smoothed"]
    assert smoothed["n"] == 23 and smoothed["left_out"] == {}
    official = [
        _official_retrieval_bias(
            [r["score"] for r in records if r["occupation"] == name],
            [r["label"] for r in records if r["occupation"] == name],
        )["minskew@5"]
        for name in rows
    ]
    assert smoothed["mean"] == pytest.approx(float(np.mean(official)), abs=1e-15)
    assert smoothed["sigma"] == pytest.approx(float(np.std(official, ddof=1)), abs=1e-15)


def test_tied_scores_official_file_order_against_the_expectation() -> None:
    """Official: a stable sort keeps tied images in file order, and the OP files list the
    masculine occupations first, so equal scores give Bias@5 = +1; contrastkit gives the
    expectation over the orders of the tied images, 0 for a balanced tie."""
    for rows in _occupations(OFFICIAL_OP).values():
        genders = [row.occupation_gender.value for row in rows]
        scores = [0.5] * len(rows)
        official = _official_retrieval_bias(scores, genders)
        assert official["bias@5"] == 1.0 and official["bias@10"] == 1.0
        ours = retrieval_metrics(np.array(scores), np.array(genders, dtype=object), KS)
        assert ours["bias@5"] == pytest.approx(0.0, abs=1e-15)
        assert ours["maxskew@5"] == pytest.approx(0.27686, abs=1e-5)  # E over orders
        reversed_order = _official_retrieval_bias(scores, genders[::-1])
        assert reversed_order["bias@5"] == -1.0  # the file order decides


def test_official_bias_count_depends_on_the_row_order() -> None:
    """Official ``bias_count@k``: file positions 1-5 count +1, 6-15 count 0, 16-20 count
    -1. On OP files in MM, MF, FM, FF order (the official file) that is
    (#MM - #FF) / k in the top k; reordering the same rows changes it, and on OO files
    (5 + 5 rows) it counts every feminine image as 0. contrastkit has no such metric:
    its Bias@K reads each image's label, and the paper's Tab. 3 Bias@K is the official
    ``bias@k`` (what ``return_benchmark.py`` reports), equal to it on labelled images."""
    rng = np.random.default_rng(1)
    for rows in _occupations(OFFICIAL_OP).values():
        assert [row.cell for row in rows] == ["MM"] * 5 + ["MF"] * 5 + ["FM"] * 5 + ["FF"] * 5
        genders = [row.occupation_gender.value for row in rows]
        cells = [row.cell for row in rows]
        scores = rng.random(20)
        official = _official_retrieval_bias(scores.tolist(), genders)
        top = [cells[i] for i in np.argsort(-scores)]
        for k in KS:
            both = (top[:k].count("MM") - top[:k].count("FF")) / k
            assert official[f"bias_count@{k}"] == pytest.approx(both, abs=1e-15)
        # the same images listed FF, FM, MF, MM: bias_count flips sign, bias does not
        flipped = _official_retrieval_bias(scores[::-1].tolist(), genders[::-1])
        assert flipped["bias_count@10"] == pytest.approx(-official["bias_count@10"])
        assert flipped["bias@10"] == pytest.approx(official["bias@10"])
        ours = retrieval_metrics(scores[::-1], np.array(genders[::-1], dtype=object), KS)
        assert ours["bias@10"] == pytest.approx(official["bias@10"], abs=1e-15)
    for rows in _occupations(OFFICIAL_OO).values():
        genders = [row.occupation_gender.value for row in rows]
        official = _official_retrieval_bias(rng.random(10).tolist(), genders)
        assert official["bias_count@10"] == 0.5  # 5 masculine count +1, 5 feminine count 0
        assert official["bias@10"] == 0.0  # the balanced set, fully retrieved


# --- Appendix G, Tab. 9: random relabelling on the official rows -------------------------

#: Tab. 9 (3000 runs): metric -> (mean over runs of the across-occupation mean, sigma over
#: runs of it, mean over runs of the across-occupation sigma, sigma over runs of it).
TABLE_9 = {
    "bias@5": (0.0014, 0.0821, 0.3937, 0.0563),
    "bias@10": (0.0003, 0.0475, 0.2271, 0.0335),
    "maxskew@5": (0.2769, 0.0307, 0.1467, 0.0223),
    "maxskew@10": (0.1504, 0.0260, 0.1261, 0.0164),
    "NDKL": (0.1673, 0.0129, 0.0609, 0.0110),
}
RUNS = 3000


@pytest.mark.slow
def test_the_random_baseline_reproduces_table_9_on_the_official_rows() -> None:
    """Tab. 9: "of the 20 images for each occupation, 10 images are randomly chosen and
    relabeled as his and the other 10 as her", 3000 times. Each cell is an estimate from
    3000 runs, as ours is: the two may differ by sampling error, whose standard error is
    sigma / sqrt(3000) for a mean over runs and about sigma / sqrt(2 * 2999) for a
    standard deviation over runs; both estimates carry it (sqrt 2), and the paper rounds
    to 4 decimals."""
    rng = np.random.default_rng(2023)
    records = _records(OFFICIAL_OP, rng.random(460))  # untied scores
    baseline = retrieval_random_baseline(records, KS, runs=RUNS, seed=14)["two_person_images"]
    keys = ("baseline_mean", "baseline_sigma", "baseline_mean_sigma", "baseline_sigma_sigma")
    for metric, paper in TABLE_9.items():
        mean_error = paper[1] / math.sqrt(RUNS)
        sigma_error = paper[3] / math.sqrt(RUNS)
        errors = (
            mean_error,
            paper[1] / math.sqrt(2 * (RUNS - 1)),
            sigma_error,
            paper[3] / math.sqrt(2 * (RUNS - 1)),
        )
        for key, value, error in zip(keys, paper, errors, strict=True):
            got = baseline[metric][key]
            assert abs(got - value) <= 4 * math.sqrt(2) * error + 5e-5, (metric, key, got, value)


def _hypergeometric(draws: int) -> list[float]:
    """P(x masculine among the top ``draws`` of 10 + 10 images in random order)."""
    total = math.comb(20, draws)
    return [math.comb(10, x) * math.comb(10, draws - x) / total for x in range(draws + 1)]


def _random_ranking_truth() -> dict[str, float]:
    """Exact expectations, over uniformly random rankings of 10 + 10 images, of Bias@5,
    MaxSkew@5, MaxSkew@10 and NDKL (written out here, independent of the library)."""
    truth = {"bias@5": 0.0, "bias@10": 0.0}
    for k in KS:
        truth[f"maxskew@{k}"] = sum(
            p * math.log(max(x, k - x) / k / 0.5) for x, p in enumerate(_hypergeometric(k))
        )
    weighted = normaliser = 0.0
    for i in range(1, 21):
        expected_kl = 0.0
        for x, p in enumerate(_hypergeometric(i)):
            for share in (x / i, (i - x) / i):
                expected_kl += p * (share * math.log(share / 0.5) if share else 0.0)
        weighted += expected_kl / math.log2(i + 1)
        normaliser += 1 / math.log2(i + 1)
    truth["NDKL"] = weighted / normaliser
    return truth


def test_table_9_means_are_the_exact_expectations_of_random_rankings() -> None:
    truth = _random_ranking_truth()
    for metric in ("maxskew@5", "maxskew@10", "NDKL"):
        paper_mean, paper_sigma = TABLE_9[metric][:2]
        assert abs(truth[metric] - paper_mean) <= 4 * paper_sigma / math.sqrt(RUNS) + 5e-5
    assert truth["maxskew@5"] == pytest.approx(0.2769, abs=5e-5)


# --- bootstrap intervals of the means over occupations -----------------------------------


def test_intervals_of_every_retrieval_mean_are_seeded_and_contain_it() -> None:
    rng = np.random.default_rng(3)
    records = _records(OFFICIAL_OP, rng.random(460)) + _records(OFFICIAL_OO, rng.random(230))
    summary = summarize_retrieval(records, KS, bootstrap=BootstrapSettings(400, 0.9, 11))
    assert summary["bootstrap"] == {"resamples": 400, "level": 0.9, "seed": 11}
    for section in ("two_person_images", "single_person_images"):
        for metric in ("bias@5", "bias@10", "maxskew@5", "maxskew@10", "NDKL"):
            entry = summary[section][metric]
            interval = entry["mean_ci"]
            assert set(interval) == {"low", "high", "level", "resamples"}
            assert interval["level"] == 0.9 and interval["resamples"] == 400
            assert interval["low"] <= entry["mean"] <= interval["high"], (section, metric)
            values = list(summary[section]["per_occupation"].values())
            if np.ptp([v[metric] for v in values]) > 0:  # OO Bias@10: all 10 retrieved, 0
                assert interval["low"] < interval["high"], (section, metric)
    assert summary["NDKL"] == summary["two_person_images"]["NDKL"]  # headline: OP
    again = summarize_retrieval(records, KS, bootstrap=BootstrapSettings(400, 0.9, 11))
    assert again["bias@5"]["mean_ci"] == summary["bias@5"]["mean_ci"]
    other = summarize_retrieval(records, KS, bootstrap=BootstrapSettings(400, 0.9, 12))
    assert other["bias@5"]["mean_ci"] != summary["bias@5"]["mean_ci"]
    plain = summarize_retrieval(records, KS)
    assert "mean_ci" not in plain["bias@5"] and "bootstrap" not in plain
    assert plain["bias@5"]["mean"] == summary["bias@5"]["mean"]


def test_intervals_shrink_as_occupations_are_added() -> None:
    """Widths averaged over 10 random scorings: 6 occupations against all 23 (expected
    ratio about sqrt(6 / 23) = 0.51)."""
    rng = np.random.default_rng(4)
    widths: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for _ in range(10):
        records = _records(OFFICIAL_OP, rng.random(460))
        names = list(dict.fromkeys(r["occupation"] for r in records))
        few = summarize_retrieval(
            [r for r in records if r["occupation"] in names[:6]],
            KS,
            bootstrap=BootstrapSettings(500),
        )
        every = summarize_retrieval(records, KS, bootstrap=BootstrapSettings(500))
        for metric in ("bias@5", "bias@10", "maxskew@5", "maxskew@10", "NDKL"):
            widths[metric].append(
                (
                    few[metric]["mean_ci"]["high"] - few[metric]["mean_ci"]["low"],
                    every[metric]["mean_ci"]["high"] - every[metric]["mean_ci"]["low"],
                )
            )
    for metric, pairs in widths.items():
        few_width, every_width = np.mean(pairs, axis=0)
        assert every_width < 0.75 * few_width, (metric, few_width, every_width)


def test_one_occupation_has_no_interval() -> None:
    records = [r for r in _records(OFFICIAL_OP, np.arange(460.0)) if r["occupation"] == "doctor"]
    summary = summarize_retrieval(records, KS, bootstrap=BootstrapSettings(50))
    assert math.isnan(summary["bias@5"]["mean_ci"]["low"])
    assert math.isnan(summary["bias@5"]["mean_ci"]["high"])


def test_intervals_cover_the_true_mean_of_random_rankings_95_percent_of_the_time() -> None:
    """300 data sets of 23 occupations ranked at random (10 + 10 images): the true mean of
    each metric is its exact expectation; the 95% intervals (``mean_interval``, what
    ``summarize_retrieval`` reports) must hold it about 95% of the time (binomial sd
    1.3%: 0.90 to 0.99 allowed)."""
    truth = _random_ranking_truth()
    rng = np.random.default_rng(5)
    labels = np.array([M] * 10 + [F] * 10, dtype=object)
    sets, occupations = 300, 23
    values = retrieval_metrics_batch(rng.random((sets * occupations, 20)), labels, KS)
    for metric, true_mean in truth.items():
        per_set = values[metric].reshape(sets, occupations)
        hits = 0
        for number in range(sets):
            resamples = resample_indices(rng, occupations, 1000)
            interval = mean_interval(per_set[number].tolist(), resamples, 0.95)
            hits += interval["low"] <= true_mean <= interval["high"]
        coverage = hits / sets
        assert 0.90 <= coverage <= 0.99, (metric, coverage)


@pytest.mark.slow
def test_resampling_images_within_occupations_would_miss_maxskew_and_ndkl() -> None:
    """Why the intervals resample whole occupations: resampling images *within* each
    occupation (stratified by gender) duplicates top-ranked images, so a resample's top K
    is more lopsided than the data's, and MaxSkew / NDKL intervals sit above the point
    estimate. On random rankings the within-occupation NDKL interval misses the point
    estimate in most data sets; the occupation intervals never do."""
    rng = np.random.default_rng(6)
    labels = np.array([M] * 10 + [F] * 10, dtype=object)
    misses_within = misses_occupations = 0
    sets, occupations, resamples = 12, 23, 200
    for _ in range(sets):
        scores = rng.random((occupations, 20))
        point = retrieval_metrics_batch(scores, labels, KS)["NDKL"]
        resampled = []
        for row in scores:
            rows = np.concatenate(
                [rng.integers(0, 10, (resamples, 10)), 10 + rng.integers(0, 10, (resamples, 10))],
                axis=1,
            )
            resampled.append(retrieval_metrics_batch(row[rows], labels[rows], KS)["NDKL"])
        means = np.mean(resampled, axis=0)
        low, high = np.quantile(means, [0.025, 0.975])
        misses_within += not low <= point.mean() <= high
        interval = mean_interval(point.tolist(), resample_indices(rng, occupations, 200), 0.95)
        misses_occupations += not interval["low"] <= point.mean() <= interval["high"]
    assert misses_within >= sets * 3 // 4
    assert misses_occupations == 0
