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
:mod:`contrastkit.apps.gensynth`, brings the two together). Nothing here reads a build
folder: the sets come in as image files or images, labels and captions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from contrastkit.distances import squared_euclidean
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.schema import Gender

__all__ = [
    "DEFAULT_ZERO_SHOT_PROMPTS",
    "IMAGE_SUFFIXES",
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
#: Images per ``encode_images`` call: bounds the memory a large pool takes.
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


def recall_at_k(
    text_embeddings: np.ndarray,
    owners: Sequence[int],
    query_images: np.ndarray,
    pool: np.ndarray,
    ks: Sequence[int] = (1, 5, 10),
    *,
    pool_index: Sequence[int] | None = None,
) -> dict[int, float]:
    """Text-to-image recall@K of GenSynth Sec. 4.3:
    ``R@K = 1/(N n) Σ_i Σ_j 1(I_i ∈ R_i^j(K))``.

    Caption ``j`` of image ``i`` (``owners[j] = i``) searches ``pool ∪ {I_i}`` by
    Euclidean distance; it is a hit when fewer than ``K`` pool images are strictly
    closer than ``I_i`` (ties go to the query image). When the pool already holds the
    query images, ``pool_index[i]`` gives the pool row of ``I_i`` so it is not counted
    as its own competitor.

    Args:
        text_embeddings: (T, d) caption embeddings.
        owners: for each caption, the row of its image in ``query_images``.
        query_images: (N, d) embeddings of the images the captions describe.
        pool: (P, d) embeddings of the other images.
        ks: the cut-offs.
        pool_index: for each query image, its row in ``pool`` (``-1``: not in it).

    Returns:
        ``{K: recall@K}`` for each cut-off.
    """
    owners_array = np.asarray(owners, dtype=np.int64)
    if len(owners_array) != len(text_embeddings):
        raise ValueError(f"{len(owners_array)} owners for {len(text_embeddings)} captions")
    if len(owners_array) == 0:
        raise ValueError("no captions to retrieve with")
    own = np.sum((text_embeddings - query_images[owners_array]) ** 2, axis=1)
    others = squared_euclidean(text_embeddings, pool)
    if pool_index is not None:
        rows = np.asarray(pool_index, dtype=np.int64)[owners_array]
        valid = rows >= 0
        others[np.arange(len(rows))[valid], rows[valid]] = np.inf
    closer = np.sum(others < own[:, None] - 1e-9, axis=1)
    return {k: float(np.mean(closer < k)) for k in ks}


def _normalized(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    out: np.ndarray = (array / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


def _open(image: Image.Image | str | Path) -> Image.Image:
    if isinstance(image, Image.Image):
        return image
    try:
        with Image.open(image) as opened:
            return opened.convert("RGB")
    except FileNotFoundError as error:
        raise DataFormatError(image, None, None, "image file not found") from error
    except OSError as error:
        raise DataFormatError(image, None, None, f"not a readable image ({error})") from error


def _embed_images(model: ImageTextScorer, images: Sequence[Image.Image | str | Path]) -> np.ndarray:
    """Unit-norm embeddings of ``images``, opened and encoded ``_CHUNK`` at a time."""
    chunks = [
        np.asarray(model.encode_images([_open(i) for i in images[start : start + _CHUNK]]),
                   np.float32)
        for start in range(0, len(images), _CHUNK)
    ]  # fmt: skip
    return _normalized(np.concatenate(chunks))


def quality_checks(
    model: ImageTextScorer,
    images: Sequence[Image.Image | str | Path],
    genders: Sequence[Gender],
    captions: Sequence[Sequence[str]],
    pool: Sequence[Image.Image | str | Path] | None = None,
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
        images: the images (or their files).
        genders: the label of each image.
        captions: the captions of each image.
        pool: images (or files) to retrieve among (the paper: COCO val 5k).
        prompts: the zero-shot prompt of each gender.
        ks: the recall cut-offs.

    Returns:
        ``images``, ``captions`` (counts), ``zero_shot_gender_accuracy``,
        ``zero_shot_prompts``, ``retrieval_pool_size`` and ``recall@K`` for each ``K``.
    """
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
        recall = recall_at_k(text_emb, owners, image_emb, image_emb, ks,
                             pool_index=range(len(images)))  # fmt: skip
        pool_size = len(images)
    else:
        recall = recall_at_k(text_emb, owners, image_emb, _embed_images(model, pool), ks)
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
    def images(self) -> Sequence[Path]:
        """The image files."""
        ...

    @property
    def genders(self) -> Sequence[Gender]:
        """The label of each image."""
        ...

    @property
    def captions(self) -> Sequence[Sequence[str]]:
        """The captions of each image."""
        ...


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
        name: quality_checks(
            model, list(s.images), list(s.genders), list(s.captions), pool, prompts=prompts, ks=ks
        )
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
