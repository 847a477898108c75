"""Per-occupation values against labour statistics (VisoGender Appendix F), shared by
the tasks that report them (VisoGender, decision probes).

VisoGender's Appendix G statistics (:func:`resolution_subsamples`,
:func:`retrieval_random_baseline`, :func:`baseline_z`) moved to
:mod:`contrastkit.evaluators.tasks.visogender.baselines`; their old names here still
work, with a :class:`DeprecationWarning`.

* :func:`labor_comparison` — Appendix F: Pearson's r and Kendall's tau (with p-values,
  ``scipy.stats.pearsonr`` / ``kendalltau``) between per-occupation values (resolution
  gaps, accuracies, Bias@10) and the share of men in the occupation in US labour force
  statistics (:func:`labor_shares`, package data with its source).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypedDict

import numpy as np

from contrastkit.moved import moved_names
from contrastkit.taxonomy import LaborShare, labor_shares  # moved to the shared layer; kept here

__all__ = [
    "LaborShare",
    "LabourComparison",
    "LabourPoint",
    "labor_comparison",
    "labor_shares",
]

#: VisoGender's Appendix G statistics, which moved to its task folder: their old names.
__getattr__ = moved_names(
    __name__,
    dict.fromkeys(
        ("Z_REASONS", "Z_RELATIVE_TOLERANCE", "BaselineMetric", "baseline_z",
         "resolution_subsamples", "retrieval_random_baseline"),
        "contrastkit.evaluators.tasks.visogender.baselines",
    ),
)  # fmt: skip


class LabourPoint(TypedDict):
    """One occupation of a :func:`labor_comparison`: its value and its male share (%)."""

    occupation: str
    value: float
    male_share: float


class _LabourFigures(TypedDict):
    pearson_r: float
    pearson_p: float
    kendall_tau: float
    kendall_p: float
    n: int
    points: list[LabourPoint]


class LabourComparison(_LabourFigures, total=False):
    """A :func:`labor_comparison`: the coefficients and p-values (``nan`` where
    undefined), how many occupations entered and their ``points``; a ``caveat`` with too
    few occupations to read, and (set by the VisoGender report) the occupations
    ``left_out`` of it, by reason."""

    caveat: str
    left_out: dict[str, list[str]]


#: Fewer occupations than this and a correlation with labour statistics is not read:
#: the coefficients are still computed, but no p-value or fitted line is shown, and the
#: result carries a ``caveat`` (3 points give "r = -1.00 (p = 0.04)" by chance alone).
MIN_LABOUR_OCCUPATIONS = 8


def labor_comparison(
    values: Mapping[str, float], shares: Mapping[str, LaborShare] | None = None
) -> LabourComparison:
    """Correlate per-occupation values with the male share (Appendix F, Tab. 7).

    Occupations without a share, and non-finite values, are left out (``n`` says how many
    entered). With fewer than three occupations, or a constant input, the coefficients
    and p-values are ``nan``; with fewer than :data:`MIN_LABOUR_OCCUPATIONS` a ``caveat``
    says the correlation is not to be read (reports then show no p-value or fit).

    Returns:
        ``pearson_r``, ``pearson_p``, ``kendall_tau``, ``kendall_p``, ``n``, and
        ``points`` (occupation, value, male share) for plotting.
    """
    from scipy import stats

    table = labor_shares() if shares is None else shares
    points = [
        (name, float(value), table[name].male_share_percent)
        for name, value in values.items()
        if name in table and math.isfinite(value)
    ]
    result: LabourComparison = {
        "pearson_r": math.nan,
        "pearson_p": math.nan,
        "kendall_tau": math.nan,
        "kendall_p": math.nan,
        "n": len(points),
        "points": [{"occupation": n, "value": v, "male_share": s} for n, v, s in points],
    }
    if len(points) < MIN_LABOUR_OCCUPATIONS:
        result["caveat"] = (
            f"only {len(points)} occupation(s) with labour statistics: too few to read a "
            f"correlation (at least {MIN_LABOUR_OCCUPATIONS}); no p-value or fitted line"
        )
    if len(points) < 3:
        return result
    x = np.array([value for _, value, _ in points])
    y = np.array([share for _, _, share in points])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return result
    pearson = stats.pearsonr(x, y)
    kendall = stats.kendalltau(x, y)
    result["pearson_r"] = float(pearson.statistic)
    result["pearson_p"] = float(pearson.pvalue)
    result["kendall_tau"] = float(kendall.statistic)
    result["kendall_p"] = float(kendall.pvalue)
    return result
