"""Image sources and the reference decoding rule every model pass shares.

An *image source* is anything the pipeline can turn into pixels:

* a path (``str`` or :class:`os.PathLike`) of an image file;
* ``bytes`` of an encoded image (a store object, an HTTP body);
* a mapping with ``"bytes"`` and/or ``"path"`` keys: a Hugging Face ``Image`` column read
  with ``decode=False`` (the bytes win when both are set);
* a decoded :class:`PIL.Image.Image`, taken as it is (only converted to RGB);
* a callable returning a PIL image (a person crop, say), called where the decoding
  happens, i.e. in a worker process;
* a :class:`DatasetImage`: one row of a ``datasets`` image column, read where it is
  decoded (a list of them stands for a whole column without loading it).

:func:`decode` is the reference: the image opened with Pillow, turned as its EXIF
``Orientation`` tag says (as a viewer shows it; the URL checker measures and hashes it
the same way), and converted to RGB. The fast paths of :mod:`contrastkit.pipeline.batches`
are tested against it.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

from contrastkit.errors import DataFormatError

__all__ = [
    "DatasetImage",
    "DecodeFailure",
    "ImageSource",
    "decode",
    "describe_source",
    "encoded_bytes",
    "exif_orientation",
    "oriented",
    "to_rgb",
]

#: What the pipeline accepts as one image (see the module docstring).
ImageSource = Union[
    str,
    "os.PathLike[str]",
    bytes,
    Mapping[str, Any],
    Image.Image,
    Callable[[], Image.Image],
]


class DatasetImage:
    """The image of row ``index`` of ``column`` in a ``datasets.Dataset``, read lazily
    (in the worker that decodes it) as its encoded bytes when the column allows.

    Args:
        dataset: the dataset (memory-mapped; worker processes share it).
        column: the image column.
        index: the row.
    """

    __slots__ = ("column", "dataset", "index")

    def __init__(self, dataset: Any, column: str, index: int):
        self.dataset = dataset
        self.column = column
        self.index = index

    @classmethod
    def column_of(cls, dataset: Any, column: str) -> list[DatasetImage]:
        """One reference per row of ``column``, reading encoded bytes (``decode=False``)."""
        from datasets import Image as ImageFeature

        if isinstance(dataset.features.get(column), ImageFeature):
            dataset = dataset.cast_column(column, ImageFeature(decode=False))
        return [cls(dataset, column, index) for index in range(len(dataset))]

    def load(self) -> Any:
        """The row's value: an encoded-image mapping, or a decoded image."""
        return self.dataset[self.index][self.column]


def oriented(image: Image.Image) -> Image.Image:
    """``image`` turned as its EXIF ``Orientation`` tag says (``image`` itself when it has
    no such tag, or a tag that cannot be read: a broken EXIF block does not make a
    picture unusable)."""
    try:
        orientation = image.getexif().get(ExifTags.Base.Orientation, 1)
    except Exception:  # any malformed EXIF block: show the pixels as stored
        return image
    if orientation not in range(2, 9):
        return image
    try:
        return ImageOps.exif_transpose(image)
    except Exception:  # as above
        return image


def to_rgb(image: Image.Image) -> Image.Image:
    """The image in RGB mode (grey, palette, CMYK, 16-bit and RGBA images are converted)."""
    return image if image.mode == "RGB" else image.convert("RGB")


def encoded_bytes(source: Any) -> bytes | Path | None:
    """The encoded form of ``source``: its bytes, or the path of its file; ``None`` for a
    decoded image or a callable (they have no encoded form)."""
    if isinstance(source, DatasetImage):
        return encoded_bytes(source.load())
    if isinstance(source, bytes):
        return source
    if isinstance(source, str | os.PathLike):
        return Path(source)
    if isinstance(source, Mapping):
        data = source.get("bytes")
        if data:
            return bytes(data)
        path = source.get("path")
        if path:
            return Path(path)
        raise ValueError("an image mapping needs 'bytes' or 'path'")
    return None


def decode(source: Any) -> Image.Image:
    """The reference decoding of one image source: Pillow, EXIF orientation, RGB.

    Raises:
        FileNotFoundError: a path that does not exist.
        OSError: bytes or a file Pillow cannot decode (``UnidentifiedImageError`` is one).
        TypeError: something that is not an image source.
    """
    if isinstance(source, DatasetImage):
        source = source.load()
    if isinstance(source, Image.Image):
        return to_rgb(source)
    encoded = encoded_bytes(source)
    if encoded is None:
        if callable(source):
            image = source()
            if not isinstance(image, Image.Image):
                raise TypeError(f"an image callable returned {type(image).__name__}")
            return to_rgb(image)
        raise TypeError(f"not an image source: {type(source).__name__}")
    with Image.open(io.BytesIO(encoded) if isinstance(encoded, bytes) else encoded) as opened:
        opened.load()
        return to_rgb(oriented(opened))


def exif_orientation(image: Image.Image) -> int:
    """The EXIF ``Orientation`` (1-8) of an opened image; 1 when absent or unreadable
    (the rule of :func:`contrastkit.curation.images.oriented`)."""
    try:
        value = image.getexif().get(ExifTags.Base.Orientation, 1)
    except Exception:  # a malformed EXIF block: the pixels as stored
        return 1
    return int(value) if value in range(1, 9) else 1


def describe_source(source: Any, index: int) -> str:
    """How an error names a source: its path, else its position in the input."""
    if isinstance(source, str | os.PathLike):
        return str(source)
    if isinstance(source, Mapping) and source.get("path") and not source.get("bytes"):
        return str(source["path"])
    if isinstance(source, DatasetImage):
        return f"row {source.index} of column {source.column!r}"
    return f"image {index}"


@dataclass(frozen=True)
class DecodeFailure:
    """What a worker sends back for a source it could not decode (exceptions of custom
    types do not survive the trip between processes; this does).

    Attributes:
        index: the source's position in the input.
        kind: ``"missing"`` (no such file) or ``"undecodable"``.
        message: the decoder's message.
    """

    index: int
    kind: str
    message: str

    @classmethod
    def of(cls, index: int, error: BaseException) -> DecodeFailure:
        kind = "missing" if isinstance(error, FileNotFoundError) else "undecodable"
        return cls(index, kind, f"{type(error).__name__}: {error}")

    def error(self, source: Any) -> DataFormatError:
        """The located error a user sees."""
        reason = "image file not found" if self.kind == "missing" else "image cannot be decoded"
        return DataFormatError(describe_source(source, self.index), None, None,
                               f"{reason} ({self.message})")  # fmt: skip


#: What decoding can raise for bad input (anything else is a bug and propagates).
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    UnidentifiedImageError,
    ValueError,
    Image.DecompressionBombError,
)
