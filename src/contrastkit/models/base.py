"""The two model interfaces the evaluator scores through, and what every adapter shares:
device and dtype selection, batching, and the per-caption text-embedding cache.

* :class:`ImageTextScorer` — CLIP-like dual encoders (VisoGender Sec. 3.4, "VLEs"): a
  compatibility score ``s(i, t)`` between an image and a text.
* :class:`PronounScorer` — captioning models (VisoGender Sec. 3.4, "Captioning models"):
  the probability of a continuation after a partial caption given the image.
"""

from __future__ import annotations

import pickle
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import torch
from PIL import Image
from safetensors import SafetensorError

from contrastkit.config import ModelConfig, require
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.interfaces import ImageTextScorer, PronounScorer
from contrastkit.pipeline import PipelineConfig, Preprocess, embed_images, to_rgb
from contrastkit.tiny.marker import spec_has_random_weights

__all__ = [
    "DTYPES",
    "LOAD_ERRORS",
    "DualEncoder",
    "ImageTextScorer",
    "LoadedParts",
    "ModelNotFoundError",
    "ModelRuntime",
    "PronounScorer",
    "batched",
    "resolve_device",
    "resolve_dtype",
    "to_rgb",
]

T = TypeVar("T")

#: Accepted ``dtype`` names and the torch dtypes they stand for.
DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
}


#: What model loaders (transformers, OpenCLIP, torch, safetensors) raise for files that
#: are missing, unreadable or not the model they claim to be: a truncated or corrupt
#: checkpoint (``UnpicklingError``, ``struct.error``, ``EOFError``, ``SafetensorError``,
#: and ``IndexError`` from torch's unpickler), a config that is not JSON or names an
#: unknown architecture (``ValueError``, ``KeyError``), weights of another shape
#: (``RuntimeError``), a missing file (``OSError``). Only the calls that read a user's
#: model files are wrapped in it, so the same errors elsewhere still surface as bugs.
LOAD_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    ValueError,
    KeyError,
    IndexError,
    RuntimeError,
    EOFError,
    struct.error,
    pickle.UnpicklingError,
    SafetensorError,
)


def resolve_device(device: str | None) -> torch.device:
    """``None`` picks CUDA when available, else the CPU; otherwise the named device.

    Raises:
        ConfigError: for a device torch does not know, or CUDA asked for but absent.
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        chosen = torch.device(device)
    except RuntimeError as error:
        raise ConfigError(f"device: unknown device {device!r} ({error})") from error
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device: {device!r} asked for, but CUDA is not available here")
    return chosen


def resolve_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """The torch dtype a model runs in.

    ``"auto"`` (the default; ``None`` means the same) is float16 on CUDA and float32 on
    the CPU: CLIP was trained in float16, every CUDA GPU runs it at full speed, and it
    keeps three more mantissa bits than bfloat16, so its decisions agree with float32
    (docs/pipeline.md gives the measured agreement). Otherwise one of :data:`DTYPES`.
    Half precision on the CPU is refused (slow and poorly supported).

    Raises:
        ConfigError: for an unknown name, or float16 on the CPU.
    """
    if dtype is None or dtype.lower() == "auto":
        return torch.float16 if device.type == "cuda" else torch.float32
    chosen = DTYPES.get(dtype.lower())
    if chosen is None:
        raise ConfigError(
            f"dtype: unknown dtype {dtype!r}; use auto or one of {', '.join(sorted(set(DTYPES)))}"
        )
    if chosen is torch.float16 and device.type == "cpu":
        raise ConfigError("dtype: float16 needs a GPU; use float32 or bfloat16 on the CPU")
    return chosen


@dataclass(frozen=True)
class ModelRuntime:
    """A :class:`~contrastkit.config.ModelConfig` resolved on this machine: what every
    loader needs, worked out in one place.

    Attributes:
        device: the torch device the model runs on.
        dtype: the torch dtype of its weights.
        batch_size: images (and texts) per forward pass.
        download: whether weights missing from the local cache may be fetched.
        pipeline: how images are decoded and fed to the model.
    """

    device: torch.device
    dtype: torch.dtype
    batch_size: int
    download: bool
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)

    @classmethod
    def resolve(cls, config: ModelConfig | None = None) -> ModelRuntime:
        """Resolve ``config`` (default: ``ModelConfig()``).

        Raises:
            ConfigError: an unknown or unavailable device, an unknown dtype, float16 on
                the CPU.
        """
        config = config or ModelConfig()
        device = resolve_device(config.device)
        return cls(
            device,
            resolve_dtype(config.dtype, device),
            config.batch_size,
            config.download,
            PipelineConfig(workers=config.workers, decode=config.decode),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class LoadedParts:
    """A transformers model and the processors its adapter feeds it through, as a loader
    read them from the model's files.

    Attributes:
        model: the model, on the runtime's device and in its dtype.
        tokenizer: its text tokenizer.
        image_processor: its image processor.
        qformer_tokenizer: InstructBLIP's Q-Former tokenizer (``None`` for other models).
    """

    model: Any
    tokenizer: Any
    image_processor: Any
    qformer_tokenizer: Any = None


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of ``items`` of at most ``size`` elements.

    Raises:
        ConfigError: ``size`` below 1.
    """
    require(size >= 1, "batch_size", f"must be at least 1, not {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _unit(rows: torch.Tensor) -> np.ndarray:
    array: np.ndarray = rows.float().cpu().numpy().astype(np.float32, copy=False)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray = (array / norms).astype(np.float32)
    return result


class DualEncoder(ABC):
    """What the dual-encoder adapters share: the image pipeline, precision, normalisation
    and the text cache.

    Images reach the model through :mod:`contrastkit.pipeline` (worker processes, GPU
    decoding, the model's own preprocessing as :attr:`image_preprocess`). Subclasses
    implement :meth:`_pixel_features` and :meth:`_text_features` for one batch. With
    ``autocast``, weights stay in float32 and the forward passes run under
    ``torch.autocast`` in ``dtype`` (OpenCLIP); without it the weights are in ``dtype``.
    Text embeddings are cached per distinct text for the life of the adapter, so a
    caption used for many images ("The doctor and his patient") is encoded once.
    """

    spec: str

    def __init__(
        self,
        spec: str,
        runtime: ModelRuntime,
        *,
        image_preprocess: Preprocess,
        autocast: bool = False,
    ):
        batch_size = runtime.batch_size
        require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
        self.spec = spec
        #: the device, dtype, batch size and image pipeline the adapter was loaded with
        self.runtime = runtime
        self.device = runtime.device
        self.dtype = runtime.dtype
        self.batch_size = batch_size
        self.image_preprocess = image_preprocess
        self.pipeline = runtime.pipeline
        self.autocast = autocast and runtime.dtype != torch.float32
        self._text_cache: dict[str, np.ndarray] = {}
        #: Whether the weights are random (``ARCH/random``, a marked tiny-model folder):
        #: every report of this model then says its figures are a pipeline check. (A
        #: dual encoder's spec carries no options; a wrapper sets this from its base.)
        self.random_weights = spec_has_random_weights(spec)

    @abstractmethod
    def _pixel_features(self, pixels: torch.Tensor) -> torch.Tensor:
        """Unnormalised embeddings of one preprocessed batch on :attr:`device`."""

    @abstractmethod
    def _text_features(self, texts: Sequence[str]) -> torch.Tensor:
        """Unnormalised embeddings of one batch of texts."""

    def _precision(self) -> Any:
        return torch.autocast(self.device.type, dtype=self.dtype, enabled=self.autocast)

    @torch.inference_mode()
    def encode_pixels(self, pixels: torch.Tensor) -> np.ndarray:
        """Unit-norm float32 embeddings of a batch the model's :attr:`image_preprocess`
        made, shape ``(n, d)``."""
        weights = torch.float32 if self.autocast else self.dtype
        with self._precision():
            features = self._pixel_features(pixels.to(self.device, weights, non_blocking=True))
        return _unit(features)

    def encode_images(
        self,
        images: Sequence[Any],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Unit-norm image embeddings, float32, shape ``(len(images), d)``, in batches of
        ``batch_size``. ``images`` are PIL images or any other image source (paths,
        bytes, ``datasets`` image dicts, callables; :mod:`contrastkit.pipeline`), decoded
        by the pipeline's workers."""
        return embed_images(self, images, progress=progress)

    @torch.inference_mode()
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm text embeddings, float32, shape ``(len(texts), d)``; texts seen
        before come from the cache."""
        missing = list(dict.fromkeys(text for text in texts if text not in self._text_cache))
        for batch in batched(missing, self.batch_size):
            with self._precision():
                features = self._text_features(batch)
            for text, row in zip(batch, _unit(features), strict=True):
                self._text_cache[text] = row
        if not texts:
            return np.zeros((0, self.embedding_dim), dtype=np.float32)
        return np.stack([self._text_cache[text] for text in texts])

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        """Cosine similarities, shape ``(len(images), len(texts))``."""
        result: np.ndarray = self.encode_images(images) @ self.encode_texts(texts).T
        return result

    @property
    @abstractmethod
    def embedding_dim(self) -> int:
        """The dimension ``d`` of the joint embedding space."""

    @property
    def cached_texts(self) -> int:
        """How many distinct texts have been encoded so far."""
        return len(self._text_cache)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r}, device={self.device}, dtype={self.dtype})"
