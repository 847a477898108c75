"""Cut the person out for the editor, and put the edit back into its photo.

GenSynth (seeds/001) Sec. 4.1 and Appendix A.2 (re-exported by
:mod:`contrastkit.curation.editing`):

* :func:`crop_for_editing` crops the person box with a margin of context, resizes the
  crop so its longer side is the editor's resolution (a multiple of 8) and pads it to a
  square by repeating the edge pixels.
* :func:`paste_back` scales the edit back to the crop and blends it into the original
  inside the person box only, with a mask that ramps from 0 at the box edge to 1 at
  ``feather`` of the box's shorter side inside it: every pixel outside the box keeps its
  original value (``composite="box"``, the paper's method).
* :func:`paste_back_mask` blends it onto the person's segmentation mask instead, dilated
  by ``mask_dilation`` of the box's shorter side and feathered over that band
  (``composite="mask"``, :mod:`contrastkit.curation.masks`): every pixel outside the
  dilated mask keeps its original value, so the context of the photo is not repainted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

__all__ = ["CropPlacement", "crop_for_editing", "feather_mask", "paste_back", "paste_back_mask"]


@dataclass(frozen=True)
class CropPlacement:
    """Where an editor input came from and where its content sits.

    Attributes:
        box: the person box (left, top, right, bottom) in the source image.
        crop: the box with its margin, clipped to the image.
        offset: (x, y) of the resized crop inside the editor's square.
        size: (width, height) of the resized crop inside the square.
        resolution: side of the square.
    """

    box: tuple[int, int, int, int]
    crop: tuple[int, int, int, int]
    offset: tuple[int, int]
    size: tuple[int, int]
    resolution: int


def crop_for_editing(
    image: Image.Image, box: tuple[int, int, int, int], resolution: int, margin: float = 0.1
) -> tuple[Image.Image, CropPlacement]:
    """Crop ``box`` (left, top, right, bottom) with ``margin`` of context on each side,
    resize it so its longer side is ``resolution`` and pad it to a square by edge
    replication.

    Returns:
        The RGB editor input and its :class:`CropPlacement`.
    """
    left, top, right, bottom = box
    if not (0 <= left < right <= image.width and 0 <= top < bottom <= image.height):
        raise ValueError(f"box {box} is empty or outside the {image.width}x{image.height} image")
    mx = round((right - left) * margin)
    my = round((bottom - top) * margin)
    crop = (max(0, left - mx), max(0, top - my), min(image.width, right + mx),
            min(image.height, bottom + my))  # fmt: skip
    cw, ch = crop[2] - crop[0], crop[3] - crop[1]
    scale = resolution / max(cw, ch)
    size = (max(1, min(resolution, round(cw * scale))), max(1, min(resolution, round(ch * scale))))
    resized = np.asarray(
        image.convert("RGB").crop(crop).resize(size, Image.Resampling.BICUBIC), dtype=np.uint8
    )
    offset = ((resolution - size[0]) // 2, (resolution - size[1]) // 2)
    padded = np.pad(
        resized,
        (
            (offset[1], resolution - size[1] - offset[1]),
            (offset[0], resolution - size[0] - offset[0]),
            (0, 0),
        ),
        mode="edge",
    )
    placement = CropPlacement(box=box, crop=crop, offset=offset, size=size, resolution=resolution)
    return Image.fromarray(padded), placement


def feather_mask(width: int, height: int, feather: float) -> np.ndarray:
    """Blend weights for a ``height`` x ``width`` box: 0 at its edge, rising smoothly to 1
    at ``feather`` x the shorter side inside it (float32, shape (height, width))."""
    ramp = max(1.0, feather * min(width, height))
    xs = np.minimum(np.arange(width) + 0.5, width - np.arange(width) - 0.5)
    ys = np.minimum(np.arange(height) + 0.5, height - np.arange(height) - 0.5)
    distance = np.minimum(ys[:, None], xs[None, :])
    t = np.clip(distance / ramp, 0.0, 1.0)
    mask: np.ndarray = (t * t * (3.0 - 2.0 * t)).astype(np.float32)
    return mask


def paste_back(
    original: Image.Image, edited: Image.Image, placement: CropPlacement, feather: float = 0.08
) -> Image.Image:
    """Put an editor output back into ``original`` (GenSynth Sec. 4.1, "the edited person
    is then replaced in the source image").

    The padding is cut off, the edit is scaled back to the crop's size and blended into
    the person box with :func:`feather_mask`; pixels outside the box are the original's.
    """
    content = _edit_content(edited, placement)
    cl, ct, _, _ = placement.crop
    left, top, right, bottom = placement.box
    edit_box = content[top - ct : bottom - ct, left - cl : right - cl]
    result = np.array(original.convert("RGB"), dtype=np.uint8)
    source_box = result[top:bottom, left:right].astype(np.float32)
    alpha = feather_mask(right - left, bottom - top, feather)[..., None]
    blended = alpha * edit_box + (1.0 - alpha) * source_box
    result[top:bottom, left:right] = np.clip(np.rint(blended), 0, 255).astype(np.uint8)
    return Image.fromarray(result)


def _edit_content(edited: Image.Image, placement: CropPlacement) -> np.ndarray:
    """The editor output without its padding, scaled back to the crop's size (float32,
    (crop height, crop width, 3))."""
    if edited.size != (placement.resolution, placement.resolution):
        edited = edited.resize((placement.resolution, placement.resolution))
    x0, y0 = placement.offset
    w, h = placement.size
    cl, ct, cr, cb = placement.crop
    content = edited.convert("RGB").crop((x0, y0, x0 + w, y0 + h))
    content = content.resize((cr - cl, cb - ct), Image.Resampling.BICUBIC)
    return np.asarray(content, dtype=np.float32)


def paste_back_mask(
    original: Image.Image, edited: Image.Image, placement: CropPlacement, alpha: np.ndarray
) -> Image.Image:
    """Put an editor output back onto the person mask (``composite="mask"``).

    ``alpha`` is the blend weight of every pixel of ``original``
    (:func:`contrastkit.curation.masks.mask_alpha`: 1 on the person, a feathered band
    around it, 0 elsewhere and outside the crop). Returns an RGBA image: RGB the blend,
    which is the original's own value wherever ``alpha`` is 0, and A 255 where the edit
    reached (``alpha > 0``) and 0 elsewhere, so that storage can keep only those pixels
    (:func:`contrastkit.builders.manifest.composite_edit` puts them back onto the
    decoded source).
    """
    content = _edit_content(edited, placement)
    cl, ct, cr, cb = placement.crop
    result = np.array(original.convert("RGB"), dtype=np.uint8)
    if alpha.shape != result.shape[:2]:
        size = f"{original.width}x{original.height}"
        raise ValueError(f"alpha of shape {alpha.shape} for a {size} image")
    weight = alpha[ct:cb, cl:cr, None]
    region = result[ct:cb, cl:cr]
    blended = np.clip(np.rint(weight * content + (1.0 - weight) * region), 0, 255).astype(np.uint8)
    inside = alpha[ct:cb, cl:cr] > 0
    region[inside] = blended[inside]
    opacity = np.where(alpha > 0, 255, 0).astype(np.uint8)
    return Image.fromarray(np.dstack([result, opacity]))
