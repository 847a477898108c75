"""Decide whether downloaded bytes are a usable image, safely, and fingerprint it.

A body counts as an image only if Pillow decodes it completely (every frame of an animated
file). Dimensions are read from the header and checked against a pixel budget *before*
any pixel is decoded, so a decompression bomb (a small file that claims a huge canvas) is
refused without allocating it. Each accepted image gets its sha256, Pillow format name,
width, height and a 64-bit perceptual hash (``imagehash.phash``: DCT of the 32x32
greyscale thumbnail, one bit per low-frequency coefficient against their median).

The hash and the size are those of the image as it is shown: an EXIF ``Orientation`` tag
(a camera's "rotate 90 degrees") is applied first (:func:`oriented`), so a photo stored
sideways with the tag and its physically rotated twin get the same size and neighbouring
hashes.
"""

from __future__ import annotations

import io
import warnings

import imagehash
from PIL import Image, UnidentifiedImageError

from contrastkit.curation.image_limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MIN_SIDE,
    ImageLimits,
)
from contrastkit.pipeline.sources import oriented
from contrastkit.store import ImageInfo, sha256_hex

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_MIN_SIDE",
    "ImageInfo",
    "ImageLimits",
    "ImageRejectedError",
    "inspect_image",
    "oriented",
    "phash_distance",
]


class ImageRejectedError(Exception):
    """The bytes are not a usable image.

    Attributes:
        status: ``not_an_image``, ``image_too_large`` or ``image_too_small``.
        detail: What exactly was wrong, for the report.
    """

    def __init__(self, status: str, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


def inspect_image(data: bytes, limits: ImageLimits | None = None) -> ImageInfo:
    """Decode ``data`` completely and return its fingerprint.

    Args:
        data: The downloaded body.
        limits: Size limits; the defaults when omitted.

    Returns:
        sha256, format, size and perceptual hash of the image.

    Raises:
        ImageRejectedError: with status ``image_too_large`` (bytes, or pixels read from the
            header), ``not_an_image`` (Pillow cannot identify or fully decode it, e.g. a
            truncated JPEG or an HTML page) or ``image_too_small``.
    """
    limits = limits or ImageLimits()
    if len(data) > limits.max_bytes:
        raise ImageRejectedError(
            "image_too_large", f"{len(data)} bytes exceeds the limit of {limits.max_bytes}"
        )
    with warnings.catch_warnings():
        # We enforce our own pixel budget below; Pillow's warning would only be noise.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        # A broken EXIF block is read as no EXIF (see oriented()); no warning per image.
        warnings.filterwarnings("ignore", "Corrupt EXIF data", UserWarning)
        try:
            image = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as exc:
            raise ImageRejectedError(
                "image_too_large", f"{exc} (refused before decoding)"
            ) from None
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise ImageRejectedError("not_an_image", _describe(exc, data)) from None
        with image:
            fmt = image.format or "unknown"
            width, height = image.size
            frames = int(getattr(image, "n_frames", 1))
            pixels = width * height * frames
            if pixels > limits.max_pixels:
                raise ImageRejectedError(
                    "image_too_large",
                    f"{width}x{height} px x {frames} frame(s) exceeds the limit of "
                    f"{limits.max_pixels} pixels (refused before decoding)",
                )
            try:
                for frame in range(frames):
                    image.seek(frame)
                    image.load()
                image.seek(0)
                shown = oriented(image)
                width, height = shown.size
                phash = str(imagehash.phash(shown))
            except Image.DecompressionBombError as exc:
                raise ImageRejectedError("image_too_large", f"decompression bomb: {exc}") from None
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise ImageRejectedError("not_an_image", f"{fmt} does not decode: {exc}") from None
    if min(width, height) < limits.min_side:
        raise ImageRejectedError(
            "image_too_small", f"{width}x{height} px is under the minimum side {limits.min_side}"
        )
    return ImageInfo(
        sha256=sha256_hex(data),
        format=fmt,
        width=width,
        height=height,
        phash=phash,
        size=len(data),
    )


def phash_distance(first: str, second: str) -> int:
    """Hamming distance between two 64-bit perceptual hashes given as 16 hex digits."""
    return (int(first, 16) ^ int(second, 16)).bit_count()


def _describe(exc: Exception, data: bytes) -> str:
    head = data[:64].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")):
        return "the body is an HTML page"
    if not data:
        return "the body is empty"
    return f"Pillow cannot identify the body as an image ({type(exc).__name__})"
