"""Exact expectations over the orders of tied scores (the *Ties* convention of
:mod:`contrastkit.evaluators.metrics`).

A ranking with tied scores has no single order: every metric of
:mod:`contrastkit.evaluators.ranking_metrics` is its expectation over the uniformly
random orders of the tied images. :class:`TieBlocks` finds, for every prefix of each
ranking, the block of equal scores the prefix cuts and what it takes from it; the class
counts drawn from a block are (multivariate) hypergeometric, and
:func:`two_class_expectation` / :func:`three_class_expectation` sum a metric over that
distribution, in chunks of at most :data:`_GRID_CELLS` grid cells.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property

import numpy as np

__all__ = ["TieBlocks", "three_class_expectation", "two_class_expectation"]

#: Grid cells evaluated at once when taking expectations over tie orders (bounds memory).
_GRID_CELLS = 1 << 21


class TieBlocks:
    """Where every prefix of each row's ranking cuts its tie blocks.

    The images are sorted by descending score (images outside ``valid`` after all valid
    ones, never tied with them). For the prefix of length ``i`` (array position ``i - 1``)
    the *block* is the group of equal scores holding its ``i``-th image; ``above[c]``
    counts the class-``c`` images ranked strictly above the block, ``inside[c]`` the
    class-``c`` images of the block, ``size`` the block's size and ``slots`` how many of
    its images the prefix takes. Under a uniformly random order of tied images the
    class counts the prefix takes from its block are multivariate hypergeometric
    (``slots`` draws from ``inside``); everything above is certain.
    """

    def __init__(self, scores: np.ndarray, codes: np.ndarray, valid: np.ndarray, classes: int):
        rows, n = scores.shape
        order = np.lexsort((-scores, ~valid), axis=-1)
        ranked = np.take_along_axis(scores, order, axis=1)
        ranked_valid = np.take_along_axis(valid, order, axis=1)
        ranked_codes = np.where(ranked_valid, np.take_along_axis(codes, order, axis=1), classes)
        position = np.broadcast_to(np.arange(n), (rows, n))
        starts = np.ones((rows, n), dtype=bool)
        starts[:, 1:] = (ranked[:, 1:] != ranked[:, :-1]) | (
            ranked_valid[:, 1:] != ranked_valid[:, :-1]
        )
        ends = np.ones((rows, n), dtype=bool)
        ends[:, :-1] = starts[:, 1:]
        first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
        last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
        self.size = last - first + 1
        self.slots = position - first + 1
        self.above = np.zeros((classes, rows, n), dtype=np.int64)
        self.inside = np.zeros((classes, rows, n), dtype=np.int64)
        for c in range(classes):
            running = np.cumsum(ranked_codes == c, axis=1)
            before = np.where(
                first > 0, np.take_along_axis(running, np.maximum(first - 1, 0), axis=1), 0
            )
            self.above[c] = before
            self.inside[c] = np.take_along_axis(running, last, axis=1) - before

    @cached_property
    def expected(self) -> np.ndarray:
        """``(classes, rows, n)``: the expected count of each class among the top ``i``
        (exact integers where the prefix does not cut a block of mixed classes)."""
        result: np.ndarray = self.above + self.slots * self.inside / self.size
        return result

    @cached_property
    def uncertain(self) -> np.ndarray:
        """``(rows, n)``: prefixes whose class counts depend on the order of tied images:
        they take part of a block holding more than one class."""
        counted = self.inside.sum(axis=0) == self.size  # not the block of invalid images
        mixed = self.inside.max(axis=0) < self.size
        result: np.ndarray = (self.slots < self.size) & counted & mixed
        return result


def _log_choose(table: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``ln C(n, k)`` from a table of ``ln m!``; ``-inf`` outside ``0 <= k <= n``."""
    inside = (k >= 0) & (k <= n)
    n_safe = np.where(inside, n, 0)
    k_safe = np.where(inside, k, 0)
    value = table[n_safe] - table[k_safe] - table[n_safe - k_safe]
    result: np.ndarray = np.where(inside, value, -np.inf)
    return result


def _log_factorials(largest: int) -> np.ndarray:
    """``ln m!`` for ``m = 0 .. largest`` (``math.lgamma``: accurate, and no SciPy import)."""
    return np.array([math.lgamma(m + 1.0) for m in range(largest + 1)], dtype=np.float64)


def _expect(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum(weights * values)`` over the last axes, over cells with positive weight only
    (so ``-inf`` values of impossible outcomes do not enter)."""
    with np.errstate(invalid="ignore"):
        terms = np.where(weights > 0, weights * values, 0.0)
    result: np.ndarray = terms.reshape(terms.shape[0], -1).sum(axis=1)
    return result


def two_class_expectation(
    metric: Callable[..., tuple[np.ndarray, ...]],
    above: tuple[np.ndarray, np.ndarray],
    inside: tuple[np.ndarray, np.ndarray],
    slots: np.ndarray,
    *params: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Expectations of ``metric(count_m, count_f, *params)`` (each output) over the
    hypergeometric number ``x`` of masculine images among ``slots`` drawn from a block of
    ``inside = (t_m, t_f)``: ``P(x) = C(t_m, x) C(t_f, slots - x) / C(t_m + t_f, slots)``,
    counts ``above_m + x`` and ``above_f + slots - x``. All arguments are ``(E,)``.

    Cost: ``O(E * X)`` with ``X`` the widest support, ``min(slots, t_m, t_f) + 1``,
    evaluated in chunks of at most :data:`_GRID_CELLS` cells.
    """
    t_m, t_f = inside
    low = np.maximum(0, slots - t_f)
    high = np.minimum(slots, t_m)
    width = int((high - low).max(initial=0)) + 1
    table = _log_factorials(int((t_m + t_f).max(initial=0)))
    outputs: list[list[np.ndarray]] = []
    step = max(1, _GRID_CELLS // width)
    for start in range(0, slots.size, step):
        part = slice(start, start + step)
        x = low[part, None] + np.arange(width)[None, :]
        s = slots[part, None]
        log_p = (
            _log_choose(table, t_m[part, None], x)
            + _log_choose(table, t_f[part, None], s - x)
            - _log_choose(table, t_m[part, None] + t_f[part, None], s)
        )
        weights = np.where(x <= high[part, None], np.exp(log_p), 0.0)
        counts_m = (above[0][part, None] + x).astype(np.float64)
        counts_f = (above[1][part, None] + s - x).astype(np.float64)
        values = metric(counts_m, counts_f, *(p[part, None] for p in params))
        outputs.append([_expect(v, weights) for v in values])
    return tuple(np.concatenate(column) for column in zip(*outputs, strict=True))


def three_class_expectation(
    metric: Callable[[np.ndarray, np.ndarray], np.ndarray],
    above: tuple[np.ndarray, np.ndarray],
    inside: tuple[np.ndarray, np.ndarray, np.ndarray],
    slots: np.ndarray,
) -> np.ndarray:
    """Expectation of ``metric(count_m, count_f)`` when the block also holds ``t_o``
    images of other labels: ``(x_m, x_f, slots - x_m - x_f)`` is multivariate
    hypergeometric, ``P = C(t_m, x_m) C(t_f, x_f) C(t_o, x_o) / C(t, slots)``. One
    ``(X_m, X_f)`` grid per entry: ``O(E * X_m * X_f)``."""
    t_m, t_f, t_o = inside
    width_m = int(np.minimum(slots, t_m).max(initial=0)) + 1
    width_f = int(np.minimum(slots, t_f).max(initial=0)) + 1
    table = _log_factorials(int((t_m + t_f + t_o).max(initial=0)))
    results = []
    step = max(1, _GRID_CELLS // (width_m * width_f))
    for start in range(0, slots.size, step):
        part = slice(start, start + step)
        x_m = np.arange(width_m)[None, :, None]
        x_f = np.arange(width_f)[None, None, :]
        s = slots[part, None, None]
        log_p = (
            _log_choose(table, t_m[part, None, None], x_m)
            + _log_choose(table, t_f[part, None, None], x_f)
            + _log_choose(table, t_o[part, None, None], s - x_m - x_f)
            - _log_choose(table, (t_m + t_f + t_o)[part, None, None], s)
        )
        weights = np.exp(log_p)
        counts_m = (above[0][part, None, None] + x_m).astype(np.float64)
        counts_f = (above[1][part, None, None] + x_f).astype(np.float64)
        results.append(_expect(metric(counts_m, counts_f), weights))
    return np.concatenate(results) if results else np.zeros(0)
