"""KNN filter (GenSynth Sec. 4.2, Eq. 4-5) on embeddings with known neighbourhoods."""

from __future__ import annotations

import numpy as np
import pytest

from contrastkit.curation.knn_filter import (
    KnnFilterSettings,
    accept,
    knn_excluding_self,
    knn_filter,
    select_edits,
)
from contrastkit.schema import Gender

M, F = Gender.MASCULINE, Gender.FEMININE


def _line(*xs: float) -> np.ndarray:
    """Points on a line, embedded in 3-d (so distances are |x - y|)."""
    return np.array([[x, 0.0, 0.0] for x in xs], dtype=np.float32)


# Real crops at 0, 1 (M) and 2, 3 (F); edits at 0.4 (->M), 2.6 (->F), 100 (->M),
# 100 (->F, a duplicate) and 2.4 (->M). Stacked indices: real 0-3, edits 4-8.
REAL, REAL_G = _line(0, 1, 2, 3), [M, M, F, F]
SYN, SYN_G = _line(0.4, 2.6, 100, 100, 2.4), [M, F, M, F, M]


@pytest.mark.parametrize("backend", ["faiss", "numpy", "torch"])
def test_p_r_p_g_and_decisions_match_hand_computation(backend: str) -> None:
    result = knn_filter(
        REAL, REAL_G, SYN, SYN_G, KnnFilterSettings(k=4, backend=backend, device="cpu")
    )  # type: ignore[arg-type]
    assert (result.search.backend, result.search.device) == (backend, "cpu")
    # Neighbours by hand (self excluded; the two points at 100 see each other):
    assert result.neighbours.tolist() == [
        [0, 1, 2, 8],  # 0.4: r0 .4, r1 .6, r2 1.6, s4 2.0
        [8, 3, 2, 1],  # 2.6: s4 .2, r3 .4, r2 .6, r1 1.6
        [7, 3, 5, 8],  # 100: its duplicate, r3, s1, s4
        [6, 3, 5, 8],
        [5, 2, 3, 1],  # 2.4: s1 .2, r2 .4, r3 .6, r1 1.4
    ]
    assert result.p_real.tolist() == [0.75, 0.75, 0.25, 0.25, 0.75]
    assert result.p_gender.tolist() == [0.75, 0.5, 0.25, 0.5, 0.25]
    # Eq. 5 with the paper's thresholds: strict inequalities, so P_G = 0.5 fails.
    assert result.accepted.tolist() == [True, False, False, False, False]
    looser = accept(result.p_real, result.p_gender, tau_real=0.08, tau_gender=0.4)
    assert looser.tolist() == [True, True, False, True, False]
    assert accept(result.p_real, result.p_gender, tau_real=0.25).tolist() == [
        True, False, False, False, False
    ]  # fmt: skip


def test_self_is_never_its_own_neighbour_even_among_duplicates() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 8)).astype(np.float32)
    points = np.concatenate([base, base[:20], base[:5]])  # many exact duplicates
    queries = np.arange(len(points))
    for backend in ("faiss", "numpy", "torch"):
        found = knn_excluding_self(points, queries, 6, backend=backend, device="cpu")  # type: ignore[arg-type]
        assert found.shape == (len(points), 6)
        assert not (found == queries[:, None]).any()
        assert all(len(set(row)) == 6 for row in found.tolist())


def test_faiss_torch_and_numpy_agree_on_random_embeddings() -> None:
    rng = np.random.default_rng(1)
    points = rng.normal(size=(500, 32)).astype(np.float32)
    queries = rng.choice(500, size=100, replace=False)
    a = knn_excluding_self(points, queries, 10, backend="faiss", device="cpu")
    b = knn_excluding_self(points, queries, 10, backend="numpy")
    c = knn_excluding_self(points, queries, 10, backend="torch", device="cpu")
    assert [set(r) for r in a.tolist()] == [set(r) for r in b.tolist()]
    np.testing.assert_array_equal(c, b)  # same neighbours in the same order
    # And against the definition: sort all distances.
    d = ((points[queries][:, None, :] - points[None, :, :]) ** 2).sum(-1)
    d[np.arange(100), queries] = np.inf
    assert [set(r) for r in np.argsort(d, axis=1)[:, :10].tolist()] == [set(r) for r in a.tolist()]


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 10 embeddings"):
        knn_filter(REAL, REAL_G, SYN, SYN_G, KnnFilterSettings(k=9))
    with pytest.raises(ValueError, match="3 labels for 4"):
        knn_filter(REAL, REAL_G[:3], SYN, SYN_G, KnnFilterSettings(k=2))
    with pytest.raises(ValueError, match="differ in width"):
        knn_filter(REAL, REAL_G, SYN[:, :2], SYN_G, KnnFilterSettings(k=2))
    with pytest.raises(ValueError, match="NaN"):
        knn_filter(REAL * np.nan, REAL_G, SYN, SYN_G, KnnFilterSettings(k=2))
    with pytest.raises(ValueError, match="NaN or infinite"):
        knn_filter(REAL, REAL_G, np.where(SYN == 100, np.inf, SYN), SYN_G, KnnFilterSettings(k=2))
    # Large finite values whose float32 sum overflows are still accepted.
    from contrastkit.curation.knn_filter import _as_matrix

    assert _as_matrix("points", np.full((6, 2), 3e38, dtype=np.float32)).shape == (6, 2)
    with pytest.raises(ValueError, match="needs a FAISS build with GPU support"):
        knn_excluding_self(REAL, np.arange(4), 2, backend="faiss", device="cuda")


def test_select_edits_keeps_sources_with_both_genders_and_draws_reproducibly() -> None:
    sources = ["a"] * 4 + ["b"] * 4 + ["c"] * 2
    targets = [M, M, F, F, M, M, F, F, M, F]
    accepted = [True, True, True, False, True, True, False, False, True, True]
    chosen = select_edits(sources, targets, accepted, seed=3)
    assert list(chosen) == ["a", "c"]  # b has no accepted feminine edit
    assert chosen["a"][F] == 2 and chosen["a"][M] in (0, 1)
    assert chosen["c"] == {M: 8, F: 9}
    # Per-source generators: dropping source c does not change source a's draw.
    assert select_edits(sources[:8], targets[:8], accepted[:8], seed=3)["a"] == chosen["a"]
    draws = {select_edits(sources, targets, accepted, seed=s)["a"][M] for s in range(20)}
    assert draws == {0, 1}


def test_auto_uses_faiss_when_installed_and_numpy_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from contrastkit.curation.knn_filter import KnnSearch, knn_excluding_self, resolve_backend
    from contrastkit.errors import ConfigError

    rng = np.random.default_rng(3)
    points = rng.normal(size=(300, 16)).astype(np.float32)
    with_faiss = knn_excluding_self(points, np.arange(40), 10, device="cpu")
    assert resolve_backend("auto", "cpu") == KnnSearch("faiss", "cpu", 0)
    monkeypatch.setitem(sys.modules, "faiss", None)  # as if faiss-cpu were not installed
    assert resolve_backend("auto", "cpu") == KnnSearch("numpy", "cpu", 0)
    np.testing.assert_array_equal(
        knn_excluding_self(points, np.arange(40), 10, device="cpu"), with_faiss
    )
    with pytest.raises(ConfigError, match=r"contrastkit\[faiss\]"):
        knn_excluding_self(points, np.arange(40), 10, backend="faiss")
