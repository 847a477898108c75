"""Ready batches of preprocessed images for a model, with I/O, decoding and preprocessing
overlapped with the model's own compute.

Three paths, chosen by :class:`PipelineConfig` ``decode``:

* ``"pil"``: worker processes (a torch ``DataLoader``) open each source, decode it with
  Pillow (:func:`~contrastkit.pipeline.sources.decode`) and run the model's reference
  preprocessing; batches arrive stacked, in pinned memory when the model is on CUDA.
  The numbers are those of the model's own PIL preprocessing, exactly.
* ``"worker"``: the workers decode each image to ``uint8`` pixels (baseline RGB or grey
  JPEGs with ``torchvision.io.decode_jpeg`` on the CPU, the same libjpeg-turbo
  arithmetic as Pillow; anything else with the reference decoding rule), turned as the
  EXIF tag says, and pack a batch's pixels into one buffer (one shared-memory segment per
  batch, pinned for a CUDA model). The model's transforms run on the batch as tensor ops
  on the model's device (:class:`~contrastkit.pipeline.preprocess.Preprocess`). Decoding
  is a quarter of the reference path's work per image and scales with the workers; the
  float work (resize, crop, normalise) moves to the device. The numbers equal the
  reference bit for bit on any device (the resize is Pillow's own arithmetic).
* ``"tensor"``: the workers only read the encoded bytes (and the EXIF orientation from
  the header). Baseline JPEGs in RGB or grey are decoded on the model's device with
  ``torchvision.io.decode_jpeg`` in one call per batch (nvJPEG on CUDA), turned as their
  EXIF tag says, and preprocessed as tensor ops there. Any other image (PNG, CMYK or
  16-bit, a crop, a decoded image) is decoded by Pillow in the worker and preprocessed
  by the reference path there; a JPEG the device decoder refuses is decoded by Pillow
  instead. On CUDA the embeddings agree with the reference within the tolerance
  documented in ``docs/pipeline.md`` (nvJPEG's inverse DCT is not libjpeg's).

``"auto"`` is ``"worker"`` when the model is on CUDA and its preprocessing has a tensor
path, else ``"pil"`` (on the CPU the model's own threads need the main process, so all
the preprocessing stays in the workers). Inputs that are all decoded PIL images skip the
worker processes (there is nothing to decode): threads run the preprocessing.

In the ``"worker"`` and ``"tensor"`` paths the device-side work of the next batches
(transfer, decoding, preprocessing) runs on a background thread, on its own CUDA stream
when the model is on a GPU, while the caller runs the model on this batch.
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
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
            if self.mode == "worker":
                return self._pixels(source)
            image = decode(source)
            return image if self.preprocess is None else self.preprocess(image)
        except DECODE_ERRORS as error:
            return DecodeFailure.of(index, error)

    def collate(self, items: list[Any]) -> tuple[Any, list[DecodeFailure]]:
        """One batch's items as the main process takes them: the first failures, else
        packed pixels (``worker``), one stacked tensor (preprocessed rows) or the list."""
        failures = [item for item in items if isinstance(item, DecodeFailure)]
        if failures:
            return None, failures
        if self.mode == "worker" and self.preprocess is not None:
            return _Packed.of(items), []
        if items and all(isinstance(item, torch.Tensor) for item in items):
            return torch.stack(items), []  # preprocessed rows: one transfer for the batch
        return items, []

    def _for_device(self, source: Any) -> Any:
        """A JPEG the device can decode, as bytes; anything else (PNG, CMYK, 16-bit, a
        crop, a decoded image) preprocessed here by the reference path."""
        jpeg, source = _jpeg_or_source(source)
        if jpeg is not None:
            return jpeg
        assert self.preprocess is not None
        return self.preprocess(decode(source))

    def _pixels(self, source: Any) -> torch.Tensor:
        """``uint8`` ``(3, H, W)`` RGB pixels of ``source`` as the reference decodes them:
        a baseline JPEG by torchvision's libjpeg-turbo (Pillow's arithmetic, faster than
        going through a PIL image), anything else by the reference rule itself."""
        from torchvision.io import ImageReadMode, decode_jpeg

        jpeg, source = _jpeg_or_source(source)
        if jpeg is not None:
            try:
                pixels = decode_jpeg(jpeg.tensor(), mode=ImageReadMode.RGB)
            except RuntimeError:  # refused: Pillow decides below
                source = jpeg.data
            else:
                return orient_tensor(pixels, jpeg.orientation)
        return torch.from_numpy(np.array(decode(source))).permute(2, 0, 1)


def _jpeg_or_source(source: Any) -> tuple[_Jpeg | None, Any]:
    """``(jpeg, None)`` when ``source`` is a JPEG the JPEG decoders take (RGB or grey:
    its bytes and the EXIF orientation from its header), else ``(None, what to decode)``:
    its bytes when it has an encoded form (a file is read once), else ``source`` itself
    (a decoded image or a callable)."""
    encoded = encoded_bytes(source)
    if encoded is None:
        return None, source
    data = encoded if isinstance(encoded, bytes) else Path(encoded).read_bytes()
    with Image.open(io.BytesIO(data)) as header:  # reads the header only
        if header.format == "JPEG" and header.mode in ("RGB", "L"):
            return _Jpeg(data, exif_orientation(header)), None
    return None, data


@dataclass
class _Packed:
    """A batch of ``uint8`` images end to end in one buffer, and each image's
    ``(C, H, W)``: one shared-memory segment from a worker, one pinned copy and one
    transfer to the device per batch. Pixels are stored channels last, the layout both
    decoders write (a ``(C, H, W)`` image from them is a view of ``(H, W, C)`` memory),
    so packing is a plain copy."""

    flat: torch.Tensor
    shapes: list[tuple[int, ...]]

    @classmethod
    def of(cls, images: Sequence[torch.Tensor]) -> _Packed:
        shapes = [tuple(image.shape) for image in images]
        total = sum(image.numel() for image in images)
        if torch.utils.data.get_worker_info() is not None:  # straight into shared memory
            storage = torch.UntypedStorage._new_shared(total)  # type: ignore[no-untyped-call]
            flat = torch.empty(0, dtype=torch.uint8).set_(storage)
        else:
            flat = torch.empty(total, dtype=torch.uint8)
        offset = 0
        for image in images:
            channels_last = image.permute(1, 2, 0)
            flat[offset : offset + image.numel()].view(channels_last.shape).copy_(channels_last)
            offset += image.numel()
        return cls(flat, shapes)

    def __len__(self) -> int:
        return len(self.shapes)

    def pin_memory(self) -> _Packed:
        """Called by the ``DataLoader``'s pinning thread for a CUDA model."""
        return _Packed(self.flat.pin_memory(), self.shapes)

    def images(self, device: torch.device) -> list[torch.Tensor]:
        """The images on ``device``, as views of one transferred buffer."""
        flat = self.flat.to(device, non_blocking=True)
        sizes = [int(np.prod(shape)) for shape in self.shapes]
        parts = flat.split(sizes)  # type: ignore[no-untyped-call]
        return [
            part.view(height, width, channels).permute(2, 0, 1)
            for part, (channels, height, width) in zip(parts, self.shapes, strict=True)
        ]


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
        return "worker" if device.type == "cuda" else "pil"
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
        collate_fn=dataset.collate,
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
            yield dataset.collate(items)


_END = object()  # the background thread is done
_RAISED = object()  # the background thread raised: the exception follows


def _produce(
    raw: Iterator[Any],
    prepare: Callable[[Any], ImageBatch],
    stream: Any,
    offer: Callable[[tuple[Any, Any]], bool],
) -> None:
    """The background thread of :func:`_in_background`: ``prepare`` each of ``raw`` (on
    ``stream`` when there is one, recording an event when its work is queued) and
    ``offer`` it; an exception is offered in its place. ``raw`` is closed at the end,
    which shuts its worker processes down."""
    context = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    try:
        with context:
            for item in raw:
                batch = prepare(item)
                event = None
                if stream is not None:
                    event = torch.cuda.Event()  # type: ignore[no-untyped-call]
                    event.record(stream)
                if not offer((batch, event)):
                    return
    except BaseException as error:  # raised again in the caller
        offer((_RAISED, error))
        return
    finally:
        close = getattr(raw, "close", None)
        if close is not None:
            close()  # shuts the worker processes down
    offer((_END, None))


def _received(batch: ImageBatch, event: Any, device: torch.device) -> ImageBatch:
    """``batch`` made usable on the caller's stream: it waits for the batch's work (the
    ``event`` recorded on the background stream; ``None``: nothing to wait for), and the
    allocator is told that stream uses its pixels."""
    if event is not None:
        current = torch.cuda.current_stream(device)
        current.wait_event(event)
        if batch.pixels is not None:
            batch.pixels.record_stream(current)
    return batch


def _in_background(
    raw: Iterator[Any],
    prepare: Callable[[Any], ImageBatch],
    device: torch.device,
    depth: int,
) -> Iterator[ImageBatch]:
    """``prepare`` applied to each of ``raw`` on a background thread, up to ``depth``
    batches ahead of the caller, so the device-side work of the next batches (transfer,
    decoding, preprocessing, and the Python that launches it) overlaps the caller's
    model. On CUDA the thread works on its own stream; the caller's stream waits for each
    batch's work before using it, and the allocator is told the caller's stream uses its
    pixels. An exception in the thread is raised here, at the batch that caused it;
    closing this generator (a ``break`` in the caller) stops the thread and the workers.
    """
    ready: queue.Queue[tuple[Any, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    stream = None
    if device.type == "cuda":
        stream = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]

    def offer(entry: tuple[Any, Any]) -> bool:
        while not stop.is_set():
            try:
                ready.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    thread = threading.Thread(
        target=_produce, args=(raw, prepare, stream, offer), name="contrastkit-pipeline",
        daemon=True,
    )  # fmt: skip
    thread.start()
    try:
        while True:
            try:
                batch, event = ready.get(timeout=0.5)
            except queue.Empty:
                if thread.is_alive() or not ready.empty():
                    continue
                raise RuntimeError("the pipeline's thread ended without a result") from None
            if batch is _END:
                return
            if batch is _RAISED:
                raise event
            yield _received(batch, event, device)
    finally:
        stop.set()
        thread.join()


def image_batches(
    sources: Sequence[Any],
    model: Any = None,
    *,
    batch_size: int,
    config: PipelineConfig | None = None,
    on_error: Callable[[DecodeFailure], Exception] | None = None,
) -> Iterator[ImageBatch]:
    """Batches of ``sources`` decoded and, for a ``model`` with a preprocessing,
    preprocessed, ready for it on its device; the next batches are prepared while the
    caller works.

    Args:
        sources: image sources (:mod:`contrastkit.pipeline.sources`).
        model: what the batches are for: its ``image_preprocess`` (a
            :class:`~contrastkit.pipeline.preprocess.Preprocess`) is applied and the
            pixels are delivered on its ``device`` (a
            :class:`~contrastkit.models.base.DualEncoder`, a captioning model ...).
            ``None``, or a model without ``image_preprocess``: decoded PIL images.
        batch_size: images per batch.
        config: workers and decoding path (default: the model's ``pipeline``, else
            :class:`PipelineConfig`).
        on_error: turns a source that cannot be decoded into the exception to raise
            (default: a :class:`~contrastkit.errors.DataFormatError` naming its path or
            position).

    Raises:
        DataFormatError: (by default) a missing or undecodable image, when its batch is
            reached.
    """
    require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
    preprocess: Preprocess | None = getattr(model, "image_preprocess", None)
    device = torch.device(getattr(model, "device", "cpu"))
    config = config or getattr(model, "pipeline", None) or PipelineConfig()
    mode = _resolve_mode(config, preprocess, device)
    workers = auto_workers(device) if config.workers is None else config.workers
    dataset = _Item(sources, preprocess, mode)
    pin = device.type == "cuda" and mode in ("pil", "worker") and preprocess is not None
    fail = on_error or (lambda f: f.error(sources[f.index]))
    start = 0

    def assemble(raw: tuple[Any, list[DecodeFailure]]) -> ImageBatch:
        """One batch of the workers' items, ready for the model (run in order)."""
        nonlocal start
        items, failures = raw
        if failures:
            raise fail(failures[0])
        indices = range(start, start + len(items))
        start += len(items)
        if preprocess is None:
            return ImageBatch(indices, images=list(items))
        if mode == "worker":
            return ImageBatch(indices, pixels=preprocess.tensors(items.images(device), device))
        if mode == "tensor":

            def reference(n: int, offset: int = indices.start) -> torch.Tensor:
                try:
                    return preprocess(decode(sources[offset + n]))
                except DECODE_ERRORS as error:
                    raise fail(DecodeFailure.of(offset + n, error)) from error

            return ImageBatch(
                indices, pixels=_device_batch(list(items), preprocess, device, reference)
            )
        return ImageBatch(indices, pixels=items.to(device, non_blocking=True))

    raw = _raw_batches(dataset, batch_size, workers, config, pin)
    if preprocess is not None and mode in ("worker", "tensor"):
        yield from _in_background(raw, assemble, device, depth=config.prefetch)
    else:
        yield from map(assemble, raw)
