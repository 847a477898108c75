"""A caption scorer's scores on a contrast set (GenSynth Sec. 5 with ``blip-itm:``,
``vilt:`` or ``vlm:`` models): every wanted (image, query) cell scored once, kept in
:data:`~contrastkit.evaluators.tasks.contrast_sets.data.RAW_SCORES_FILE` and reused on
rerun (:func:`caption_score_matrix`, used by
:func:`contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.raw import RawAppender
from contrastkit.evaluators.tasks.contrast_sets.data import contrast_genders
from contrastkit.interfaces import CaptionScorer
from contrastkit.records import parse_json, text_lines

__all__ = ["CaptionMatrix", "CaptionRun", "caption_score_matrix"]


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


@dataclass(frozen=True)
class CaptionRun:
    """How :func:`caption_score_matrix` runs a caption scorer.

    Attributes:
        batch_size: (image, query) pairs per model call.
        progress: Called with (cells done, cells wanted) after every call.
        raw_scores: A JSONL file
            (:data:`~contrastkit.evaluators.tasks.contrast_sets.data.RAW_SCORES_FILE`) keeping
            the scores: cells already there for this model (its spec and
            ``score_kind``) and an unchanged image are reused; new ones are appended and
            flushed after each call, so an interrupted run resumes. The file is first
            rewritten with only the scores of this set's images and queries (every cell,
            not only the wanted ones). ``None``: not kept.
    """

    batch_size: int = 32
    progress: Callable[[int, int], None] | None = None
    raw_scores: Path | None = None


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


class _RawScores(TypedDict):
    """One line of the raw caption-score file: the model, its kind of score, the image's
    key and its scores by query text."""

    model: str
    score_kind: str
    image: str
    scores: dict[str, float]


def _raw_record(spec: str, kind: str, key: str, scores: Mapping[str, float]) -> _RawScores:
    return {"model": spec, "score_kind": kind, "image": key, "scores": dict(scores)}


def _known(
    path: Path, spec: str, kind: str, keys: Sequence[str], queries: Sequence[str]
) -> dict[str, dict[str, float]]:
    """The scores ``path`` keeps for this model and score kind of the images ``keys``
    against ``queries``, by image key and query text (images with none left out)."""
    stored = _read_raw_scores(path, spec, kind)
    texts = set(queries)
    known: dict[str, dict[str, float]] = {}
    for key in dict.fromkeys(keys):
        kept = {q: v for q, v in stored.get(key, {}).items() if q in texts}
        if kept:
            known[key] = kept
    return known


def _reuse(
    scores: np.ndarray,
    wanted: Mapping[int, Sequence[int]],
    known: Sequence[Mapping[str, float]],
    queries: Sequence[str],
) -> tuple[dict[int, list[int]], int]:
    """Fill ``scores`` with the ``known`` score of each wanted cell (``known[image]``: by
    query text); return the query columns still missing per image and how many cells
    were filled."""
    missing: dict[int, list[int]] = {}
    reused = 0
    for image, columns in wanted.items():
        have = known[image]
        for q in columns:
            if queries[q] in have:
                scores[image, q] = have[queries[q]]
                reused += 1
            else:
                missing.setdefault(image, []).append(q)
    return missing, reused


def _images_of(
    call: Sequence[tuple[int, list[int]]], column: Any, opened: dict[int, Any]
) -> list[Any]:
    """The image of each piece of ``call``, decoded from ``column`` once per run of calls
    that need it: ``opened`` keeps the images of the last call, and only those this call
    still needs."""
    needed = list(dict.fromkeys(image for image, _ in call))
    for stale in [i for i in opened if i not in needed]:
        del opened[stale]
    for image in needed:
        if image not in opened:
            opened[image] = column[image]["image"]
    return [opened[image] for image, _ in call]


def _store(
    scores: np.ndarray,
    call: Sequence[tuple[int, list[int]]],
    values: np.ndarray,
    queries: Sequence[str],
) -> list[tuple[int, dict[str, float]]]:
    """Put the ``values`` a model call gave (one row per piece) into ``scores``; return
    each piece's image with its new scores by query text, for the raw score file."""
    stored = []
    for (image, piece), row in zip(call, values, strict=True):
        for q, value in zip(piece, row, strict=True):
            scores[image, q] = float(value)
        stored.append(
            (image, {queries[q]: float(value) for q, value in zip(piece, row, strict=True)})
        )
    return stored


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
    run: CaptionRun = CaptionRun(),
) -> CaptionMatrix:
    """Each image's score against each query from a caption scorer, ``(n_images,
    n_queries)``:
    :func:`contrastkit.evaluators.tasks.stereotype_probing.scoring.caption_scores` of the
    images with queries as their candidate captions (the match logit of ``blip-itm:`` /
    ``vilt:``, the mean caption log-likelihood per token of ``vlm:``), so a cell is what
    the adapter gives that image and caption.

    Cost: one model pass per cell (``n_images x n_queries`` for the whole matrix), where a
    dual encoder needs one embedding per image and per query. Calls hold about
    ``batch_size`` (image, query) pairs (:func:`_calls`); each image is decoded once per
    run of calls that need it.

    Args:
        dataset: A contrast set
            (:func:`~contrastkit.evaluators.tasks.contrast_sets.data.load_contrast`).
        model: The caption scorer.
        queries: The query captions, in column order.
        cells: The query columns wanted per image row (default: every cell); the others
            stay ``nan``.
        run: Pairs per call, progress and the raw score file (:class:`CaptionRun`;
            default: 32 pairs, no progress, scores not kept).

    Raises:
        ConfigError: ``batch_size`` below 1.
        ValueError: the model returned scores of the wrong shape.
    """
    from contrastkit.evaluators.tasks.stereotype_probing.scoring import caption_scores, score_kind

    batch_size = run.batch_size
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be at least 1, not {batch_size!r}")
    n = len(dataset)
    spec = str(getattr(model, "spec", type(model).__name__))
    kind = score_kind(model)
    wanted = (
        {i: list(range(len(queries))) for i in range(n)}
        if cells is None
        else {int(i): [int(q) for q in qs] for i, qs in cells.items() if len(qs)}
    )
    scores = np.full((n, len(queries)), np.nan, dtype=np.float64)
    keys = _image_keys(dataset) if run.raw_scores is not None else [str(i) for i in range(n)]
    known = {} if run.raw_scores is None else _known(run.raw_scores, spec, kind, keys, queries)
    missing, reused = _reuse(scores, wanted, [known.get(key, {}) for key in keys], queries)
    total = reused + sum(len(qs) for qs in missing.values())
    done = reused
    if run.progress is not None:
        run.progress(done, total)
    column = dataset.select_columns(["image"])
    opened: dict[int, Any] = {}
    appender = (
        RawAppender(run.raw_scores, [_raw_record(spec, kind, k, v) for k, v in known.items()])
        if run.raw_scores is not None
        else None
    )
    try:
        for call in _calls(missing, batch_size):
            images = _images_of(call, column, opened)
            values = caption_scores(model, images, [[queries[q] for q in p] for _, p in call])
            stored = _store(scores, call, values, queries)
            if appender is not None:
                appender.write([_raw_record(spec, kind, keys[i], new) for i, new in stored])
            done += sum(len(piece) for _, piece in call)
            if run.progress is not None:
                run.progress(done, total)
    finally:
        if appender is not None:
            appender.close()
    return CaptionMatrix(scores, total - reused, reused, kind)
