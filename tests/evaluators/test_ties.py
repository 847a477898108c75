"""Tied scores: every retrieval metric is its exact expectation over the uniformly random
orders of the tied images (issue 14, item 3).

The reference here is independent of the library: a Monte-Carlo mean over 20,000 random
tie orders, each order scored by the plain formulas of VisoGender Appendix A and GenSynth
Eq. 1-3 written out below. The exact values must lie within four standard errors of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

import contrastkit.evaluators.tie_orders as tie_orders_module
from contrastkit.evaluators.metrics import retrieval_metrics, retrieval_metrics_batch

M, F = "masculine", "feminine"
DRAWS = 20_000


def _reference(
    ordered: np.ndarray,
    ks: Sequence[int],
    desired: tuple[float, float] | None = None,
    ndkl_k: int | None = None,
) -> dict[str, np.ndarray]:
    """The formulas on untied rankings: ``ordered`` is ``(draws, n)`` labels, best first."""
    draws, n = ordered.shape
    is_m, is_f = ordered == M, ordered == F
    labelled = is_m | is_f
    # labelled images only, in rank order (GenSynth: undefined images are ignored)
    keep = np.argsort(~labelled, axis=1, kind="stable")
    lab_m = np.take_along_axis(is_m, keep, axis=1)
    lab_f = np.take_along_axis(is_f, keep, axis=1)
    n_lab = int(labelled[0].sum())
    if desired is None:
        q_m, q_f = lab_m[0].sum() / n_lab, lab_f[0].sum() / n_lab
    else:
        q_m, q_f = desired
    cm, cf = np.cumsum(lab_m, axis=1), np.cumsum(lab_f, axis=1)
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in ks:
            top = min(k, n)
            n_m = is_m[:, :top].sum(axis=1)
            n_f = is_f[:, :top].sum(axis=1)
            out[f"bias@{k}"] = (n_m - n_f) / top
            out[f"bias_gensynth@{k}"] = np.where(n_m + n_f > 0, (n_m - n_f) / (n_m + n_f), 0.0)
            depth = min(k, n_lab)
            p_m, p_f = cm[:, depth - 1] / depth, cf[:, depth - 1] / depth
            s_m, s_f = np.log(p_m / q_m), np.log(p_f / q_f)
            out[f"skew_masculine@{k}"], out[f"skew_feminine@{k}"] = s_m, s_f
            out[f"maxskew@{k}"] = np.maximum(s_m, s_f)
            out[f"minskew@{k}"] = np.minimum(s_m, s_f)
            soft_m = np.log(np.where(p_m == 0, 1 / depth, p_m) / q_m)
            soft_f = np.log(np.where(p_f == 0, 1 / depth, p_f) / q_f)
            out[f"minskew@{k}_official_smoothed"] = np.minimum(soft_m, soft_f)
        depth = n_lab if ndkl_k is None else min(ndkl_k, n_lab)
        i = np.arange(1, depth + 1)
        kl = np.zeros((draws, depth))
        for counts, q in ((cm, q_m), (cf, q_f)):
            p = counts[:, :depth] / i
            kl += np.where(p > 0, p * np.log(p / q), 0.0)
        weights = 1 / np.log2(i + 1)
        out["NDKL"] = (kl * weights).sum(axis=1) / weights.sum()
    return out


def _random_orders(scores: np.ndarray, labels: np.ndarray, seed: int) -> np.ndarray:
    """``(DRAWS, n)`` labels ranked by descending score, ties in a uniformly random order."""
    rng = np.random.default_rng(seed)
    tie_break = rng.random((DRAWS, scores.size))
    order = np.lexsort((tie_break, np.broadcast_to(-scores, tie_break.shape)), axis=-1)
    ordered: np.ndarray = labels[order]
    return ordered


# (scores, labels, ks, desired, ndkl_k): each cuts tie blocks somewhere that matters
PATTERNS = {
    "block across K=5": (
        [0.9, 0.8, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.1, 0.0],
        [M, F, M, F, F, M, F, M, F, M],
        (3, 5),
        None,
        None,
    ),
    "everything tied, undefined labels too": (
        [1.0] * 12,
        [M, M, F, F, F, M, "", "neutral", M, F, "", F],
        (3, 5),
        None,
        None,
    ),
    "several blocks, undefined inside them": (
        [3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 0, 0],
        [M, M, F, "", F, M, F, M, "", F, M, F],
        (2, 5, 8),
        None,
        None,
    ),
    "unbalanced pool, blocks across K=5 and K=10": (
        [5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 3, 2],
        [M, M, M, M, F, F, F, F, M, F, F, M, M, M],
        (5, 10),
        None,
        None,
    ),
    "fixed desired shares and NDKL depth": (
        [2, 2, 2, 2, 1, 1, 1, 1, 1, 1],
        [M, M, M, F, F, F, M, F, F, ""],
        (4, 6),
        (0.5, 0.5),
        6,
    ),
}


@pytest.mark.parametrize("name", PATTERNS)
def test_exact_expectations_agree_with_a_20000_order_monte_carlo_mean(name: str) -> None:
    scores, labels, ks, desired, ndkl_k = PATTERNS[name]
    score_array = np.asarray(scores, dtype=float)
    label_array = np.asarray(labels, dtype=object)
    wanted = None if desired is None else {M: desired[0], F: desired[1]}
    exact = retrieval_metrics(score_array, label_array, ks, desired=wanted, ndkl_k=ndkl_k)
    samples = _reference(_random_orders(score_array, label_array, seed=7), ks, desired, ndkl_k)
    assert set(samples) == set(exact)
    checked_inf = 0
    for metric, draws in samples.items():
        value = exact[metric]
        if np.isneginf(draws).any():
            # some order leaves a gender out of the top K: the expectation is -inf
            assert value == -math.inf, metric
            checked_inf += 1
            continue
        assert math.isfinite(value), metric
        mean = float(draws.mean())
        error = float(draws.std(ddof=1)) / math.sqrt(DRAWS)
        assert abs(value - mean) <= 4 * error + 1e-12, (metric, value, mean, error)
    if name == "everything tied, undefined labels too":
        assert checked_inf >= 3  # skews and MinSkew at K=3 can miss a gender


def test_untied_rankings_are_the_plain_formulas_values() -> None:
    rng = np.random.default_rng(3)
    labels = np.array([M] * 7 + [F] * 6 + ["", "neutral"], dtype=object)
    for _ in range(20):
        scores = rng.random(labels.size)
        got = retrieval_metrics(scores, labels, (1, 4, 9))
        ordered = labels[np.argsort(-scores)][None, :]
        want = _reference(ordered, (1, 4, 9))
        for metric, value in want.items():
            assert got[metric] == pytest.approx(float(value[0]), abs=1e-15), metric


def test_the_expected_counts_understated_maxskew_and_ndkl() -> None:
    # 20 images, 10 per gender, all tied: shared counts are always balanced (MaxSkew 0,
    # NDKL 0), while every real order has the random-ranking values of Appendix G
    scores = np.zeros(20)
    labels = np.array([M] * 10 + [F] * 10, dtype=object)
    got = retrieval_metrics(scores, labels, (5, 10))
    hyper = [math.comb(10, x) * math.comb(10, 5 - x) / math.comb(20, 5) for x in range(6)]
    maxskew5 = sum(p * math.log(max(x, 5 - x) / 5 / 0.5) for x, p in enumerate(hyper))
    assert got["maxskew@5"] == pytest.approx(maxskew5, rel=1e-12)
    assert got["maxskew@5"] == pytest.approx(0.2769, abs=5e-5)  # Tab. 9's random mean
    assert got["maxskew@10"] == pytest.approx(0.1504, abs=5e-5)
    assert got["NDKL"] > 0.16
    assert got["bias@5"] == pytest.approx(0.0, abs=1e-15)


def test_the_result_does_not_depend_on_the_order_of_the_input() -> None:
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 4, size=16).astype(float)
    labels = rng.permutation(np.array([M] * 7 + [F] * 7 + ["", ""], dtype=object))
    first = retrieval_metrics(scores, labels, (3, 6))
    for _ in range(5):
        order = rng.permutation(16)
        again = retrieval_metrics(scores[order], labels[order], (3, 6))
        for metric, value in first.items():
            assert again[metric] == pytest.approx(value, rel=1e-12, nan_ok=True), metric


def test_large_tie_blocks_are_evaluated_in_chunks_with_the_same_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(5)
    labels = rng.permutation(np.array([M] * 150 + [F] * 130 + [""] * 20, dtype=object))
    scores = np.repeat([3.0, 2.0, 1.0], 100)
    whole = retrieval_metrics_batch(scores, labels, (50, 120))
    monkeypatch.setattr(tie_orders_module, "_GRID_CELLS", 97)  # many small chunks
    chunked = retrieval_metrics_batch(scores, labels, (50, 120))
    for metric, value in whole.items():
        np.testing.assert_allclose(chunked[metric], value, rtol=1e-12, err_msg=metric)
    assert np.isfinite(whole["NDKL"]).all() and whole["NDKL"][0] > 0


def test_many_tied_rankings_at_once_match_one_at_a_time() -> None:
    rng = np.random.default_rng(6)
    scores = np.round(rng.random(20) * 3) / 3  # four score levels: many ties
    rows = np.array([rng.permutation([M] * 10 + [F] * 10) for _ in range(300)], dtype=object)
    batch = retrieval_metrics_batch(scores, rows, (5, 10))
    for r in range(0, 300, 37):
        single = retrieval_metrics(scores, rows[r], (5, 10))
        for metric, value in single.items():
            assert batch[metric][r] == pytest.approx(value, rel=1e-12, nan_ok=True), metric
