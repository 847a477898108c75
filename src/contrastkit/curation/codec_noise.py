"""What an image codec changes by itself: the noise floor of the context measure.

A box edit stored as lossy WebP (the build's default, quality 90) differs from its
source photo in nearly every pixel, edited or not: the codec's own rounding. Counting
"pixels that differ" then measures the codec, and a real change of a few hundred pixels
moves the share by a few in a hundred thousand. So the context measure
(:mod:`contrastkit.builders.gensynth.context`) counts a pixel as changed only when a
channel differs from the source by more than this image's **codec noise**:

* :func:`stored_codec` tells the codec from an image's bytes (PNG and lossless WebP are
  lossless; lossy WebP and JPEG are not);
* :func:`noise_threshold` measures the noise: the source photo is encoded with the same
  codec at the build's quality and decoded again, and the threshold is
  :data:`NOISE_MARGIN` times the largest channel difference that makes over the region
  measured (0 for a lossless image: every difference counts);
* :data:`BLOCK` is how far a lossy codec carries a change: the edited box's own content
  moves the pixels of the blocks it touches, so the pixels the composite keeps are
  checked from that far outside the edited region.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BLOCK", "NOISE_MARGIN", "Codec", "noise_threshold", "stored_codec"]

#: The threshold is this many times the largest difference the codec itself makes.
NOISE_MARGIN = 1.25
#: Pixels from the edited region a lossy codec may still move (a WebP macroblock).
BLOCK = 16


@dataclass(frozen=True)
class Codec:
    """How an image is stored: ``format`` (``png``, ``webp``, ``jpeg`` or another PIL
    format, lowercase), whether it is ``lossless``, and the ``quality`` its noise is
    measured at (lossy formats only)."""

    format: str
    lossless: bool
    quality: int | None = None

    def describe(self) -> str:
        """``lossless WebP``, ``lossy WebP, quality 90`` ..."""
        name = {"webp": "WebP", "png": "PNG", "jpeg": "JPEG"}.get(self.format, self.format)
        if self.lossless:
            return f"lossless {name}"
        return f"lossy {name}" + (f", quality {self.quality}" if self.quality is not None else "")


def _webp_lossless(data: bytes) -> bool:
    """Whether a RIFF WebP file holds a lossless (``VP8L``) bitstream."""
    at = 12
    while at + 8 <= len(data):
        chunk = data[at : at + 4]
        if chunk == b"VP8L":
            return True
        if chunk == b"VP8 ":
            return False
        size = int.from_bytes(data[at + 4 : at + 8], "little")
        at += 8 + size + (size & 1)
    return False


def stored_codec(data: bytes, quality: int | None) -> Codec:
    """The codec of the image ``data``; a lossy one's noise is measured at ``quality``
    (the build's ``image_quality``)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return Codec("png", lossless=True)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        lossless = _webp_lossless(data)
        return Codec("webp", lossless=lossless, quality=None if lossless else quality)
    if data[:3] == b"\xff\xd8\xff":
        return Codec("jpeg", lossless=False, quality=quality)
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        name = str(image.format or "unknown").lower()
    return Codec(name, lossless=name in ("bmp", "tiff", "ppm"), quality=quality)


def noise_threshold(source: np.ndarray, codec: Codec, region: np.ndarray) -> int | None:
    """The largest channel difference (0-255) a pixel of ``region`` may show against
    ``source`` (uint8, (H, W, 3)) from ``codec`` alone: 0 for a lossless codec,
    :data:`NOISE_MARGIN` times what encoding ``source`` with ``codec`` changes for WebP
    and JPEG, ``None`` for a lossy format this cannot encode (no threshold: n/a)."""
    if codec.lossless:
        return 0
    if codec.format not in ("webp", "jpeg") or codec.quality is None:
        return None
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(source).save(buffer, format=codec.format.upper(), quality=codec.quality)
    buffer.seek(0)
    with Image.open(buffer) as image:
        decoded = np.asarray(image.convert("RGB"), dtype=np.int16)
    noise = np.abs(decoded - source.astype(np.int16)).max(axis=2)
    largest = int(noise[region].max()) if region.any() else 0
    return math.ceil(NOISE_MARGIN * largest)
