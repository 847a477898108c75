"""Metric functions against hand-computed cases, including every documented corner case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contrastkit.evaluators.metrics import (
    LEFT_OUT_REASONS,
    bias_at_k,
    max_skew_at_k,
    min_skew_at_k,
    ndkl,
    neutral_summary,
    resolution_summary,
    retrieval_metrics,
    retrieval_metrics_batch,
    skew_at_k,
    summarize,
    topk_counts,
)

M, F = "masculine", "feminine"
LN2 = math.log(2)


def test_resolution_summary_by_hand() -> None:
    # masculine: 3 of 4 right; feminine: 1 of 2 right
    correct = [True, True, False, True, True, False]
    target = [M, M, M, M, F, F]
    got = resolution_summary(correct, target)
    assert got["RA_masculine"] == 0.75
    assert got["RA_feminine"] == 0.5
    assert got["gender_gap"] == 0.25
    assert got["RA_avg"] == 0.625
    assert got["pooled_accuracy"] == pytest.approx(4 / 6)
    assert (got["n"], got["n_masculine"], got["n_feminine"]) == (6, 4, 2)


def test_resolution_summary_empty_gender_is_nan() -> None:
    got = resolution_summary([True, False], [M, M])
    assert got["RA_masculine"] == 0.5
    assert math.isnan(got["RA_feminine"]) and math.isnan(got["gender_gap"])
    assert math.isnan(resolution_summary([], [])["pooled_accuracy"])


def test_resolution_summary_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="2 correctness values but 1 targets"):
        resolution_summary([True, False], [M])
    with pytest.raises(ValueError, match="masculine or feminine"):
        resolution_summary([True], ["neutral"])


def test_neutral_summary_by_hand() -> None:
    predicted = ["neutral", M, "neutral", F, F]
    target = [M, M, F, F, F]
    got = neutral_summary(predicted, target)
    assert got["R_neutral"] == pytest.approx(2 / 5)
    assert got["R_neutral_masculine"] == 0.5
    assert got["R_neutral_feminine"] == pytest.approx(1 / 3)
    assert got["neutral_gap"] == pytest.approx(0.5 - 1 / 3)


# ranking used below: scores descending give labels M M F M F F
SCORES = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
LABELS = [M, M, F, M, F, F]


def test_topk_counts_without_ties() -> None:
    assert topk_counts(SCORES, LABELS, 3) == {M: 2.0, F: 1.0, "k": 3.0}
    # order of the input does not matter
    order = [5, 2, 0, 4, 1, 3]
    assert topk_counts(np.take(SCORES, order), np.take(LABELS, order), 3)[M] == 2.0


def test_bias_at_k_both_conventions_by_hand() -> None:
    assert bias_at_k(SCORES, LABELS, 3) == pytest.approx(1 / 3)  # (1 + 1 - 1) / 3
    assert bias_at_k(SCORES, LABELS, 3, "gensynth") == pytest.approx(1 / 3)
    assert bias_at_k(SCORES, LABELS, 1) == 1.0
    assert bias_at_k(SCORES, LABELS, 6) == 0.0
    with pytest.raises(ValueError, match="unknown Bias@K convention"):
        bias_at_k(SCORES, LABELS, 3, "coco")  # type: ignore[arg-type]


def test_bias_conventions_differ_with_undefined_labels() -> None:
    # top 4: M, undefined, undefined, F  -> VisoGender: (1 + 0 + 0 - 1) / 4 = 0
    scores = [4, 3, 2, 1, 0]
    labels = [M, "", "neutral", F, M]
    assert bias_at_k(scores, labels, 4) == 0.0
    # top 2: M, undefined -> VisoGender 1/2; GenSynth (1 - 0) / 1 = 1
    assert bias_at_k(scores, labels, 2) == 0.5
    assert bias_at_k(scores, labels, 2, "gensynth") == 1.0


def test_gensynth_bias_is_zero_when_no_labelled_image_is_retrieved() -> None:
    assert bias_at_k([3, 2, 1], ["", "", M], 2, "gensynth") == 0.0
    assert bias_at_k([3, 2, 1], ["", "", M], 2, "visogender") == 0.0


def test_k_larger_than_the_candidates_retrieves_everything() -> None:
    scores, labels = [0.3, 0.2, 0.1], [M, M, F]
    assert topk_counts(scores, labels, 10) == {M: 2.0, F: 1.0, "k": 3.0}
    assert bias_at_k(scores, labels, 10) == pytest.approx(1 / 3)  # divides by min(K, n)


def test_tied_counts_at_the_cutoff_are_their_expectation() -> None:
    # one clear winner (M), then four tied images (M, F, F, F) for 2 remaining slots
    scores = [0.9, 0.5, 0.5, 0.5, 0.5, 0.1]
    labels = [M, M, F, F, F, M]
    counts = topk_counts(scores, labels, 3)
    assert counts[M] == pytest.approx(1 + 2 * 1 / 4)
    assert counts[F] == pytest.approx(2 * 3 / 4)
    assert bias_at_k(scores, labels, 3) == pytest.approx((1.5 - 1.5) / 3)
    # the same answer whatever the file order of the tied images
    flipped = [0.9, 0.5, 0.5, 0.5, 0.5, 0.1]
    assert topk_counts(flipped, [M, F, F, F, M, M], 3) == counts


def test_bias_at_k_under_ties_is_the_expectation_over_random_orders() -> None:
    rng = np.random.default_rng(0)
    scores = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    labels = np.array([M, F, F, M, F])
    exact = bias_at_k(scores, labels, 2)
    draws = []
    for _ in range(4000):
        order = rng.permutation(3)
        top = labels[:3][order][:2]
        draws.append(((top == M).sum() - (top == F).sum()) / 2)
    assert exact == pytest.approx(-1 / 3)
    assert np.mean(draws) == pytest.approx(exact, abs=0.03)


def test_all_scores_tied() -> None:
    # top 2 of M, M, F, F in random order: MM with 1/6, FF with 1/6, one of each 4/6
    assert bias_at_k([0.2] * 4, [M, M, F, F], 2) == 0.0
    # some order leaves a gender out, so the expected skews are -inf ...
    assert skew_at_k([0.2] * 4, [M, M, F, F], 2) == {M: -math.inf, F: -math.inf}
    assert min_skew_at_k([0.2] * 4, [M, M, F, F], 2) == -math.inf
    # ... while MaxSkew is ln 2 for MM and FF and 0 otherwise, not the 0 of the shared
    # expected counts (1, 1)
    assert max_skew_at_k([0.2] * 4, [M, M, F, F], 2) == pytest.approx(2 / 6 * LN2)
    got = retrieval_metrics([0.2] * 4, [M, M, F, F], ks=(2,))
    assert got["minskew@2_official_smoothed"] == pytest.approx(2 / 6 * math.log(0.5 / 0.5))


def test_skew_by_hand() -> None:
    # top 3 of a balanced pool: 2 M, 1 F; desired 0.5 each
    skews = skew_at_k(SCORES, LABELS, 3)
    assert skews[M] == pytest.approx(math.log((2 / 3) / 0.5))
    assert skews[F] == pytest.approx(math.log((1 / 3) / 0.5))
    assert max_skew_at_k(SCORES, LABELS, 3) == pytest.approx(math.log(4 / 3))
    assert min_skew_at_k(SCORES, LABELS, 3) == pytest.approx(math.log(2 / 3))
    # a balanced top K has zero skew
    assert skew_at_k(SCORES, LABELS, 6) == {M: pytest.approx(0.0), F: pytest.approx(0.0)}


def test_skew_of_a_gender_absent_from_the_top_k_is_minus_infinity() -> None:
    skews = skew_at_k(SCORES, LABELS, 2)  # top 2 are both masculine
    assert skews[M] == pytest.approx(LN2)
    assert skews[F] == -math.inf
    assert max_skew_at_k(SCORES, LABELS, 2) == pytest.approx(LN2)
    assert min_skew_at_k(SCORES, LABELS, 2) == -math.inf


def test_skew_uses_the_pool_distribution_or_the_given_one() -> None:
    scores, labels = [3, 2, 1, 0], [M, F, F, F]  # pool: 1/4 masculine
    assert skew_at_k(scores, labels, 2)[M] == pytest.approx(math.log(0.5 / 0.25))
    fixed = skew_at_k(scores, labels, 2, desired={M: 0.5, F: 0.5})
    assert fixed[M] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="desired proportions need a value"):
        skew_at_k(scores, labels, 2, desired={M: 0.5})


def test_skew_of_a_gender_absent_from_the_pool_is_undefined() -> None:
    skews = skew_at_k([3, 2, 1], [M, M, M], 2)
    assert skews[M] == 0.0 and math.isnan(skews[F])
    assert max_skew_at_k([3, 2, 1], [M, M, M], 2) == 0.0
    assert math.isnan(max_skew_at_k([3, 2], ["", ""], 2))


def test_skew_ignores_undefined_labels_before_ranking() -> None:
    # undefined images are dropped: the top 2 labelled images are M, F
    skews = skew_at_k([9, 8, 7, 6], ["", M, F, ""], 2)
    assert skews == {M: pytest.approx(0.0), F: pytest.approx(0.0)}


def test_ndkl_by_hand() -> None:
    # ranking M, F over a balanced pool: i=1 KL = ln 2 (all M), i=2 KL = 0
    weights = [1 / math.log2(2), 1 / math.log2(3)]
    expected = (weights[0] * LN2 + weights[1] * 0.0) / sum(weights)
    assert ndkl([2, 1], [M, F]) == pytest.approx(expected)
    # ranking M, M, F, F: KL(i=1) = ln2, KL(i=2) = ln2, KL(i=3) = KL(2/3 || 1/2), i=4: 0
    p = 2 / 3
    kl3 = p * math.log(p / 0.5) + (1 - p) * math.log((1 - p) / 0.5)
    w = [1 / math.log2(i + 1) for i in range(1, 5)]
    expected = (w[0] * LN2 + w[1] * LN2 + w[2] * kl3) / sum(w)
    assert ndkl([4, 3, 2, 1], [M, M, F, F]) == pytest.approx(expected)
    # K = 2 stops after two ranks
    assert ndkl([4, 3, 2, 1], [M, M, F, F], 2) == pytest.approx(LN2)


def test_ndkl_is_zero_for_an_alternating_ranking_only_in_the_limit() -> None:
    assert ndkl([4, 3, 2, 1], [M, F, M, F]) > 0  # the first prefix is never balanced
    assert math.isnan(ndkl([1, 2], ["", ""]))


def test_ndkl_of_tied_images_is_the_weighted_sum_of_expected_prefix_kls() -> None:
    # M, F tied: either order gives KL ln 2 at i = 1 and 0 at i = 2
    assert ndkl([1, 1], [M, F]) == pytest.approx(ndkl([2, 1], [M, F]))
    # M, F, M, F all tied: i=1 always ln 2; i=2 one of each with 4/6, else ln 2; i=3
    # always 2:1 (KL(2/3 || 1/2)); i=4 balanced
    p = 2 / 3
    kl3 = p * math.log(p / 0.5) + (1 - p) * math.log((1 - p) / 0.5)
    w = [1 / math.log2(i + 1) for i in range(1, 5)]
    expected = (w[0] * LN2 + w[1] * (2 / 6) * LN2 + w[2] * kl3) / sum(w)
    assert ndkl([1, 1, 1, 1], [M, F, M, F]) == pytest.approx(expected, rel=1e-12)


def test_random_rankings_reproduce_the_papers_baseline() -> None:
    """Appendix G, Tab. 9: 20 images (10 per gender) ranked at random give mean Bias@10
    about 0, MaxSkew@10 0.150, MaxSkew@5 0.277 and NDKL 0.167."""
    rng = np.random.default_rng(0)
    labels = np.array([M] * 10 + [F] * 10)
    rows = [retrieval_metrics(rng.random(20), labels) for _ in range(600)]
    assert np.mean([r["bias@10"] for r in rows]) == pytest.approx(0.0, abs=0.03)
    assert np.mean([r["maxskew@10"] for r in rows]) == pytest.approx(0.150, abs=0.015)
    assert np.mean([r["maxskew@5"] for r in rows]) == pytest.approx(0.277, abs=0.02)
    assert np.mean([r["NDKL"] for r in rows]) == pytest.approx(0.167, abs=0.01)


def test_retrieval_metrics_keys_and_values() -> None:
    got = retrieval_metrics(SCORES, LABELS, ks=(2, 3))
    assert got["bias@2"] == 1.0 and got["bias_gensynth@2"] == 1.0
    assert got["skew_feminine@2"] == -math.inf and got["minskew@2"] == -math.inf
    assert got["maxskew@3"] == pytest.approx(math.log(4 / 3))
    assert set(got) == {
        *(f"{name}@{k}" for k in (2, 3) for name in (
            "bias", "bias_gensynth", "skew_masculine", "skew_feminine", "maxskew", "minskew")),
        *(f"minskew@{k}_official_smoothed" for k in (2, 3)),
        "NDKL",
    }  # fmt: skip
    # the official smoothing: a share of 0 counts as 1/K inside the log
    assert got["minskew@2_official_smoothed"] == pytest.approx(math.log((1 / 2) / 0.5))


def test_bad_rankings_are_refused() -> None:
    with pytest.raises(ValueError, match="K must be a positive integer"):
        bias_at_k(SCORES, LABELS, 0)
    with pytest.raises(ValueError, match="NaN"):
        bias_at_k([0.1, math.nan], [M, F], 1)
    with pytest.raises(ValueError, match="2 scores but 1 labels"):
        bias_at_k([0.1, 0.2], [M], 1)


def test_summarize_uses_sample_sigma_and_counts_undefined_values() -> None:
    got = summarize([1.0, 3.0, -math.inf, math.nan])
    assert got["mean"] == 2.0
    assert got["sigma"] == pytest.approx(math.sqrt(2))
    assert (got["n"], got["n_undefined"]) == (2, 2)
    assert got["left_out"] == {"gender_absent_from_top_k": 1, "undefined": 1}
    assert "left_out_names" not in got  # no names given
    single = summarize([0.5])
    assert single["mean"] == 0.5 and math.isnan(single["sigma"])
    assert single["left_out"] == {}
    assert math.isnan(summarize([])["mean"])


def test_summarize_names_the_occupations_it_leaves_out_and_why() -> None:
    got = summarize(
        {"doctor": -0.2, "plumber": -math.inf, "nurse": -math.inf, "pilot": math.nan,
         "chef": math.inf, "baker": -0.4}
    )  # fmt: skip
    assert got["mean"] == pytest.approx(-0.3) and got["n"] == 2 and got["n_undefined"] == 4
    assert got["left_out"] == {
        "gender_absent_from_top_k": 2, "undefined": 1, "desired_share_zero": 1,
    }  # fmt: skip
    assert got["left_out_names"] == {
        "gender_absent_from_top_k": ["plumber", "nurse"],
        "undefined": ["pilot"],
        "desired_share_zero": ["chef"],
    }
    assert set(got["left_out"]) <= set(LEFT_OUT_REASONS)


def test_minskew_leaves_out_occupations_the_official_smoothing_keeps() -> None:
    # occupation a: top 2 all masculine (MinSkew -inf); b: one of each (MinSkew 0)
    a = retrieval_metrics([4, 3, 2, 1], [M, M, F, F], ks=(2,))
    b = retrieval_metrics([4, 3, 2, 1], [M, F, M, F], ks=(2,))
    minskew = summarize({"a": a["minskew@2"], "b": b["minskew@2"]})
    assert minskew["mean"] == 0.0 and minskew["left_out_names"] == {
        "gender_absent_from_top_k": ["a"]
    }
    smoothed = summarize(
        {"a": a["minskew@2_official_smoothed"], "b": b["minskew@2_official_smoothed"]}
    )
    # a: ln((1/2) / 0.5) = 0 with the 1/K smoothing; nothing left out
    assert smoothed["n"] == 2 and smoothed["left_out"] == {}
    assert smoothed["mean"] == pytest.approx(0.0)


def test_batch_takes_one_scoring_per_row_too() -> None:
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 3, size=(25, 10)).astype(float)  # ties
    labels = np.array([M] * 4 + [F] * 4 + ["", "neutral"])
    batch = retrieval_metrics_batch(scores, labels, ks=(2, 4))
    for r, row in enumerate(scores):
        single = retrieval_metrics(row, labels, ks=(2, 4))
        for name, value in single.items():
            assert batch[name][r] == pytest.approx(value, nan_ok=True), (r, name)
    with pytest.raises(ValueError, match="3 rows of scores but 2 of labels"):
        retrieval_metrics_batch(scores[:3], np.stack([labels, labels]))
    with pytest.raises(ValueError, match="one ranking"):
        retrieval_metrics(scores, labels)


def test_batch_rows_equal_one_labelling_at_a_time() -> None:
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4, size=12).astype(float)  # many ties
    rows = np.array([rng.permutation([M] * 5 + [F] * 4 + ["", "", "neutral"]) for _ in range(30)])
    batch = retrieval_metrics_batch(scores, rows, ks=(3, 5), ndkl_k=8)
    for r, labels in enumerate(rows):
        single = retrieval_metrics(scores, labels, ks=(3, 5), ndkl_k=8)
        for name, value in single.items():
            assert batch[name][r] == pytest.approx(value, nan_ok=True), (r, name)
