"""Edit the person in a photo with an instruction editor; paste the edit back, background untouched.

GenSynth (seeds/001) Sec. 4.1 and Appendix A.2: the image is cropped to its single
person box, the crop is edited by InstructPix2Pix (Brooks et al., 2022) with each edit
instruction of Tab. 7 (Appendix C) for each target gender, at the text guidance scales
9.5 and 15, with 500 denoising steps, and the edited person is put back into the source
image. That gives 4 instructions x 2 genders x 2 scales = 16 edits per source (Tab. 2).

Here:

* :func:`plan_edits` lists a source's edits, each with its own seed (derived from the
  build seed and the edit id, so an edit is the same whatever batch it runs in).
* :func:`crop_for_editing` crops the person box with a margin of context, resizes the
  crop so its longer side is the editor's resolution (a multiple of 8) and pads it to a
  square by repeating the edge pixels.
* :class:`DiffusersEditor` runs the diffusers pipeline of an editor family
  (:mod:`contrastkit.curation.editor_families`: InstructPix2Pix, the paper's, by default;
  SDXL InstructPix2Pix, FLUX.1 Kontext, Qwen-Image-Edit) on several edits per forward
  batch (edits that share guidance settings; one seeded generator per edit), in the
  family's dtype on CUDA.
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

import hashlib
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from contrastkit.config import ModelConfig, require
from contrastkit.curation.editor_families import (
    DEFAULT_FAMILY,
    PAPER_INSTRUCTIONS,
    EditorFamily,
    editor_family,
    parse_editor_spec,
)
from contrastkit.errors import ConfigError, DataFormatError, ModelNotFoundError
from contrastkit.schema import Gender
from contrastkit.tiny.marker import marked_random

__all__ = [
    "COMPOSITES",
    "DEFAULT_IMAGE_GUIDANCE_SCALE",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_MASK_DILATION",
    "DEFAULT_STEPS",
    "DEFAULT_TEXT_GUIDANCE_SCALES",
    "CropPlacement",
    "DiffusersEditor",
    "EditSettings",
    "EditSpec",
    "Editor",
    "InstructPix2PixEditor",
    "check_instruct_pix2pix",
    "crop_for_editing",
    "editor_dtype",
    "editor_is_cached",
    "feather_mask",
    "flux_kontext_arguments",
    "instruct_pix2pix_arguments",
    "load_editor",
    "locate_editor",
    "paste_back",
    "paste_back_mask",
    "plan_edits",
    "qwen_image_edit_arguments",
    "read_instructions",
    "sdxl_instruct_pix2pix_arguments",
]

#: GenSynth Tab. 7 (Appendix C): the edit instructions for each target gender (the
#: ``ip2p`` family's; :mod:`contrastkit.curation.editor_families` holds every family's).
DEFAULT_INSTRUCTIONS: Mapping[Gender, tuple[str, ...]] = PAPER_INSTRUCTIONS
#: Appendix A.2: "for each instruction, we generate an image with two text guiding scales".
DEFAULT_TEXT_GUIDANCE_SCALES: tuple[float, ...] = (9.5, 15.0)
#: Not stated in the paper: InstructPix2Pix's own default image guidance.
DEFAULT_IMAGE_GUIDANCE_SCALE = 1.5
#: Appendix A.2: "We run InstructPix2Pix for 500 denoising steps".
DEFAULT_STEPS = 500
#: How an edit is put back into its photo: inside the person ``box`` (GenSynth Sec. 4.1,
#: the default), or onto the person's segmentation ``mask`` (dilated and feathered).
COMPOSITES = ("box", "mask")
#: ``--composite mask``: the mask is grown by this fraction of the box's shorter side,
#: and the edit fades out over that band.
DEFAULT_MASK_DILATION = 0.05
#: The public InstructPix2Pix checkpoint.
DEFAULT_EDITOR = "timbrooks/instruct-pix2pix"


@dataclass(frozen=True)
class EditSettings:
    """Everything that decides the edits of a build (all of it recorded in the manifest).

    The defaults are the paper's, those of the ``ip2p`` editor family;
    :meth:`for_family` gives another family's (its model card's).

    Attributes:
        instructions: per target gender, the instructions (default: Tab. 7).
        text_guidance_scales: one edit per scale and instruction (default 9.5, 15).
        image_guidance_scale: InstructPix2Pix image guidance (default 1.5); ``None`` for
            editors without one (FLUX.1 Kontext, Qwen-Image-Edit).
        steps: denoising steps (paper: 500).
        resolution: side of the square the crop is resized and padded to; a multiple
            of 8 (512 for Stable Diffusion 1.5; the editor family may ask for 16).
        margin: context added around the person box on each side, as a fraction of the
            box's width / height.
        feather: width of the blend ramp inside the box, as a fraction of the box's
            shorter side (``composite="box"``).
        seed: build seed; each edit's seed is derived from it and the edit id.
        composite: ``box`` (the paper: the edit replaces the person box, feathered at
            its edge) or ``mask`` (the edit replaces the person's COCO segmentation,
            dilated by ``mask_dilation`` and feathered; every pixel farther from the
            person is the source photo's own). See :data:`COMPOSITES`.
        mask_dilation: how far the person mask is grown, as a fraction of the box's
            shorter side; the edit fades out over that band (``composite="mask"``; the
            quality report's context measure uses it in both modes).
    """

    instructions: Mapping[Gender, tuple[str, ...]] = field(
        default_factory=lambda: dict(DEFAULT_INSTRUCTIONS)
    )
    text_guidance_scales: tuple[float, ...] = DEFAULT_TEXT_GUIDANCE_SCALES
    image_guidance_scale: float | None = DEFAULT_IMAGE_GUIDANCE_SCALE
    steps: int = DEFAULT_STEPS
    resolution: int = 512
    margin: float = 0.1
    feather: float = 0.08
    seed: int = 0
    composite: str = "box"
    mask_dilation: float = DEFAULT_MASK_DILATION

    def __post_init__(self) -> None:
        require(
            self.resolution >= 8 and self.resolution % 8 == 0,
            "resolution",
            f"must be a positive multiple of 8, not {self.resolution}",
        )
        require(self.steps >= 1, "steps", f"must be >= 1, not {self.steps}")
        require(
            self.image_guidance_scale is None or isinstance(self.image_guidance_scale, int | float),
            "image_guidance_scale",
            f"must be a number or None, not {self.image_guidance_scale!r}",
        )
        require(
            bool(self.text_guidance_scales),
            "text_guidance_scales",
            "at least one text guidance scale is needed",
        )
        require(0 <= self.margin <= 1, "margin", f"must be in [0, 1], not {self.margin}")
        require(0 < self.feather <= 0.5, "feather", f"must be in (0, 0.5], not {self.feather}")
        require(
            self.composite in COMPOSITES,
            "composite",
            f"must be one of {', '.join(COMPOSITES)}, not {self.composite!r}",
        )
        require(
            isinstance(self.mask_dilation, int | float) and 0 < self.mask_dilation <= 0.5,
            "mask_dilation",
            f"must be in (0, 0.5], not {self.mask_dilation}",
        )
        for gender in Gender.binary():
            require(
                bool(self.instructions.get(gender)),
                "instructions",
                f"no edit instructions for {gender.value}",
            )

    @classmethod
    def for_family(cls, family: EditorFamily | str, **changes: Any) -> EditSettings:
        """The defaults of an editor family (a record or its prefix): its instructions,
        guidance scales, steps and resolution; ``changes`` set other fields.

        Raises:
            ConfigError: an unknown prefix.
        """
        if isinstance(family, str):
            found = editor_family(family)
            if found is None:
                raise ConfigError(f"editor: {family!r} is not an editor family")
            family = found
        values: dict[str, Any] = {
            "instructions": dict(family.instructions),
            "text_guidance_scales": tuple(family.text_guidance_scales),
            "image_guidance_scale": family.image_guidance_scale,
            "steps": family.steps,
            "resolution": family.resolution,
        }
        return cls(**{**values, **changes})

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], defaults: EditSettings | None = None
    ) -> EditSettings:
        """The settings :meth:`to_json` wrote (any field left out takes its value in
        ``defaults``, by default the paper's: :meth:`for_family` gives a family's).

        Raises:
            ValueError: a field that is not one of these settings, or a value of the wrong
                kind (TypeError and KeyError are reported as ValueError too).
        """
        values = dict(data)
        try:
            if "instructions" in values:
                values["instructions"] = {
                    Gender(g): tuple(str(i) for i in v) for g, v in values["instructions"].items()
                }
            if "text_guidance_scales" in values:
                values["text_guidance_scales"] = tuple(
                    float(v) for v in values["text_guidance_scales"]
                )
            if defaults is not None:
                known = {f.name for f in fields(cls)}
                unknown = sorted(set(values) - known)
                if unknown:
                    raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
                return replace(defaults, **values)
            return cls(**values)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"not edit settings ({error})") from error

    def to_json(self) -> dict[str, Any]:
        """JSON-ready settings (recorded in the build summary). ``composite`` and
        ``mask_dilation`` are left out at their defaults, so a box build records what it
        recorded before they existed (and resumes unchanged)."""
        data: dict[str, Any] = {
            "instructions": {g.value: list(v) for g, v in self.instructions.items()},
            "text_guidance_scales": list(self.text_guidance_scales),
            "image_guidance_scale": self.image_guidance_scale,
            "steps": self.steps,
            "resolution": self.resolution,
            "margin": self.margin,
            "feather": self.feather,
            "seed": self.seed,
        }
        if self.composite != "box" or self.mask_dilation != DEFAULT_MASK_DILATION:
            data["composite"] = self.composite
            data["mask_dilation"] = self.mask_dilation
        return data


def read_instructions(path: str | Path) -> dict[Gender, tuple[str, ...]]:
    """Edit instructions from a table (CSV, TSV, JSONL or JSON) with the fields ``gender``
    (masculine / feminine, or a label :meth:`Gender.parse_label` reads) and
    ``instruction``; they replace Tab. 7's (:data:`DEFAULT_INSTRUCTIONS`).

    Raises:
        DataFormatError: a bad gender label or an empty instruction (naming the line and
            field), or a target gender without any instruction.
    """
    from contrastkit.records import read_records

    found: dict[Gender, list[str]] = {g: [] for g in Gender.binary()}
    for record in read_records(path):
        try:
            gender = Gender.parse_label(record.get("gender"))
        except ValueError as error:
            raise record.error("gender", str(error)) from error
        instruction = record.get("instruction").strip()
        if not instruction:
            raise record.error("instruction", "empty instruction")
        found[gender].append(instruction)
    for gender, instructions in found.items():
        if not instructions:
            raise DataFormatError(path, None, "gender", f"no instruction for {gender.value}")
    return {g: tuple(v) for g, v in found.items()}


@dataclass(frozen=True)
class EditSpec:
    """One edit of one source: what to ask the editor and with which seed."""

    edit_id: str
    source_id: str
    target: Gender
    instruction: str
    text_guidance_scale: float
    image_guidance_scale: float | None
    steps: int
    seed: int


def _edit_seed(seed: int, edit_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{edit_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (2**63 - 1)


def plan_edits(source_id: str, settings: EditSettings) -> list[EditSpec]:
    """The edits of one source: every instruction of each target gender at every text
    guidance scale (16 with the defaults), in a fixed order.

    Edit ids read ``{source_id}-{M|F}{instruction number}-g{scale}``, e.g. ``391895-F2-g15``.
    """
    specs = []
    for target in Gender.binary():
        for number, instruction in enumerate(settings.instructions[target], start=1):
            for scale in settings.text_guidance_scales:
                edit_id = f"{source_id}-{target.short}{number}-g{scale:g}"
                specs.append(
                    EditSpec(
                        edit_id=edit_id,
                        source_id=source_id,
                        target=target,
                        instruction=instruction,
                        text_guidance_scale=float(scale),
                        image_guidance_scale=settings.image_guidance_scale,
                        steps=settings.steps,
                        seed=_edit_seed(settings.seed, edit_id),
                    )
                )
    return specs


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


class Editor(Protocol):
    """Anything that edits batches of crops: InstructPix2Pix, or a test double."""

    @property
    def name(self) -> str:
        """What to record as the editor in the manifest."""
        ...

    def edit(self, images: Sequence[Image.Image], specs: Sequence[EditSpec]) -> list[Image.Image]:
        """Edit ``images[i]`` as ``specs[i]`` says; return one image per spec."""
        ...


def instruct_pix2pix_arguments(
    prompts: list[str],
    images: list[Image.Image],
    text_guidance_scale: float,
    image_guidance_scale: float | None,
    steps: int,
    size: int,
) -> dict[str, Any]:
    """``StableDiffusionInstructPix2PixPipeline`` keywords of one batch (the output
    size is the input's)."""
    return {
        "prompt": prompts, "image": images, "num_inference_steps": steps,
        "guidance_scale": text_guidance_scale,
        "image_guidance_scale": DEFAULT_IMAGE_GUIDANCE_SCALE
        if image_guidance_scale is None else image_guidance_scale,
    }  # fmt: skip


def sdxl_instruct_pix2pix_arguments(
    prompts: list[str],
    images: list[Image.Image],
    text_guidance_scale: float,
    image_guidance_scale: float | None,
    steps: int,
    size: int,
) -> dict[str, Any]:
    """``StableDiffusionXLInstructPix2PixPipeline`` keywords: those of InstructPix2Pix
    and the output size (SDXL's default is its UNet's sample size, not the input's)."""
    arguments = instruct_pix2pix_arguments(
        prompts, images, text_guidance_scale, image_guidance_scale, steps, size
    )
    return {**arguments, "height": size, "width": size}


def flux_kontext_arguments(
    prompts: list[str],
    images: list[Image.Image],
    text_guidance_scale: float,
    image_guidance_scale: float | None,
    steps: int,
    size: int,
) -> dict[str, Any]:
    """``FluxKontextPipeline`` keywords: the guidance is the distilled guidance
    embedding; the input is used at its own size (a square at the family's resolution;
    1024 is one of Kontext's preferred resolutions), not resized again."""
    return {
        "prompt": prompts, "image": images, "num_inference_steps": steps,
        "guidance_scale": text_guidance_scale, "height": size, "width": size,
        "max_area": size * size, "_auto_resize": False,
    }  # fmt: skip


def qwen_image_edit_arguments(
    prompts: list[str],
    images: list[Image.Image],
    text_guidance_scale: float,
    image_guidance_scale: float | None,
    steps: int,
    size: int,
) -> dict[str, Any]:
    """``QwenImageEditPipeline`` keywords: true classifier-free guidance against the
    model card's negative prompt ``" "``."""
    return {
        "prompt": prompts, "image": images, "num_inference_steps": steps,
        "true_cfg_scale": text_guidance_scale, "negative_prompt": [" "] * len(prompts),
        "height": size, "width": size,
    }  # fmt: skip


def check_instruct_pix2pix(pipeline: Any, name: str) -> None:
    """An InstructPix2Pix UNet takes 8 input channels (4 noise + 4 image latents)."""
    in_channels = int(pipeline.unet.config.in_channels)
    if in_channels != 8:
        raise ModelNotFoundError(
            f"{name}: not an InstructPix2Pix pipeline: its UNet takes {in_channels} input "
            "channels; an InstructPix2Pix UNet takes 8 (4 noise + 4 image latents)"
        )


def _family(prefix: str) -> EditorFamily:
    found = editor_family(prefix)
    if found is None:
        raise ConfigError(f"editor: {prefix!r} is not an editor family")
    return found


class DiffusersEditor:
    """A diffusers editing pipeline of an editor family, with batched, seeded edits.

    Edits that share their text guidance scale, image guidance scale and step count run
    together, ``batch_size`` per forward pass, each with its own ``torch.Generator``
    seeded by :attr:`EditSpec.seed` (on the CPU, so a seed gives the same starting noise
    on every device). The family (:mod:`~contrastkit.curation.editor_families`) says how
    a batch is asked of the pipeline.
    """

    def __init__(
        self,
        pipeline: Any,
        *,
        name: str,
        batch_size: int = 8,
        family: EditorFamily | str = DEFAULT_FAMILY,
        dtype: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        self.pipeline = pipeline
        self._name = name
        self.batch_size = batch_size
        self.family = _family(family) if isinstance(family, str) else family
        #: The dtype the pipeline runs in (``None``: not known, a test double).
        self.dtype = dtype
        #: Whether the pipeline's folder carries the random-weights marker of
        #: :mod:`contrastkit.tiny` (a tiny test editor): builds made with it say so.
        self.random_weights = marked_random(parse_editor_spec(name)[1])
        self._arguments = self.family.arguments_function()

    @property
    def name(self) -> str:
        """The editor spec the pipeline was loaded from."""
        return self._name

    def edit(self, images: Sequence[Image.Image], specs: Sequence[EditSpec]) -> list[Image.Image]:
        """Run the edits; ``images[i]`` is edited with ``specs[i]``."""
        import torch

        if len(images) != len(specs):
            raise ValueError(f"{len(images)} images for {len(specs)} edit specs")
        groups: dict[tuple[float, float | None, int], list[int]] = defaultdict(list)
        for i, spec in enumerate(specs):
            groups[(spec.text_guidance_scale, spec.image_guidance_scale, spec.steps)].append(i)
        results: dict[int, Image.Image] = {}
        for (text_scale, image_scale, steps), indices in groups.items():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                inputs = [images[i].convert("RGB") for i in chunk]
                arguments = self._arguments(
                    [specs[i].instruction for i in chunk], inputs, text_scale, image_scale,
                    steps, inputs[0].width,
                )  # fmt: skip
                output = self.pipeline(
                    **arguments,
                    generator=[torch.Generator("cpu").manual_seed(specs[i].seed) for i in chunk],
                    output_type="pil",
                )
                for i, edited in zip(chunk, output.images, strict=True):
                    results[i] = edited
        return [results[i] for i in range(len(specs))]


#: The editor of builds made before editor families (an InstructPix2Pix pipeline).
InstructPix2PixEditor = DiffusersEditor


#: What a failed ``from_pretrained`` of a pipeline the user pointed at raises: a missing
#: or unreadable file (``OSError``), a config that is not JSON or names an unknown class
#: (``ValueError``, ``KeyError``), weights of another shape (``RuntimeError``), a
#: truncated file (``EOFError``).
_LOAD_ERRORS: tuple[type[Exception], ...] = (OSError, ValueError, KeyError, RuntimeError, EOFError)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?$")

_TORCH_DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16",
                 "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16"}  # fmt: skip


def _is_missing(error: BaseException) -> bool:
    """Whether ``error`` (or an error it came from) says the files do not exist on the Hub."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HFValidationError,
        RepositoryNotFoundError,
    )

    current: BaseException | None = error
    seen: list[BaseException] = []
    while current is not None and current not in seen:
        if isinstance(current, (EntryNotFoundError, RepositoryNotFoundError, HFValidationError)):
            return True
        seen.append(current)
        current = current.__cause__ or current.__context__
    return False


def editor_is_cached(model: str) -> bool:
    """Whether the Hub pipeline ``model`` (e.g. ``timbrooks/instruct-pix2pix``) is in the
    local Hugging Face cache (its ``model_index.json`` is)."""
    from huggingface_hub import try_to_load_from_cache

    if not _HUB_ID.match(model):
        return False
    return isinstance(try_to_load_from_cache(model, "model_index.json"), str)


def _how_to_get(model: str, family: EditorFamily) -> str:
    licence = (
        f" ({model} is gated: accept its licence on its Hub page and log in with "
        "`hf auth login` first)"
        if family.gated and model == family.default_model
        else ""
    )
    return (
        f"editor model {model!r} ({family.prefix}: editor family, a {family.pipeline}) is "
        f"not a local folder and is not in the Hugging Face cache. Download it first on a "
        f"machine with internet access (`hf download {model}`, formerly "
        f"`huggingface-cli download`){licence}, or allow downloads (download=True, "
        "--allow-download), or give the folder of a pipeline saved with save_pretrained"
    )


def locate_editor(model: str | Path, *, download: bool = False) -> bool:
    """Check, without loading anything, that the editor spec ``model`` (``PREFIX:TARGET``,
    or a folder / Hub id of an InstructPix2Pix pipeline) can be loaded: its target is a
    local folder, or a Hub id in the local Hugging Face cache (or ``download``). Jobs
    call it before their slow work, so that a missing editor fails at once.

    Returns:
        Whether the target is a local folder.

    Raises:
        ConfigError: an unknown editor family prefix.
        ModelNotFoundError: no such folder; a file; a Hub id not in the cache (without
            ``download``; the message says how to get it).
    """
    family, name = parse_editor_spec(model)
    path = Path(name).expanduser()
    if path.is_dir():
        return True
    if (
        path.exists()
        or path.is_absolute()
        or name.startswith((".", "~"))
        or not _HUB_ID.match(name)
    ):
        raise ModelNotFoundError(
            f"editor model folder {name!r} does not exist"
            if not path.exists()
            else f"editor model {name!r} is a file; give the folder of a saved pipeline"
        )
    if not download and not editor_is_cached(name):
        raise ModelNotFoundError(_how_to_get(name, family))
    return False


def _what(family: EditorFamily) -> str:
    """How messages name a family's pipeline (``an InstructPix2Pix pipeline``)."""
    if family.prefix == DEFAULT_FAMILY:
        return "an InstructPix2Pix pipeline"
    return f"a {family.pipeline} ({family.prefix}:)"


def editor_dtype(family: EditorFamily, config: ModelConfig, device: str) -> str:
    """The dtype an editor runs in: ``config.dtype`` when given, else the family's on
    CUDA (float16 for Stable Diffusion, bfloat16 for FLUX and Qwen) and float32 elsewhere.

    Raises:
        ConfigError: a dtype that is not float32, float16 or bfloat16.
    """
    asked = (config.dtype or "auto").lower()
    if asked == "auto":
        return family.cuda_dtype if device.startswith("cuda") else "float32"
    if asked not in _TORCH_DTYPES:
        raise ConfigError(f"dtype: {config.dtype!r} is not one of float32, float16, bfloat16")
    return _TORCH_DTYPES[asked]


def load_editor(
    model: str | Path = DEFAULT_EDITOR, config: ModelConfig | None = None
) -> DiffusersEditor:
    """Load an editor from a folder or the Hugging Face cache.

    Args:
        model: an editor spec: ``PREFIX:TARGET`` of an editor family
            (:mod:`~contrastkit.curation.editor_families`: ``ip2p``, ``sdxl-ip2p``,
            ``flux-kontext``, ``qwen-image-edit``; ``PREFIX:`` alone loads its default
            model), or a folder / Hub id of an InstructPix2Pix pipeline (``ip2p``). The
            target is a folder saved with ``save_pretrained`` or a Hub id
            (``timbrooks/instruct-pix2pix``), looked up in the local cache only unless
            ``config.download``.
        config: device, dtype, batch size (edits per forward pass) and download
            permission; default ``ModelConfig(batch_size=8)``. A ``dtype`` of ``None``
            means the family's on CUDA (:func:`editor_dtype`) and float32 elsewhere.

    Raises:
        ConfigError: an unknown editor family prefix.
        ModelNotFoundError: the folder does not exist; the Hub id is not in the cache
            (the message says how to get it); the folder or cached copy does not load
            as the family's pipeline (the loader's error chained); or the pipeline is
            not the family's (an InstructPix2Pix UNet must take 8 input channels).
            Other errors (a network failure while downloading, a bug) propagate.
    """
    import diffusers
    import torch

    config = config or ModelConfig(batch_size=8)
    family, name = parse_editor_spec(model)
    device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
    chosen = editor_dtype(family, config, device)
    path = Path(name).expanduser()
    local = locate_editor(model, download=config.download)
    pipeline_class = getattr(diffusers, family.pipeline, None)
    if pipeline_class is None:
        raise ModelNotFoundError(
            f"editor family {family.prefix!r} needs diffusers' {family.pipeline}, which "
            f"diffusers {diffusers.__version__} does not have: upgrade diffusers"
        )
    extra: dict[str, Any] = (
        {"safety_checker": None, "feature_extractor": None, "requires_safety_checker": False}
        if family.pipeline == "StableDiffusionInstructPix2PixPipeline"
        else {}
    )
    try:
        pipeline = pipeline_class.from_pretrained(
            str(path) if local else name,
            dtype=getattr(torch, chosen),
            local_files_only=local or not config.download,
            **extra,
        )
    except _LOAD_ERRORS as error:
        what = f"{type(error).__name__}: {error}"
        if local:
            raise ModelNotFoundError(
                f"{name}: not {_what(family)} folder: it does not load ({what}); "
                "a pipeline folder holds what save_pretrained writes (model_index.json "
                "and one folder per component)"
            ) from error
        if config.download and _is_missing(error):
            raise ModelNotFoundError(
                f"editor model {name!r} is not in the Hugging Face cache and could not be "
                "downloaded: check the id, and log in with `hf auth login` for a gated model"
            ) from error
        if config.download:
            raise  # a network failure or a bug, not a missing model
        raise ModelNotFoundError(
            f"editor model {name!r} is in the Hugging Face cache but does not load ({what}); "
            f"an interrupted download? Delete it with `hf cache delete` and download it "
            f"again (`hf download {name}`)"
        ) from error
    family.check_pipeline(pipeline, name)
    pipeline = pipeline.to(device)
    pipeline.set_progress_bar_config(disable=True)
    return DiffusersEditor(
        pipeline, name=str(model).strip(), batch_size=config.batch_size, family=family,
        dtype=chosen,
    )  # fmt: skip
