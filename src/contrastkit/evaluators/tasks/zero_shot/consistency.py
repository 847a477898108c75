"""Cross-dataset consistency of per-concept disparities (seed 003, Sec. 3.1, Fig. 3-4).

The paper sets the AP difference (AP_men − AP_women, in AP points) of each concept on
Visual Genome beside the one on COCO and colours the concept:

* **green** — same direction, and both magnitudes above the threshold (5 points): a
  practically significant disparity favouring the same group on both datasets;
* **red** — opposite directions, both magnitudes above the threshold: significant on
  both, but inconsistent;
* **yellow** — at most one magnitude above the threshold: not practically significant on
  both datasets, whichever the directions.

Concepts not in both datasets are left out. The threshold is in the units of the
differences: pass differences in AP points (×100) with the paper's 5, or fractions of 1
with 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from contrastkit.errors import ConfigError

__all__ = [
    "COLOURS",
    "COLOUR_MEANINGS",
    "DEFAULT_THRESHOLD",
    "consistency_colours",
    "consistency_counts",
]

#: The paper's threshold of practical significance, in AP points.
DEFAULT_THRESHOLD = 5.0

#: The colours, in the order of the paper's legend.
COLOURS: tuple[str, ...] = ("green", "red", "yellow")

#: What each colour means (legends and reports).
COLOUR_MEANINGS: Mapping[str, str] = {
    "green": "same direction, both |difference| above the threshold",
    "red": "opposite directions, both |difference| above the threshold",
    "yellow": "at most one |difference| above the threshold",
}


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def consistency_colours(
    diff_a: Mapping[str, float | None],
    diff_b: Mapping[str, float | None],
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, str]:
    """The Fig. 3-4 colour of each concept in both ``diff_a`` and ``diff_b`` (concept ->
    difference on dataset A / B, e.g. Visual Genome and COCO): ``"green"``, ``"red"`` or
    ``"yellow"`` (see the module docstring). "Above the threshold" is strictly greater.
    Concepts missing from either side, or whose value is ``None`` / NaN there, are left
    out. The order is ``diff_a``'s.

    Raises:
        ConfigError: a negative or non-finite ``threshold``.
    """
    limit = _finite(threshold)
    if limit is None or limit < 0:
        raise ConfigError(f"threshold: must be a number >= 0, not {threshold!r}")
    colours: dict[str, str] = {}
    for concept, raw in diff_a.items():
        if concept not in diff_b:
            continue
        a, b = _finite(raw), _finite(diff_b[concept])
        if a is None or b is None:
            continue
        if abs(a) > limit and abs(b) > limit:
            colours[concept] = "green" if a * b > 0 else "red"
        else:
            colours[concept] = "yellow"
    return colours


def consistency_counts(colours: Mapping[str, str]) -> dict[str, int]:
    """How many concepts have each colour (every colour present, 0 when none)."""
    return {colour: sum(1 for c in colours.values() if c == colour) for colour in COLOURS}
