"""What the dataset card of a GenSynth export states about how its images were made,
derived from the build's recorded settings and the exported edits (issue 43, item 6).

The card names the editor by its family (InstructPix2Pix, SDXL InstructPix2Pix, FLUX.1
Kontext, Qwen-Image-Edit), states image guidance only for the families that have one,
says how the edits were composited (inside the person box, or onto the dilated person
mask) and what that guarantees about the pixels around the person, given how the edits
were stored (lossless PNG, or lossy WebP / JPEG) and exported (:func:`edit_facts`; the
export stores the result as ``edit_facts`` in ``build_metadata.json``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, TypedDict

from contrastkit.curation.editing import DEFAULT_MASK_DILATION
from contrastkit.curation.editor_families import DEFAULT_FAMILY, editor_family

__all__ = ["EditFacts", "ImageFigures", "edit_facts", "stored_format"]

_NAMES = {"png": "PNG", "webp": "WebP", "jpeg": "JPEG"}
_LOSSLESS = ("png",)


def stored_format(path: str) -> str:
    """The image format of a stored edit, from its file name (``png``, ``webp``,
    ``jpeg``)."""
    suffix = path.rsplit(".", 1)[-1].lower()
    return {"jpg": "jpeg"}.get(suffix, suffix)


class ImageFigures(TypedDict):
    """What a GenSynth export's images are made of (:func:`edit_facts`, before its
    sentences)."""

    family: str
    editor_name: str
    guidance: str
    image_guidance: float | None
    composite: str
    composites: dict[str, int]
    formats: dict[str, int]
    mask_dilation: float | None
    feather: float | None
    lossless: bool
    image_quality: int | None


class EditFacts(ImageFigures):
    """The card's facts about a GenSynth export's images (:func:`edit_facts`): the
    figures, and how an edit was put back and what the pixels around the person are,
    in words."""

    compositing: str
    guarantee: str


def edit_facts(
    summary: Mapping[str, Any], composites: Counter[str], formats: Counter[str]
) -> EditFacts:
    """The card's facts about a GenSynth export's images.

    Args:
        summary: the build summary (its ``edit`` entry: editor, family, settings,
            storage).
        composites: how the exported edits were composited (``box`` / ``mask``), counted
            from their manifest records.
        formats: how the exported edits were stored (``png`` / ``webp`` / ``jpeg``),
            counted from their files.

    Returns:
        ``editor_name`` and ``family`` (the editor family's), ``guidance`` (what its text
        guidance scale is), ``image_guidance`` (``None`` where the family has none),
        ``composite`` (``box``, ``mask`` or ``mixed``), ``composites`` and ``formats``
        (the counts), ``mask_dilation`` and ``feather``, ``lossless`` (every stored edit
        is), ``image_quality``, ``compositing`` (how an edit was put back, in words) and
        ``guarantee`` (what the pixels around the person are, in words).
    """
    edit = summary.get("edit") or {}
    settings = edit.get("settings") or {}
    prefix = str(edit.get("editor_family") or DEFAULT_FAMILY)
    family = editor_family(prefix)
    has_image_guidance = family.image_guidance_scale is not None if family else True
    dilation = float(settings.get("mask_dilation", DEFAULT_MASK_DILATION))
    feather = settings.get("feather")
    quality = edit.get("image_quality")
    lossless = bool(formats) and all(f in _LOSSLESS for f in formats)
    kinds = set(composites)
    composite = "mixed" if len(kinds) > 1 else (kinds.pop() if kinds else "box")
    facts: ImageFigures = {
        "family": prefix,
        "editor_name": family.name if family else prefix,
        "guidance": family.guidance if family else "text guidance",
        "image_guidance": settings.get("image_guidance_scale") if has_image_guidance else None,
        "composite": composite,
        "composites": dict(sorted(composites.items())),
        "formats": dict(sorted(formats.items())),
        "mask_dilation": dilation if "mask" in composites else None,
        "feather": feather if "box" in composites or not composites else None,
        "lossless": lossless,
        "image_quality": None if lossless else quality,
    }
    return {**facts, "compositing": _compositing(facts), "guarantee": _guarantee(facts)}


def _storage(facts: Mapping[str, Any]) -> str:
    """How the edits were stored, in words (``lossy WebP at quality 90``)."""
    parts = []
    for name in facts["formats"]:
        shown = _NAMES.get(name, name)
        if name in _LOSSLESS:
            parts.append(f"lossless {shown}")
        else:
            quality = facts["image_quality"]
            parts.append(f"lossy {shown}" + (f" at quality {quality}" if quality else ""))
    return " and ".join(parts) or "as the build stored them"


def _compositing(facts: Mapping[str, Any]) -> str:
    box = (
        f"pasted back inside the person box, feathered over {facts['feather']} of the "
        "box's shorter side"
    )
    mask = (
        f"pasted onto the person's COCO segmentation mask, dilated by "
        f"{facts['mask_dilation']} of the box's shorter side and feathered over that band"
    )
    if facts["composite"] == "mixed":
        counts = facts["composites"]
        return f"{counts['box']} {box}; {counts['mask']} {mask}"
    return mask if facts["composite"] == "mask" else box


def _guarantee(facts: Mapping[str, Any]) -> str:
    """What the pixels around the person are, for each compositing the export holds."""
    storage = _storage(facts)
    box = f"Box edits are the build's files ({storage}), embedded unchanged: " + (
        "every pixel outside the person box equals the source photo's."
        if facts["lossless"]
        else "pixels outside the person box are the source photo re-encoded, equal to "
        "it up to the codec's compression error, not pixel for pixel."
    )
    mask = (
        "Mask edits are the edited person's pixels (stored as "
        f"{storage}) put onto the decoded source photo and embedded as lossless WebP: "
        "every pixel outside the person's mask dilated by "
        f"{facts['mask_dilation']} of the box's shorter side equals the source photo's, "
        "exactly."
    )
    if facts["composite"] == "mixed":
        return f"The build mixes box and mask edits ({facts['composites']}). {box} {mask}"
    return mask if facts["composite"] == "mask" else box
