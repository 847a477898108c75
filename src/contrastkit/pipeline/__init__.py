"""The one image pipeline every model pass goes through: image sources in, embeddings (or
ready batches) out, with reading, decoding and preprocessing overlapped with the model.

Used by the evaluator (VisoGender rows), contrast-set evaluation, GenSynth's KNN-filter
embeddings and the Sec. 4.3 quality checks, and by every dual encoder's
``encode_images``.

>>> from contrastkit.pipeline import embed_images           # doctest: +SKIP
>>> vectors = embed_images(scorer, ["a.jpg", "b.png"])       # doctest: +SKIP

* :mod:`.sources`: what counts as an image source, and the reference decoding rule;
* :mod:`.preprocess`: a model's own preprocessing, on PIL images and as tensor ops;
* :mod:`.batches`: worker processes, GPU decoding, pinned memory, ready batches;
* :mod:`.embed`: embeddings of sources for any image encoder.

Names load lazily: importing :mod:`.sources` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contrastkit.pipeline.batches import (
        ImageBatch,
        auto_workers,
        image_batches,
        orient_tensor,
    )
    from contrastkit.pipeline.config import DECODE_MODES, PipelineConfig
    from contrastkit.pipeline.embed import embed_images, iter_embeddings
    from contrastkit.pipeline.preprocess import (
        HFPreprocess,
        Preprocess,
        TorchvisionPreprocess,
    )
    from contrastkit.pipeline.sources import (
        DatasetImage,
        DecodeFailure,
        ImageSource,
        decode,
        to_rgb,
    )

_API = {
    "DECODE_MODES": "config",
    "ImageBatch": "batches",
    "PipelineConfig": "config",
    "auto_workers": "batches",
    "image_batches": "batches",
    "orient_tensor": "batches",
    "HFPreprocess": "preprocess",
    "Preprocess": "preprocess",
    "TorchvisionPreprocess": "preprocess",
    "DatasetImage": "sources",
    "DecodeFailure": "sources",
    "ImageSource": "sources",
    "decode": "sources",
    "to_rgb": "sources",
    "embed_images": "embed",
    "iter_embeddings": "embed",
}

__all__ = [
    "DECODE_MODES",
    "DatasetImage",
    "DecodeFailure",
    "HFPreprocess",
    "ImageBatch",
    "ImageSource",
    "PipelineConfig",
    "Preprocess",
    "TorchvisionPreprocess",
    "auto_workers",
    "decode",
    "embed_images",
    "image_batches",
    "iter_embeddings",
    "orient_tensor",
    "to_rgb",
]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
