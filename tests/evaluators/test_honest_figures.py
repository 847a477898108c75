"""Figures that say only what is so (issue 43 item 12): a legend never says "no error
bars" beside a drawn error bar or after the bootstrap ran."""

from __future__ import annotations

import math
from typing import Any

from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from contrastkit.evaluators.contrast import ContrastCounts, QueryOutcomes, contrast_summary
from contrastkit.evaluators.report.figures import UNDEFINED_INTERVALS
from contrastkit.evaluators.report.plots import (
    NO_INTERVALS,
    contrast_comparison_figure,
    contrast_figure,
)


def _legend(figure: Figure) -> str:
    return " ".join(
        text.get_text().replace("\n", " ")
        for legend in figure.legends
        for text in legend.get_texts()
    )


def _bars(figure: Figure) -> int:
    return sum(isinstance(c, ErrorbarContainer) for a in figure.axes for c in a.containers)


def _summary(low: float, high: float, share: float = 0.0) -> dict[str, Any]:
    """A contrast summary whose every interval is [low, high] (the bootstrap ran)."""
    interval = {"low": low, "high": high, "level": 0.95, "resamples": 1000}
    summary = contrast_summary(
        ContrastCounts(8, 4, 4), [2], QueryOutcomes({}, [0.1] * 4, [share] * 4)
    )
    summary["retrieval"] = {
        name: {"mean": 0.0, "sigma": 0.0, "n": 4, "mean_ci": dict(interval)}
        for name in ("bias@2", "bias_gensynth@2", "maxskew@2")
    }
    summary["pairs"]["masculine_preferred_ci"] = dict(interval)
    return summary


def test_an_interval_starting_at_zero_is_an_interval_in_the_legend() -> None:
    """The tutorial's tab3.png drew the pair preference's [0.00, 0.67] as an error bar
    and said "no error bars ... evaluate with --bootstrap N" beside it: a bound of 0 was
    taken for no interval."""
    benchmark = {"model": "m", "summary": _summary(0.0, 0.67, share=0.25)}
    for figure in (contrast_figure(benchmark), contrast_comparison_figure([benchmark])):
        assert _bars(figure) > 0
        legend = _legend(figure)
        assert "error bars: 95% bootstrap CI (1000 resamples)" in legend
        assert NO_INTERVALS not in legend and "--bootstrap" not in legend


def test_a_bootstrap_without_a_defined_interval_is_not_told_to_bootstrap() -> None:
    """The default 1000 resamples ran, but every figure rests on one item: no error bar,
    and the legend says why instead of "evaluate with --bootstrap N"."""
    benchmark = {"model": "m", "summary": _summary(math.nan, math.nan)}
    for figure in (contrast_figure(benchmark), contrast_comparison_figure([benchmark])):
        assert _bars(figure) == 0
        legend = _legend(figure)
        assert UNDEFINED_INTERVALS in legend and "--bootstrap" not in legend
