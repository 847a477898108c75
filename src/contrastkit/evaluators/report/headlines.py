"""The few figures a person reads first after an evaluation, as data and as text.

``contrastkit evaluate`` prints them after each model's line and ``--json`` carries them
(``headlines``): for VisoGender-style data the resolution accuracy ``RA_avg`` and gender
gap of the overall, single-person and two-person splits (Tab. 2) and the retrieval
Bias@K, MaxSkew@K (largest K) and NDKL as mean and sigma across occupations (Tab. 3),
and the same with the participant as the query's subject (Tab. 5) where the results
have it; for a contrast set the GenSynth Sec. 5 retrieval bias and the pair preference. Figures
with a bootstrap interval carry it as ``low`` / ``high``.

A K at or above the candidates of every query (Bias@10 on a set of 6 images) gives no
reading: its @K figures are the pool's own balance whatever the model. Such a figure has
``value`` ``None`` and a ``note`` with the marking report.md's warning is tied to
(:func:`~contrastkit.evaluators.metrics.cutoff_marking`: ``n/a: K covers all 6
candidates``), and the largest K that is a reading is shown before it; a K covering some
queries' pools only keeps its value with that note beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypedDict

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking, cutoffs_by_k
from contrastkit.models.registry import weights_note
from contrastkit.text import UNDEFINED, format_number

__all__ = ["Headline", "HeadlineFigure", "headline_figures", "headline_lines"]


class _Figure(TypedDict):
    name: str
    value: float | None
    signed: bool


class HeadlineFigure(_Figure, total=False):
    """One headline figure: its ``value`` (``None`` when undefined; ``note`` says why),
    whether it has a sign, for a mean across occupations or queries its ``sigma``, and
    where the results have one its bootstrap interval ``low`` / ``high`` at ``level``."""

    sigma: float | None
    low: float
    high: float
    level: float | None
    note: str


class Headline(TypedDict):
    """The headline of one evaluation (:func:`headline_figures`)."""

    random_weights: bool
    weights_note: str | None
    protocol: str | None
    figures: list[HeadlineFigure]
    warnings: list[str]


#: Resolution splits in the headline, with the words of VisoGender Tab. 2.
_SPLITS = {
    "all_images": "overall",
    "single_person_images": "single person",
    "two_person_images": "two people",
}
_CONTEXTS = {"OP": "two people", "OO": "single person"}
#: The section of a benchmark's warnings that holds each retrieval context's pools.
_SECTIONS = {"OP": "two_person_images", "OO": "single_person_images"}


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _with_interval(figure: HeadlineFigure, values: Mapping[str, Any], key: str) -> HeadlineFigure:
    """``figure`` with the interval ``low`` / ``high`` (and its ``level``) of ``key``
    where ``values`` have it."""
    interval = values.get(f"{key}_ci")
    if isinstance(interval, Mapping):
        low, high = _number(interval.get("low")), _number(interval.get("high"))
        if low is not None and high is not None:
            figure["low"], figure["high"] = low, high
            figure["level"] = _number(interval.get("level"))
        elif interval.get("reason") and figure.get("value") is not None:  # too few items
            figure["note"] = f"interval {UNDEFINED}: {interval['reason']}"
    return figure


def _figure(
    name: str, values: Mapping[str, Any], key: str, *, signed: bool = True
) -> HeadlineFigure:
    """One figure: ``name``, ``value`` (``None`` when undefined), and where the results
    have it the interval ``low`` / ``high``."""
    figure: HeadlineFigure = {"name": name, "value": _number(values.get(key)), "signed": signed}
    return _with_interval(figure, values, key)


def _mean_figure(
    name: str, values: Mapping[str, Any], *, signed: bool, cutoff: Mapping[str, Any] | None
) -> HeadlineFigure:
    """One figure that is a mean across occupations or queries (an @K metric, NDKL):
    ``name``, ``value``, ``sigma`` and where the results have it the interval ``low`` /
    ``high``. With ``cutoff`` (the warning of a K at or above some query's candidates) a
    ``note`` says so, and when it covers every query's candidates the figure has no value,
    spread or interval."""
    if cutoff is not None and covers_every_query(cutoff):
        return {"name": name, "value": None, "signed": signed, "note": cutoff_marking(cutoff)}
    figure: HeadlineFigure = {"name": name, "value": _number(values.get("mean")), "signed": signed}
    if cutoff is not None:
        figure["note"] = cutoff_marking(cutoff)
    figure["sigma"] = _number(values.get("sigma"))
    return _with_interval(figure, values, "mean")


def _headline_ks(ks: list[int], cutoffs: Mapping[int, Mapping[str, Any]]) -> list[int]:
    """The K of the headline: the largest, preceded by the largest K that is a reading
    when the largest covers every query's candidates."""
    if not ks:
        return []
    if not covers_every_query(cutoffs.get(ks[-1])):
        return ks[-1:]
    readable = [k for k in ks if not covers_every_query(cutoffs.get(k))]
    return [*readable[-1:], ks[-1]]


def _k_of(name: str) -> int | None:
    k = name.split("@", 1)[1] if "@" in name else ""
    return int(k) if k.isdigit() else None


def _stereotype_figures(summary: Mapping[str, Any]) -> list[HeadlineFigure]:
    """VLStereoSet Table 3, and the Fig. 4 share above 0."""
    figures = [_figure(name, summary, name, signed=False) for name in ("vlrs", "vlbs", "ivlas")]
    for name in ("lmss", "vlss"):
        shift = summary.get(name) or {}
        if shift.get("n"):
            figures.append(_figure(f"{name} > 0 share", shift, "share_positive", signed=False))
    return figures


def _contrast_figures(summary: Mapping[str, Any]) -> list[HeadlineFigure]:
    """GenSynth Sec. 5: the retrieval bias at the headline K, and the pair preference."""
    figures: list[HeadlineFigure] = []
    retrieval = summary.get("retrieval") or {}
    ks = sorted(int(k) for k in summary.get("ks") or [] if isinstance(k, int | float))
    cutoffs = cutoffs_by_k(summary.get("warnings") or [], "contrast")
    for k in _headline_ks(ks, cutoffs):
        for name in (f"bias_gensynth@{k}", f"bias@{k}", f"maxskew@{k}"):
            if isinstance(retrieval.get(name), Mapping):
                figures.append(
                    _mean_figure(
                        name, retrieval[name], signed=name.startswith("bias"),
                        cutoff=cutoffs.get(k),
                    )
                )  # fmt: skip
    pairs = summary.get("pairs") or {}
    if "masculine_preferred" in pairs and pairs.get("applicable", True):
        figures.append(
            _figure("masculine preferred in pairs", pairs, "masculine_preferred", signed=False)
        )
    return figures


def _task_figures(summary: Mapping[str, Any]) -> list[HeadlineFigure]:
    """Another task's (a plugin's): its summary names its figures, and in
    ``figure_notes`` (name -> reason) why a figure without a value could not be
    computed (the console shows ``n/a (reason)``)."""
    shown = summary.get("figures") or {}
    reasons = summary.get("figure_notes") or {}
    names = list(shown) if isinstance(shown, Mapping) else []
    figures = []
    for name in names:
        if str(name).endswith("_ci") and str(name)[:-3] in names:
            continue  # an interval, beside its figure
        figure = _figure(str(name), shown, name, signed=False)
        if figure["value"] is None and reasons.get(name):
            figure["note"] = f"{UNDEFINED} ({reasons[name]})"
        figures.append(figure)
    return figures


def _visogender_figures(summary: Mapping[str, Any]) -> list[HeadlineFigure]:
    """VisoGender: resolution accuracy and gap per split (Tab. 2), then the retrieval
    figures at the headline K and NDKL (Tab. 3) and the same with the participant as the
    query's subject (Tab. 5)."""
    figures: list[HeadlineFigure] = []
    resolution = summary.get("resolution_bias") or {}
    for split, words in _SPLITS.items():
        values = resolution.get(split)
        if isinstance(values, Mapping) and values.get("n", 1):
            figures.append(_figure(f"RA_avg ({words})", values, "RA_avg", signed=False))
            figures.append(_figure(f"gap ({words})", values, "gender_gap"))
    retrieval = summary.get("retrieval_bias") or {}
    names = [n for n, v in retrieval.items() if isinstance(v, Mapping) and "mean" in v]
    ks = sorted({int(n.split("@")[1]) for n in names if n.startswith("bias@")})
    warnings = summary.get("warnings") or []
    section = _SECTIONS.get(str(summary.get("retrieval_context")))
    cutoffs = cutoffs_by_k(warnings, section) if section else {}
    chosen = [f"{metric}@{k}" for metric in ("bias", "maxskew")
              for k in _headline_ks(ks, cutoffs)] + ["NDKL"]  # fmt: skip
    context = _CONTEXTS.get(str(summary.get("retrieval_context")), "")
    for name in chosen:
        if name in names:
            label = f"{name} ({context})" if context else name
            figures.append(
                _mean_figure(
                    label, retrieval[name],
                    signed=name.startswith("bias"),  # MaxSkew and NDKL are never negative
                    cutoff=cutoffs.get(_k_of(name) or -1),
                )
            )  # fmt: skip
    flipped = summary.get("retrieval_flipped") or {}  # Tab. 5: the participant as subject
    pools = cutoffs_by_k(warnings, "two_person_images")  # the same pools, flipped
    for name in chosen:
        if isinstance(flipped.get(name), Mapping) and "mean" in flipped[name]:
            figures.append(
                _mean_figure(
                    f"{name} (two people, participant as subject)", flipped[name],
                    signed=name.startswith("bias"), cutoff=pools.get(_k_of(name) or -1),
                )
            )  # fmt: skip
    return figures


#: The headline figures of each kind of results; any other kind is a registered task's.
_FIGURES = {
    "stereotype": _stereotype_figures,
    "contrast": _contrast_figures,
    "visogender": _visogender_figures,
}


def headline_figures(model: str, summary: Mapping[str, Any], kind: str) -> Headline:
    """The headline figures of one evaluation.

    Args:
        model: the model spec (says whether the weights are random).
        summary: the evaluation's summary: :func:`~contrastkit.evaluators.report.headline`
            of a VisoGender result, or the contrast-set summary (GenSynth Sec. 5).
        kind: ``visogender``, ``contrast`` or ``stereotype`` (the summary is then
            :func:`~contrastkit.evaluators.tasks.stereotype_probing.benchmark.stereotype_headline`),
            or another
            registered task, whose summary gives its headline as ``figures`` (name ->
            value, with ``NAME_ci`` intervals beside).

    Returns:
        ``{"random_weights": bool, "weights_note": str | None, "protocol": str | None,
        "figures": [{"name", "value", "signed", ["sigma"], ["low", "high", "level"],
        ["note"]}], "warnings": [str]}``: ``warnings`` are what another registered task's
        summary gives as its own ``warnings`` (decision probes: answers that never change).
    """
    note = summary.get("weights_note") or weights_note(model)
    warnings = summary.get("warnings") if kind not in _FIGURES else None
    return {
        "random_weights": note is not None,
        "weights_note": note,
        "protocol": summary.get("protocol") if kind == "visogender" else None,
        "figures": _FIGURES.get(kind, _task_figures)(summary),
        "warnings": [str(text) for text in warnings or ()],
    }


def _text(value: float | None, signed: bool) -> str:
    if value is None:
        return UNDEFINED
    return format_number(value, 2, sign=signed)


def headline_lines(headlines: Mapping[str, Any]) -> list[str]:
    """:func:`headline_figures` as short lines for the console: ``name value [low,
    high]``, or ``name mean ± sigma [low, high]`` (a sigma has no sign), several figures
    a line; first the random-weights note, when there is one, and last one ``warning:``
    line per warning."""
    lines = []
    if headlines.get("weights_note"):
        lines.append(f"random weights: {headlines['weights_note']}")
    parts = []
    for figure in headlines.get("figures", []):
        if figure["value"] is None and figure.get("note"):  # a K covering every pool
            parts.append(f"{figure['name']} {figure['note']}")
            continue
        text = f"{figure['name']} {_text(figure['value'], figure.get('signed', True))}"
        if "sigma" in figure:
            text += f" ± {_text(figure['sigma'], False)}"
        if "low" in figure:
            signed = figure.get("signed", True)
            text += f" [{_text(figure['low'], signed)}, {_text(figure['high'], signed)}]"
        if figure.get("note"):
            text += f" ({figure['note']})"
        parts.append(text)
    for start in range(0, len(parts), 2):
        lines.append("; ".join(parts[start : start + 2]))
    if headlines.get("protocol") and parts:
        lines.append(f"resolution protocol: {headlines['protocol']}")
    lines += [f"warning: {text}" for text in headlines.get("warnings") or ()]
    return lines
