"""``contrastkit evaluate --task stereotype``: VLStereoSet-style stereotype probing
(Zhou et al. 2022) of every model on a probe set, and its reports.

Per model, into ``out/<model>/``:

* ``raw_stereotype.jsonl``: per row, the scores of the image with ``S_s, S_a, S_i``, of
  the image with the neutralised pair ``S'_s, S'_a`` and of a blank image with that pair
  (:mod:`contrastkit.evaluators.tasks.stereotype`); a rerun reuses them;
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

The markdown reports and the plot are drawn by :mod:`contrastkit.evaluators.stereotype_report`
(its names are importable from here too).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.bootstrap import BootstrapSettings, bootstrap_settings
from contrastkit.evaluators.stereotype_report import (
    CATEGORY_ORDER,
    PLOT_STEM,
    shifting_figure,
    stereotype_comparison_markdown,
    stereotype_markdown,
)
from contrastkit.io import atomic_write_text
from contrastkit.results import SCHEMA_VERSION

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.evaluators.data import EvalItem
    from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult
    from contrastkit.interfaces import ProgressFactory
    from contrastkit.probes import ProbeRow

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "PLOT_STEM",
    "SOFTMAX_SCALE",
    "TASK",
    "evaluate_stereotype",
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


# ---------------------------------------------------------------------------- items
@dataclass(frozen=True)
class _RowView:
    """The few row fields :class:`~contrastkit.evaluators.data.ImageLoader` reads."""

    idx: str
    category: str
    line: int | None
    error_codes: str = ""

    @property
    def context(self) -> _RowView:  # SkippedRow.context <- the category
        return self

    @property
    def value(self) -> str:
        return self.category


@dataclass(frozen=True)
class _ProbeItem:
    """A probe row shaped like an :class:`~contrastkit.evaluators.data.EvalItem`, so the
    image loading, fetching and ``--skip-missing`` of VisoGender rows serve it as they
    are (local paths, URLs through the image store, images stored in a dataset)."""

    probe: ProbeRow
    source: Path

    @property
    def row(self) -> _RowView:
        return _RowView(self.probe.id, self.probe.category, self.probe.line)

    @property
    def image_ref(self) -> str:
        return self.probe.image_ref

    @property
    def dataset_index(self) -> int | None:
        return self.probe.dataset_index

    @property
    def dataset_split(self) -> str | None:
        return self.probe.dataset_split

    @property
    def key(self) -> str:
        return f"{self.probe.id}:{self.image_ref}"

    def error(self, reason: str, field: str | None = None) -> DataFormatError:
        if self.dataset_index is not None:
            return DataFormatError(self.source, None, f"row {self.dataset_index}", reason)
        return DataFormatError(self.source, self.probe.line, field or "image", reason)


def _items(rows: Sequence[ProbeRow], path: Path) -> list[EvalItem]:
    items = [_ProbeItem(row, Path(row.source) if row.source else path) for row in rows]
    return cast("list[EvalItem]", items)


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
    from contrastkit.evaluators.stereotype_metrics import (
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
    options: dict[str, Any] = {
        "bootstrap": bootstrap.resamples,
        "confidence": bootstrap.confidence,
        "seed": bootstrap.seed,
    }
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
            "lmss": shift_summary(lm[names == name], **options),
            "vlss": shift_summary(vl[names == name], **options),
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
            "lmss": shift_summary(lm, **options),
            "vlss": shift_summary(vl, **options),
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
    from contrastkit.evaluators.tasks.stereotype import RAW_FILE

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


def stereotype_headline(benchmark: Mapping[str, Any]) -> dict[str, Any]:
    """The headline numbers (``contrastkit report --json``, ``evaluate --json``):
    ``task``, ``model``, ``data``, ``random_weights``, ``weights_note``, ``images``,
    ``vlrs`` / ``vlbs`` / ``ivlas`` (overall, with ``_ci``), ``lmss`` and ``vlss``
    (``n``, ``mean``, ``share_positive``)."""
    overall = benchmark["summary"]["overall"]
    shifting = benchmark["shifting"]
    headline = {
        "task": TASK,
        "model": benchmark.get("model"),
        "data": benchmark.get("data"),
        "random_weights": bool(benchmark.get("random_weights")),
        "weights_note": benchmark.get("weights_note"),
        "images": overall.get("n"),
    }
    for key in ("vlrs", "vlbs", "ivlas"):
        headline[key] = overall.get(key)
        if f"{key}_ci" in overall:
            headline[f"{key}_ci"] = overall[f"{key}_ci"]
    for key in ("lmss", "vlss"):
        headline[key] = {k: shifting[key].get(k) for k in ("n", "mean", "share_positive")}
    return headline


# ----------------------------------------------------------------------------- job
def evaluate_stereotype(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """Stereotype probing of every model of ``config`` on the probe sets ``paths`` (what
    :func:`contrastkit.evaluators.job.evaluate` runs for ``--task stereotype`` or probe
    data): images through the image loader of VisoGender rows (``fetch`` /
    ``skip_missing`` / ``store`` alike), per model the files of the module docstring,
    and ``comparison.md`` with several models.

    Raises:
        ConfigError: a captioning model, which cannot score captions.
        DataFormatError: a malformed probe set, a missing image (without
            ``skip_missing``), no rows.
        ModelNotFoundError: a model that is not on this machine or does not load.
    """
    from contrastkit.evaluators.evaluation import (
        EvaluateResult,
        ModelEvaluation,
        available_items,
        folder_links,
        skipped_rows_json,
    )
    from contrastkit.evaluators.report.results import model_slug
    from contrastkit.evaluators.tasks.stereotype import RAW_FILE, RowBatches, score_rows
    from contrastkit.interfaces import CaptionScorer, ImageTextScorer, progress_stage
    from contrastkit.models import load_model, parse_spec
    from contrastkit.probes import load_probe_set

    for spec in config.models:
        if "captions" not in parse_spec(spec).capabilities:
            raise ConfigError(
                f"models: {spec} is a captioning model: it scores pronoun continuations, not "
                "captions; stereotype probing takes dual encoders (open_clip:, hf-clip: ...) "
                "and image-text-matching models (blip-itm:, vilt:)"
            )
    rows: list[ProbeRow] = []
    for path in paths:
        rows.extend(load_probe_set(path, split=config.split))
    if not rows:
        raise DataFormatError(", ".join(map(str, paths)), None, None, "the probe set has no rows")
    ids: dict[str, str] = {}
    for row in rows:
        where = f"{row.source}:{row.line}" if row.line else str(row.source)
        if row.id in ids:
            raise DataFormatError(
                row.source or paths[0], row.line, "id",
                f"id {row.id!r} also in {ids[row.id]}: probe sets evaluated together need "
                "distinct ids",
            )  # fmt: skip
        ids[row.id] = where
    candidates = _items(rows, paths[0])
    items, loader, skipped, fetched = available_items(config, paths, candidates, progress)
    kept = [cast("_ProbeItem", item) for item in items]
    kept_rows = [item.probe for item in kept]
    by_id = {item.probe.id: item for item in kept}

    def open_image(row: ProbeRow) -> Image.Image:
        return loader.open(cast("EvalItem", by_id[row.id]))

    labels = [str(path) for path in paths]
    settings = config.settings
    evaluations = []
    benchmarks = []
    for spec in config.models:
        model = load_model(spec, config.model)
        if not isinstance(model, CaptionScorer | ImageTextScorer):
            raise ConfigError(
                f"models: {spec} cannot score an image against captions (it is neither a "
                "dual encoder nor an image-text-matching or caption-scoring model)"
            )
        folder = config.out / model_slug(spec)
        with progress_stage(progress, f"scoring {spec}", len(kept_rows)) as update:
            batches = RowBatches(config.model.batch_size, update)
            records, reused = score_rows(kept_rows, open_image, model, folder / RAW_FILE, batches)
        del model
        intervals = BootstrapSettings(settings.bootstrap, settings.confidence, settings.seed)
        benchmark = stereotype_benchmark(records, model=spec, data=labels, bootstrap=intervals)
        benchmark["metadata"]["skip_missing"] = config.skipping
        benchmark["skipped_rows"] = skipped_rows_json(skipped)
        files = write_stereotype_outputs(benchmark, folder)
        benchmarks.append(benchmark)
        evaluation = ModelEvaluation(
            model=spec, folder=folder, files=files, scored_images=len(records) - reused,
            reused_records=reused, summary=stereotype_headline(benchmark),
            skipped_rows=tuple(skipped),
        )  # fmt: skip
        evaluations.append(evaluation)
    comparison = None
    if len(benchmarks) > 1:
        comparison = config.out / "comparison.md"
        text = stereotype_comparison_markdown(benchmarks) + folder_links(config.out, evaluations)
        atomic_write_text(comparison, text)
    return EvaluateResult(
        TASK, paths, tuple(evaluations), comparison,
        store=loader.store.root if loader.store is not None else None,
        checked=fetched[1], fetched=fetched[0], skipped_rows=tuple(skipped),
    )  # fmt: skip
