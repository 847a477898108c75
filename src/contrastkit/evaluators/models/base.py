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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from PIL import Image
from safetensors import SafetensorError

from contrastkit.config import ModelConfig, require
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.interfaces import ImageTextScorer, PronounScorer

__all__ = [
    "DTYPES",
    "LOAD_ERRORS",
    "DualEncoder",
    "ImageTextScorer",
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
    """``None`` is float32 (the precision the paper's numbers were computed in); else one
    of :data:`DTYPES`. Half precision on the CPU is refused (slow and poorly supported).

    Raises:
        ConfigError: for an unknown name, or float16 on the CPU.
    """
    if dtype is None:
        return torch.float32
    chosen = DTYPES.get(dtype.lower())
    if chosen is None:
        raise ConfigError(
            f"dtype: unknown dtype {dtype!r}; use one of {', '.join(sorted(set(DTYPES)))}"
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
    """

    device: torch.device
    dtype: torch.dtype
    batch_size: int
    download: bool

    @classmethod
    def resolve(cls, config: ModelConfig | None = None) -> ModelRuntime:
        """Resolve ``config`` (default: ``ModelConfig()``).

        Raises:
            ConfigError: an unknown or unavailable device, an unknown dtype, float16 on
                the CPU.
        """
        config = config or ModelConfig()
        device = resolve_device(config.device)
        return cls(device, resolve_dtype(config.dtype, device), config.batch_size, config.download)


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of ``items`` of at most ``size`` elements.

    Raises:
        ConfigError: ``size`` below 1.
    """
    require(size >= 1, "batch_size", f"must be at least 1, not {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def to_rgb(image: Image.Image) -> Image.Image:
    """The image in RGB mode (grey, palette and RGBA images are converted)."""
    return image if image.mode == "RGB" else image.convert("RGB")


def _unit(rows: torch.Tensor) -> np.ndarray:
    array: np.ndarray = rows.float().cpu().numpy().astype(np.float32, copy=False)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: np.ndarray = (array / norms).astype(np.float32)
    return result


class DualEncoder(ABC):
    """What the dual-encoder adapters share: batching, normalisation, the text cache.

    Subclasses implement :meth:`_image_features` and :meth:`_text_features` for one
    batch. Text embeddings are cached per distinct text for the life of the adapter, so
    a caption used for many images ("The doctor and his patient") is encoded once.
    """

    spec: str

    def __init__(self, spec: str, device: torch.device, dtype: torch.dtype, batch_size: int):
        require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
        self.spec = spec
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self._text_cache: dict[str, np.ndarray] = {}

    @abstractmethod
    def _image_features(self, images: Sequence[Image.Image]) -> torch.Tensor:
        """Unnormalised embeddings of one batch of RGB images."""

    @abstractmethod
    def _text_features(self, texts: Sequence[str]) -> torch.Tensor:
        """Unnormalised embeddings of one batch of texts."""

    @torch.inference_mode()
    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Unit-norm image embeddings, float32, shape ``(len(images), d)``, computed in
        batches of ``batch_size``."""
        parts = [
            _unit(self._image_features([to_rgb(image) for image in batch]))
            for batch in batched(list(images), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self.embedding_dim), dtype=np.float32)
        return np.concatenate(parts, axis=0)

    @torch.inference_mode()
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm text embeddings, float32, shape ``(len(texts), d)``; texts seen
        before come from the cache."""
        missing = list(dict.fromkeys(text for text in texts if text not in self._text_cache))
        for batch in batched(missing, self.batch_size):
            for text, row in zip(batch, _unit(self._text_features(batch)), strict=True):
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
