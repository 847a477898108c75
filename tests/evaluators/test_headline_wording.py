"""What the console and report.md show of a figure (issue 47.3): no internal key beside
a figure, and no number that reads as negative zero."""

from __future__ import annotations

from contrastkit.evaluators.report.headlines import headline_figures, headline_lines
from contrastkit.evaluators.report.tables import format_interval
from contrastkit.text import format_number


def test_a_task_s_missing_interval_is_not_shown_as_a_figure_of_its_own() -> None:
    summary = {"figures": {
        "flip rate occupation (logprob)": 0.25,
        "flip rate occupation (logprob)_ci": None,  # no interval: nothing to resample
        "flip rate salary (generate)": None,
        "flip rate salary (generate)_ci": None,
    }}  # fmt: skip
    lines = headline_lines(headline_figures("vlm:x", summary, "decisions"))
    text = "\n".join(lines)
    assert "_ci" not in text
    assert "flip rate occupation (logprob) 0.25" in text
    assert "flip rate salary (generate) n/a" in text


def test_tiny_negative_numbers_are_printed_as_zero_without_a_minus() -> None:
    assert format_number(-1e-17) == "0.00"
    assert format_number(-0.0) == "0.00"
    assert format_number(-1e-17, sign=True) == "+0.00"
    assert format_number(-0.004, 2) == "0.00" and format_number(-0.006, 2) == "-0.01"
    assert format_number(-1e-9, 3, significant=True) == "-1e-09"  # significant: not zero
    gap = {"yes_gap": -2.7e-17, "yes_gap_ci": {"low": -1e-16, "high": 0.0}}
    assert format_interval(gap, "yes_gap") == "0.00 [0.00, 0.00]"
    signed = headline_lines(
        headline_figures("vlm:x", {"figures": {}, "x": 1}, "decisions")
        | {"figures": [{"name": "gap", "value": -1e-12, "signed": True}]}
    )
    assert signed == ["gap +0.00"]
