"""Pairwise distances between embeddings: the one helper every nearest-neighbour search
and ranking in contrastkit uses.

GenSynth ranks by Euclidean distance twice: the KNN filter of Sec. 4.2 (the neighbours of
an edit among ``R ∪ S``, :mod:`contrastkit.curation.knn_filter`) and the text-to-image
recall@K of Sec. 4.3 (:mod:`contrastkit.builders.quality`). Both take their distance
matrix from :func:`squared_euclidean`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["squared_euclidean"]


def _matrix(name: str, array: np.ndarray) -> np.ndarray:
    matrix = np.asarray(array)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array (n, dim), found shape {matrix.shape}")
    if not np.issubdtype(matrix.dtype, np.floating):
        matrix = matrix.astype(np.float64)
    return matrix


def squared_euclidean(queries: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between every query and every point.

    ``D[i, j] = ||q_i - p_j||² = ||q_i||² - 2 q_i·p_j + ||p_j||²``, computed with one
    matrix product (BLAS), so ``(n, m)`` distances cost ``n m d`` multiply-adds and no
    ``(n, m, d)`` temporary. Rounding can make the expansion slightly negative for
    (near-)identical vectors; such entries are clipped to 0. Ranking by squared distance
    is ranking by distance.

    Args:
        queries: ``(n, d)`` array.
        points: ``(m, d)`` array of the same width ``d``.

    Returns:
        ``(n, m)`` array of squared distances, in the floating dtype the inputs promote
        to (float32 for float32 embeddings; integer inputs give float64).

    Raises:
        ValueError: an input that is not 2-d, or widths that differ (a bug in the caller:
            embeddings of one model always share their width).
    """
    q = _matrix("queries", queries)
    p = _matrix("points", points)
    if q.shape[1] != p.shape[1]:
        raise ValueError(
            f"queries and points differ in width: {q.shape[1]} vs {p.shape[1]} "
            "(embeddings of different models?)"
        )
    distances: np.ndarray = q @ p.T
    distances *= -2.0
    distances += np.einsum("ij,ij->i", q, q)[:, None]
    distances += np.einsum("ij,ij->i", p, p)[None, :]
    np.maximum(distances, 0.0, out=distances)
    return distances
