"""The stereotype probing task (VLStereoSet, Zhou et al. 2022, Sec. 3.3-3.5): every probe
row's image against its own captions.

Per row, three score sets (:func:`score_batch`):

* ``scores``: the image with ``(S_s, S_a, S_i)``, for vlrs / vlbs / ivlas (Sec. 3.4),
  and ``probabilities``, their softmax: the 3-way distribution of Sec. 3.3 (of raw
  cosines, for a dual encoder; see :mod:`.benchmark`);
* ``neutral_scores``: the image with the neutralised pair ``(S'_s, S'_a)``, for lmss;
* ``blank_scores``: a blank image ``I'`` (:func:`blank_image`) with ``(S'_s, S'_a)``,
  for vlss (Sec. 3.5).

Rows without neutral captions have ``None`` for the last two. The scores come from
:func:`caption_scores`, which takes any model of the registry that can score an image
against captions; the records are what ``raw_stereotype.jsonl`` holds, and a rerun into
the same folder reuses every record whose row, image and captions are unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from PIL import Image

from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import ImageRef, Item, Task, TaskSettings
from contrastkit.evaluators.raw import read_raw
from contrastkit.interfaces import CaptionScorer, ImageTextScorer, PronounScorer, caption_width
from contrastkit.models.image_size import processor_input_size, size_of

__all__ = [
    "BLANK_COLOUR",
    "DEFAULT_BLANK_SIZE",
    "IMAGE",
    "RAW_FILE",
    "ProbeScorer",
    "RowBatches",
    "StereotypeRecord",
    "StereotypeSettings",
    "blank_image",
    "caption_scores",
    "model_input_size",
    "probe_item",
    "read_raw_stereotype",
    "record_key",
    "score_batch",
    "score_kind",
    "score_rows",
]

#: The raw per-row scores of one model, in its output folder.
RAW_FILE = "raw_stereotype.jsonl"
#: Side of the blank image for a model whose input size is not known (pixels).
DEFAULT_BLANK_SIZE = 224
#: The name of each item's one image.
IMAGE = "image"
#: The blank image's colour (Sec. 3.5: "a 'neutral' image that is completely white").
BLANK_COLOUR = (255, 255, 255)


def score_kind(model: object) -> str:
    """What :func:`caption_scores` returns for ``model``, in words."""
    if isinstance(model, CaptionScorer):
        return str(getattr(model, "score_kind", "caption score (higher: better match)"))
    return "cosine similarity of the unit image and text embeddings"


def caption_scores(
    model: CaptionScorer | ImageTextScorer | PronounScorer,
    images: Sequence[Image.Image],
    captions: Sequence[Sequence[str]],
) -> np.ndarray:
    """Each image's score against each of its own candidate captions, ``(n, k)`` float64.

    * A :class:`~contrastkit.interfaces.CaptionScorer` (``blip-itm:``, ``vilt:``) gives its
      own score: the match logit of Sec. 3.3.
    * A dual encoder (:class:`~contrastkit.interfaces.ImageTextScorer`) gives the cosine
      similarity of the image with each caption (Sec. 3.3, "c_s, c_a and c_i"), without
      the model's logit scale. The metrics apply the softmax and its scale
      (:mod:`.metrics`): the argmax metrics do not depend
      on it.

    Args:
        model: a loaded model.
        images: the images.
        captions: one sequence of candidate captions per image, all of the same length.

    Raises:
        ConfigError: a captioning model (it scores pronoun continuations, not captions).
        ValueError: ``captions`` does not have one sequence of equal length per image.
    """
    k = caption_width(images, captions)
    if not len(images) and isinstance(model, CaptionScorer | ImageTextScorer):
        return np.zeros((0, k), dtype=np.float64)
    if isinstance(model, CaptionScorer):
        result = np.asarray(model.caption_scores(images, captions), dtype=np.float64)
        if result.shape != (len(images), k):
            raise ValueError(
                f"{model.spec} returned scores of shape {result.shape}, not {(len(images), k)}"
            )
        return result
    if isinstance(model, ImageTextScorer):
        if not k:
            return np.zeros((len(images), k), dtype=np.float64)
        image_vectors = np.asarray(model.encode_images(images), dtype=np.float64)
        flat = [text for row in captions for text in row]
        text_vectors = np.asarray(model.encode_texts(flat), dtype=np.float64)
        text_vectors = text_vectors.reshape(len(images), k, -1)
        scores: np.ndarray = np.einsum("nd,nkd->nk", image_vectors, text_vectors)
        return scores
    spec = getattr(model, "spec", type(model).__name__)
    raise ConfigError(
        f"models: {spec} cannot score an image against captions: stereotype probing needs a "
        "dual encoder (open_clip:, hf-clip: ...) or an image-text-matching model (blip-itm:, "
        "vilt:); captioning models (blip:, git:, blip2:) score pronoun continuations only"
    )


def model_input_size(model: object) -> tuple[int, int] | None:
    """``(width, height)`` of the images ``model`` takes, when it says: an adapter's
    ``input_size``, a transformers image processor's crop or resize size, an OpenCLIP
    transform's centre crop; ``None`` when none of these is known."""
    size = getattr(model, "input_size", None)
    if isinstance(size, tuple) and len(size) == 2:
        return (int(size[0]), int(size[1]))
    preprocess = getattr(model, "image_preprocess", None)
    processor = getattr(preprocess, "processor", None) or getattr(model, "image_processor", None)
    if processor is not None:
        found = processor_input_size(processor)
        if found:
            return found
    transform = getattr(preprocess, "transform", None)
    for step in getattr(transform, "transforms", []):
        if type(step).__name__ == "CenterCrop":
            return size_of(list(step.size) if not isinstance(step.size, int) else step.size)
    return None


def blank_image(model: object) -> Image.Image:
    """The blank image ``I'`` of vlss (Sec. 3.5): all white, at the model's input size
    (:func:`model_input_size`), or :data:`DEFAULT_BLANK_SIZE` square when the model does
    not say. A white image stays white under any resize or crop, so for the models that
    resize to a fixed size the side does not change what the model sees; ViLT keeps the
    aspect ratio, and a square at its shorter side is what it takes."""
    size = model_input_size(model) or (DEFAULT_BLANK_SIZE, DEFAULT_BLANK_SIZE)
    return Image.new("RGB", size, BLANK_COLOUR)


def record_key(row: Any) -> str:
    """Identifies a row's scores across runs: its ID, image reference and captions (an
    edited caption or image gets new scores)."""
    payload = json.dumps(
        [row.id, row.image_ref, list(row.captions()), list(row.neutral_captions())],
        ensure_ascii=False,
    )
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
    return f"{row.id}:{digest}"


def read_raw_stereotype(path: Path, model: str | None = None) -> dict[str, dict[str, Any]]:
    """The records of a ``raw_stereotype.jsonl`` by key (of ``model`` only, when given).
    Lines that are not complete records with ``scores`` (the tail of an interrupted write)
    are skipped."""
    return read_raw(path, model, required=("scores",))


def _softmax(scores: np.ndarray) -> np.ndarray:
    """The distribution over one image's captions (Sec. 3.3): softmax of the scores."""
    shifted = np.exp(scores - scores.max())
    result: np.ndarray = shifted / shifted.sum()
    return result


class StereotypeRecord(TypedDict):
    """One probe row's scores as :func:`score_batch` makes them (the engine adds ``key``
    and ``model`` before a line of :data:`RAW_FILE` is written): the row, the scores of
    its three captions and their softmax, the scores of its neutral pair with the image
    and with the blank image (``None`` without neutral captions), the kind of score and
    the blank image's size."""

    id: str
    category: str
    label: str
    image: str
    captions: list[str]
    scores: list[float]
    probabilities: list[float]
    neutral_captions: list[str] | None
    neutral_scores: list[float] | None
    blank_scores: list[float] | None
    score_kind: str
    blank_size: list[int]


def score_batch(
    model: CaptionScorer | ImageTextScorer,
    rows: Sequence[Mapping[str, Any]],
    images: Sequence[Image.Image],
) -> list[StereotypeRecord]:
    """The records of a batch of probe rows (see the module docstring): ``rows[i]`` is
    the row of ``images[i]``, as the task's items hold it (``id``, ``category``,
    ``label``, ``image``, ``captions``, ``neutral_captions`` or ``None``); the engine
    adds ``key`` and ``model``."""
    kind = score_kind(model)
    blank = blank_image(model)
    size = list(blank.size)
    scores = caption_scores(model, images, [row["captions"] for row in rows])
    neutral_rows = [j for j, row in enumerate(rows) if row["neutral_captions"] is not None]
    pairs = [rows[j]["neutral_captions"] for j in neutral_rows]
    neutral = caption_scores(model, [images[j] for j in neutral_rows], pairs)
    blanks = caption_scores(model, [blank] * len(pairs), pairs)
    records = []
    for j, row in enumerate(rows):
        record: StereotypeRecord = {
            "id": row["id"],
            "category": row["category"],
            "label": row["label"],
            "image": row["image"],
            "captions": list(row["captions"]),
            "scores": scores[j].tolist(),
            "probabilities": _softmax(scores[j]).tolist(),
            "neutral_captions": row["neutral_captions"],
            "neutral_scores": None,
            "blank_scores": None,
            "score_kind": kind,
            "blank_size": size,
        }
        if j in neutral_rows:
            position = neutral_rows.index(j)
            record["neutral_scores"] = neutral[position].tolist()
            record["blank_scores"] = blanks[position].tolist()
        records.append(record)
    return records


@dataclass(frozen=True)
class RowBatches:
    """How :func:`score_rows` calls the model.

    Attributes:
        size: Rows per model call.
        progress: Called with ``(done, total)`` after each batch.
    """

    size: int = 32
    progress: Callable[[int, int], None] | None = None


@dataclass(frozen=True)
class StereotypeSettings(TaskSettings):
    """The stereotype task's own settings: none (its options are the image, network and
    bootstrap groups such tasks share)."""


def probe_item(row: Any, source: Path, image: ImageRef) -> Item:
    """The task's item of one probe row (:class:`contrastkit.probes.ProbeRow`): keyed by
    :func:`record_key` (a changed caption or image is scored again), its one image
    ``image`` (named :data:`IMAGE`), its data what :func:`score_batch` reads."""
    neutral = list(row.neutral_captions()) if row.has_neutral else None
    data = {
        "id": row.id, "category": row.category, "label": row.label, "image": row.image_ref,
        "captions": list(row.captions()), "neutral_captions": neutral,
    }  # fmt: skip
    return Item(
        key=record_key(row), images={IMAGE: image}, data=data, source=source, line=row.line,
        name=row.id, group=row.category,
    )  # fmt: skip


class ProbeScorer(Task[StereotypeSettings, Any]):
    """The scoring half of the stereotype task (:class:`.task.StereotypeProbing`): what
    a batch of its items gives, and where the records are kept. The engine's
    :func:`~contrastkit.evaluators.engine.run.score_items` scores with it."""

    name = "stereotype"
    kind = "stereotype"
    settings = StereotypeSettings
    scoring_settings = ()

    @property
    def raw_file(self) -> str:
        return RAW_FILE

    def score(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        settings: StereotypeSettings,
    ) -> list[Mapping[str, Any]]:
        rows = [item.data for item in items]
        return list(score_batch(model, rows, [opened[IMAGE] for opened in images]))


def score_rows(
    rows: Sequence[Any],
    open_image: Callable[[Any], Image.Image],
    model: CaptionScorer | ImageTextScorer,
    raw_path: Path,
    batches: RowBatches = RowBatches(),
) -> tuple[list[dict[str, Any]], int]:
    """Score every probe row and keep the records in ``raw_path`` the way ``contrastkit
    evaluate stereotype`` does (the engine's
    :func:`~contrastkit.evaluators.engine.run.score_items` with :class:`ProbeScorer`):
    records already there for this model and an unchanged row are reused, new ones
    appended after each batch.

    Args:
        rows: probe rows (:class:`contrastkit.probes.ProbeRow`).
        open_image: decodes a row's image.
        model: the model (:func:`caption_scores`).
        raw_path: the raw file.
        batches: rows per model call and the progress callback (:class:`RowBatches`).

    Returns:
        The records in row order, and how many were reused.
    """
    from contrastkit.evaluators.engine.run import score_items

    items = [
        probe_item(row, Path(row.source or raw_path), _opener(open_image, row)) for row in rows
    ]
    spec = str(getattr(model, "spec", ""))
    context = (spec, StereotypeSettings(), batches.size, _progress(batches.progress))
    records, reused, _ = score_items(ProbeScorer(), model, items, raw_path, context)
    return [dict(record) for record in records], reused


def _opener(open_image: Callable[[Any], Image.Image], row: Any) -> Callable[[], Image.Image]:
    return lambda: open_image(row)


def _progress(callback: Callable[[int, int], None] | None) -> Any:
    if callback is None:
        return None

    @contextlib.contextmanager
    def stage(label: str, total: int | None) -> Iterator[Callable[..., None]]:
        yield lambda done, total=total: callback(done, total or 0)

    return stage
