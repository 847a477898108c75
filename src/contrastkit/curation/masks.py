"""Person masks from COCO segmentations, and the blend weights of a mask composite.

GenSynth pastes the edited crop back inside the person's *box* (:func:`~contrastkit.
curation.editing.paste_back`), so the desk, the patient or the wall between arm and body
are repainted too, and the two genders of one photo can differ in context. With
``--composite mask`` the edit is confined to the person instead:

* :func:`decode_segmentation` rasterises the person's COCO segmentation (polygons, or
  RLE with its counts as a list or COCO's compressed string) with ``pycocotools``;
* :func:`mask_alpha` dilates it by ``dilation`` pixels and feathers it over that band:
  weight 1 on the person, falling smoothly to 0 at ``dilation`` pixels from it, and 0
  everywhere else (and outside the editor's crop), so every pixel farther than that from
  the person is the source photo's own.

:func:`context_change` measures what an edit changed outside the (dilated) person: the
build's quality report and ``contrastkit audit --build`` report it for every edit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

__all__ = [
    "ContextChange",
    "ContextRegions",
    "SegmentationError",
    "check_segmentation",
    "context_change",
    "decode_segmentation",
    "dilate",
    "dilation_pixels",
    "mask_alpha",
    "rle_counts",
    "segmentation_area",
]


class SegmentationError(ValueError):
    """A segmentation that does not fit its image; ``part`` locates it in the
    segmentation (``[2]``: its third polygon, ``.counts``, ``.size``)."""

    def __init__(self, part: str, reason: str) -> None:
        self.part = part
        self.reason = reason
        super().__init__(f"segmentation{part}: {reason}")


#: The longest run an RLE holds (pycocotools keeps runs as 32-bit unsigned integers).
_LONGEST_RUN = 2**32 - 1
#: Most characters one run of a compressed RLE takes (5 bits each: 60 bits).
_RUN_CHARACTERS = 12


def _string_counts(text: str, pixels: int) -> list[int]:
    """The run lengths of COCO's compressed RLE string (pycocotools' ``rleFrString``:
    6-bit characters from ``0``, 5 bits of value each, a continuation bit, the sign bit
    of the last, and each run from the third on stored as the difference from the one
    two before), checked character by character.

    Raises:
        ValueError: a character out of range, a run cut short or too long, a negative
            run, more characters than an image of ``pixels`` can need.
    """
    if len(text) > _RUN_CHARACTERS * (pixels + 1):
        raise ValueError(f"{len(text)} characters, more than {pixels} pixels can need")
    counts: list[int] = []
    position = 0
    while position < len(text):
        value, shift, more = 0, 0, True
        while more:
            if position >= len(text):
                raise ValueError(f"run {len(counts) + 1} is cut short at the end")
            code = ord(text[position]) - 48
            if not 0 <= code < 64:
                raise ValueError(f"character {text[position]!r} at {position} is not an RLE code")
            value |= (code & 0x1F) << shift
            more = bool(code & 0x20)
            position += 1
            shift += 5
            if shift > 5 * _RUN_CHARACTERS:
                raise ValueError(
                    f"run {len(counts) + 1} is longer than {_RUN_CHARACTERS} characters"
                )
            if not more and code & 0x10:
                value |= -1 << shift
        if len(counts) > 2:
            value += counts[-2]
        if value < 0:
            raise ValueError(f"run {len(counts) + 1} is negative ({value})")
        counts.append(value)
    return counts


def rle_counts(counts: Any, height: int, width: int) -> list[int]:
    """The run lengths of an RLE of a ``height`` x ``width`` image: ``counts`` as a list
    of run lengths or COCO's compressed string, checked to be a whole mask of the image
    (non-negative whole runs that add up to ``height * width``: a shorter RLE would leave
    pixels undefined, a longer one does not describe the image).

    Raises:
        ValueError: saying what is wrong.
    """
    pixels = height * width
    if isinstance(counts, str):
        runs = _string_counts(counts, pixels)
    elif isinstance(counts, list):
        if len(counts) > pixels + 1:
            raise ValueError(f"{len(counts)} runs, more than {pixels} pixels can have")
        for number, run in enumerate(counts):
            if not isinstance(run, int) or isinstance(run, bool) or run < 0:
                raise ValueError(f"run {number + 1} is not a whole number >= 0: {run!r}")
        runs = counts
    else:
        raise ValueError(
            f"counts: expected run lengths or an RLE string, not {type(counts).__name__}"
        )
    longest = max(runs, default=0)
    if longest > _LONGEST_RUN:
        raise ValueError(f"a run of {longest} pixels, longer than an RLE holds ({_LONGEST_RUN})")
    total = sum(runs)
    if total != pixels:
        raise ValueError(
            f"counts: the runs add up to {total} pixels, not the {height}x{width} image's {pixels}"
        )
    return runs


def check_segmentation(segmentation: Any, width: int, height: int) -> None:
    """Check a COCO ``segmentation`` against its ``width`` x ``height`` image before it
    is rasterised: polygons of at least 3 finite points inside the image (to a pixel of
    rounding), or an RLE whose ``size`` is the image's and whose counts cover it exactly
    (:func:`rle_counts`).

    Raises:
        SegmentationError: saying which polygon, point or RLE field is wrong.
    """
    if width <= 0 or height <= 0:
        raise SegmentationError("", f"an image of {width}x{height} pixels")
    if isinstance(segmentation, list):
        for number, polygon in enumerate(segmentation):
            _check_polygon(number, polygon, width, height)
    elif isinstance(segmentation, dict):
        size = segmentation.get("size")
        if size != [height, width]:
            raise SegmentationError(
                ".size",
                f"expected [{height}, {width}] (the image's height and width), found {size!r}",
            )
        try:
            rle_counts(segmentation.get("counts"), height, width)
        except ValueError as error:
            raise SegmentationError(".counts", str(error)) from error
    else:
        kind = type(segmentation).__name__
        raise SegmentationError("", f"expected a list of polygons or an RLE object, not {kind}")


def _check_polygon(number: int, polygon: Any, width: int, height: int) -> None:
    import math

    if not isinstance(polygon, list) or len(polygon) < 6 or len(polygon) % 2:
        raise SegmentationError(
            f"[{number}]", "expected a polygon [x1, y1, x2, y2, ...] of at least 3 points"
        )
    for index, value in enumerate(polygon):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value):
            raise SegmentationError(f"[{number}][{index}]", f"{value!r} is not a finite number")
        limit = width if index % 2 == 0 else height
        if not -1 <= value <= limit + 1:
            axis = "x" if index % 2 == 0 else "y"
            raise SegmentationError(
                f"[{number}][{index}]",
                f"{axis} = {value} is outside the {width}x{height} image",
            )


def _rle(segmentation: Any, width: int, height: int) -> Any:
    """The pycocotools RLE of a checked segmentation (:func:`check_segmentation`)."""
    from pycocotools import mask as coco_mask

    check_segmentation(segmentation, width, height)
    if isinstance(segmentation, list):
        polygons = [[float(v) for v in polygon] for polygon in segmentation]
        return coco_mask.merge(coco_mask.frPyObjects(polygons, height, width))
    counts = segmentation["counts"]
    if isinstance(counts, str):
        return {"size": [height, width], "counts": counts.encode("ascii")}
    return coco_mask.frPyObjects({"size": [height, width], "counts": list(counts)}, height, width)


def segmentation_area(segmentation: Any, width: int, height: int) -> int:
    """The number of pixels the person's segmentation covers in its ``width`` x
    ``height`` image, from its run lengths (nothing is rasterised); 0 for a segmentation
    that rasterises to nothing (an all-background RLE, a polygon without area).

    Raises:
        ValueError: a segmentation that :func:`check_segmentation` refuses.
    """
    from pycocotools import mask as coco_mask

    return int(coco_mask.area(_rle(segmentation, width, height)))


def decode_segmentation(segmentation: Any, width: int, height: int) -> np.ndarray:
    """The person mask (bool, shape ``(height, width)``) of a COCO ``segmentation``: a
    list of polygons ``[[x1, y1, x2, y2, ...], ...]`` or an RLE object ``{"counts",
    "size"}`` (counts as run lengths, column-major from 0, or COCO's compressed string).

    Raises:
        ValueError: a segmentation of neither form, or one that does not fit the image
            (:func:`check_segmentation`): nothing is rasterised then.
    """
    from pycocotools import mask as coco_mask

    decoded = coco_mask.decode(_rle(segmentation, width, height))
    mask: np.ndarray = np.asarray(decoded, dtype=bool)
    if mask.ndim == 3:
        mask = np.asarray(mask.any(axis=2))
    return mask


def dilation_pixels(box: tuple[int, int, int, int], dilation: float) -> float:
    """``dilation`` (a fraction of the box's shorter side) in pixels, at least 1."""
    left, top, right, bottom = box
    return max(1.0, dilation * min(right - left, bottom - top))


def _distance_outside(mask: np.ndarray) -> np.ndarray:
    """Each pixel's Euclidean distance to the nearest mask pixel (0 on the mask)."""
    from scipy.ndimage import distance_transform_edt

    if not mask.any():
        return np.full(mask.shape, np.inf, dtype=np.float64)
    distance: np.ndarray = distance_transform_edt(~mask)
    return distance


def dilate(mask: np.ndarray, pixels: float) -> np.ndarray:
    """``mask`` grown by ``pixels``: every pixel closer than that to it (bool)."""
    grown: np.ndarray = _distance_outside(mask) < pixels
    return grown


def mask_alpha(mask: np.ndarray, crop: tuple[int, int, int, int], pixels: float) -> np.ndarray:
    """Blend weights (float32, the image's shape) of an edit pasted onto the person
    ``mask``: 1 on the person, a smooth ramp down to 0 at ``pixels`` from it (the
    dilation, feathered), 0 farther away and outside ``crop`` (left, top, right, bottom:
    the part of the image the editor saw)."""
    left, top, right, bottom = crop
    alpha = np.zeros(mask.shape, dtype=np.float32)
    distance = _distance_outside(mask[top:bottom, left:right])
    t = np.clip(1.0 - distance / pixels, 0.0, 1.0)
    alpha[top:bottom, left:right] = t * t * (3.0 - 2.0 * t)
    return alpha


@dataclass(frozen=True)
class ContextRegions:
    """The regions of a photo the context measure reads (bool, (H, W) each).

    Attributes:
        outside: the pixels outside the dilated person mask.
        box_context: the pixels inside the person box but outside the dilated mask.
        kept: the pixels the composite keeps from the source (outside the person box for
            ``box``, outside the dilated mask for ``mask``), less the band a lossy codec
            carries a change into (:data:`~contrastkit.curation.codec_noise.BLOCK`).
    """

    outside: np.ndarray
    box_context: np.ndarray
    kept: np.ndarray


class ContextChange(TypedDict):
    """What :func:`context_change` measured on one image (its docstring says each key)."""

    changed_outside_mask: float
    changed_beyond_noise: float | None
    changed_kept_pixels: int | None
    box_context_change: float | None
    noise_threshold: int | None


def context_change(
    source: np.ndarray, edited: np.ndarray, regions: ContextRegions, threshold: int | None = 0
) -> ContextChange:
    """What an edit changed outside the person.

    Args:
        source, edited: the decoded source photo and edit, uint8 (H, W, 3).
        regions: where to look (:class:`ContextRegions`).
        threshold: the codec's noise (0-255): a pixel counts as changed beyond it when
            a channel differs from the source's by more
            (:func:`~contrastkit.curation.codec_noise.noise_threshold`; 0 for a lossless
            image); ``None``: unknown (the figures that need it are ``None``).

    Returns:
        ``changed_outside_mask``: the share of ``outside`` pixels with any channel
        different from the source's (0 to 1; codec noise included);
        ``changed_beyond_noise``: the share of ``outside`` pixels changed beyond
        ``threshold``; ``changed_kept_pixels``: how many ``kept`` pixels changed beyond
        it (0 when the composite kept what it promises); ``box_context_change``: the mean
        absolute change of the ``box_context`` pixels, over channels, on the 0-255
        scale (``None`` when the box holds no such pixel); ``noise_threshold``.

    Raises:
        ValueError: the two images differ in size.
    """
    if source.shape != edited.shape:
        raise ValueError(
            f"the edit is {edited.shape[1]}x{edited.shape[0]}, its source "
            f"{source.shape[1]}x{source.shape[0]}"
        )
    delta = np.abs(source.astype(np.int16) - edited.astype(np.int16))
    largest = delta.max(axis=2)
    outside = regions.outside
    count = int(outside.sum())
    changed = float((largest[outside] > 0).sum() / count) if count else 0.0
    beyond: float | None = None
    kept: int | None = None
    if threshold is not None:
        beyond = float((largest[outside] > threshold).sum() / count) if count else 0.0
        kept = int((largest[regions.kept] > threshold).sum())
    context = int(regions.box_context.sum())
    mean = float(delta[regions.box_context].mean()) if context else None
    return {
        "changed_outside_mask": changed,
        "changed_beyond_noise": beyond,
        "changed_kept_pixels": kept,
        "box_context_change": mean,
        "noise_threshold": threshold,
    }
