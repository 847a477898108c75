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

from typing import Any

import numpy as np

__all__ = ["context_change", "decode_segmentation", "dilate", "dilation_pixels", "mask_alpha"]


def decode_segmentation(segmentation: Any, width: int, height: int) -> np.ndarray:
    """The person mask (bool, shape ``(height, width)``) of a COCO ``segmentation``: a
    list of polygons ``[[x1, y1, x2, y2, ...], ...]`` or an RLE object ``{"counts",
    "size"}`` (counts as run lengths, column-major from 0, or COCO's compressed string).

    Raises:
        ValueError: a segmentation of neither form, or an RLE of another size.
    """
    from pycocotools import mask as coco_mask

    try:
        if isinstance(segmentation, list):
            rles = coco_mask.frPyObjects(
                [[float(v) for v in polygon] for polygon in segmentation], height, width
            )
            rle = coco_mask.merge(rles)
        elif isinstance(segmentation, dict):
            size = [int(v) for v in segmentation["size"]]
            if size != [height, width]:
                raise ValueError(f"an RLE of size {size}, for a {width}x{height} image")
            counts = segmentation["counts"]
            if isinstance(counts, str):
                rle = {"size": size, "counts": counts.encode("ascii")}
            else:
                rle = coco_mask.frPyObjects({"size": size, "counts": list(counts)}, height, width)
        else:
            raise ValueError(f"not polygons or an RLE: {type(segmentation).__name__}")
        decoded = coco_mask.decode(rle)
    except (TypeError, KeyError, IndexError) as error:
        raise ValueError(f"not a COCO segmentation ({error})") from error
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


def context_change(
    source: np.ndarray, edited: np.ndarray, outside: np.ndarray, box_context: np.ndarray
) -> dict[str, float | None]:
    """What an edit changed outside the person.

    Args:
        source, edited: the decoded source photo and edit, uint8 (H, W, 3).
        outside: the pixels outside the dilated person mask (bool, (H, W)).
        box_context: the pixels inside the person box but outside the dilated mask.

    Returns:
        ``changed_outside_mask``: the share of ``outside`` pixels with any channel
        different from the source's (0 to 1); ``box_context_change``: the mean absolute
        change of the ``box_context`` pixels, over channels, on the 0-255 scale
        (``None`` when the box holds no such pixel).

    Raises:
        ValueError: the two images differ in size.
    """
    if source.shape != edited.shape:
        raise ValueError(
            f"the edit is {edited.shape[1]}x{edited.shape[0]}, its source "
            f"{source.shape[1]}x{source.shape[0]}"
        )
    differs = (source != edited).any(axis=2)
    count = int(outside.sum())
    changed = float(differs[outside].sum() / count) if count else 0.0
    context = int(box_context.sum())
    delta = np.abs(source.astype(np.int16) - edited.astype(np.int16))
    mean = float(delta[box_context].mean()) if context else None
    return {"changed_outside_mask": changed, "box_context_change": mean}
