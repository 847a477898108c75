"""Size limits an accepted image must meet, and their defaults.

Kept apart from :mod:`contrastkit.curation.images` (Pillow, imagehash) so that configs and
the command line can name the limits without loading any imaging library.
"""

from __future__ import annotations

from dataclasses import dataclass

from contrastkit.config import require

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_PIXELS", "DEFAULT_MIN_SIDE", "ImageLimits"]

DEFAULT_MAX_BYTES = 25 * 1024 * 1024
"""Largest body accepted, in bytes (25 MiB)."""
DEFAULT_MAX_PIXELS = 50_000_000
"""Largest canvas accepted, in pixels summed over frames (50 megapixels)."""
DEFAULT_MIN_SIDE = 64
"""Smallest accepted width and height: tracking pixels and icons are not photos."""


@dataclass(frozen=True)
class ImageLimits:
    """Size limits an image must meet.

    Attributes:
        max_bytes: Largest body in bytes; larger is ``image_too_large``.
        max_pixels: Largest width x height (summed over frames); larger is
            ``image_too_large``, refused from the header alone.
        min_side: Smallest accepted width and height; smaller is ``image_too_small``.

    Raises:
        ConfigError: a limit below 1, naming the field.
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    max_pixels: int = DEFAULT_MAX_PIXELS
    min_side: int = DEFAULT_MIN_SIDE

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_pixels", "min_side"):
            value = getattr(self, name)
            require(value >= 1, f"limits.{name}", f"must be at least 1, not {value}")
