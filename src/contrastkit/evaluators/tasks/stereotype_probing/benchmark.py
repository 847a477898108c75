"""The figures of stereotype probing (VLStereoSet, Zhou et al. 2022) from the raw
records, as the ``benchmark.json`` of ``contrastkit evaluate stereotype``
(:func:`stereotype_benchmark`, which harness answers to a probe set's export go through
too), its headline, and reading and writing it.

Per model, the engine writes into ``out/<model>/`` (the task: :mod:`.task`):

* ``raw_stereotype.jsonl``: per row, the scores of the image with ``S_s, S_a, S_i``, of
  the image with the neutralised pair ``S'_s, S'_a`` and of a blank image with that pair
  (:mod:`.scoring`); a rerun reuses them;
* ``benchmark.json`` (``"task": "stereotype"``): vlrs, vlbs and ivlas overall and per
  category with bootstrap intervals (``summary``), the reference models IDM / BIM / RAM on
  the same set (``reference_models``), and the lmss / vlss summaries and per-instance
  values (``shifting``); see :func:`stereotype_benchmark`;
* ``report.md``: Table 3 (overall) and Table 4 (per category) of the paper with the
  reference rows beside the model, the lmss / vlss table, the plots;
* ``plots/shifting_scores.png`` and ``.svg``: the lmss and vlss histograms of Fig. 4,
  with a red line at 0.

With several models, ``out/comparison.md`` puts them side by side in the same tables
(:func:`stereotype_comparison_markdown`, also what ``contrastkit report`` prints for
stereotype benchmarks).

Softmax scale: the paper turns the scores of one image into a softmax distribution
(Sec. 3.3) — the match logits of an ITM head, the raw cosine similarities of a dual
encoder. This module does exactly that (scale 1, recorded as ``softmax_scale``). Raw
cosines differ by a few hundredths between captions, so for a dual encoder the two-way
probabilities of lmss / vlss stay near 0.5 and the values are small; their signs, and so
the share above 0 that Fig. 4 reads, do not depend on the scale, and neither do vlrs,
vlbs and ivlas. ``raw_stereotype.jsonl`` keeps the raw scores for any other choice.

The markdown reports and the plot are drawn by :mod:`.report`
(its names are importable from here too).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.bootstrap import BootstrapSettings, bootstrap_settings
from contrastkit.evaluators.tasks.stereotype_probing.report import (
    CATEGORY_ORDER,
    PLOT_STEM,
    shifting_figure,
    stereotype_comparison_markdown,
    stereotype_markdown,
)
from contrastkit.io import atomic_write_text
from contrastkit.results import SCHEMA_VERSION

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "PLOT_STEM",
    "SOFTMAX_SCALE",
    "TASK",
    "read_stereotype_benchmark",
    "shifting_figure",
    "stereotype_benchmark",
    "stereotype_comparison_markdown",
    "stereotype_headline",
    "stereotype_markdown",
    "write_stereotype_outputs",
]

#: ``--task`` name, and the ``task`` of the benchmark.
TASK = "stereotype"
#: The scale applied to scores before the two-way softmax of lmss / vlss (the paper's).
SOFTMAX_SCALE = 1.0
#: The intervals of :func:`stereotype_benchmark` unless told otherwise: 1000 resamples of
#: the images, 95% level, seed 0.
DEFAULT_BOOTSTRAP = BootstrapSettings(resamples=1000)


# ------------------------------------------------------------------------ metrics
def _array(records: Sequence[Mapping[str, Any]], key: str, width: int) -> np.ndarray:
    values = [record.get(key) for record in records]
    return np.array(
        [v if v is not None else [math.nan] * width for v in values], dtype=np.float64
    ).reshape(len(records), width)


def stereotype_benchmark(
    records: Sequence[Mapping[str, Any]],
    *,
    model: str,
    data: Sequence[str],
    bootstrap: BootstrapSettings = DEFAULT_BOOTSTRAP,
    scale: float = SOFTMAX_SCALE,
) -> dict[str, Any]:
    """The results of one model from its raw records (:mod:`.tasks.stereotype`), with
    ``bootstrap`` intervals over the images (default: :data:`DEFAULT_BOOTSTRAP`).

    Returns:
        A JSON-ready dict: ``task`` (``stereotype``), ``model``, ``data``,
        ``random_weights``, ``weights_note``, ``score_kind``, ``softmax_scale``,
        ``blank_image`` (size and colour), ``metadata`` (rows, bootstrap, confidence,
        seed), ``summary`` (``overall`` and ``categories``, each with ``n``,
        ``n_stereotype``, ``n_anti_stereotype``, ``vlrs``, ``vlbs``, ``ivlas`` and their
        ``_ci`` intervals), ``reference_models`` (``IDM`` / ``BIM`` / ``RAM``, the same
        shape without intervals) and ``shifting``: ``candidates`` (anti-stereotypical
        rows where the model picked ``S_s``), ``without_neutral`` (of those, rows without
        neutral captions), ``lmss`` and ``vlss`` summaries (``n``, ``mean``, ``median``,
        ``share_positive``, ``min``, ``max``, ``mean_ci``) overall and per category, and
        ``instances`` (``id``, ``category``, ``lmss``, ``vlss``). Undefined figures are
        ``null``.

    Raises:
        ConfigError: ``bootstrap`` is not a :class:`BootstrapSettings` (a number of
            resamples is written ``BootstrapSettings(resamples=N)``).
    """
    from contrastkit import __version__
    from contrastkit.evaluators.report.results import jsonable
    from contrastkit.evaluators.tasks.stereotype_probing.metrics import (
        lmss,
        picked_stereotype,
        reference_summary,
        shift_summary,
        stereotype_summary,
        vlss,
    )
    from contrastkit.models.registry import weights_note

    bootstrap = bootstrap_settings(bootstrap)
    scores = _array(records, "scores", 3)
    labels = [str(record["label"]) for record in records]
    categories = [str(record["category"]) for record in records]
    neutral = _array(records, "neutral_scores", 2)
    blank = _array(records, "blank_scores", 2)
    shift = functools.partial(
        shift_summary,
        bootstrap=bootstrap.resamples,
        confidence=bootstrap.confidence,
        seed=bootstrap.seed,
    )
    summary = stereotype_summary(
        scores, labels, categories, bootstrap=bootstrap, order=CATEGORY_ORDER
    )
    references = reference_summary(labels, categories, order=CATEGORY_ORDER)
    lm = lmss(scores, neutral, labels, scale=scale)
    vl = vlss(scores, neutral, blank, labels, scale=scale)
    picked = picked_stereotype(scores, labels)
    no_neutral = picked & np.isnan(neutral).any(axis=1)
    names = np.array(categories, dtype=object)
    per_category = {
        name: {
            "lmss": shift(lm[names == name]),
            "vlss": shift(vl[names == name]),
        }
        for name in summary["categories"]
    }
    note = weights_note(model)
    first = records[0] if records else {}
    size = first.get("blank_size")
    benchmark = {
        "task": TASK,
        "schema_version": SCHEMA_VERSION,
        "model": model,
        "data": list(data),
        "random_weights": note is not None,
        "weights_note": note,
        "contrastkit_version": __version__,
        "score_kind": first.get("score_kind"),
        "softmax_scale": scale,
        "blank_image": {"size": size, "colour": "white"},
        "metadata": {
            "rows": len(records),
            "bootstrap": bootstrap.resamples,
            "confidence": bootstrap.confidence,
            "seed": bootstrap.seed,
        },
        "summary": summary,
        "reference_models": references,
        "shifting": {
            "candidates": int(picked.sum()),
            "without_neutral": int(no_neutral.sum()),
            "lmss": shift(lm),
            "vlss": shift(vl),
            "categories": per_category,
            "instances": [
                {
                    "id": record["id"],
                    "category": record["category"],
                    "lmss": float(lm[i]),
                    "vlss": float(vl[i]),
                }
                for i, record in enumerate(records)
                if picked[i] and not no_neutral[i]
            ],
        },
    }
    result: dict[str, Any] = jsonable(benchmark)
    return result


# --------------------------------------------------------------------------- files
def write_stereotype_outputs(benchmark: Mapping[str, Any], folder: Path) -> dict[str, Path]:
    """Write ``benchmark.json``, ``report.md`` and the plot (PNG and SVG), each
    atomically; return them by name with the raw file (``raw``, ``benchmark``,
    ``report``, ``plot``, ``plot_svg``)."""
    from contrastkit.evaluators.report.plots import save_formats
    from contrastkit.evaluators.tasks.stereotype_probing.scoring import RAW_FILE

    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "raw": folder / RAW_FILE,
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
        "plot": folder / "plots" / f"{PLOT_STEM}.png",
        "plot_svg": folder / "plots" / f"{PLOT_STEM}.svg",
    }
    atomic_write_text(paths["benchmark"], json.dumps(benchmark, indent=2) + "\n")
    atomic_write_text(paths["report"], stereotype_markdown(benchmark))
    save_formats(shifting_figure(benchmark), folder / "plots" / PLOT_STEM)
    return paths


def read_stereotype_benchmark(path: Path) -> dict[str, Any] | None:
    """The ``benchmark.json`` (or a folder's) of a stereotype evaluation, or ``None`` when
    it is another kind of benchmark.

    Raises:
        DataFormatError: no such file, not a JSON object, or a stereotype benchmark
            without its summary.
    """
    from contrastkit.evaluators.report.results import read_task_benchmark

    found = read_task_benchmark(path, TASK)
    if found is None:
        return None
    path, data = found
    for key in ("summary", "reference_models", "shifting"):
        if not isinstance(data.get(key), dict):
            raise DataFormatError(path, None, key, f"a stereotype benchmark without its {key}")
    return data


class ShiftingHeadline(TypedDict):
    """A shifting score in the headline: how many pairs, the mean and the share of
    positive shifts."""

    n: int | None
    mean: float | None
    share_positive: float | None


class _StereotypeRun(TypedDict):
    task: str
    model: str | None
    data: list[str] | None
    random_weights: bool
    weights_note: str | None
    images: int | None


class StereotypeHeadline(_StereotypeRun, total=False):
    """The headline of a stereotype-probing benchmark (:func:`stereotype_headline`);
    ``vlrs``, ``vlbs``, ``ivlas``, ``lmss`` and ``vlss`` always follow the run's keys
    (added in that order), each ``NAME_ci`` (the interval as the file has it) after its
    figure where the benchmark has one."""

    vlrs: float | None
    vlrs_ci: Mapping[str, object]
    vlbs: float | None
    vlbs_ci: Mapping[str, object]
    ivlas: float | None
    ivlas_ci: Mapping[str, object]
    lmss: ShiftingHeadline
    vlss: ShiftingHeadline


def _shifting(figures: Mapping[str, Any]) -> ShiftingHeadline:
    """The headline entry of one shifting score's figures."""
    return {
        "n": figures.get("n"),
        "mean": figures.get("mean"),
        "share_positive": figures.get("share_positive"),
    }


def stereotype_headline(benchmark: Mapping[str, Any]) -> StereotypeHeadline:
    """The headline numbers (``contrastkit report --json``, ``evaluate --json``):
    ``task``, ``model``, ``data``, ``random_weights``, ``weights_note``, ``images``,
    ``vlrs`` / ``vlbs`` / ``ivlas`` (overall, with ``_ci``), ``lmss`` and ``vlss``
    (``n``, ``mean``, ``share_positive``)."""
    overall = benchmark["summary"]["overall"]
    shifting = benchmark["shifting"]
    headline: StereotypeHeadline = {
        "task": TASK,
        "model": benchmark.get("model"),
        "data": benchmark.get("data"),
        "random_weights": bool(benchmark.get("random_weights")),
        "weights_note": benchmark.get("weights_note"),
        "images": overall.get("n"),
    }
    headline["vlrs"] = overall.get("vlrs")
    if "vlrs_ci" in overall:
        headline["vlrs_ci"] = overall["vlrs_ci"]
    headline["vlbs"] = overall.get("vlbs")
    if "vlbs_ci" in overall:
        headline["vlbs_ci"] = overall["vlbs_ci"]
    headline["ivlas"] = overall.get("ivlas")
    if "ivlas_ci" in overall:
        headline["ivlas_ci"] = overall["ivlas_ci"]
    headline["lmss"] = _shifting(shifting["lmss"])
    headline["vlss"] = _shifting(shifting["vlss"])
    return headline
