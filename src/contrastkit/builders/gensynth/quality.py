"""The Sec. 4.3 quality checks of a GenSynth or GenSwap build folder, run by both jobs.

The image sets come from the build (:func:`contrastkit.builders.gensynth.quality_sets`),
the checks from the evaluators (:func:`contrastkit.builders.quality.quality_report`);
the report is stored under ``quality`` in the build summary, beside the context measure
(:mod:`contrastkit.builders.gensynth.context`: how much of each edit's context changed
outside the person mask) under ``context``, with one line per edit in
``context_change.jsonl``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contrastkit.builders.gensynth import quality_sets, update_summary
from contrastkit.builders.gensynth.context import CONTEXT, measure_context, write_context
from contrastkit.builders.quality import quality_report
from contrastkit.interfaces import ImageTextScorer

__all__ = ["run_quality_checks"]


def run_quality_checks(
    out: Path,
    scorer: ImageTextScorer,
    pool: Sequence[Path] | None,
    *,
    sample: int | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Score the build's ``contrast_set``, ``original`` and ``all_edits`` sets (GenSynth
    Tab. 2) with ``scorer``, retrieving among ``pool`` (default: each set's own images);
    store the report under ``quality`` in ``build_summary.json`` and return it.

    With ``sample``, each set is cut to at most ``sample`` images drawn with ``seed``
    (:meth:`LabeledImages.sample`); the report gives each set's ``sampled_from`` size.

    When the build has a contrast set, the context each of its images changed outside
    the person mask is measured too (on the same sample) and stored under ``context``
    in the build summary, one line per edit in ``context_change.jsonl``
    (:func:`~contrastkit.builders.gensynth.context.measure_context`).
    """
    sets = quality_sets(out, sample=sample, seed=seed)  # only the sample is read
    report = quality_report(sets, scorer, pool=pool)
    for name, checks in report.items():
        checks["sampled_from"] = sets[name].total
    update_summary(out, "quality", report)
    if "contrast_set" in sets:
        context = measure_context(out, sample=sample, seed=seed)
        write_context(out, context)
        update_summary(out, CONTEXT, {**context.summary, "file": "context_change.jsonl"})
    return report
