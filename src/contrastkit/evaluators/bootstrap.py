"""Percentile bootstrap confidence intervals, vectorised (Efron and Tibshirani 1993, ch. 13).

Every headline figure of a report gets an interval from resampling its images with
replacement: ``resample_indices`` draws all ``B`` resamples at once as a ``(B, n)`` index
matrix, the figure is computed for every row with array operations, and
``percentile_interval`` takes the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of
the ``B`` values. No Python loop over resamples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contrastkit.config import require
from contrastkit.errors import ConfigError

__all__ = [
    "NO_BOOTSTRAP",
    "BootstrapSettings",
    "few_items",
    "percentile_interval",
    "require_bootstrap",
    "resample_indices",
]


@dataclass(frozen=True)
class BootstrapSettings:
    """The percentile bootstrap behind a report's intervals.

    Attributes:
        resamples: Resamples drawn (0: no intervals).
        confidence: The intervals' level.
        seed: Seeds the resampling.
    """

    resamples: int = 0
    confidence: float = 0.95
    seed: int = 0


NO_BOOTSTRAP = BootstrapSettings()
"""No resamples: figures without intervals (the default of the summaries that take
:class:`BootstrapSettings`)."""


def bootstrap_settings(value: object, field: str = "bootstrap") -> BootstrapSettings:
    """``value``, checked to be a :class:`BootstrapSettings` (what a function taking
    ``bootstrap=`` needs; a number of resamples is not one).

    Raises:
        ConfigError: naming ``field`` and how to write it.
    """
    if isinstance(value, BootstrapSettings):
        return value
    count = value if isinstance(value, int) and not isinstance(value, bool) else "N"
    raise ConfigError(
        f"{field}: a BootstrapSettings, not {type(value).__name__} {value!r}; write "
        f"BootstrapSettings(resamples={count}) (resamples=0: no intervals)"
    )


def require_bootstrap(bootstrap: object, confidence: float) -> None:
    """Check a job config's ``bootstrap`` (resamples: a whole number >= 0, not a bool)
    and ``confidence`` (the intervals' level, in (0, 1)).

    Raises:
        ConfigError: naming the field that is wrong.
    """
    whole = isinstance(bootstrap, int) and not isinstance(bootstrap, bool) and bootstrap >= 0
    require(whole, "bootstrap", f"must be a whole number >= 0, not {bootstrap!r}")
    require(0.0 < confidence < 1.0, "confidence", f"must be in (0, 1), not {confidence}")


def resample_indices(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """A ``(resamples, n)`` int64 matrix: row ``b`` is the ``b``-th bootstrap sample of
    ``n`` items drawn with replacement."""
    if n < 1 or resamples < 1:
        raise ConfigError(f"bootstrap needs n >= 1 and resamples >= 1, not {n}, {resamples}")
    return rng.integers(0, n, size=(resamples, n), dtype=np.int64)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the bootstrap ``values`` (NaN resamples ignored);
    ``(nan, nan)`` when no resample is finite."""
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = array[np.isfinite(array)]
    if not finite.size:
        return (float("nan"), float("nan"))
    low, high = np.quantile(finite, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return (float(low), float(high))


def few_items(interval: dict[str, Any], n: int) -> dict[str, Any]:
    """``interval`` (``{"low", "high", ...}``) undefined (``nan`` bounds, ``null`` in the
    results files), with its ``reason``, when it
    rests on fewer than two items: resampling one item gives it back every time, so its
    "interval" would be the figure itself (``1.00 [1.00, 1.00]``), a certainty it does
    not have; unchanged otherwise."""
    if n >= 2:
        return interval
    noun = "item" if n == 1 else "items"
    return {**interval, "low": float("nan"), "high": float("nan"),
            "reason": f"{n} {noun}: no interval (resampling needs at least 2)"}  # fmt: skip
