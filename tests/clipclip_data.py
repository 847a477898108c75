"""Embeddings with known label-informative dimensions, for the CLIP-clip tests (the audit's
fitting and the registry's wrapper)."""

from __future__ import annotations

import numpy as np


def informative_embeddings(seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """400 rows x 12 dims: dim 3 depends strongly on the label, dim 7 less, dim 5
    weakly; the rest is noise."""
    rng = np.random.default_rng(seed)
    labels = ["masculine"] * 200 + ["feminine"] * 200
    masculine = np.array([label == "masculine" for label in labels])
    x = rng.normal(size=(400, 12))
    x[:, 3] += 3.0 * masculine
    x[:, 7] -= 1.5 * masculine
    x[:, 5] += 0.6 * masculine
    return x, labels
