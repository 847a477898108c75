"""What every GenSynth / GenSwap stage shares: the build summary, images, person crops."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.manifest import SUMMARY
from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text
from contrastkit.records import read_json_object

__all__ = ["Progress", "load_image", "person_crop", "read_summary", "update_summary"]

#: Called with (finished, total) as work progresses.
Progress = Callable[[int, int], None]


def load_image(path: Path) -> Image.Image:
    """An RGB image, or a :class:`DataFormatError` naming the file."""
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except FileNotFoundError as error:
        raise DataFormatError(path, None, None, "image file not found") from error
    except OSError as error:
        raise DataFormatError(path, None, None, f"not a readable image ({error})") from error


def person_crop(image: Image.Image, source: SourceImage) -> Image.Image:
    """The person box of ``source`` cut from ``image`` (the original or an edit)."""
    return image.crop(source.box.xyxy(image.width, image.height))


def read_summary(folder: str | Path) -> dict[str, Any]:
    """``build_summary.json`` of a build folder (``{}`` before any stage).

    Raises:
        DataFormatError: the file is not a JSON object.
    """
    path = Path(folder) / SUMMARY
    if not path.exists():
        return {}
    return read_json_object(path)


def update_summary(
    folder: str | Path, key: str, value: Any, *, stale: Sequence[str] = ()
) -> dict[str, Any]:
    """Set one stage's entry of ``build_summary.json`` and drop the ``stale`` entries that
    described earlier outputs, in one atomic write; return the summary."""
    summary = read_summary(folder)
    summary[key] = value
    for name in stale:
        summary.pop(name, None)
    text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    atomic_write_text(Path(folder) / SUMMARY, text)
    return summary
