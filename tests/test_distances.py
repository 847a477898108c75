"""The one pairwise distance helper (KNN filter, recall@K)."""

from __future__ import annotations

import numpy as np
import pytest

from contrastkit.distances import squared_euclidean


def test_squared_euclidean_is_the_pairwise_definition() -> None:
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((7, 5)).astype(np.float32)
    points = rng.standard_normal((11, 5)).astype(np.float32)
    expected = ((queries[:, None, :] - points[None, :, :]) ** 2).sum(axis=2)
    found = squared_euclidean(queries, points)
    assert found.shape == (7, 11) and found.dtype == np.float32
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-5)


def test_identical_vectors_are_at_zero_never_below() -> None:
    points = np.full((3, 512), 0.1, dtype=np.float32)
    assert (squared_euclidean(points, points) >= 0).all()
    assert squared_euclidean(np.array([[1, 2]]), np.array([[1, 2], [4, 6]])).tolist() == [
        [0.0, 25.0]
    ]  # integers are promoted to float64


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="2-d"):
        squared_euclidean(np.zeros(3), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="differ in width: 3 vs 4"):
        squared_euclidean(np.zeros((1, 3)), np.zeros((2, 4)))
