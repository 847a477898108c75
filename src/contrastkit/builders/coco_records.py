"""How a build folder records its COCO sources: a line of ``sources.jsonl``
(:meth:`contrastkit.builders.coco.SourceImage.to_json`)."""

from __future__ import annotations

from typing import Any, TypedDict

from typing_extensions import NotRequired

__all__ = ["SourceRecord"]


class SourceRecord(TypedDict):
    """A selected source as ``sources.jsonl`` records it: its id, the photo's path, its
    declared size, the person box ``[x, y, w, h]``, its captions and label;
    ``segmentation`` (the person's COCO polygons or RLE, as in the annotations) and
    ``sha256`` (of the photo's bytes) only where known."""

    source_id: str
    path: str
    width: int
    height: int
    box: list[float]
    captions: list[str]
    label: str
    segmentation: NotRequired[Any]
    sha256: NotRequired[str]
