"""The thumbnails of the HTML report: each image once, as a WebP file of a fixed small
size in the report's ``thumbs/`` folder, named by what it shows (so two models' cards of
one image share it); an image that cannot be found or decoded is a
:class:`Thumb` with the reason and no file, which the page shows as a placeholder."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

__all__ = ["Thumb", "Thumbnailer"]

THUMBS = "thumbs"
"""The report's folder of thumbnails."""


@dataclass(frozen=True)
class Thumb:
    """One image of a card.

    Attributes:
        label: what it is on the card (``masculine version``, ``image``).
        alt: the alternative text: source id, version and the model's answer.
        src: the thumbnail's path relative to the report folder; ``None`` when missing.
        gender: ``masculine`` / ``feminine`` (the plots' colours) or ``None``.
        missing: why there is no thumbnail (image not found, not decodable), else ``None``.
    """

    label: str
    alt: str
    src: str | None
    gender: str | None = None
    missing: str | None = None


class Thumbnailer:
    """Writes thumbnails into ``out / thumbs`` (at most ``size`` pixels a side).

    Args:
        out: the report folder.
        size: the longest side of a thumbnail, in pixels.
    """

    def __init__(self, out: Path, size: int):
        self.folder = out / THUMBS
        self.size = size
        self.written = 0
        self._done: dict[str, str | None] = {}

    def thumb(
        self,
        key: str,
        opener: Callable[[], Image.Image],
        label: str,
        alt: str,
        gender: str | None = None,
    ) -> Thumb:
        """The thumbnail of the image ``key`` names (``opener`` decodes it, once).

        ``opener`` raising an ``OSError``, a ``ValueError`` or a contrastkit error
        (a missing or undecodable image) gives a :class:`Thumb` saying so.
        """
        from contrastkit.errors import ContrastkitError

        name = hashlib.sha256(key.encode("utf-8")).hexdigest()[:20] + ".webp"
        if key not in self._done:
            try:
                image = opener()
                self._write(image, self.folder / name)
                self._done[key] = None
            except (OSError, ValueError, ContrastkitError) as error:
                self._done[key] = str(error) or type(error).__name__
        reason = self._done[key]
        if reason is not None:
            return Thumb(label, alt, None, gender, f"image not available: {reason}")
        return Thumb(label, alt, f"{THUMBS}/{name}", gender)

    def missing(self, label: str, alt: str, reason: str, gender: str | None = None) -> Thumb:
        """A placeholder saying why there is no image."""
        return Thumb(label, alt, None, gender, reason)

    def _write(self, image: Image.Image, path: Path) -> None:
        if path.is_file():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        small = image.convert("RGB")
        small.thumbnail((self.size, self.size), Image.Resampling.LANCZOS)
        temporary = path.with_suffix(".tmp")
        small.save(temporary, format="WEBP", quality=75, method=4)
        temporary.replace(path)
        self.written += 1
