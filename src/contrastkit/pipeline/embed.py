"""Embeddings of image sources through the pipeline, for any image encoder."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from contrastkit.pipeline.batches import image_batches
from contrastkit.pipeline.config import PipelineConfig
from contrastkit.pipeline.sources import DecodeFailure

__all__ = ["embed_images", "iter_embeddings"]


def iter_embeddings(
    scorer: Any,
    sources: Sequence[Any],
    *,
    batch_size: int | None = None,
    config: PipelineConfig | None = None,
    on_error: Callable[[DecodeFailure], Exception] | None = None,
) -> Iterator[tuple[range, np.ndarray]]:
    """``(positions, unit-norm embeddings)`` of ``sources``, batch by batch, in order.

    A scorer with the pixel interface of
    :class:`~contrastkit.models.base.DualEncoder` (``image_preprocess``,
    ``encode_pixels``, ``device``) gets preprocessed batches on its device; any other
    :class:`~contrastkit.interfaces.ImageTextScorer` gets decoded PIL images through
    its ``encode_images``. Either way, decoding happens in the pipeline's workers.

    Args:
        scorer: the image encoder.
        sources: image sources (:data:`ImageSource`).
        batch_size: images per batch (default: the scorer's ``batch_size``, else 32).
        config: the pipeline's settings (default: the scorer's ``pipeline``, else
            :class:`PipelineConfig`).
        on_error: see :func:`image_batches`.
    """
    size = batch_size or int(getattr(scorer, "batch_size", 32))
    config = config or getattr(scorer, "pipeline", None)
    preprocess = getattr(scorer, "image_preprocess", None)
    encode_pixels = getattr(scorer, "encode_pixels", None)
    if preprocess is not None and encode_pixels is not None:
        pixels = image_batches(sources, scorer, batch_size=size, config=config, on_error=on_error)
        for batch in pixels:
            yield batch.indices, np.asarray(encode_pixels(batch.pixels), dtype=np.float32)
        return
    for batch in image_batches(sources, batch_size=size, config=config, on_error=on_error):
        assert batch.images is not None
        yield batch.indices, np.asarray(scorer.encode_images(batch.images), dtype=np.float32)


def embed_images(
    scorer: Any,
    sources: Sequence[Any],
    *,
    batch_size: int | None = None,
    on_error: Callable[[DecodeFailure], Exception] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Unit-norm float32 embeddings of ``sources``, shape ``(len(sources), d)``, in
    input order (:func:`iter_embeddings`, with the scorer's ``pipeline`` settings);
    ``progress`` is called with (done, total)."""
    parts = []
    for indices, vectors in iter_embeddings(
        scorer, sources, batch_size=batch_size, on_error=on_error
    ):
        if vectors.shape[0] != len(indices):
            raise ValueError(f"the encoder returned {vectors.shape[0]} rows for {len(indices)}")
        parts.append(vectors)
        if progress is not None:
            progress(indices.stop, len(sources))
    if not parts:
        dim = int(getattr(scorer, "embedding_dim", 0))
        return np.zeros((0, dim), dtype=np.float32)
    return np.concatenate(parts, axis=0)
