"""Edit the person in a photo with an instruction editor; paste the edit back, background untouched.

GenSynth (seeds/001) Sec. 4.1 and Appendix A.2: the image is cropped to its single
person box, the crop is edited by InstructPix2Pix (Brooks et al., 2022) with each edit
instruction of Tab. 7 (Appendix C) for each target gender, at the text guidance scales
9.5 and 15, with 500 denoising steps, and the edited person is put back into the source
image. That gives 4 instructions x 2 genders x 2 scales = 16 edits per source (Tab. 2).

Here (this module holds the edit settings and the plan, and re-exports the rest):

* :func:`plan_edits` lists a source's edits, each with its own seed (derived from the
  build seed and the edit id, so an edit is the same whatever batch it runs in).
* :func:`crop_for_editing` crops the person box with a margin of context, resizes the
  crop so its longer side is the editor's resolution (a multiple of 8) and pads it to a
  square by repeating the edge pixels (:mod:`contrastkit.curation.compositing`).
* :class:`DiffusersEditor` runs the diffusers pipeline of an editor family
  (:mod:`contrastkit.curation.editor_families`: InstructPix2Pix, the paper's, by default;
  SDXL InstructPix2Pix, FLUX.1 Kontext, Qwen-Image-Edit) on several edits per forward
  batch (edits that share guidance settings; one seeded generator per edit), in the
  family's dtype on CUDA (:mod:`contrastkit.curation.editors`).
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
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypedDict

from typing_extensions import NotRequired

from contrastkit.config import require
from contrastkit.curation.compositing import (
    CropPlacement,
    crop_for_editing,
    feather_mask,
    paste_back,
    paste_back_mask,
)
from contrastkit.curation.editor_families import (
    PAPER_INSTRUCTIONS,
    EditorFamily,
    editor_family,
)
from contrastkit.curation.editors import (
    DEFAULT_EDITOR,
    DEFAULT_IMAGE_GUIDANCE_SCALE,
    DiffusersEditor,
    EditBatch,
    Editor,
    EditSpec,
    InstructPix2PixEditor,
    check_family,
    check_instruct_pix2pix,
    editor_dtype,
    editor_is_cached,
    flux_kontext_arguments,
    instruct_pix2pix_arguments,
    load_editor,
    locate_editor,
    qwen_image_edit_arguments,
    sdxl_instruct_pix2pix_arguments,
)
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.schema import Gender

__all__ = [
    "COMPOSITES",
    "DEFAULT_EDITOR",
    "DEFAULT_IMAGE_GUIDANCE_SCALE",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_MASK_DILATION",
    "DEFAULT_STEPS",
    "DEFAULT_TEXT_GUIDANCE_SCALES",
    "CropPlacement",
    "DiffusersEditor",
    "EditBatch",
    "EditSettings",
    "EditSpec",
    "Editor",
    "InstructPix2PixEditor",
    "check_family",
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
#: Appendix A.2: "We run InstructPix2Pix for 500 denoising steps".
DEFAULT_STEPS = 500
#: How an edit is put back into its photo: inside the person ``box`` (GenSynth Sec. 4.1,
#: the default), or onto the person's segmentation ``mask`` (dilated and feathered).
COMPOSITES = ("box", "mask")
#: ``--composite mask``: the mask is grown by this fraction of the box's shorter side,
#: and the edit fades out over that band.
DEFAULT_MASK_DILATION = 0.05


class EditSettingsJSON(TypedDict):
    """:class:`EditSettings` as JSON (:meth:`EditSettings.to_json`): instructions by
    gender value, the guidance scales as a list; ``composite`` and ``mask_dilation`` only
    when not at their defaults."""

    instructions: dict[str, list[str]]
    text_guidance_scales: list[float]
    image_guidance_scale: float | None
    steps: int
    resolution: int
    margin: float
    feather: float
    seed: int
    composite: NotRequired[str]
    mask_dilation: NotRequired[float]


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

    def to_json(self) -> EditSettingsJSON:
        """JSON-ready settings (recorded in the build summary). ``composite`` and
        ``mask_dilation`` are left out at their defaults, so a box build records what it
        recorded before they existed (and resumes unchanged)."""
        data: EditSettingsJSON = {
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
