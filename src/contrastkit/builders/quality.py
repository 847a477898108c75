"""The quality checks of a synthetic contrast set (GenSynth, seeds/001, Sec. 4.3, Tab. 2).

A CLIP-like model (an :class:`~contrastkit.interfaces.ImageTextScorer`) scores sets of
labeled, captioned images:

* zero-shot gender accuracy (:func:`zero_shot_accuracy`): each image is classified
  between a masculine and a feminine prompt by the most similar prompt embedding;
* text-to-image recall@K (:func:`recall_at_k`): each caption retrieves among a pool of
  images plus its own by Euclidean distance
  (:func:`contrastkit.distances.squared_euclidean`).

:func:`quality_checks` computes both for one set, :func:`quality_report` for several
(``contrast_set``, ``original``, ``all_edits`` in a GenSynth or GenSwap build, as
the GenSynth builder's ``quality_sets`` lists them; the application layer,
:mod:`contrastkit.builders.gensynth.job`, brings the two together). Nothing here reads a build
folder: the sets come in as image files or images, labels and captions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from contrastkit.distances import squared_euclidean
from contrastkit.errors import ConfigError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.schema import Gender

if TYPE_CHECKING:
    from contrastkit.pipeline.sources import ImageSource

__all__ = [
    "DEFAULT_ZERO_SHOT_PROMPTS",
    "IMAGE_SUFFIXES",
    "CaptionQueries",
    "ImageSet",
    "LabeledImageSet",
    "list_pool_images",
    "quality_checks",
    "quality_report",
    "recall_at_k",
    "zero_shot_accuracy",
]

#: Zero-shot gender prompts (Sec. 4.3 does not print its prompts).
DEFAULT_ZERO_SHOT_PROMPTS: dict[Gender, str] = {
    Gender.MASCULINE: "a photo of a man",
    Gender.FEMININE: "a photo of a woman",
}
#: File suffixes :func:`list_pool_images` takes for images.
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")
#: Images per batch for a model without a batch size: bounds the memory a pool takes.
_CHUNK = 64


def zero_shot_accuracy(
    image_embeddings: np.ndarray, prompt_embeddings: np.ndarray, labels: Sequence[int]
) -> float:
    """Share of images whose most similar prompt (dot product of L2-normalized
    embeddings, CLIP's zero-shot rule) is the one of their label (GenSynth Sec. 4.3).

    Args:
        image_embeddings: ``(n, d)`` unit-norm image embeddings.
        prompt_embeddings: ``(c, d)`` unit-norm prompt embeddings, one per class.
        labels: for each image, the row of its class in ``prompt_embeddings``.
    """
    if len(labels) == 0:
        raise ValueError("no images to classify")
    predicted = np.argmax(image_embeddings @ prompt_embeddings.T, axis=1)
    return float(np.mean(predicted == np.asarray(labels)))


@dataclass(frozen=True)
class CaptionQueries:
    """The captions that retrieve in :func:`recall_at_k`, and the images they describe.

    Attributes:
        text_embeddings: (T, d) caption embeddings.
        owners: for each caption, the row of its image in ``query_images``.
        query_images: (N, d) embeddings of the images the captions describe.
        pool_index: for each query image, its row in the pool it is searched in (``-1``:
            not in it); ``None`` when the pool holds none of them.
    """

    text_embeddings: np.ndarray
    owners: Sequence[int]
    query_images: np.ndarray
    pool_index: Sequence[int] | None = None


def recall_at_k(
    queries: CaptionQueries,
    pool: np.ndarray,
    ks: Sequence[int] = (1, 5, 10),
    *,
    caption_block: int = 1024,
    pool_block: int = 8192,
) -> dict[int, float]:
    """Text-to-image recall@K of GenSynth Sec. 4.3:
    ``R@K = 1/(N n) Σ_i Σ_j 1(I_i ∈ R_i^j(K))``.

    Caption ``j`` of image ``i`` (``owners[j] = i``) searches ``pool ∪ {I_i}`` by
    Euclidean distance; it is a hit when fewer than ``K`` pool images are strictly
    closer than ``I_i`` (ties go to the query image). When the pool already holds the
    query images, ``queries.pool_index[i]`` gives the pool row of ``I_i`` so it is not
    counted as its own competitor.

    Only the rank of ``I_i`` matters, so no caption x pool matrix is kept: the distances
    are computed ``caption_block x pool_block`` at a time
    (:func:`contrastkit.distances.squared_euclidean`) and each caption's count of
    strictly closer pool images (closer by more than 1e-9) is summed over the pool
    blocks. Memory is bounded by the block sizes (by default 8M distances, 32 MB in
    float32, beside ``caption_block x d`` for the captions' own distances) at any number
    of captions and pool size, where the dense matrix grows with their product: 477 MB
    for COCO val's 25k captions against its 5k images, hundreds of GB for COCO train's
    captions against its images. The counts equal those of the dense matrix; a different
    block shape can change the BLAS kernel's last-bit rounding of a distance, which only
    matters for a pool image within float rounding of the caption's own distance.

    Args:
        queries: the caption embeddings, the image each describes and those images'
            embeddings (and rows in ``pool``): :class:`CaptionQueries`.
        pool: (P, d) embeddings of the other images.
        ks: the cut-offs.
        caption_block: captions whose distances are computed together.
        pool_block: pool images whose distances are computed together.

    Returns:
        ``{K: recall@K}`` for each cut-off.

    Raises:
        ValueError: owners and captions of different lengths, no captions, a block size
            below 1, or a ``pool_index`` row past the end of the pool.
    """
    text_embeddings, query_images = queries.text_embeddings, queries.query_images
    pool_index = queries.pool_index
    owners_array = np.asarray(queries.owners, dtype=np.int64)
    if len(owners_array) != len(text_embeddings):
        raise ValueError(f"{len(owners_array)} owners for {len(text_embeddings)} captions")
    if len(owners_array) == 0:
        raise ValueError("no captions to retrieve with")
    for name, size in (("caption_block", caption_block), ("pool_block", pool_block)):
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"{name} must be a positive number of rows, not {size!r}")
    own_rows = None if pool_index is None else _own_pool_rows(pool_index, owners_array, len(pool))
    closer = np.zeros(len(owners_array), dtype=np.int64)
    for start in range(0, len(owners_array), caption_block):
        stop = min(start + caption_block, len(owners_array))
        texts = text_embeddings[start:stop]
        own = np.sum((texts - query_images[owners_array[start:stop]]) ** 2, axis=1)
        closer[start:stop] = _closer_in_pool(
            texts,
            own,
            pool,
            None if own_rows is None else own_rows[start:stop],
            pool_block,
        )
    return {k: float(np.mean(closer < k)) for k in ks}


def _own_pool_rows(pool_index: Sequence[int], owners: np.ndarray, pool_size: int) -> np.ndarray:
    """For each caption, the pool row of its own image (``-1``: not in the pool)."""
    rows: np.ndarray = np.asarray(pool_index, dtype=np.int64)[owners]
    if rows.size and rows.max() >= pool_size:
        raise ValueError(f"pool_index {rows.max()} is past the end of a pool of {pool_size}")
    return rows


def _closer_in_pool(
    texts: np.ndarray,
    own: np.ndarray,
    pool: np.ndarray,
    own_rows: np.ndarray | None,
    pool_block: int,
) -> np.ndarray:
    """For each caption of ``texts``, how many pool images are closer than its own image
    (squared distance ``own``) by more than 1e-9, its own pool row (``own_rows``, ``-1``:
    none) left out; the pool is read ``pool_block`` rows at a time."""
    limit = own[:, None] - 1e-9
    counts = np.zeros(len(texts), dtype=np.int64)
    for start in range(0, len(pool), pool_block):
        stop = min(start + pool_block, len(pool))
        others = squared_euclidean(texts, pool[start:stop])
        if own_rows is not None:
            inside = np.flatnonzero((own_rows >= start) & (own_rows < stop))
            others[inside, own_rows[inside] - start] = np.inf
        counts += np.count_nonzero(others < limit, axis=1)
    return counts


def _normalized(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    out: np.ndarray = (array / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


def _embed_images(model: ImageTextScorer, images: Sequence[ImageSource]) -> np.ndarray:
    """Unit-norm embeddings of ``images`` (decoded images or files), through the image
    pipeline: files are decoded in its worker processes, ``_CHUNK`` images per batch
    unless the model has its own batch size."""
    from contrastkit.pipeline.embed import embed_images  # torch: not on import

    size = int(getattr(model, "batch_size", _CHUNK))
    return _normalized(embed_images(model, images, batch_size=size))


def quality_checks(
    model: ImageTextScorer,
    labeled: LabeledImageSet,
    pool: Sequence[ImageSource] | None = None,
    *,
    prompts: Mapping[Gender, str] | None = None,
    ks: Sequence[int] = (1, 5, 10),
) -> dict[str, Any]:
    """Sec. 4.3 / Tab. 2 quality checks of one set of images with a CLIP-like model.

    * zero-shot gender accuracy: each image is classified between the masculine and the
      feminine prompt (:data:`DEFAULT_ZERO_SHOT_PROMPTS`);
    * text-to-image recall@K: every caption of image ``i`` retrieves from ``pool ∪ {I_i}``
      (:func:`recall_at_k`); with no pool, the images themselves are the pool.

    Args:
        model: the CLIP-like model.
        labeled: the images (or their files), the label and the captions of each
            (a :class:`LabeledImageSet`, e.g. an :class:`ImageSet`).
        pool: images (or files) to retrieve among (the paper: COCO val 5k).
        prompts: the zero-shot prompt of each gender.
        ks: the recall cut-offs.

    Returns:
        ``images``, ``captions`` (counts), ``zero_shot_gender_accuracy``,
        ``zero_shot_prompts``, ``retrieval_pool_size`` and ``recall@K`` for each ``K``.
    """
    images, genders = list(labeled.images), list(labeled.genders)
    captions = list(labeled.captions)
    if not len(images) == len(genders) == len(captions):
        raise ValueError(
            f"{len(images)} images, {len(genders)} labels and {len(captions)} caption lists"
        )
    prompts = prompts or DEFAULT_ZERO_SHOT_PROMPTS
    order = list(Gender.binary())
    image_emb = _embed_images(model, images)
    prompt_emb = _normalized(np.asarray(model.encode_texts([prompts[g] for g in order])))
    accuracy = zero_shot_accuracy(image_emb, prompt_emb, [order.index(g) for g in genders])
    texts = [c for group in captions for c in group]
    owners = [i for i, group in enumerate(captions) for _ in group]
    text_emb = _normalized(np.asarray(model.encode_texts(texts), np.float32))
    if pool is None:
        queries = CaptionQueries(text_emb, owners, image_emb, pool_index=range(len(images)))
        recall = recall_at_k(queries, image_emb, ks)
        pool_size = len(images)
    else:
        queries = CaptionQueries(text_emb, owners, image_emb)
        recall = recall_at_k(queries, _embed_images(model, pool), ks)
        pool_size = len(pool) + 1
    return {
        "images": len(images),
        "captions": len(texts),
        "zero_shot_gender_accuracy": accuracy,
        "zero_shot_prompts": {g.value: prompts[g] for g in order},
        "retrieval_pool_size": pool_size,
        **{f"recall@{k}": value for k, value in recall.items()},
    }


class LabeledImageSet(Protocol):
    """A set of images to check: image files, a perceived-gender label and captions per
    image (the GenSynth builder's ``LabeledImages`` is one)."""

    @property
    def images(self) -> Sequence[ImageSource]:
        """The image files (or callables returning the images: an edit confined to the
        person mask is put onto its source photo when read)."""
        ...

    @property
    def genders(self) -> Sequence[Gender]:
        """The label of each image."""
        ...

    @property
    def captions(self) -> Sequence[Sequence[str]]:
        """The captions of each image."""
        ...


@dataclass(frozen=True)
class ImageSet:
    """A :class:`LabeledImageSet` given as is: images (or files), the label of each and
    the captions of each."""

    images: Sequence[ImageSource]
    genders: Sequence[Gender]
    captions: Sequence[Sequence[str]]


def quality_report(
    sets: Mapping[str, LabeledImageSet],
    model: ImageTextScorer,
    *,
    pool: Sequence[Path] | None = None,
    prompts: Mapping[Gender, str] | None = None,
    ks: Sequence[int] = (1, 5, 10),
) -> dict[str, dict[str, Any]]:
    """The Sec. 4.3 / Tab. 2 quality checks (:func:`quality_checks`) of several sets,
    e.g. a build's ``contrast_set``, ``original`` and ``all_edits``.

    Args:
        sets: name -> images with labels and captions; empty sets are left out.
        model: the CLIP-like model.
        pool: image files every set retrieves among; by default each set retrieves
            among its own images.
        prompts, ks: see :func:`quality_checks`.

    Returns:
        name -> the checks of that set.
    """
    return {
        name: quality_checks(model, s, pool, prompts=prompts, ks=ks)
        for name, s in sets.items()
        if len(s.images)
    }


def list_pool_images(folder: str | Path, limit: int | None = None) -> list[Path]:
    """The image files (:data:`IMAGE_SUFFIXES`) directly in ``folder``, sorted by name,
    at most ``limit`` of them: a retrieval pool such as COCO ``val2017``.

    Raises:
        ConfigError: ``folder`` is not a folder, holds no images, or ``limit < 1``.
    """
    folder = Path(folder)
    if limit is not None and limit < 1:
        raise ConfigError(f"pool_limit must be at least 1, not {limit}")
    if not folder.is_dir():
        raise ConfigError(f"pool {folder}: no such folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ConfigError(f"pool {folder}: no images ({', '.join(IMAGE_SUFFIXES)}) in it")
    return files[:limit] if limit else files
