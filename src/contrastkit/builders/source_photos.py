"""The source photos of a build, read the same way everywhere (issue 43, items 2-3).

* Content: the edit stage records the SHA-256 of each source photo's file
  (``sha256`` in ``sources.jsonl``, :func:`with_hashes`), and whatever reads a photo again
  later (the export of mask edits, which puts them onto their photo, and the
  ``--originals`` export) checks it first (:func:`check_photo`): a photo replaced after
  the build (another file at the same path) no longer fits the edits made from it, and is
  refused, naming the file, instead of being used.
* Orientation: a photo is decoded as a viewer shows it, turned as its EXIF
  ``Orientation`` tag says (:func:`load_photo`; the model pipeline's rule,
  :func:`contrastkit.pipeline.sources.oriented`), in the build (the edits, the filter's
  crops, the context measure) and in the exports, so an edit and its original come out
  in the same orientation. COCO's boxes and masks are taken to be in that orientation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from PIL import Image

from contrastkit.builders.coco import SourceImage
from contrastkit.errors import DataFormatError
from contrastkit.pipeline.sources import exif_orientation, oriented

__all__ = ["check_photo", "is_turned", "load_photo", "photo_sha256", "with_hashes"]


def photo_sha256(path: Path) -> str:
    """The SHA-256 (hex) of the file at ``path``.

    Raises:
        DataFormatError: the file is missing or cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with Path(path).open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError as error:
        raise DataFormatError(path, None, None, "image file not found") from error
    except OSError as error:
        raise DataFormatError(path, None, None, f"cannot be read ({error})") from error
    return digest.hexdigest()


def load_photo(path: Path) -> Image.Image:
    """A photo as RGB, turned as its EXIF orientation says, or a
    :class:`DataFormatError` naming the file."""
    try:
        with Image.open(path) as image:
            image.load()
            return oriented(image).convert("RGB")
    except FileNotFoundError as error:
        raise DataFormatError(path, None, None, "image file not found") from error
    except OSError as error:
        raise DataFormatError(path, None, None, f"not a readable image ({error})") from error


def is_turned(path: Path) -> bool:
    """Whether the photo at ``path`` has an EXIF orientation other than "as stored" (its
    pixels are shown turned or mirrored)."""
    try:
        with Image.open(path) as image:
            return exif_orientation(image) != 1
    except OSError:
        return False


def with_hashes(
    sources: Iterable[SourceImage], recorded: Mapping[str, SourceImage], edited: set[str]
) -> list[SourceImage]:
    """``sources`` with the SHA-256 of each photo's file, as the edit stage records them.

    Args:
        sources: the sources of this run.
        recorded: the sources the build folder recorded before, by id.
        edited: the ids of sources that already have finished edits.

    Raises:
        DataFormatError: the photo of a source with finished edits is not the one they
            were made from (its recorded hash differs), naming the file.
    """
    hashed = []
    for source in sources:
        digest = photo_sha256(source.path)
        before = recorded.get(source.source_id)
        if source.source_id in edited and before is not None and before.sha256 is not None:
            check_photo(source.path, replace(source, sha256=before.sha256), digest)
        hashed.append(replace(source, sha256=digest))
    return hashed


def check_photo(file: Path, source: SourceImage, digest: str | None = None) -> None:
    """Refuse the photo ``file`` of ``source`` when its content is not what the build
    recorded (nothing to check for a source recorded without a hash).

    Args:
        file: the photo's file, where it is read now.
        source: the recorded source (with its ``sha256``).
        digest: the file's SHA-256 when already computed.

    Raises:
        DataFormatError: the file differs, naming it and the source.
    """
    if source.sha256 is None:
        return
    found = digest if digest is not None else photo_sha256(file)
    if found != source.sha256:
        raise DataFormatError(
            file, None, None,
            f"the photo of source {source.source_id} changed after the build: its SHA-256 "
            f"is {found[:16]}..., the build recorded {source.sha256[:16]}... (sources.jsonl). "
            "Its edits were made from the recorded photo: put that file back, or rebuild",
        )  # fmt: skip
