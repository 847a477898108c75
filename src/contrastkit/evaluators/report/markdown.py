"""Markdown reports: the contrast-set comparison (GenSynth Tab. 3), and the names other
reports import from here: the shared pieces (:mod:`.sections`). The VisoGender reports
moved to :mod:`contrastkit.evaluators.tasks.visogender.report` (the VisoGender task
folder); their old names here still work, with a :class:`DeprecationWarning`, and import
that folder only when asked for."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking, cutoffs_by_k
from contrastkit.evaluators.report.sections import (
    comparison_warnings,
    warnings_section,
    weights_lines,
)
from contrastkit.evaluators.report.tables import (
    comparison_notes,
    cutoff_cell,
    format_interval,
    format_number,
    interval_note,
    k_of,
    model_cell,
    table,
)
from contrastkit.moved import moved_names

__all__ = [
    "CONTRAST_READING",
    "contrast_comparison_markdown",
    "contrast_set_name",
    "format_interval",
    "format_number",
    "warnings_section",
    "weights_lines",
]

_VISOGENDER = "contrastkit.evaluators.tasks.visogender.report"

#: The VisoGender reports, which moved to its task folder: their old names here.
__getattr__ = moved_names(
    __name__,
    {
        "PROTOCOL_NOTES": _VISOGENDER,
        "RETRIEVAL_ROWS": _VISOGENDER,
        "SPLIT_TITLES": _VISOGENDER,
        "_labor_section": f"{_VISOGENDER}:labor_section",
        "comparison_markdown": _VISOGENDER,
        "markdown_report": _VISOGENDER,
    },
)


CONTRAST_READING = (
    "How to read it (GenSynth Sec. 5.2): the original photos carry the data's own gender "
    "imbalance and its spurious context (backgrounds, objects); the balanced set removes "
    "the imbalance but keeps the context; the contrast set shows every scene once with "
    "each gender, so neither remains. A model's MaxSkew@K on the original (or balanced) "
    "set minus its MaxSkew@K on the contrast set is how much of its measured bias came "
    "from the data; what is left on the contrast set is the model's own. Bias@K is "
    "signed and cancels out on balanced data with context in both directions (Sec. 3.4): "
    "compare models and sets by MaxSkew@K."
)
"""The sentence under the contrast-set comparison table."""


def contrast_set_name(benchmark: Mapping[str, Any]) -> str:
    """What kind of set a contrast-set benchmark scored, from its ``dataset``
    (:func:`~contrastkit.evaluators.contrast.describe_export`): ``original photos``,
    ``original photos, balanced (seed S)``, ``GenSynth contrast set``, ..."""
    dataset = benchmark.get("dataset") or {}
    kind = dataset.get("kind")
    if kind == "originals":
        if dataset.get("balanced"):
            return f"original photos, balanced (seed {dataset.get('seed')})"
        return "original photos"
    if kind in ("gensynth", "genswap"):
        return f"{'GenSynth' if kind == 'gensynth' else 'GenSwap'} contrast set"
    return "contrast set" if kind is None else str(kind)


def _contrast_cell(stats: Any, name: str, cutoffs: Mapping[int, Mapping[str, Any]]) -> str:
    text = format_interval(stats, "mean") if isinstance(stats, Mapping) else "–"
    return cutoff_cell(text, name, cutoffs)


def _contrast_cutoffs(benchmark: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    return cutoffs_by_k(benchmark["summary"].get("warnings") or [], "contrast")


def contrast_comparison_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """Contrast-set benchmarks side by side in the shape of GenSynth Tab. 3: one row per
    set and model (data folder, what set it is, images, Bias@K and MaxSkew@K as
    ``mean [low, high]``), then, per model, MaxSkew@K on each original-photo set minus on
    its contrast set ("from the data"), and :data:`CONTRAST_READING`."""
    lines = ["# Original vs balanced vs contrast set (GenSynth Tab. 3)", ""]
    lines += comparison_notes(results)
    ks: list[int] = []
    for r in results:
        ks += [int(k) for k in r["summary"].get("ks") or [] if int(k) not in ks]
    bias, skew = [f"bias_gensynth@{k}" for k in ks], [f"maxskew@{k}" for k in ks]

    def model(r: Mapping[str, Any]) -> str:
        return model_cell(r, str(r.get("model")))

    rows = []
    for r in results:
        retrieval = r["summary"].get("retrieval") or {}
        data = str(r.get("data") or "")
        rows.append(
            [data.rstrip("/").rsplit("/", 1)[-1], contrast_set_name(r), model(r)]
            + [r["summary"].get("images"), r["summary"].get("queries")]
            + [
                _contrast_cell(retrieval.get(name), name, _contrast_cutoffs(r))
                for name in (*bias, *skew)
            ]
        )
    header = ["data", "set", "model", "images", "queries"]
    header += [f"Bias@{k}" for k in ks] + [f"MaxSkew@{k}" for k in ks]
    lines += table(header, rows)
    entries = [r["summary"]["retrieval"].get(n) or {} for r in results for n in (*bias, *skew)]
    lines += interval_note(entries, "of the mean over queries")
    lines += [
        "Bias@K: GenSynth Eq. 1, (N_masculine - N_feminine) / (N_masculine + N_feminine) "
        "in the top K, 0 balanced, positive leans masculine; MaxSkew@K: Eq. 3, 0 when the "
        "top K mirrors the set. Mean over the gender-neutral caption queries.",
        "",
    ]
    lines += comparison_warnings(
        [
            (f"{contrast_set_name(r)}, {model(r)}", r["summary"].get("warnings") or [])
            for r in results
        ]
    )
    differences = []
    for r in results:
        kind = (r.get("dataset") or {}).get("kind")
        if kind != "originals":
            continue
        contrast = next(
            (c for c in results if c.get("model") == r.get("model")
             and (c.get("dataset") or {}).get("kind") in ("gensynth", "genswap")),
            None,
        )  # fmt: skip
        if contrast is None:
            continue
        cells = []
        for name in skew:
            a = (r["summary"]["retrieval"].get(name) or {}).get("mean")
            b = (contrast["summary"]["retrieval"].get(name) or {}).get("mean")
            trivial = [
                warning
                for benchmark in (r, contrast)
                for warning in [_contrast_cutoffs(benchmark).get(k_of(name) or -1)]
                if warning is not None and covers_every_query(warning)
            ]
            if trivial:  # one side is the pool's own balance: no difference to read
                cells.append(cutoff_marking(trivial[0]))
            elif isinstance(a, int | float) and isinstance(b, int | float) and math.isfinite(a - b):
                cells.append(f"{a - b:+.2f}")
            else:
                cells.append("–")
        differences.append([model(r), contrast_set_name(r), *cells])
    if differences:
        lines += ["## From the data: MaxSkew@K on the photos minus on the contrast set", ""]
        lines += table(["model", "set", *(f"MaxSkew@{k}" for k in ks)], differences)
    lines += [CONTRAST_READING, ""]
    return "\n".join(lines).rstrip() + "\n"
