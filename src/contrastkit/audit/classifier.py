"""Spurious-correlation classifier on captions (GenSynth Sec. 3.3, after Schwemmer et al.
2020): can the gender label be predicted from gender-neutralised captions alone?

The images with a defined label (Sec. 3.2) are split, stratified by label and seeded,
into a training and a held-out test part; each image is one document, its
gender-neutral captions (Tab. 4) joined. A linear model, L2-regularised logistic
regression (``C = 1``, intercept not penalised, fitted by L-BFGS) on TF-IDF features
fitted on the training documents (:class:`contrastkit.audit.text.Tfidf`), predicts
``masculine`` (1) against ``feminine`` (0). Its held-out ROC AUC, the probability that a
masculine test image scores above a feminine one (ties count half), comes with a
percentile bootstrap interval over the test images
(:mod:`contrastkit.evaluators.bootstrap`). An AUC of 0.5 is chance; the paper reports
78.0% on COCO (BERT-base on neutral captions, train2017 -> val2017): the set leaks gender
through context words. The paper's fine-tuned BERT is not reproduced here; the linear
model is the fast default the issue asks for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contrastkit.audit.text import Tfidf
from contrastkit.evaluators.bootstrap import percentile_interval, resample_indices

__all__ = ["auc", "auc_bootstrap", "caption_classifier", "fit_logistic", "stratified_split"]


def auc(scores: ArrayLike, positive: ArrayLike) -> float:
    """ROC AUC: ``P(score of a positive > score of a negative)``, ties counting half;
    ``nan`` without positives or negatives."""
    values = auc_weighted(np.asarray(scores, np.float64), np.asarray(positive, bool), None)
    return float(values[0])


def auc_weighted(
    scores: np.ndarray, positive: np.ndarray, weights: np.ndarray | None
) -> np.ndarray:
    """AUC of each row of ``weights`` (``(B, n)`` multiplicities; ``None``: one row of
    ones), computed from one sort of ``scores`` with tied scores grouped."""
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]) if ranked.size else ranked
    matrix = np.ones((1, scores.size)) if weights is None else np.asarray(weights, np.float64)
    matrix = matrix[:, order]
    is_positive = positive[order]
    pos = np.add.reduceat(matrix * is_positive, starts, axis=1)
    neg = np.add.reduceat(matrix * ~is_positive, starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    total = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(
            total > 0, (pos * (below + 0.5 * neg)).sum(axis=1) / total, np.nan
        )
    return result


def auc_bootstrap(
    scores: ArrayLike,
    positive: ArrayLike,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the AUC, resampling the test items with
    replacement (``resamples`` resamples, ``numpy.random.default_rng(seed)``)."""
    values = np.asarray(scores, np.float64)
    labels = np.asarray(positive, bool)
    rng = np.random.default_rng(seed)
    n = values.size
    found = []
    for start in range(0, resamples, 100):
        rows = min(100, resamples - start)
        index = resample_indices(rng, n, rows)
        flat = (index + (np.arange(rows) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=rows * n).reshape(rows, n)
        found.append(auc_weighted(values, labels, counts))
    return percentile_interval(np.concatenate(found), level)


def fit_logistic(
    features: Any, target: np.ndarray, c: float = 1.0, max_iterations: int = 1000
) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression: minimise
    ``0.5 |w|^2 + C sum_i log(1 + exp(-y_i' (x_i w + b)))`` (``y' = ±1``; the intercept
    ``b`` unpenalised) with L-BFGS. Returns ``(w, b)``."""
    from scipy.optimize import minimize

    y = np.asarray(target, dtype=np.float64)
    dims = features.shape[1]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:dims], theta[dims]
        z = np.asarray(features @ w).ravel() + b
        loss = c * float(np.sum(np.logaddexp(0.0, z) - y * z)) + 0.5 * float(w @ w)
        residual = c * (1.0 / (1.0 + np.exp(-z)) - y)
        gradient = np.concatenate([np.asarray(features.T @ residual).ravel() + w, [residual.sum()]])
        return loss, gradient

    found = minimize(
        objective, np.zeros(dims + 1), jac=True, method="L-BFGS-B",
        options={"maxiter": max_iterations},
    )  # fmt: skip
    theta = np.asarray(found.x)
    return theta[:dims], float(theta[dims])


def stratified_split(
    labels: Sequence[str], test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Train and test indices (sorted): of each label's items, ``ceil(test_fraction *
    n)`` drawn at random for the test part (at least 1, at most ``n - 1``)."""
    names = np.asarray(labels, dtype=object)
    test: list[np.ndarray] = []
    for label in sorted(set(names.tolist())):
        members = np.flatnonzero(names == label)
        count = min(max(1, math.ceil(test_fraction * members.size)), members.size - 1)
        test.append(rng.choice(members, count, replace=False))
    test_index = np.sort(np.concatenate(test)) if test else np.zeros(0, np.int64)
    train_index = np.setdiff1d(np.arange(names.size), test_index)
    return train_index, test_index


def caption_classifier(
    documents: Sequence[str],
    labels: Sequence[str],
    *,
    test_fraction: float = 0.3,
    seed: int = 0,
    resamples: int = 1000,
    level: float = 0.95,
    top_words: int = 10,
) -> dict[str, Any]:
    """Predict the gender label from neutral captions (module docstring).

    Args:
        documents: one per image, its neutral captions joined.
        labels: each image's label; only ``masculine`` and ``feminine`` images are used.
        test_fraction: the held-out share of each label.
        seed: seeds the split (``default_rng(seed)``) and the bootstrap
            (``default_rng(seed + 1)``).
        resamples, level: the bootstrap interval.
        top_words: how many of the heaviest words per gender to report.

    Returns:
        ``auc``, ``interval`` ``[low, high]``, ``level``, ``resamples``, ``train`` and
        ``test`` (image counts per gender), ``test_fraction`` and ``words`` (the terms
        with the largest weights toward ``masculine`` and toward ``feminine``); or
        ``{"skipped": reason}`` when a gender has fewer than two images.
    """
    names = np.asarray(labels, dtype=object)
    keep = np.flatnonzero((names == "masculine") | (names == "feminine"))
    counts = {g: int((names[keep] == g).sum()) for g in ("masculine", "feminine")}
    if min(counts.values()) < 2:
        return {"skipped": f"needs at least 2 images of each gender, found {counts}"}
    kept_docs = [documents[int(i)] for i in keep]
    kept_labels = names[keep]
    train, test = stratified_split(kept_labels.tolist(), test_fraction, np.random.default_rng(seed))
    vectorizer = Tfidf.fit(kept_docs[i] for i in train)
    features = vectorizer.transform(kept_docs)
    target = (kept_labels == "masculine").astype(np.float64)
    weights, intercept = fit_logistic(features[train], target[train])
    test_scores = np.asarray(features[test] @ weights).ravel() + intercept
    positive = target[test] > 0.5
    low, high = auc_bootstrap(
        test_scores, positive, resamples=resamples, level=level, seed=seed + 1
    )
    terms = vectorizer.terms
    order = np.argsort(weights, kind="stable")
    return {
        "auc": auc(test_scores, positive),
        "interval": [low, high],
        "level": level,
        "resamples": resamples,
        "test_fraction": test_fraction,
        "train": {g: int((kept_labels[train] == g).sum()) for g in ("masculine", "feminine")},
        "test": {g: int((kept_labels[test] == g).sum()) for g in ("masculine", "feminine")},
        "words": {
            "masculine": [terms[i] for i in order[::-1][:top_words] if weights[i] > 0],
            "feminine": [terms[i] for i in order[:top_words] if weights[i] < 0],
        },
    }
