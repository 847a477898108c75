"""Score a CLIP-like model on a GenSynth / GenSwap contrast set (GenSynth Sec. 5).

A contrast set holds each source photo twice, once edited to each perceived gender, with
everything else unchanged. Two measurements, both with the captions made gender-neutral
(the export's ``neutral_captions``; GenSynth Tab. 4 word table):

* **Retrieval bias** (GenSynth Sec. 5, Eq. 1-3): every distinct neutral caption is a
  text-to-image query over all images of the set; per query Bias@K in both conventions
  (GenSynth Eq. 1 ``(N_m - N_f) / (N_m + N_f)``, 0 when the top K holds neither; VisoGender
  Appendix A, the mean of +1/-1 labels), Skew@K per gender, MaxSkew@K, MinSkew@K and NDKL,
  computed by :func:`contrastkit.evaluators.metrics.retrieval_metrics_batch`; reported as
  mean and standard deviation over queries (:func:`~contrastkit.evaluators.metrics.summarize`,
  which counts the queries it leaves out by reason, e.g. a MinSkew of ``-inf``).
  0 is balanced, positive leans masculine. Tied similarities (the two versions of a photo
  can score alike) take each metric's exact expectation over the orders of the tied
  images, and MinSkew is also given as the official code computes it
  (``minskew@K_official_smoothed``); docs/differences.md.
  With ``bootstrap`` resamples, the mean of each Bias@K and MaxSkew@K also gets
  ``mean_ci``, a percentile bootstrap interval over queries (:func:`query_intervals`),
  and the pair preference ``masculine_preferred_ci``, the same over the queries with a
  pair.
* **Pair preference**: for each query, the similarity of its own source's masculine and
  feminine versions. ``masculine_preferred`` is the share of queries whose masculine
  version scores higher (0.5 is no preference; ties count half) and ``mean_gap`` the mean
  of ``s(q, masculine) - s(q, feminine)`` in cosine similarity. Because the two images
  differ only in the edited person, this isolates the model's response to perceived gender
  presentation from the scene. A set with one version per photo (the original photos of
  ``contrastkit export contrast --originals``) has no pairs: ``pairs.applicable`` is
  false and the reports say "not applicable".

The score ``s(q, i)`` of a query and an image is the model's (``score_kind`` in the summary's
``scoring``, the benchmark and the report): the cosine similarity of a dual encoder's unit
embeddings, or, for any :class:`~contrastkit.interfaces.CaptionScorer`, its own caption
score as :func:`contrastkit.evaluators.tasks.stereotype.caption_scores` gives it: the match
logit of an image-text-matching head (``blip-itm:``, ``vilt:``), the caption's mean
log-likelihood per token under a generative VLM (``vlm:``; the sum with
``?length_normalise=false``). Every metric above is computed from these scores unchanged.
The cost differs: a dual encoder embeds each image and each query once (``n_images +
n_queries`` passes) and the scores are dot products; a caption scorer runs once per
(image, query) pair, ``n_images x n_queries`` passes for the retrieval metrics, which rank
every image for every query. Pair preference alone needs only each query against its own
source's two versions (``2 x n_queries`` passes): ``metrics="pairs"``
(:data:`CONTRAST_METRICS`), the default for caption scorers (``auto``); dual encoders
default to ``all``. A caption scorer's scores are kept in ``raw_contrast_scores.jsonl``
(:data:`RAW_SCORES_FILE`), flushed after every model call, and a rerun (also one asking for
more metrics) reuses every score of the same model, image and query.

Outputs (:func:`write_contrast_outputs`): ``raw_contrast.jsonl`` (per query: its source,
both own-pair scores and, with the retrieval metrics, those metrics and the top-K image
ids), ``benchmark.json``, ``report.md`` and ``plots/contrast_bias.png`` (and ``.svg``).
Evaluators never import builders; the data meet through the exported dataset.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit import __version__
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.metrics import retrieval_metrics_batch, summarize
from contrastkit.evaluators.raw import RawAppender
from contrastkit.interfaces import CaptionScorer, ImageTextScorer, PronounScorer
from contrastkit.io import atomic_write_text
from contrastkit.models.base import batched
from contrastkit.records import parse_json, read_json, text_lines
from contrastkit.results import SCHEMA_VERSION
from contrastkit.text import format_number, table_header, table_row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "CONTRAST_COLUMNS",
    "CONTRAST_METRICS",
    "INTERVAL_METRICS",
    "PAIRS_NOT_APPLICABLE",
    "RAW_SCORES_FILE",
    "RETRIEVAL_NOT_COMPUTED",
    "CaptionMatrix",
    "caption_score_matrix",
    "contrast_genders",
    "contrast_headline",
    "contrast_queries",
    "contrast_scoring",
    "contrast_summary",
    "describe_export",
    "evaluate_contrast",
    "is_contrast_dataset",
    "load_contrast",
    "query_intervals",
    "read_contrast_benchmark",
    "resolve_contrast_metrics",
    "write_contrast_outputs",
]

CONTRAST_COLUMNS = ("source_id", "gender", "image", "neutral_captions")
"""Columns a dataset needs to be scored as a contrast set."""

INTERVAL_METRICS = ("bias@", "bias_gensynth@", "maxskew@")
"""Name prefixes of the retrieval metrics whose mean gets a bootstrap interval."""

PAIRS_NOT_APPLICABLE = (
    "not applicable: no source has both a masculine and a feminine version (e.g. a set "
    "of original photos, one version each)"
)
"""What the summary and the report say of pair preference on a set without pairs."""

CONTRAST_METRICS = ("auto", "all", "pairs")
"""What a contrast-set evaluation computes (``metrics`` of :func:`evaluate_contrast`,
``contrastkit evaluate --contrast-metrics``): ``all`` (retrieval metrics and pair
preference), ``pairs`` (pair preference only: each query against its own source's two
versions), or ``auto``: ``all`` for a dual encoder, ``pairs`` for a caption scorer, whose
retrieval metrics cost ``n_images x n_queries`` model passes."""

RAW_SCORES_FILE = "raw_contrast_scores.jsonl"
"""A caption scorer's (image, query) scores in the model's output folder, reused on rerun."""

RETRIEVAL_NOT_COMPUTED = (
    "not computed: pair preference only (contrast metrics 'pairs'); the retrieval metrics "
    "rank every image for every query, n_images x n_queries model passes for a caption "
    "scorer: ask for them with --contrast-metrics all"
)
"""What the summary (``retrieval_note``) and the report say when only pairs were scored."""

_BOOTSTRAP_CELLS = 1 << 22
"""Resampled values held at once while bootstrapping (about 32 MB of float64)."""


def query_intervals(
    per_query: dict[str, list[float]],
    resamples: int,
    confidence: float,
    seed: int,
    names: Sequence[str] | None = None,
) -> dict[str, dict[str, float | int]]:
    """Percentile bootstrap intervals of the mean over queries (Efron and Tibshirani
    1993, ch. 13), for each metric in ``names`` (default: those starting with
    :data:`INTERVAL_METRICS`): ``{"low", "high", "level", "resamples"}``, the
    ``mean_ci`` of the VisoGender results. Queries are resampled with replacement, the
    same resamples for every metric (drawn with ``seed``); each resample's mean takes
    the finite values only, as :func:`~contrastkit.evaluators.metrics.summarize` does.
    The bounds are ``nan`` with fewer than two finite values. Memory stays bounded by
    :data:`_BOOTSTRAP_CELLS`, not by ``resamples x queries``.
    """
    from contrastkit.evaluators.bootstrap import percentile_interval, resample_indices

    chosen = [n for n in per_query if n.startswith(INTERVAL_METRICS)] if names is None else names
    arrays = {name: np.asarray(per_query[name], dtype=np.float64) for name in chosen}
    n = len(next(iter(arrays.values()))) if arrays else 0
    means = {name: np.empty(resamples) for name in arrays}
    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOTSTRAP_CELLS // max(n, 1))
    if n:
        for start in range(0, resamples, chunk):
            rows = resample_indices(rng, n, min(chunk, resamples - start))
            for name, array in arrays.items():
                picked = array[rows]
                finite = np.isfinite(picked)
                counts = finite.sum(axis=1)
                totals = np.where(finite, picked, 0.0).sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    means[name][start : start + len(rows)] = np.where(
                        counts > 0, totals / counts, np.nan
                    )
    intervals: dict[str, dict[str, float | int]] = {}
    for name, array in arrays.items():
        low, high = float("nan"), float("nan")
        if np.isfinite(array).sum() >= 2:
            low, high = percentile_interval(means[name], confidence)
        intervals[name] = {"low": low, "high": high, "level": confidence, "resamples": resamples}
    return intervals


def _saved_contrast(folder: Path) -> Path | None:
    candidate = folder / "saved" / "contrast"
    return candidate if candidate.is_dir() else None


def is_contrast_dataset(path: Path) -> bool:
    """Whether ``path`` is a contrast-set export folder (``contrastkit export contrast``;
    :func:`contrastkit.kinds.detect_kind`, recorded kind first)."""
    from contrastkit.kinds import detect_kind

    return detect_kind(path).name == "contrast"


def load_contrast(path: Path, split: str | None = None) -> Any:
    """The contrast set of an export folder, or of a saved dataset with the
    :data:`CONTRAST_COLUMNS`, as a ``datasets.Dataset``.

    Raises:
        DataFormatError: no such dataset, a missing split or a missing column.
    """
    from datasets import DatasetDict, load_from_disk

    path = Path(path)
    folder = _saved_contrast(path) or path
    try:
        loaded = load_from_disk(str(folder))
    except FileNotFoundError as error:
        raise DataFormatError(path, None, None, "not a saved contrast set") from error
    if isinstance(loaded, DatasetDict):
        names = list(loaded)
        split = split or (names[0] if len(names) == 1 else "test")
        if split not in loaded:
            raise DataFormatError(path, None, None, f"no split {split!r}; one of {names}")
        loaded = loaded[split]
    missing = [c for c in CONTRAST_COLUMNS if c not in loaded.column_names]
    if missing:
        raise DataFormatError(path, None, missing[0], "a contrast set needs this column")
    if len(loaded) == 0:
        raise DataFormatError(path, None, None, "the contrast set has no images")
    if not any(loaded["neutral_captions"]):
        raise DataFormatError(
            path, None, "neutral_captions", "the contrast set has no neutral captions to query with"
        )
    return loaded


def describe_export(path: Path) -> dict[str, Any] | None:
    """What an export folder says it holds, from its ``build_metadata.json``: ``kind``
    (``gensynth``, ``genswap``, or ``originals`` for ``export contrast --originals``),
    ``pretty_name``, ``balanced``, ``seed`` and ``sources_kept``; ``None`` for a folder
    without readable metadata (a plain saved dataset)."""
    file = Path(path) / "build_metadata.json"
    try:
        metadata = read_json(file)
    except (OSError, DataFormatError):
        return None
    if not isinstance(metadata, dict):
        return None
    keys = ("kind", "pretty_name", "balanced", "seed", "sources_kept")
    return {key: metadata.get(key) for key in keys}


def read_contrast_benchmark(path: Path) -> dict[str, Any] | None:
    """The ``benchmark.json`` (or a folder's) that :func:`write_contrast_outputs` wrote,
    or ``None`` when the file is another kind of benchmark (VisoGender results).

    Raises:
        DataFormatError: no such file, or not a JSON object.
    """
    from contrastkit.records import read_json_object

    path = Path(path)
    if path.is_dir():
        path = path / "benchmark.json"
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such benchmark file")
    data = read_json_object(path, "a benchmark object")
    if data.get("task") != "contrast":
        return None
    summary = data.get("summary")
    if not isinstance(summary, dict) or not isinstance(summary.get("retrieval"), dict):
        raise DataFormatError(path, None, "summary", "a contrast benchmark without its summary")
    return data


def contrast_headline(benchmark: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers of a contrast-set benchmark (``contrastkit report --json``):
    ``task`` (``contrast``), ``model``, ``data``, ``dataset``, ``random_weights``,
    ``weights_note``, ``images``, ``queries``, ``retrieval`` (each Bias@K and MaxSkew@K
    summary, with ``mean_ci`` when evaluated with intervals), ``pairs`` and ``warnings``
    (each K at or above the set's images, whose figures are then no reading)."""
    summary = benchmark["summary"]
    return {
        "task": "contrast",
        "model": benchmark.get("model"),
        "data": benchmark.get("data"),
        "dataset": benchmark.get("dataset"),
        "random_weights": bool(benchmark.get("random_weights")),
        "weights_note": benchmark.get("weights_note"),
        "images": summary.get("images"),
        "queries": summary.get("queries"),
        "retrieval": {
            name: value
            for name, value in summary["retrieval"].items()
            if name.startswith(INTERVAL_METRICS)
        },
        "pairs": summary.get("pairs"),
        "warnings": list(summary.get("warnings") or []),
    }


def _where(dataset: Any) -> str:
    """The folder a loaded dataset was read from, for error messages."""
    files = getattr(dataset, "cache_files", None) or [{}]
    filename = files[0].get("filename")
    return str(Path(filename).parent) if filename else "the contrast set"


def contrast_genders(dataset: Any) -> list[str]:
    """The ``gender`` column of a loaded contrast set as strings (``masculine``,
    ``feminine``), whether stored as text or as a class label."""
    feature = dataset.features["gender"]
    values = dataset["gender"]
    return [feature.int2str(v) if hasattr(feature, "int2str") else str(v) for v in values]


def contrast_summary(
    images: int,
    sources: int,
    queries: int,
    ks: Sequence[int],
    per_query: dict[str, list[float]],
    gaps: Sequence[float],
    preferred: Sequence[float],
    *,
    retrieval: bool = True,
    scoring: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``summary`` of a contrast-set evaluation (:func:`evaluate_contrast`).

    Args:
        images: Images in the set.
        sources: Distinct source photos.
        queries: Neutral-caption queries scored.
        ks: The retrieval cut-offs K, as reported.
        per_query: Each retrieval metric's values, one per query, in query order.
        gaps: ``s(q, masculine) - s(q, feminine)`` of each query whose source has both
            versions.
        preferred: For the same queries, 1 where the masculine version scores higher,
            0.5 on a tie, 0 otherwise.
        retrieval: Whether the retrieval metrics were computed (false: pair preference
            only, ``per_query`` empty).
        scoring: What the scores are and what they cost (:func:`evaluate_contrast`).

    Returns:
        ``{"images", "sources", "queries", "ks", "retrieval", "pairs", "warnings",
        "scoring"}``: ``retrieval``
        maps each metric to its :func:`~contrastkit.evaluators.metrics.summarize` over the
        queries (empty without the retrieval metrics, and ``retrieval_note`` then says
        why: :data:`RETRIEVAL_NOT_COMPUTED`); ``pairs`` holds ``queries_with_pair``,
        ``masculine_preferred`` (the mean
        of ``preferred``) and ``mean_gap`` (the mean of ``gaps``), both ``nan`` without
        pairs, and ``applicable`` (false without pairs, with a ``note`` saying so:
        :data:`PAIRS_NOT_APPLICABLE`); ``warnings`` has one entry per K at or above the
        number of images (every query ranks them all, so its @K metrics are then trivial;
        :func:`~contrastkit.evaluators.metrics.cutoff_warnings`); ``scoring`` as given,
        when given (:func:`contrast_scoring` fills it in for a dual encoder's summary).
    """
    from contrastkit.evaluators.metrics import cutoff_warnings

    warnings = (
        cutoff_warnings(ks, {"every query": images}, section="contrast",
                        label="Contrast-set retrieval")
        if retrieval else []
    )  # fmt: skip
    for warning in warnings:  # every query ranks the same pool: say so once
        warning.update(queries=["every query"], n_queries=queries)
    return {
        "images": images,
        "sources": sources,
        "queries": queries,
        "ks": ks,
        "retrieval": {name: summarize(values) for name, values in per_query.items()},
        "pairs": {
            "applicable": bool(gaps),
            "queries_with_pair": len(gaps),
            "masculine_preferred": float(np.mean(preferred)) if preferred else float("nan"),
            "mean_gap": float(np.mean(gaps)) if gaps else float("nan"),
            **({} if gaps else {"note": PAIRS_NOT_APPLICABLE}),
        },
        **({} if retrieval else {"retrieval_note": RETRIEVAL_NOT_COMPUTED}),
        "warnings": warnings,
        **({} if scoring is None else {"scoring": dict(scoring)}),
    }


def contrast_queries(
    sources: Sequence[str], genders: Sequence[str], neutral_captions: Sequence[Sequence[str]]
) -> tuple[dict[str, dict[str, int]], list[tuple[str, str]]]:
    """The rows of each source by gender (``{source: {gender: row}}``) and the queries:
    every distinct neutral caption once, with the source it describes, in dataset order."""
    own: dict[str, dict[str, int]] = {}
    for index, (source, gender) in enumerate(zip(sources, genders, strict=True)):
        own.setdefault(source, {})[gender] = index
    queries: list[tuple[str, str]] = []
    seen: set[str] = set()
    for source, captions in zip(sources, neutral_captions, strict=True):
        for caption in captions:
            if caption not in seen:
                seen.add(caption)
                queries.append((source, caption))
    return own, queries


def resolve_contrast_metrics(model: object, metrics: str = "auto") -> str:
    """``all`` or ``pairs``: what :func:`evaluate_contrast` computes for ``model`` when
    asked for ``metrics`` (:data:`CONTRAST_METRICS`; ``auto`` is ``all`` for a dual encoder
    and ``pairs`` for a caption scorer).

    Raises:
        ConfigError: ``metrics`` is not one of :data:`CONTRAST_METRICS`.
    """
    if metrics not in CONTRAST_METRICS:
        raise ConfigError(
            f"contrast_metrics must be one of {', '.join(CONTRAST_METRICS)}, not {metrics!r}"
        )
    if metrics != "auto":
        return metrics
    return "all" if isinstance(model, ImageTextScorer) else "pairs"


def contrast_scoring(summary: Mapping[str, Any]) -> dict[str, Any]:
    """What the scores of a contrast-set summary are and what they cost: its ``scoring``
    (a caption scorer's, :func:`evaluate_contrast`), or for a dual encoder's summary, which
    has none, the same keys filled in: ``score_kind`` (the score in words), ``metrics``
    (``all`` or ``pairs``), ``requested`` (as asked; ``None`` when unknown), ``unit``
    (``embedding`` or ``image-query pair``), ``model_passes`` (what these metrics
    needed), ``all_metrics_passes`` (what ``all`` needs), ``computed`` and ``reused``
    (passes run in the evaluation, scores read back from an earlier run)."""
    given = summary.get("scoring")
    if isinstance(given, Mapping):
        return dict(given)
    passes = int(summary.get("images") or 0) + int(summary.get("queries") or 0)
    return {
        "score_kind": _scores_of(None),
        "metrics": "pairs" if summary.get("retrieval_note") else "all",
        "requested": None,
        "unit": "embedding",
        "model_passes": passes,
        "all_metrics_passes": passes,
        "computed": passes,
        "reused": 0,
    }


def _scores_of(model: object) -> str:
    """What ``model``'s scores are, in words (the stereotype task's wording)."""
    from contrastkit.evaluators.tasks.stereotype import score_kind

    return score_kind(model)


@dataclass(frozen=True)
class CaptionMatrix:
    """The ``(n_images, n_queries)`` scores of a caption scorer on a contrast set
    (:func:`caption_score_matrix`).

    Attributes:
        scores: float64; ``nan`` where a cell was not asked for.
        computed: cells scored by the model in this call.
        reused: cells read back from the raw score file.
        score_kind: what the scores are, in words.
    """

    scores: np.ndarray
    computed: int
    reused: int
    score_kind: str


def _image_keys(dataset: Any) -> list[str]:
    """Identifies each image across runs: its source, gender and a hash of its encoded
    bytes (an edited image gets new scores)."""
    import datasets

    sources = [str(s) for s in dataset["source_id"]]
    genders = contrast_genders(dataset)
    column = dataset.select_columns(["image"])
    if isinstance(column.features["image"], datasets.Image):
        column = column.cast_column("image", datasets.Image(decode=False))
    keys = []
    for source, gender, value in zip(sources, genders, column["image"], strict=True):
        payload: bytes
        if isinstance(value, dict) and value.get("bytes") is not None:
            payload = bytes(value["bytes"])
        elif isinstance(value, dict) and value.get("path"):
            path = Path(str(value["path"]))
            payload = path.read_bytes() if path.is_file() else str(path).encode("utf-8")
        else:
            payload = repr(value).encode("utf-8")
        keys.append(f"{source}:{gender}:{hashlib.sha256(payload).hexdigest()[:16]}")
    return keys


def _read_raw_scores(path: Path, spec: str, kind: str) -> dict[str, dict[str, float]]:
    """The scores of ``path`` for this model and score kind, by image key and query; lines
    that are not complete records (an interrupted write's tail) are skipped."""
    found: dict[str, dict[str, float]] = {}
    if not path.is_file():
        return found
    for number, line in text_lines(path):
        try:
            record = parse_json(path, number, line)
        except DataFormatError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("scores"), dict):
            continue
        if record.get("model") != spec or record.get("score_kind") != kind:
            continue
        values = {
            str(q): float(v)
            for q, v in record["scores"].items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        found.setdefault(str(record.get("image")), {}).update(values)
    return found


def _raw_record(spec: str, kind: str, key: str, scores: Mapping[str, float]) -> dict[str, Any]:
    return {"model": spec, "score_kind": kind, "image": key, "scores": dict(scores)}


def _calls(
    missing: Mapping[int, Sequence[int]], batch_size: int
) -> Iterator[list[tuple[int, list[int]]]]:
    """The model calls that score the ``missing`` queries of each image: pieces of at
    most ``batch_size`` queries of one image, pieces of equal width packed together so
    that a call holds about ``batch_size`` (image, query) pairs; the pieces of an image
    follow each other (its decoded copy is reused)."""
    by_width: dict[int, list[tuple[int, list[int]]]] = {}
    for image in sorted(missing):
        wanted = list(missing[image])
        for start in range(0, len(wanted), batch_size):
            piece = wanted[start : start + batch_size]
            by_width.setdefault(len(piece), []).append((image, piece))
    for width in sorted(by_width, reverse=True):
        pieces = by_width[width]
        per_call = max(1, batch_size // width)
        for start in range(0, len(pieces), per_call):
            yield pieces[start : start + per_call]


def caption_score_matrix(
    dataset: Any,
    model: CaptionScorer,
    queries: Sequence[str],
    *,
    cells: Mapping[int, Sequence[int]] | None = None,
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    raw_scores: Path | None = None,
) -> CaptionMatrix:
    """Each image's score against each query from a caption scorer, ``(n_images,
    n_queries)``: :func:`contrastkit.evaluators.tasks.stereotype.caption_scores` of the
    images with queries as their candidate captions (the match logit of ``blip-itm:`` /
    ``vilt:``, the mean caption log-likelihood per token of ``vlm:``), so a cell is what
    the adapter gives that image and caption.

    Cost: one model pass per cell (``n_images x n_queries`` for the whole matrix), where a
    dual encoder needs one embedding per image and per query. Calls hold about
    ``batch_size`` (image, query) pairs (:func:`_calls`); each image is decoded once per
    run of calls that need it.

    Args:
        dataset: A contrast set (:func:`load_contrast`).
        model: The caption scorer.
        queries: The query captions, in column order.
        cells: The query columns wanted per image row (default: every cell); the others
            stay ``nan``.
        batch_size: (image, query) pairs per model call.
        progress: Called with (cells done, cells wanted) after every call.
        raw_scores: A JSONL file (:data:`RAW_SCORES_FILE`) keeping the scores: cells
            already there for this model (its spec and ``score_kind``) and an unchanged
            image are reused; new ones are appended and flushed after each call, so an
            interrupted run resumes. The file is first rewritten with only the scores of
            this set's images and queries (every cell, not only the wanted ones).

    Raises:
        ConfigError: ``batch_size`` below 1.
        ValueError: the model returned scores of the wrong shape.
    """
    from contrastkit.evaluators.tasks.stereotype import caption_scores

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1, not {batch_size!r}")
    n = len(dataset)
    spec = str(getattr(model, "spec", type(model).__name__))
    kind = _scores_of(model)
    wanted = (
        {i: list(range(len(queries))) for i in range(n)}
        if cells is None
        else {int(i): [int(q) for q in qs] for i, qs in cells.items() if len(qs)}
    )
    scores = np.full((n, len(queries)), np.nan, dtype=np.float64)
    keys = _image_keys(dataset) if raw_scores is not None else [str(i) for i in range(n)]
    known: dict[str, dict[str, float]] = {}
    if raw_scores is not None:
        stored = _read_raw_scores(raw_scores, spec, kind)
        texts = set(queries)
        for key in dict.fromkeys(keys):
            kept = {q: v for q, v in stored.get(key, {}).items() if q in texts}
            if kept:
                known[key] = kept
    missing: dict[int, list[int]] = {}
    reused = 0
    for image, columns in wanted.items():
        have = known.get(keys[image], {})
        for q in columns:
            if queries[q] in have:
                scores[image, q] = have[queries[q]]
                reused += 1
            else:
                missing.setdefault(image, []).append(q)
    total = reused + sum(len(qs) for qs in missing.values())
    done = reused
    if progress is not None:
        progress(done, total)
    column = dataset.select_columns(["image"])
    opened: dict[int, Any] = {}
    appender = (
        RawAppender(raw_scores, [_raw_record(spec, kind, k, v) for k, v in known.items()])
        if raw_scores is not None
        else None
    )
    try:
        for call in _calls(missing, batch_size):
            needed = list(dict.fromkeys(image for image, _ in call))
            for stale in [i for i in opened if i not in needed]:
                del opened[stale]
            for image in needed:
                if image not in opened:
                    opened[image] = column[image]["image"]
            images = [opened[image] for image, _ in call]
            captions = [[queries[q] for q in piece] for _, piece in call]
            values = caption_scores(model, images, captions)
            records = []
            for (image, piece), row in zip(call, values, strict=True):
                for q, value in zip(piece, row, strict=True):
                    scores[image, q] = float(value)
                new = {queries[q]: float(value) for q, value in zip(piece, row, strict=True)}
                records.append(_raw_record(spec, kind, keys[image], new))
            if appender is not None:
                appender.write(records)
            done += sum(len(piece) for _, piece in call)
            if progress is not None:
                progress(done, total)
    finally:
        if appender is not None:
            appender.close()
    return CaptionMatrix(scores, total - reused, reused, kind)


def _pair_cells(
    own: Mapping[str, Mapping[str, int]], queries: Sequence[tuple[str, str]]
) -> dict[int, list[int]]:
    """Per image row, the query columns pair preference needs: each query against its own
    source's masculine and feminine versions (sources with both only)."""
    cells: dict[int, list[int]] = {}
    for column, (source, _) in enumerate(queries):
        pair = own.get(source, {})
        if "masculine" in pair and "feminine" in pair:
            for gender in ("masculine", "feminine"):
                cells.setdefault(pair[gender], []).append(column)
    return cells


def evaluate_contrast(
    dataset: Any,
    scorer: ImageTextScorer | CaptionScorer | PronounScorer,
    *,
    ks: Sequence[int] = (5, 10),
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    block: int | None = None,
    device: str = "cpu",
    bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    metrics: str = "auto",
    raw_scores: Path | None = None,
) -> dict[str, Any]:
    """Retrieval bias and pair preference of ``scorer`` on a contrast set (GenSynth Sec. 5).

    ``scorer`` is a dual encoder (the cosine similarity of its unit embeddings) or any
    :class:`~contrastkit.interfaces.CaptionScorer` (``blip-itm:`` / ``vilt:``: the match
    logit; ``vlm:``: the caption's mean log-likelihood per token), whose scores come from
    :func:`caption_score_matrix`; the metrics are the same for both. A dual encoder costs
    one embedding per image and per query; a caption scorer one model pass per (image,
    query) pair: ``n_images x n_queries`` for the retrieval metrics (``metrics="all"``),
    ``2 x n_queries`` for pair preference alone (``"pairs"``, the ``auto`` default for a
    caption scorer: each query against its own source's two versions, exactly the cells
    ``all`` reads for it).

    The queries are scored ``block`` at a time: the block's scores against every
    image (for a dual encoder one matrix product with torch on ``device``), its retrieval
    metrics (:func:`~contrastkit.evaluators.metrics.retrieval_metrics_batch`, one call per
    block), its top-K image ids (``torch.topk``) and its own-pair scores; then the block
    is freed. Memory is bounded by ``block x images``, never ``queries x images``: about
    230 bytes per (query, image) pair of a block, nearly all of it the metrics' sorting and
    tie bookkeeping in float64 / int64, beside one float64 copy of the image embeddings
    on ``device`` (8 bytes per image and dimension); a caption scorer's whole score
    matrix (8 bytes per cell) is held, as computing it costs far more than storing it. A
    full row per query is inherent:
    NDKL (GenSynth Eq. 3) ranks every image, so no top-K shortcut can replace the row.

    The results equal a dense ``queries x images`` evaluation query by query: same records
    in the same order, the top-K ids ordered by descending similarity with ties broken by
    the lower image index (the stable order of ``argsort(-similarity)``), tied
    similarities handled by the metrics' exact expectation. Each similarity is a float64
    dot product rounded to the dtype of the dense product (float32 for float32
    embeddings), so it does not depend on ``block``, ``device``, the BLAS library or
    TF32 settings; a float32 matrix product rounds in the last bit by kernel and shape
    (the dense computation's own figures changed with the number of queries), which
    reorders near-ties. On inputs whose products are exact (ties included),
    similarities, top-K ids and pair statistics are bit for bit those of the dense
    computation, and so are the metrics with ``block=1``; a larger block can move a
    metric's last bit or two where tied images make it an expectation, because
    ``retrieval_metrics_batch`` sums that over a grid as wide as the widest row of the
    call.

    Args:
        dataset: A contrast set (:func:`load_contrast`).
        scorer: A CLIP-like dual encoder (``load_scorer``) or a caption scorer
            (``load_model`` of a ``blip-itm:``, ``vilt:`` or ``vlm:`` spec).
        ks: The retrieval cut-offs K.
        batch_size: Images per forward pass of a dual encoder; (image, query) pairs per
            call of a caption scorer.
        progress: Called with (images embedded, total), or for a caption scorer (pairs
            scored, pairs wanted).
        block: Queries scored together. Default: as many as keep ``block x images`` at
            most 131,072 (2**17) similarities, between 1 and 256 queries (about 30 MB of
            working memory; larger blocks gain nothing on the CPU, whose cache the metrics'
            sorts then overflow).
        device: The torch device of a dual encoder's similarity products and the top-K
            search (``"cpu"``, ``"cuda"``, ``"cuda:1"``); the metrics run on the CPU, and
            so does the ranking of a caption scorer's scores.
        bootstrap: Resamples of queries behind each Bias@K and MaxSkew@K mean's
            ``mean_ci`` and the pair preference's ``masculine_preferred_ci``
            (:func:`query_intervals`; 0: no intervals).
        confidence: The intervals' level.
        seed: The seed of the resamples.
        metrics: ``all``, ``pairs`` or ``auto`` (:data:`CONTRAST_METRICS`).
        raw_scores: Where a caption scorer keeps its scores for reuse
            (:data:`RAW_SCORES_FILE` in the output folder; :func:`caption_score_matrix`);
            ``None``: not kept. A dual encoder's scores are recomputed (they are cheap).

    Returns:
        ``{"summary": ..., "queries": [per-query records]}``; with ``bootstrap`` and the
        retrieval metrics or pairs, the summary's ``bootstrap`` is ``{"resamples",
        "confidence", "seed", "over": "queries"}``. For a caption scorer the summary's
        ``scoring`` says what was computed and at what cost (:func:`contrast_scoring`,
        which gives the same for a dual encoder's summary).

    Raises:
        DataFormatError: a dataset without images or without neutral captions.
        ConfigError: ``block`` below 1, a ``device`` torch does not know or cannot use, a
            negative ``bootstrap``, a ``confidence`` outside (0, 1), ``metrics`` not in
            :data:`CONTRAST_METRICS`, or a model that scores neither image-text
            similarity nor captions (a captioning model: ``blip:``, ``git:``, ``blip2:``).
    """
    genders = contrast_genders(dataset)
    sources = [str(s) for s in dataset["source_id"]]
    n = len(genders)
    if n == 0:
        raise DataFormatError(_where(dataset), None, None, "the contrast set has no images")
    if not isinstance(scorer, ImageTextScorer | CaptionScorer):
        spec = getattr(scorer, "spec", type(scorer).__name__)
        raise ConfigError(
            f"models: {spec} scores pronoun continuations only (a captioning model): contrast "
            "sets take dual encoders (open_clip:, hf-clip: ...), image-text-matching models "
            "(blip-itm:, vilt:) or generative VLMs (vlm:), which score an image against a "
            "caption"
        )
    chosen = resolve_contrast_metrics(scorer, metrics)
    retrieval = chosen == "all"
    own, queries = contrast_queries(sources, genders, dataset["neutral_captions"])
    if not queries:
        raise DataFormatError(
            _where(dataset), None, "neutral_captions", "no neutral captions to query with"
        )
    import torch

    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise ConfigError(f"bootstrap must be a whole number >= 0, not {bootstrap!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), not {confidence!r}")
    if block is None:
        block = max(1, min(256, 2**17 // n))
    elif isinstance(block, bool) or not isinstance(block, int | np.integer) or block < 1:
        raise ConfigError(f"block must be a positive number of queries, not {block!r}")
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as error:
        raise ConfigError(f"device {device!r} is not a torch device ({error})") from error
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r}: torch sees no CUDA device")
    pair_cells = _pair_cells(own, queries)
    block_scores: Callable[[int, int], torch.Tensor]
    if isinstance(scorer, ImageTextScorer):
        from contrastkit.pipeline import DatasetImage, embed_images  # torch: not on import

        # the encoded images are read and decoded in the image pipeline's workers
        image_embeddings = embed_images(
            scorer,
            DatasetImage.column_of(dataset.select_columns(["image"]), "image"),
            batch_size=batch_size,
            progress=progress,
        )
        text_embeddings = np.concatenate(
            [scorer.encode_texts([c for _, c in chunk]) for chunk in batched(queries, 256)]
        )
        # Similarities are float64 products rounded to the dtype the dense ``text @
        # images.T`` had (float32 for float32 embeddings): float32 products round
        # differently with the block's shape, the BLAS kernel and the device, which would
        # reorder near-ties.
        dense_dtype = np.result_type(text_embeddings, image_embeddings, np.float32)
        score_dtype = torch.float32 if dense_dtype == np.float32 else torch.float64
        image_matrix = torch.tensor(image_embeddings, dtype=torch.float64, device=target)

        def block_scores(start: int, stop: int) -> torch.Tensor:
            texts = torch.tensor(text_embeddings[start:stop], dtype=torch.float64, device=target)
            return (texts @ image_matrix.T).to(score_dtype)  # (rows, images)

        scoring: dict[str, Any] | None = None  # a dual encoder's summary is as it was
    else:
        matrix = caption_score_matrix(
            dataset, scorer, [c for _, c in queries],
            cells=None if retrieval else pair_cells, batch_size=batch_size,
            progress=progress, raw_scores=raw_scores,
        )  # fmt: skip
        by_query = matrix.scores.T  # (queries, images)

        def block_scores(start: int, stop: int) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(by_query[start:stop]))

        scoring = {
            "score_kind": matrix.score_kind, "metrics": chosen, "requested": metrics,
            "unit": "image-query pair", "model_passes": matrix.computed + matrix.reused,
            "all_metrics_passes": n * len(queries), "computed": matrix.computed,
            "reused": matrix.reused,
        }  # fmt: skip
    labels = np.asarray(genders)
    ks = [k for k in ks if k >= 1]
    top_k = min(max(ks, default=0), n) if retrieval else 0
    # torch.topk orders tied scores arbitrarily: take a wider candidate list, re-sort it
    # by (-score, index) and fall back to a stable full sort for a row whose tie at the
    # K-th score reaches past the candidates.
    wide = min(n, 2 * top_k + 8)
    per_query: dict[str, list[float]] = {}
    records: list[dict[str, Any]] = []
    preferred: list[float] = []
    gaps: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(queries), block):
            block_queries = queries[start : start + block]
            scores_device = block_scores(start, start + len(block_queries))
            similarity = scores_device.cpu().numpy()
            found_metrics: dict[str, np.ndarray] = {}
            tops = np.empty((len(block_queries), top_k), dtype=np.int64)
            if retrieval:
                found_metrics = retrieval_metrics_batch(similarity, labels, ks)
            if top_k:
                found, candidates = (t.cpu().numpy() for t in torch.topk(scores_device, wide))
                order = np.lexsort((candidates, -found), axis=-1)[:, :top_k]
                tops = np.take_along_axis(candidates, order, axis=1)
                if wide < n:
                    for tied in np.flatnonzero(found[:, top_k - 1] <= found[:, wide - 1]):
                        tops[tied] = np.argsort(-similarity[tied], kind="stable")[:top_k]
            for row, (source, caption) in enumerate(block_queries):
                values = {name: float(array[row]) for name, array in found_metrics.items()}
                for name, value in values.items():
                    per_query.setdefault(name, []).append(value)
                pair = own.get(source, {})
                record: dict[str, Any] = {"source_id": source, "query": caption, **values}
                if "masculine" in pair and "feminine" in pair:
                    masculine = float(similarity[row, pair["masculine"]])
                    feminine = float(similarity[row, pair["feminine"]])
                    record |= {"score_masculine": masculine, "score_feminine": feminine}
                    gaps.append(masculine - feminine)
                    preferred.append(
                        1.0 if masculine > feminine else 0.5 if masculine == feminine else 0.0
                    )
                if retrieval:
                    record["top"] = [f"{sources[i]}:{genders[i]}" for i in tops[row]]
                records.append(record)
            del scores_device, similarity, found_metrics, tops
    summary = contrast_summary(
        n, len(own), len(queries), ks, per_query, gaps, preferred,
        retrieval=retrieval, scoring=scoring,
    )  # fmt: skip
    if bootstrap and retrieval:
        for name, interval in query_intervals(per_query, bootstrap, confidence, seed).items():
            summary["retrieval"][name]["mean_ci"] = interval
    if bootstrap and preferred:  # the share preferring the masculine version, over queries
        shares = {"masculine_preferred": preferred}
        summary["pairs"]["masculine_preferred_ci"] = query_intervals(
            shares, bootstrap, confidence, seed, names=list(shares)
        )["masculine_preferred"]
    if bootstrap and (retrieval or preferred):
        summary["bootstrap"] = {
            "resamples": bootstrap, "confidence": confidence, "seed": seed, "over": "queries"
        }  # fmt: skip
    return {"summary": summary, "queries": records}


def _fmt(value: Any, *, signed: bool = True) -> str:
    """A number for the report: signed (a bias, a gap) or not (a spread, sigma), 3 places,
    ``n/a`` when undefined."""
    return format_number(value, 3, sign=signed, missing="n/a")


def _scoring_lines(summary: Mapping[str, Any]) -> list[str]:
    """What the report says of the scores and their cost (:func:`contrast_scoring`)."""
    scoring = contrast_scoring(summary)
    images, queries = summary.get("images"), summary.get("queries")
    lines = [f"Score: {scoring['score_kind']}.", ""]
    if scoring["unit"] == "embedding":
        cost = (
            f"Cost: one embedding per image and per query ({images} + {queries} model "
            "passes); every score is a dot product."
        )
    else:
        done = scoring["model_passes"]
        every = scoring["all_metrics_passes"]
        if scoring["metrics"] == "all":
            cost = (
                f"Cost: every image against every query, {images} x {queries} = {every} "
                "image-caption model passes (a dual encoder needs one embedding per image "
                f"and per query, {images} + {queries})"
            )
        else:
            cost = (
                "Cost: pair preference only (contrast metrics `pairs`): each query against "
                f"its own photo's two versions, {done} image-caption model passes; the "
                f"retrieval metrics rank every image for every query, {images} x {queries} "
                f"= {every} passes (`--contrast-metrics all`)"
            )
        cost += (
            f"; {scoring['computed']} run in this evaluation, {scoring['reused']} reused "
            f"from an earlier run (`{RAW_SCORES_FILE}`)."
        )
    return [*lines, cost]


def contrast_markdown(benchmark: dict[str, Any]) -> str:
    """The report of one model on one contrast set."""
    s = benchmark["summary"]
    lines = [f"# Contrast-set evaluation: {benchmark['model']}", ""]
    if benchmark.get("weights_note"):
        lines += [f"> **Random weights.** {benchmark['weights_note']}", ""]
    lines += [
        f"Data: `{benchmark['data']}` ({s['images']} images from {s['sources']} sources, "
        f"{s['queries']} gender-neutral queries).",
        "",
        *_scoring_lines(s),
    ]
    if s.get("warnings"):
        from contrastkit.evaluators.report.markdown import warnings_section

        lines += ["", *warnings_section(s["warnings"])[:-1]]
    if benchmark.get("note") and benchmark.get("note") != benchmark.get("weights_note"):
        lines += ["", f"> {benchmark['note']}"]
    lines += [
        "",
        "## Retrieval bias (GenSynth Sec. 5; 0 is balanced, positive leans masculine)",
        "",
        *table_header(["metric", "mean", "interval", "sigma", "queries"], "lrrrr"),
    ]
    if not s["retrieval"] and s.get("retrieval_note"):
        lines = [*lines[:-2], f"Retrieval bias is {s['retrieval_note']}."]
    level: tuple[Any, Any] | None = None
    for name, stats in s["retrieval"].items():
        sigma = _fmt(stats["sigma"], signed=False)
        ci = stats.get("mean_ci") or {}
        interval = (
            f"[{_fmt(ci['low'])}, {_fmt(ci['high'])}]"
            if ci and np.isfinite(ci["low"]) and np.isfinite(ci["high"])
            else "–"
        )
        if ci and level is None:
            level = (ci.get("level"), ci.get("resamples"))
        lines.append(table_row([name, _fmt(stats["mean"]), interval, sigma, stats["n"]]))
    if level:
        lines += [
            "",
            f"Interval: {100 * float(level[0]):g}% percentile bootstrap interval of the mean "
            f"over queries ({level[1]} resamples).",
        ]
    pairs = s["pairs"]
    embedded = contrast_scoring(s)["unit"] == "embedding"
    gap = "similarity gap" if embedded else "score gap"
    lines += ["", "## Pair preference (same scene, masculine vs feminine version)", ""]
    if pairs.get("applicable", pairs["queries_with_pair"] > 0):
        ci = pairs.get("masculine_preferred_ci") or {}
        interval = (
            f" [{ci['low']:.3f}, {ci['high']:.3f}] ({100 * float(ci['level']):g}% percentile "
            f"bootstrap interval over these queries, {ci['resamples']} resamples)"
            if ci and np.isfinite(ci["low"]) and np.isfinite(ci["high"])
            else ""
        )
        lines += [
            f"- queries with both versions of their source: {pairs['queries_with_pair']}",
            f"- share preferring the masculine version: {pairs['masculine_preferred']:.3f}"
            f"{interval} (0.5 is no preference)",
            f"- mean {gap}, masculine minus feminine: {_fmt(pairs['mean_gap'])}",
        ]
    else:
        lines.append(f"Pair preference is {pairs.get('note') or PAIRS_NOT_APPLICABLE}.")
    lines += [
        "",
        "## Plot",
        "",
        "![contrast_bias](plots/contrast_bias.png)",
        "",
        "*Mean Bias@K (both conventions), MaxSkew@K and pair preference over the queries; "
        "error bars: their bootstrap intervals, where evaluated with `--bootstrap`* "
        "([SVG](plots/contrast_bias.svg))",
    ]
    return "\n".join(lines) + "\n"


def _contrast_plot(benchmark: dict[str, Any]) -> Figure:
    """The contrast-set plot (:func:`~contrastkit.evaluators.report.plots.contrast_figure`)."""
    from contrastkit.evaluators.report.plots import contrast_figure

    return contrast_figure(benchmark)


def write_contrast_outputs(
    result: dict[str, Any],
    folder: Path,
    *,
    model: str,
    data: str,
    note: str | None = None,
    dataset: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``raw_contrast.jsonl``, ``benchmark.json``, ``report.md`` and the plot (PNG
    and SVG), each atomically; return them by name (``raw``, ``benchmark``, ``report``,
    ``plot``, ``plot_svg``). ``dataset`` (:func:`describe_export`) is stored as the
    benchmark's ``dataset``, which ``contrastkit report`` names the set by."""
    from contrastkit.evaluators.report.plots import save_formats
    from contrastkit.models.registry import weights_note

    folder.mkdir(parents=True, exist_ok=True)
    model_note = weights_note(model)
    benchmark = {
        "random_weights": model_note is not None,
        "weights_note": model_note,
        "model": model,
        "data": data,
        "dataset": dataset,
        "task": "contrast",
        "schema_version": SCHEMA_VERSION,
        "contrastkit_version": __version__,
        "note": note,
        "score_kind": contrast_scoring(result["summary"])["score_kind"],
        "scoring": contrast_scoring(result["summary"]),
        "summary": result["summary"],
    }
    paths = {
        "raw": folder / "raw_contrast.jsonl",
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
        "plot": folder / "plots" / "contrast_bias.png",
        "plot_svg": folder / "plots" / "contrast_bias.svg",
    }
    atomic_write_text(
        paths["raw"],
        "".join(json.dumps(r, allow_nan=True) + "\n" for r in result["queries"]),
    )
    atomic_write_text(paths["benchmark"], json.dumps(benchmark, indent=2) + "\n")
    atomic_write_text(paths["report"], contrast_markdown(benchmark))
    save_formats(_contrast_plot(benchmark), folder / "plots" / "contrast_bias")
    return paths
