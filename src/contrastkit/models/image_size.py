"""The image size a model's preprocessing produces, read from its settings.

Light (no torch): the adapters (:mod:`.itm`) record it as ``input_size`` and the stereotype
task (:mod:`contrastkit.evaluators.tasks.stereotype_probing.scoring`) sizes its blank image by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["processor_input_size", "size_of"]


def size_of(setting: Any) -> tuple[int, int] | None:
    """``(width, height)`` of a size setting: an int (a square), a torchvision
    ``(height, width)`` pair, or a mapping (a transformers ``size`` / ``crop_size`` dict or
    ``SizeDict``) with ``height`` and ``width`` or a ``shortest_edge`` (a square at the
    shorter side); ``None`` for anything else."""
    if isinstance(setting, int):
        return (setting, setting)
    if (
        isinstance(setting, Sequence)
        and len(setting) == 2
        and all(isinstance(v, int) for v in setting)
    ):
        return (int(setting[1]), int(setting[0]))  # torchvision: (height, width)
    get = getattr(setting, "get", None)
    if get is None:
        return None
    height, width = get("height"), get("width")
    if height and width:
        return (int(width), int(height))
    edge = get("shortest_edge")
    return (int(edge), int(edge)) if edge else None


def processor_input_size(processor: Any) -> tuple[int, int] | None:
    """``(width, height)`` a transformers image processor outputs: its ``crop_size`` when
    it centre-crops, else its ``size`` (for an aspect-preserving resize such as ViLT's,
    the shorter side as a square); ``None`` when neither says."""
    crop = getattr(processor, "crop_size", None)
    found = size_of(crop) if getattr(processor, "do_center_crop", False) else None
    return found or size_of(getattr(processor, "size", None))
