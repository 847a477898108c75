"""Several zero-shot disparity results side by side (``contrastkit report``), and the
headline of one: from the typed :class:`~contrastkit.results.ZeroShotResult`.

What a reader compares across models (or datasets): the mAP of each perceived-gender
group and their difference (Fig. 2), how many concepts have an AP gap whose bootstrap
interval excludes 0 (and which way), the same for ECE where calibration was computed,
and the concepts with the largest gaps, one column per result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from contrastkit.results.zero_shot import ConceptDisparity, ZeroShotResult
from contrastkit.text import UNDEFINED, escape_cell, format_number, table_header, table_row

__all__ = [
    "FigureInterval",
    "GapCounts",
    "ap_gaps",
    "ece_gaps",
    "headline_figures",
    "zero_shot_comparison_markdown",
    "zero_shot_headline",
]

#: Concepts in the comparison's per-concept table (largest gap in any result first).
TOP_CONCEPTS = 10

#: Concepts named in a headline's ``largest_ap_gaps``.
HEADLINE_CONCEPTS = 3

_LAYOUTS = {"vg": "Visual Genome", "coco": "COCO"}


@dataclass(frozen=True)
class GapCounts:
    """The concepts whose difference has a bootstrap interval that excludes 0.

    Attributes:
        men: those whose interval lies above 0 (AP higher for images of men; for ECE,
            women - men above 0: better calibrated for images of men).
        women: those whose interval lies below 0.
        tested: the concepts with an interval at all (none without a bootstrap).
    """

    men: int
    women: int
    tested: int


class FigureInterval(TypedDict):
    """The bootstrap interval of a headline figure (``NAME_ci``) and its level."""

    low: float
    high: float
    level: float | None


def _gaps(concepts: Sequence[ConceptDisparity], interval: str) -> GapCounts:
    men = women = tested = 0
    for concept in concepts:
        ci = getattr(concept, interval)
        if not ci or len(ci) != 2 or ci[0] is None or ci[1] is None:
            continue
        tested += 1
        men += ci[0] > 0
        women += ci[1] < 0
    return GapCounts(men, women, tested)


def ap_gaps(result: ZeroShotResult) -> GapCounts:
    """The concepts whose ``AP_men - AP_women`` interval excludes 0."""
    return _gaps(result.concepts, "ap_diff_ci")


def ece_gaps(result: ZeroShotResult) -> GapCounts | None:
    """The concepts whose ``ECE_women - ECE_men`` interval excludes 0 (``None``: ECE
    was not computed)."""
    if not _calibrated(result):
        return None
    return _gaps(result.concepts, "ece_diff_ci")


def _calibrated(result: ZeroShotResult) -> bool:
    return result.calibration is not None and result.calibration.computed


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _pair(value: object) -> tuple[float, float] | None:
    if isinstance(value, Sequence) and len(value) == 2:
        low, high = _number(value[0]), _number(value[1])
        if low is not None and high is not None:
            return low, high
    return None


def _map(result: ZeroShotResult, key: str) -> float | None:
    """The mAP of group ``key`` (``men``, ``women``) or their ``difference``."""
    return None if result.map is None else _number(getattr(result.map, key))


def _map_ci(result: ZeroShotResult, key: str) -> tuple[float, float] | None:
    return None if result.map is None else _pair(getattr(result.map, f"{key}_ci"))


def _confidence(result: ZeroShotResult) -> float | None:
    return None if result.bootstrap is None else _number(result.bootstrap.confidence)


def headline_figures(result: ZeroShotResult) -> dict[str, float | FigureInterval | None]:
    """The figures ``contrastkit evaluate`` prints after a model's line: the mAP of
    each group and their difference, with intervals (``NAME_ci``: ``low``, ``high``,
    ``level``)."""
    figures: dict[str, float | FigureInterval | None] = {}
    for key, name in (("men", "mAP men"), ("women", "mAP women"),
                      ("difference", "mAP men - women")):  # fmt: skip
        figures[name] = _map(result, key)
        ci = _map_ci(result, key)
        if ci is not None:
            figures[f"{name}_ci"] = {"low": ci[0], "high": ci[1], "level": _confidence(result)}
    return figures


def _largest(result: ZeroShotResult, n: int) -> list[ConceptDisparity]:
    """The ``n`` concepts with the largest ``|AP_men - AP_women|`` (the file's order:
    largest first)."""
    return [c for c in result.concepts if c.ap_diff is not None][:n]


class LargestGap(TypedDict):
    """One of the largest AP gaps of a zero-shot headline."""

    concept: str
    ap_diff: float | None
    ap_diff_ci: list[float | None] | None


class _ZeroShotFigures(TypedDict):
    task: str
    model: str | None
    data: str
    layout: str | None
    split: str | None
    random_weights: bool
    weights_note: str | None
    images: dict[str, int] | None
    concepts: int
    map_men: float | None
    map_women: float | None
    map_difference: float | None
    map_difference_ci: list[float] | None
    ap_gaps_favouring_men: int
    ap_gaps_favouring_women: int
    ap_gaps_with_interval: int
    largest_ap_gaps: list[LargestGap]
    calibration: bool


class ZeroShotHeadline(_ZeroShotFigures, total=False):
    """What ``contrastkit report --json`` prints for one zero-shot result
    (:func:`zero_shot_headline`); the ECE gaps only where ECE was computed."""

    ece_gaps_favouring_men: int
    ece_gaps_favouring_women: int
    ece_gaps_with_interval: int


def zero_shot_headline(result: ZeroShotResult) -> ZeroShotHeadline:
    """What ``contrastkit report --json`` prints for one result: ``task``, ``model``
    (the label: a model spec or ``predictions:FILE``), the data, ``random_weights``,
    the images per group, the concepts, the mAP per group and their difference (with
    its interval), the AP gaps whose interval excludes 0 (favouring men, favouring
    women, of the concepts with an interval), the largest AP gaps, and whether ECE was
    computed (then its gaps likewise)."""
    counts = result.counts
    gaps = ap_gaps(result)
    ece = ece_gaps(result)
    difference_ci = _map_ci(result, "difference")
    found: ZeroShotHeadline = {
        "task": result.task,
        "model": result.label or result.model,
        "data": result.data.path,
        "layout": result.data.layout,
        "split": result.data.split,
        "random_weights": bool(result.random_weights),
        "weights_note": result.weights_note,
        "images": dict(counts.images) if counts is not None and counts.images else None,
        "concepts": len(result.concepts),
        "map_men": _map(result, "men"),
        "map_women": _map(result, "women"),
        "map_difference": _map(result, "difference"),
        "map_difference_ci": list(difference_ci) if difference_ci else None,
        "ap_gaps_favouring_men": gaps.men,
        "ap_gaps_favouring_women": gaps.women,
        "ap_gaps_with_interval": gaps.tested,
        "largest_ap_gaps": [
            {"concept": c.concept, "ap_diff": c.ap_diff,
             "ap_diff_ci": list(c.ap_diff_ci) if c.ap_diff_ci else None}
            for c in _largest(result, HEADLINE_CONCEPTS)
        ],
        "calibration": ece is not None,
    }  # fmt: skip
    if ece is not None:
        found["ece_gaps_favouring_men"] = ece.men
        found["ece_gaps_favouring_women"] = ece.women
        found["ece_gaps_with_interval"] = ece.tested
    return found


def _signed(value: float | None) -> str:
    """A signed difference in points, rounded first so a tiny negative one reads
    ``+0.0``."""
    rounded = None if value is None else round(value, 1) + 0.0
    return format_number(rounded, 1, sign=True, missing=UNDEFINED)


def _with_ci(value: float | None, ci: tuple[float, float] | None, *, signed: bool) -> str:
    text = _signed(value) if signed else format_number(value, 1, missing=UNDEFINED)
    if ci is not None:
        low, high = (format_number(round(v, 1) + 0.0, 1, sign=signed) for v in ci)
        text += f" [{low}, {high}]"
    return text


def _gap_cell(gaps: GapCounts | None, concepts: int) -> str:
    if gaps is None:
        return "not computed"
    if not gaps.tested:
        return "n/a (no intervals)"
    return f"{gaps.men} / {gaps.women} of {gaps.tested}" + (
        "" if gaps.tested == concepts else f" ({concepts} concepts)"
    )


def _model(result: ZeroShotResult) -> str:
    label = escape_cell(result.label or result.model or "?")
    return f"`{label}`" + (" (random weights)" if result.random_weights else "")


def _data(result: ZeroShotResult) -> str:
    data = result.data
    layout = _LAYOUTS.get(data.layout or "", data.layout or "?")
    split = f", {data.split}" if data.split else ""
    return escape_cell(f"{Path(data.path).name} ({layout}{split})")


def _images(result: ZeroShotResult) -> str:
    images = (result.counts.images if result.counts is not None else None) or {}
    return " / ".join(f"{images[g]:,}" if g in images else UNDEFINED for g in ("men", "women"))


def _summary_rows(results: Sequence[ZeroShotResult]) -> list[str]:
    header = [
        "model", "data", "images (men / women)", "concepts", "mAP men", "mAP women",
        "mAP men − women", "AP gaps ≠ 0: men / women", "ECE gaps ≠ 0: men / women",
    ]  # fmt: skip
    lines = table_header(header, "llrrrrrrr")
    for r in results:
        n = len(r.concepts)
        lines.append(table_row([
            _model(r), _data(r), _images(r), n,
            _with_ci(_map(r, "men"), _map_ci(r, "men"), signed=False),
            _with_ci(_map(r, "women"), _map_ci(r, "women"), signed=False),
            _with_ci(_map(r, "difference"), _map_ci(r, "difference"), signed=True),
            _gap_cell(ap_gaps(r), n), _gap_cell(ece_gaps(r), n),
        ]))  # fmt: skip
    return lines


def _concept_cell(concept: ConceptDisparity | None) -> str:
    if concept is None:
        return "—"
    ci = _pair(concept.ap_diff_ci)
    excludes_zero = ci is not None and (ci[0] > 0 or ci[1] < 0)
    return _signed(concept.ap_diff) + (" *" if excludes_zero else "")


def _concept_rows(results: Sequence[ZeroShotResult], top: int) -> list[str]:
    """The concepts with the largest ``|AP_men - AP_women|`` in any result, one column
    per result (``—``: not among its concepts)."""
    by_result: list[Mapping[str, ConceptDisparity]] = [
        {c.concept: c for c in r.concepts} for r in results
    ]
    largest: dict[str, float] = {}
    for concepts in by_result:
        for name, c in concepts.items():
            if c.ap_diff is not None:
                largest[name] = max(largest.get(name, 0.0), abs(c.ap_diff))
    chosen = sorted(largest, key=lambda name: (-largest[name], name))[:top]
    if not chosen:
        return []
    header = ["concept", *(f"{i}. {_model(r)}" for i, r in enumerate(results, 1))]
    lines = [
        f"### AP_men − AP_women per concept (the {len(chosen)} largest)",
        "",
        "Points; `*`: the bootstrap interval excludes 0; `—`: not among that result's "
        "concepts (too few images in a group, or another dataset).",
        "",
        *table_header(header, "l" + "r" * len(results)),
    ]
    for name in chosen:
        cells = [_concept_cell(concepts.get(name)) for concepts in by_result]
        lines.append(table_row([escape_cell(name), *cells]))
    return lines


def zero_shot_comparison_markdown(results: Sequence[ZeroShotResult]) -> str:
    """Several zero-shot disparity results side by side: one row per result (mAP per
    group and their difference with intervals, the AP and ECE gaps whose interval
    excludes 0), then the concepts with the largest AP gaps, one column per result."""
    levels = {c for c in map(_confidence, results) if c is not None}
    level = f"{next(iter(levels)):.0%} " if len(levels) == 1 else ""
    lines = [
        "## Zero-shot disparities by perceived gender",
        "",
        "Per-concept AP of each perceived-gender group, in points (the zero-shot "
        "disparities paper, Fig. 2). A gap ≠ 0 is a concept whose AP_men − AP_women "
        "(ECE_women − ECE_men) has a bootstrap interval that excludes 0, counted as "
        f"favouring men / women; intervals: {level}percentile bootstrap of the images "
        "within each group.",
        "",
        *_summary_rows(results),
        "",
        *_concept_rows(results, TOP_CONCEPTS),
    ]
    notes = [f"- {_model(r)}: {r.weights_note}" for r in results if r.weights_note]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines).rstrip() + "\n"
