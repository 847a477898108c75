"""The audit's retrieval baselines (GenSynth Sec. 3): TF-IDF and random scores give
hand-computed Bias@K and MaxSkew@K, and the partial-sort metrics equal the full ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contrastkit.audit.baselines import (
    Cutoffs,
    QueryOwners,
    balanced_subsample,
    random_scores,
    retrieval_bias,
    tfidf_scores,
)


def _one_query(block, query: int):  # type: ignore[no-untyped-def]
    return lambda start, stop: block(query + start, query + stop)


def test_tfidf_scores_an_image_by_its_most_similar_caption() -> None:
    captions = ["skateboard ramp", "skateboard park", "ramp", "kitchen oven"]
    block = tfidf_scores(captions, [0, 1, 1, 2])
    scores = block(0, 4)
    assert scores.shape == (4, 3)
    idf2, idf1 = math.log(5 / 3) + 1, math.log(5 / 2) + 1  # df 2 (skateboard, ramp), df 1
    # query 0 vs image 1: max(cos with "skateboard park", cos with "ramp") = 1/sqrt(2)
    assert scores[0, 1] == pytest.approx(1 / math.sqrt(2))
    assert scores[1, 0] == pytest.approx(idf2 / math.sqrt(idf2**2 + idf1**2) / math.sqrt(2))
    assert scores[0, 2] == 0.0 and scores[3, 2] == pytest.approx(1.0)


def test_tfidf_baseline_matches_hand_computed_metrics() -> None:
    captions = ["skateboard ramp", "skateboard park", "kitchen oven", "kitchen sink"]
    labels = ["masculine", "masculine", "feminine", "masculine"]
    owners = [0, 1, 2, 3]
    block = tfidf_scores(captions, owners)

    def metrics(query: int) -> dict[str, float]:
        found = retrieval_bias(
            _one_query(block, query), labels, QueryOwners([owners[query]], exclude_own=True),
            Cutoffs(bias=(1, 2), skew=(1,)),
        )  # fmt: skip
        return {name: stats["mean"] for name, stats in found.items()}

    # query 0: its own image is left out; image 1 shares "skateboard", images 2 (f) and
    # 3 (m) tie at 0. Top 1 = image 1; top 2 = image 1 and image 2 or 3 (half each).
    assert metrics(0) == pytest.approx(
        {"bias@1": 1.0, "bias@2": 0.5 * 0.0 + 0.5 * 1.0, "maxskew@1": math.log(1 / (2 / 3))}
    )
    # query 2: image 3 shares "kitchen"; every candidate is masculine (p_d = 1).
    assert metrics(2) == pytest.approx({"bias@1": 1.0, "bias@2": 1.0, "maxskew@1": 0.0})
    everything = retrieval_bias(
        block, labels, QueryOwners(owners, exclude_own=True), Cutoffs(bias=(1,), skew=(1,))
    )
    # query 1 -> image 0 (m); query 3 -> image 2 (f): Bias@1 = (1 + 1 - 1 + 1) / 4
    assert everything["bias@1"]["mean"] == pytest.approx(0.5)
    assert everything["bias@1"]["n"] == 4


def test_random_baseline_matches_hand_computed_metrics() -> None:
    labels = ["masculine", "masculine", "feminine", "undefined", "feminine"]
    owners = [0, 1, 2, 3, 4]
    found = retrieval_bias(
        random_scores(np.random.default_rng(3), 5), labels, QueryOwners(owners),
        Cutoffs(bias=(2,), skew=(2,)), block=2,
    )  # fmt: skip
    scores = np.random.default_rng(3).random((5, 5))
    bias, skew = [], []
    for row in scores:
        top = [labels[i] for i in np.argsort(-row)[:2]]
        n_m, n_f = top.count("masculine"), top.count("feminine")
        bias.append((n_m - n_f) / (n_m + n_f) if n_m + n_f else 0.0)
        labelled = [labels[i] for i in np.argsort(-row) if labels[i] != "undefined"][:2]
        skew.append(max(math.log(labelled.count(g) / 2 / 0.5) for g in set(labelled)))
    assert found["bias@2"]["mean"] == pytest.approx(np.mean(bias))
    assert found["maxskew@2"]["mean"] == pytest.approx(np.mean(skew))


def test_balanced_subsample_equalises_genders_and_keeps_the_undefined_share() -> None:
    labels = ["masculine"] * 60 + ["feminine"] * 30 + ["undefined"] * 60
    drawn = []
    for run in range(5):
        chosen = balanced_subsample(labels, np.random.default_rng((0, run)))
        picked = [labels[i] for i in chosen]
        assert picked.count("masculine") == picked.count("feminine") == 30
        assert picked.count("undefined") == 40  # 40 / 100 = 60 / 150
        assert len(set(chosen.tolist())) == chosen.size
        drawn.append(tuple(chosen.tolist()))
    assert len(set(drawn)) == 5
    odd = ["masculine"] * 10 + ["feminine"] * 4 + ["undefined"] * 7  # share 1/3
    picked = [odd[i] for i in balanced_subsample(odd, np.random.default_rng(1))]
    assert picked.count("undefined") == 4 and len(picked) == 12  # floor(7 * 8 / 14)


@pytest.mark.parametrize("levels", [None, 3, 40])
def test_partial_sort_metrics_equal_the_full_metrics(levels: int | None) -> None:
    from contrastkit.audit.baselines import bias_and_maxskew
    from contrastkit.evaluators.metrics import retrieval_metrics_batch

    rng = np.random.default_rng(levels or 0)
    scores = rng.random((40, 60)) if levels is None else rng.integers(0, levels, (40, 60)) * 1.0
    labels = rng.choice(["masculine", "feminine", "undefined"], size=(40, 60), p=[0.5, 0.2, 0.3])
    labels[0] = "undefined"  # no labelled image at all
    labels[1, :] = "masculine"  # one gender only
    fast = bias_and_maxskew(scores, labels, (1, 5, 10), (5, 25, 59, 100))
    full = retrieval_metrics_batch(scores, labels, (1, 5, 10, 25, 59, 100))
    for k in (1, 5, 10):
        np.testing.assert_allclose(fast[f"bias@{k}"], full[f"bias_gensynth@{k}"], atol=1e-12)
    for k in (5, 25, 59, 100):
        np.testing.assert_allclose(fast[f"maxskew@{k}"], full[f"maxskew@{k}"], atol=1e-12)
