"""A model's own image preprocessing, runnable on PIL images (the reference) and as tensor
ops on a batch of decoded ``uint8`` images (the fast path, on the model's device).

* :class:`TorchvisionPreprocess` wraps an OpenCLIP evaluation transform (a torchvision
  ``Compose`` of ``Resize``, ``CenterCrop``, RGB conversion, ``ToTensor`` and
  ``Normalize``, read from the model's preprocess config). The tensor path runs
  ``Resize`` as :func:`pil_resize`, Pillow's own resampling algorithm (its 22-bit
  fixed-point filter coefficients, its rounding, its horizontal-then-vertical passes
  through ``uint8``) as two matrix products in float64, which represents every
  intermediate sum exactly: the output is Pillow's, bit for bit, on any device.
  ``CenterCrop`` and ``Normalize`` are the same torchvision functions on both paths;
  ``ToTensor`` becomes a division by 255.
* :class:`HFPreprocess` wraps a transformers image processor. Processors with the
  torchvision backend (transformers 5, and the ``*Fast`` processors of transformers 4)
  take ``uint8`` tensors and a ``device`` and run on it; with a PIL image they convert it
  to a tensor and run the same ops, so both paths compute the same numbers.

A transform with a step the tensor path does not know (OpenCLIP's ``ResizeKeepRatio``,
say) has no tensor path (:attr:`Preprocess.tensor_ready` is false): its images are
preprocessed with PIL in the worker processes instead, which is always exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from PIL import Image

__all__ = [
    "HFPreprocess",
    "Preprocess",
    "TorchvisionPreprocess",
    "pil_resize",
]

# -- Pillow's resampling (libImaging/Resample.c), exactly ---------------------------------


def _bicubic(x: np.ndarray) -> np.ndarray:
    a = -0.5
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _bilinear(x: np.ndarray) -> np.ndarray:
    result: np.ndarray = np.maximum(1.0 - np.abs(x), 0.0)
    return result


def _sinc(x: np.ndarray) -> np.ndarray:
    safe = np.where(x == 0.0, 1.0, np.pi * x)
    result: np.ndarray = np.where(x == 0.0, 1.0, np.sin(safe) / safe)
    return result


def _lanczos(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 3.0, _sinc(x) * _sinc(x / 3.0), 0.0)


#: Pillow's antialiasing filters by torchvision interpolation name: (filter, support).
_FILTERS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], float]] = {
    "bicubic": (_bicubic, 2.0),
    "bilinear": (_bilinear, 1.0),
    "lanczos": (_lanczos, 3.0),
}
_PRECISION_BITS = 32 - 8 - 2  # Resample.c: 8-bit images


@lru_cache(maxsize=256)
def _coefficients(size_in: int, size_out: int, name: str) -> np.ndarray:
    """The ``(size_out, size_in)`` matrix of Pillow's integer filter coefficients for one
    axis (``precompute_coeffs`` and ``normalize_coeffs_8bpc`` of Resample.c)."""
    function, support = _FILTERS[name]
    scale = size_in / size_out
    filterscale = max(scale, 1.0)
    support = support * filterscale
    matrix = np.zeros((size_out, size_in), dtype=np.float64)
    for out in range(size_out):
        center = (out + 0.5) * scale
        first = max(int(center - support + 0.5), 0)
        last = min(int(center + support + 0.5), size_in)
        taps = np.arange(first, last, dtype=np.float64)
        weights = function((taps - center + 0.5) / filterscale)
        total = weights.sum()
        if total != 0.0:
            weights = weights / total
        scaled = weights * (1 << _PRECISION_BITS)
        matrix[out, first:last] = np.where(
            scaled < 0, np.trunc(scaled - 0.5), np.trunc(scaled + 0.5)
        )
    return matrix


@lru_cache(maxsize=256)
def _device_coefficients(size_in: int, size_out: int, name: str, device: str) -> torch.Tensor:
    """:func:`_coefficients` as a float64 tensor on ``device``, transposed for ``x @ w``."""
    return torch.from_numpy(_coefficients(size_in, size_out, name).T.copy()).to(device)


def _resample_pass(pixels: torch.Tensor, size_out: int, name: str) -> torch.Tensor:
    """One axis (the last) of Pillow's 8-bit resampling: integer sums, rounding by adding
    half and shifting, clipping to 0..255. Float64 holds every sum exactly (|sum| <
    255 * 2**22 * taps < 2**53)."""
    weights = _device_coefficients(pixels.shape[-1], size_out, name, str(pixels.device))
    sums = pixels @ weights
    half = float(1 << (_PRECISION_BITS - 1))
    return torch.floor((sums + half) / float(1 << _PRECISION_BITS)).clamp_(0.0, 255.0)


def pil_resize(image: torch.Tensor, size: tuple[int, int], interpolation: str) -> torch.Tensor:
    """``image`` (``uint8``, ``(..., C, H, W)``: one image or a batch of one size, any
    device) resized to ``size`` = ``(height, width)`` as ``PIL.Image.resize`` resizes an
    8-bit image with the antialiasing filter ``interpolation`` (``bicubic``,
    ``bilinear`` or ``lanczos``): the same ``uint8`` values, bit for bit (tested against
    Pillow)."""
    height, width = size
    value = image.to(torch.float64)
    if width != value.shape[-1]:  # Pillow resizes horizontally first
        value = _resample_pass(value, width, interpolation)
    if height != value.shape[-2]:
        value = _resample_pass(value.transpose(-1, -2), height, interpolation).transpose(-1, -2)
    return value.to(torch.uint8)


def _output_size(step: Any, height: int, width: int) -> tuple[int, int]:
    """The size torchvision's ``Resize`` gives an image (``_compute_resized_output_size``)."""
    size = step.size
    if isinstance(size, Sequence) and len(size) == 2:
        return int(size[0]), int(size[1])
    wanted = int(size[0] if isinstance(size, Sequence) else size)
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = wanted, int(wanted * long / short)
    if step.max_size is not None and new_long > step.max_size:
        new_short, new_long = int(step.max_size * new_short / new_long), int(step.max_size)
    return (new_long, new_short) if width <= height else (new_short, new_long)


@runtime_checkable
class Preprocess(Protocol):
    """A model's image preprocessing."""

    #: Whether :meth:`tensors` is available.
    tensor_ready: bool

    def __call__(self, image: Image.Image) -> torch.Tensor:
        """The reference: one RGB PIL image to a float ``(C, H, W)`` tensor."""

    def tensors(self, images: Sequence[torch.Tensor], device: torch.device) -> torch.Tensor:
        """``uint8`` ``(3, H_i, W_i)`` RGB images (on ``device``) to a float
        ``(n, C, H, W)`` batch on ``device``."""


def _name(step: Any) -> str:
    return str(getattr(step, "__name__", None) or type(step).__name__)


def _is(step: Any, *names: str) -> bool:
    return _name(step) in names


class TorchvisionPreprocess:
    """An OpenCLIP / torchvision ``Compose`` as a :class:`Preprocess`."""

    _PASS = ("MaybeConvertMode", "_convert_to_rgb", "convert_to_rgb")
    _TO_TENSOR = ("ToTensor", "MaybeToTensor")
    _TENSOR_SAFE = ("Resize", "CenterCrop", "Normalize")

    def __init__(self, transform: Callable[[Image.Image], torch.Tensor]):
        self.transform = transform
        steps = list(getattr(transform, "transforms", []))
        self._steps: list[Any] | None = steps
        for step in steps:
            known = _is(step, *self._TENSOR_SAFE, *self._TO_TENSOR, *self._PASS)
            if not known or (_is(step, "Resize") and not _pil_filter(step)):
                self._steps = None  # a step the tensor path cannot reproduce: PIL only
                break
        if not steps:
            self._steps = None
        self.tensor_ready = self._steps is not None

    def __call__(self, image: Image.Image) -> torch.Tensor:
        result: torch.Tensor = self.transform(image)
        return result

    def tensors(self, images: Sequence[torch.Tensor], device: torch.device) -> torch.Tensor:
        """Steps before ``ToTensor`` run per image on ``uint8`` (as Pillow runs them), the
        rest on the stacked float batch."""
        if self._steps is None:
            raise TypeError("this transform has no tensor path")
        steps = [step for step in self._steps if not _is(step, *self._PASS)]
        cut = next((i for i, s in enumerate(steps) if _is(s, *self._TO_TENSOR)), len(steps))
        done: list[torch.Tensor | None] = [None] * len(images)
        sizes: dict[tuple[int, ...], list[int]] = {}
        for position, image in enumerate(images):  # images of one size go together
            sizes.setdefault(tuple(image.shape), []).append(position)
        for members in sizes.values():
            value = torch.stack([images[n] for n in members]).to(device)
            for step in steps[:cut]:
                if _is(step, "Resize"):
                    size = _output_size(step, value.shape[-2], value.shape[-1])
                    value = pil_resize(value, size, _pil_filter(step) or "")
                else:
                    value = step(value)
            for position, row in zip(members, value, strict=True):
                done[position] = row
        batch = torch.stack([row for row in done if row is not None])
        for step in steps[cut:]:
            if _is(step, *self._TO_TENSOR):
                batch = batch.float().div_(255.0) if batch.dtype == torch.uint8 else batch
            else:
                batch = step(batch)
        return batch


def _pil_filter(step: Any) -> str | None:
    """The Pillow filter a torchvision ``Resize`` applies to PIL images, if
    :func:`pil_resize` reproduces it."""
    name = str(getattr(step.interpolation, "value", step.interpolation))
    return name if name in _FILTERS and step.antialias is not False else None


def _torchvision_backend(processor: Any) -> bool:
    names = {cls.__name__ for cls in type(processor).__mro__}
    return bool(names & {"TorchvisionBackend", "BaseImageProcessorFast"})


class HFPreprocess:
    """A transformers image processor as a :class:`Preprocess`."""

    def __init__(self, processor: Any):
        self.processor = processor
        self.tensor_ready = _torchvision_backend(processor)

    def __call__(self, image: Image.Image) -> torch.Tensor:
        pixels: torch.Tensor = self.processor(images=[image], return_tensors="pt")["pixel_values"]
        return pixels[0]

    def tensors(self, images: Sequence[torch.Tensor], device: torch.device) -> torch.Tensor:
        if not self.tensor_ready:
            raise TypeError(f"{type(self.processor).__name__} does not take tensors")
        pixels: torch.Tensor = self.processor(
            images=list(images), return_tensors="pt", device=str(device)
        )["pixel_values"]
        return pixels.to(device)
