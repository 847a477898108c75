"""Ready batches of preprocessed images for a model, with I/O, decoding and preprocessing
overlapped with the model's own compute.

Two paths, chosen by :class:`PipelineConfig` ``decode``:

* ``"pil"``: worker processes (a torch ``DataLoader``) open each source, decode it with
  Pillow (:func:`~contrastkit.pipeline.sources.decode`) and run the model's reference
  preprocessing; batches arrive stacked, in pinned memory when the model is on CUDA.
  The numbers are those of the model's own PIL preprocessing, exactly.
* ``"tensor"``: the workers only read the encoded bytes (and the EXIF orientation from
  the header). Baseline JPEGs in RGB or grey are decoded on the model's device with
  ``torchvision.io.decode_jpeg`` in one call per batch (nvJPEG on CUDA), turned as their
  EXIF tag says, and preprocessed by the model's own transforms as tensor ops there
  (:class:`~contrastkit.pipeline.preprocess.Preprocess`). Any other image (PNG, CMYK or
  16-bit, a crop, a decoded image) is decoded by Pillow in the worker and sent as
  ``uint8`` pixels; a JPEG the device decoder refuses is decoded by Pillow instead. The
  embeddings agree with the reference within the tolerance documented in
  ``docs/pipeline.md``.

``"auto"`` is ``"tensor"`` when the model is on CUDA and its preprocessing has a tensor
path, else ``"pil"``. Inputs that are all decoded PIL images skip the worker processes
(there is nothing to decode): threads run the preprocessing.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from contrastkit.config import require
from contrastkit.pipeline.config import DECODE_MODES, PipelineConfig
from contrastkit.pipeline.preprocess import Preprocess
from contrastkit.pipeline.sources import (
    DECODE_ERRORS,
    DatasetImage,
    DecodeFailure,
    decode,
    encoded_bytes,
    exif_orientation,
)

__all__ = [
    "DECODE_MODES",
    "ImageBatch",
    "PipelineConfig",  # re-exported from .config
    "auto_workers",
    "image_batches",
    "orient_tensor",
]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def auto_workers(device: torch.device) -> int:
    """Worker processes for a model on ``device``: with the model on a GPU, every core
    but one (at most 16) feeds it; with the model on the CPU, a quarter of the cores (at
    least one) decode, and the model's own threads keep the rest."""
    cpus = _cpus()
    if device.type == "cuda":
        return max(1, min(cpus - 1, 16))
    return max(1, cpus // 4)


@dataclass
class ImageBatch:
    """One batch, in input order.

    Attributes:
        indices: the positions of its images in the input.
        pixels: ``(n, C, H, W)`` preprocessed images on the model's device, when a
            preprocessing was given.
        images: the decoded RGB images, when none was.
    """

    indices: range
    pixels: torch.Tensor | None = None
    images: list[Image.Image] | None = None


# -- what a worker does with one source --------------------------------------------------


@dataclass(frozen=True)
class _Jpeg:
    """Encoded JPEG bytes for the device decoder, and the EXIF orientation to apply.
    Plain bytes travel between processes through the pipe, cheaper than one shared-memory
    tensor per image."""

    data: bytes
    orientation: int

    def tensor(self) -> torch.Tensor:
        return torch.frombuffer(bytearray(self.data), dtype=torch.uint8)


class _Item:
    """Turns the source at one position into what the main process needs (picklable and
    fork-safe: no CUDA, only Pillow, NumPy and CPU tensors)."""

    def __init__(self, sources: Sequence[Any], preprocess: Preprocess | None, mode: str):
        self.sources = sources
        self.preprocess = preprocess
        self.mode = mode

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, index: int) -> Any:
        source = self.sources[index]
        try:
            if isinstance(source, DatasetImage):  # read the row once, here in the worker
                source = source.load()
            if self.mode == "tensor":
                return self._for_device(source)
            image = decode(source)
            return image if self.preprocess is None else self.preprocess(image)
        except DECODE_ERRORS as error:
            return DecodeFailure.of(index, error)

    def _for_device(self, source: Any) -> Any:
        """A JPEG the device can decode, as bytes; anything else (PNG, CMYK, 16-bit, a
        crop, a decoded image) preprocessed here by the reference path."""
        encoded = encoded_bytes(source)
        if encoded is not None:
            data = encoded if isinstance(encoded, bytes) else Path(encoded).read_bytes()
            with Image.open(io.BytesIO(data)) as header:  # reads the header only
                if header.format == "JPEG" and header.mode in ("RGB", "L"):
                    return _Jpeg(data, exif_orientation(header))
        assert self.preprocess is not None
        return self.preprocess(decode(source))


def _collate(items: list[Any]) -> tuple[Any, list[DecodeFailure]]:
    failures = [item for item in items if isinstance(item, DecodeFailure)]
    if failures:
        return None, failures
    if items and all(isinstance(item, torch.Tensor) for item in items):
        return torch.stack(items), []  # preprocessed rows: one transfer for the batch
    return items, []


# -- the main process ---------------------------------------------------------------------


def orient_tensor(image: torch.Tensor, orientation: int) -> torch.Tensor:
    """``(C, H, W)`` pixels turned as EXIF ``Orientation`` ``orientation`` says, as
    ``PIL.ImageOps.exif_transpose`` turns them."""
    if orientation == 2:
        return image.flip(-1)
    if orientation == 3:
        return image.flip(-1, -2)
    if orientation == 4:
        return image.flip(-2)
    if orientation == 5:
        return image.transpose(-1, -2)
    if orientation == 6:
        return image.rot90(-1, (-2, -1))
    if orientation == 7:
        return image.transpose(-1, -2).flip(-1, -2)
    if orientation == 8:
        return image.rot90(1, (-2, -1))
    return image


def _device_batch(
    items: list[Any],
    preprocess: Preprocess,
    device: torch.device,
    reference: Callable[[int], torch.Tensor],
) -> torch.Tensor:
    """The batch on ``device``: its JPEGs decoded there in one call (nvJPEG on CUDA),
    turned as their EXIF tag says and preprocessed by the model's transforms as tensor
    ops; the rows the workers preprocessed moved there. A JPEG the device decoder refuses
    goes through ``reference`` (Pillow and the model's own preprocessing) instead."""
    from torchvision.io import ImageReadMode, decode_jpeg

    jpegs = [n for n, item in enumerate(items) if isinstance(item, _Jpeg)]
    rows: list[torch.Tensor | None] = [
        None if isinstance(item, _Jpeg) else item.to(device, non_blocking=True) for item in items
    ]
    if jpegs:
        data = [items[n].tensor() for n in jpegs]
        try:
            decoded: list[torch.Tensor | None] = list(
                decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
            )
        except RuntimeError:  # one of them is refused: one by one
            decoded = [_decode_one(raw, device) for raw in data]
        positions, images = [], []
        for n, image in zip(jpegs, decoded, strict=True):
            if image is None:
                rows[n] = reference(n).to(device)
            else:
                positions.append(n)
                images.append(orient_tensor(image, items[n].orientation))
        if images:
            for n, row in zip(positions, preprocess.tensors(images, device), strict=True):
                rows[n] = row
    return torch.stack([row for row in rows if row is not None])


def _decode_one(data: torch.Tensor, device: torch.device) -> torch.Tensor | None:
    """One JPEG decoded on ``device``, or ``None`` if the device decoder refuses it."""
    from torchvision.io import ImageReadMode, decode_jpeg

    try:
        decoded: torch.Tensor = decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
    except RuntimeError:
        return None
    return decoded


def _resolve_mode(
    config: PipelineConfig, preprocess: Preprocess | None, device: torch.device
) -> str:
    if preprocess is None or not preprocess.tensor_ready:
        return "pil"
    if config.decode == "auto":
        return "tensor" if device.type == "cuda" else "pil"
    return config.decode


def _raw_batches(
    dataset: _Item, batch_size: int, workers: int, config: PipelineConfig, pin: bool
) -> Iterator[tuple[Any, list[DecodeFailure]]]:
    """The collated items of each batch, in order, made by worker processes (or threads
    of this process when ``workers`` is 0 or every source is already decoded)."""
    n = len(dataset)
    in_memory = all(isinstance(source, Image.Image) for source in dataset.sources)
    if workers == 0 or in_memory or "fork" not in torch.multiprocessing.get_all_start_methods():
        yield from _thread_batches(dataset, batch_size)
        return
    loader: torch.utils.data.DataLoader[Any] = torch.utils.data.DataLoader(
        dataset,  # type: ignore[arg-type]
        batch_size=batch_size,
        shuffle=False,
        num_workers=min(workers, max(1, -(-n // batch_size))),
        collate_fn=_collate,
        pin_memory=pin,
        prefetch_factor=config.prefetch,
        multiprocessing_context="fork",
    )
    yield from loader


def _thread_batches(dataset: _Item, batch_size: int) -> Iterator[tuple[Any, list[DecodeFailure]]]:
    """Threads prepare the next batch while the caller works on this one (Pillow and
    torch release the GIL while they decode and resize)."""
    n = len(dataset)
    starts = list(range(0, n, batch_size))
    with ThreadPoolExecutor(max_workers=min(8, _cpus())) as pool:

        def submit(start: int) -> list[Any]:
            return [
                pool.submit(dataset.__getitem__, i)
                for i in range(start, min(n, start + batch_size))
            ]

        pending = submit(starts[0]) if starts else []
        for number, _ in enumerate(starts):
            items = [future.result() for future in pending]
            pending = submit(starts[number + 1]) if number + 1 < len(starts) else []
            yield _collate(items)


def image_batches(
    sources: Sequence[Any],
    *,
    batch_size: int,
    preprocess: Preprocess | None = None,
    device: torch.device | str = "cpu",
    config: PipelineConfig | None = None,
    on_error: Callable[[DecodeFailure], Exception] | None = None,
) -> Iterator[ImageBatch]:
    """Batches of ``sources`` decoded and, with ``preprocess``, preprocessed, ready for a
    model on ``device``; the next batches are prepared while the caller works.

    Args:
        sources: image sources (:mod:`contrastkit.pipeline.sources`).
        batch_size: images per batch.
        preprocess: the model's preprocessing; ``None`` yields decoded PIL images.
        device: where the model runs (pixels are delivered there).
        config: workers and decoding path (default :class:`PipelineConfig`).
        on_error: turns a source that cannot be decoded into the exception to raise
            (default: a :class:`~contrastkit.errors.DataFormatError` naming its path or
            position).

    Raises:
        DataFormatError: (by default) a missing or undecodable image, when its batch is
            reached.
    """
    require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
    config = config or PipelineConfig()
    device = torch.device(device)
    mode = _resolve_mode(config, preprocess, device)
    workers = auto_workers(device) if config.workers is None else config.workers
    dataset = _Item(sources, preprocess, mode)
    pin = device.type == "cuda" and mode == "pil" and preprocess is not None
    fail = on_error or (lambda f: f.error(sources[f.index]))
    start = 0
    for items, failures in _raw_batches(dataset, batch_size, workers, config, pin):
        if failures:
            raise fail(failures[0])
        indices = range(start, start + len(items))
        start += len(items)
        if preprocess is None:
            yield ImageBatch(indices, images=list(items))
        elif mode == "tensor":

            def reference(n: int, offset: int = indices.start) -> torch.Tensor:
                try:
                    return preprocess(decode(sources[offset + n]))
                except DECODE_ERRORS as error:
                    raise fail(DecodeFailure.of(offset + n, error)) from error

            pixels = _device_batch(list(items), preprocess, device, reference)
            yield ImageBatch(indices, pixels=pixels)
        else:
            yield ImageBatch(indices, pixels=items.to(device, non_blocking=True))
