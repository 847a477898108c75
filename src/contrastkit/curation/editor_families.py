"""Editor families as data: one :class:`EditorFamily` record per editor spec prefix.

An editor spec reads ``PREFIX:TARGET`` (``flux-kontext:black-forest-labs/FLUX.1-Kontext-dev``,
``qwen-image-edit:/models/qwen-edit``); ``PREFIX:`` alone takes the family's default
model, and a spec without a known prefix (a folder or a Hub id, as every build before
editor families recorded) is an InstructPix2Pix one (``ip2p``). A family says which
diffusers pipeline it loads, how one batch of edits is asked of it (an import path, so
this table imports no torch), the instruction templates and the guidance, step,
resolution and dtype defaults of its model card. A new family is one record, in
:data:`BUILT_IN` or, from another package, through the ``contrastkit.editors`` entry point
group:

.. code-block:: toml

    # the plugin's pyproject.toml
    [project.entry-points."contrastkit.editors"]
    myeditor = "my_package.contrastkit_plugin:EDITOR_FAMILY"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.errors import ConfigError
from contrastkit.plugins import is_import_path, resolve
from contrastkit.registry import Registry, deprecated_replace
from contrastkit.schema import Gender

__all__ = [
    "BUILT_IN",
    "DEFAULT_FAMILY",
    "ENTRY_POINT_GROUP",
    "KEEP_THE_REST_INSTRUCTIONS",
    "PAPER_INSTRUCTIONS",
    "REGISTRY",
    "EditorFamily",
    "editor_families",
    "editor_family",
    "parse_editor_spec",
    "register_editor",
]

#: The entry point group third-party packages add editor families through.
ENTRY_POINT_GROUP = "contrastkit.editors"

#: The family of a spec without a prefix (every build made before editor families).
DEFAULT_FAMILY = "ip2p"

#: GenSynth Tab. 7 (Appendix C): the edit instructions for each target gender.
PAPER_INSTRUCTIONS: Mapping[Gender, tuple[str, ...]] = {
    Gender.FEMININE: (
        "Make this person more feminine",
        "Make this person look like a woman",
        "Turn this person into a woman",
        "Convert this into a woman",
    ),
    Gender.MASCULINE: (
        "Make this person more masculine",
        "Make this person look like a man",
        "Turn this person into a man",
        "Convert this into a man",
    ),
}


def _keep_the_rest(noun: str) -> tuple[str, ...]:
    return (
        f"Change the person to a {noun}, keep everything else the same",
        f"Turn this person into a {noun} while keeping the same pose, framing and background",
        f"Make the person look like a {noun}, keep the background, lighting and "
        "composition unchanged",
        f"Transform the person into a {noun}, preserving the pose, the setting and "
        "everything else in the image",
    )


#: Instructions for the editors that follow full sentences (FLUX.1 Kontext, Qwen-Image-Edit):
#: say what changes and that everything else stays, as their prompting guides advise.
KEEP_THE_REST_INSTRUCTIONS: Mapping[Gender, tuple[str, ...]] = {
    Gender.FEMININE: _keep_the_rest("woman"),
    Gender.MASCULINE: _keep_the_rest("man"),
}

_DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class EditorFamily:
    """One editor spec prefix and what the edit stage needs to know about it.

    Attributes:
        prefix: what a spec starts with, before the ``:``.
        pipeline: the diffusers pipeline class the model folder must load as.
        loads: one line on the editor (``contrastkit build gensynth --help``, docs).
        default_model: the Hub id ``PREFIX:`` alone loads.
        card: where the defaults come from (the model card).
        method: what the manifest records as each edit's ``method``.
        arguments: ``"module:function"`` called as ``function(batch)`` with an
            :class:`~contrastkit.curation.editors.EditBatch` (prompts, images, text
            guidance scale, image guidance scale, steps, size); it returns the
            pipeline's keyword arguments for one batch (seeds and output type are added
            by the editor).
        instructions: per target gender, the default instruction templates.
        text_guidance_scales: default text guidance scales (one edit per scale; the
            scale is the family's main guidance knob: classifier-free guidance for
            InstructPix2Pix and Qwen-Image-Edit, the distilled guidance of FLUX.1 Kontext).
        image_guidance_scale: default image guidance (InstructPix2Pix families only;
            ``None``: the pipeline has none).
        steps: default denoising steps.
        resolution: default side of the square editor input.
        multiple: the editor input side must be a multiple of this (8 for Stable
            Diffusion VAEs; 16 where 2x2 latent patches are packed).
        cuda_dtype: the dtype on CUDA when none is asked for (float32 on the CPU).
        check: ``"module:function"`` called as ``function(pipeline, name)`` after loading;
            it raises :class:`~contrastkit.errors.ModelNotFoundError` for a pipeline
            that is not this family's (``None``: the pipeline class is enough).
        gated: the default model's licence must be accepted on the Hub first.
        source: the distribution that registered it.
        title: the editor's name as a dataset card states it (``InstructPix2Pix``;
            default: the prefix).
        guidance: what the family's text guidance scale is, as a card states it
            (classifier-free "text guidance" by default).
    """

    prefix: str
    pipeline: str
    loads: str
    default_model: str
    card: str
    method: str
    arguments: str
    instructions: Mapping[Gender, tuple[str, ...]]
    text_guidance_scales: tuple[float, ...]
    image_guidance_scale: float | None
    steps: int
    resolution: int
    multiple: int = 8
    cuda_dtype: str = "float16"
    check: str | None = None
    gated: bool = False
    source: str = "contrastkit"
    title: str = ""
    guidance: str = "text guidance"

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_.-]+", self.prefix):
            raise ConfigError(
                f"editor family prefix {self.prefix!r}: lower-case letters, digits, '-', "
                "'_' or '.', at least two characters"
            )
        for name in ("arguments", "check"):
            path = getattr(self, name)
            if path is not None and not is_import_path(path):
                raise ConfigError(
                    f"editor family {self.prefix!r}: {name} must be 'module:function', not {path!r}"
                )
        if self.cuda_dtype not in _DTYPES:
            raise ConfigError(
                f"editor family {self.prefix!r}: cuda_dtype must be one of "
                f"{', '.join(_DTYPES)}, not {self.cuda_dtype!r}"
            )
        if self.multiple < 8 or self.multiple % 8 or self.resolution % self.multiple:
            raise ConfigError(
                f"editor family {self.prefix!r}: multiple must be a multiple of 8 that "
                f"divides the resolution ({self.multiple}, {self.resolution})"
            )
        for gender in Gender.binary():
            if not self.instructions.get(gender):
                raise ConfigError(
                    f"editor family {self.prefix!r}: no instructions for {gender.value}"
                )
        if not self.text_guidance_scales or self.steps < 1:
            raise ConfigError(
                f"editor family {self.prefix!r}: needs a text guidance scale and >= 1 step"
            )

    @property
    def name(self) -> str:
        """The editor's name for people: :attr:`title`, else the prefix."""
        return self.title or self.prefix

    def arguments_function(self) -> Callable[..., dict[str, Any]]:
        """:attr:`arguments`, imported."""
        return resolve(self.arguments, f"editor family {self.prefix!r} ({self.source})")

    def check_pipeline(self, pipeline: Any, name: str) -> None:
        """Run :attr:`check` on a loaded pipeline (nothing when the family has none)."""
        if self.check is not None:
            resolve(self.check, f"editor family {self.prefix!r} ({self.source})")(pipeline, name)


_EDITING = "contrastkit.curation.editing"

#: The families contrastkit ships. Defaults are those of each model's card (``card``);
#: ``ip2p`` keeps the paper's (GenSynth App. A.2: scales 9.5 and 15, 500 steps, Tab. 7).
BUILT_IN: tuple[EditorFamily, ...] = (
    EditorFamily(
        prefix="ip2p",
        title="InstructPix2Pix",
        pipeline="StableDiffusionInstructPix2PixPipeline",
        loads="InstructPix2Pix (Stable Diffusion 1.5), GenSynth's editor, at the paper's settings",
        default_model="timbrooks/instruct-pix2pix",
        card="GenSynth App. A.2; https://huggingface.co/timbrooks/instruct-pix2pix",
        method="instruct-pix2pix",
        arguments=f"{_EDITING}:instruct_pix2pix_arguments",
        instructions=PAPER_INSTRUCTIONS,
        text_guidance_scales=(9.5, 15.0),
        image_guidance_scale=1.5,
        steps=500,
        resolution=512,
        check=f"{_EDITING}:check_instruct_pix2pix",
    ),
    EditorFamily(
        prefix="sdxl-ip2p",
        title="SDXL InstructPix2Pix",
        pipeline="StableDiffusionXLInstructPix2PixPipeline",
        loads="InstructPix2Pix retrained on Stable Diffusion XL (768 px)",
        default_model="diffusers/sdxl-instructpix2pix-768",
        card="https://huggingface.co/diffusers/sdxl-instructpix2pix-768 (guidance 3.0, "
        "image guidance 1.5, 30 steps, 768 px)",
        method="sdxl-instruct-pix2pix",
        arguments=f"{_EDITING}:sdxl_instruct_pix2pix_arguments",
        instructions=PAPER_INSTRUCTIONS,
        text_guidance_scales=(3.0,),
        image_guidance_scale=1.5,
        steps=30,
        resolution=768,
        check=f"{_EDITING}:check_instruct_pix2pix",
    ),
    EditorFamily(
        prefix="flux-kontext",
        title="FLUX.1 Kontext [dev]",
        guidance="distilled guidance",
        pipeline="FluxKontextPipeline",
        loads="FLUX.1 Kontext [dev]: in-context editing by a 12B flow transformer "
        "(guidance-distilled; gated, accept its licence on the Hub)",
        default_model="black-forest-labs/FLUX.1-Kontext-dev",
        card="https://huggingface.co/black-forest-labs/FLUX.1-Kontext-dev (guidance 2.5, "
        "28 steps, 1024 px, bfloat16)",
        method="flux-kontext",
        arguments=f"{_EDITING}:flux_kontext_arguments",
        instructions=KEEP_THE_REST_INSTRUCTIONS,
        text_guidance_scales=(2.5,),
        image_guidance_scale=None,
        steps=28,
        resolution=1024,
        multiple=16,
        cuda_dtype="bfloat16",
        gated=True,
    ),
    EditorFamily(
        prefix="qwen-image-edit",
        title="Qwen-Image-Edit",
        guidance="true classifier-free guidance",
        pipeline="QwenImageEditPipeline",
        loads="Qwen-Image-Edit: a 20B MMDiT conditioned on Qwen2.5-VL's reading of the "
        "image and the instruction",
        default_model="Qwen/Qwen-Image-Edit",
        card="https://huggingface.co/Qwen/Qwen-Image-Edit (true CFG 4.0, negative prompt "
        "' ', 50 steps, bfloat16); the pipeline conditions on the input resized to about "
        "1024x1024 whatever the output size",
        method="qwen-image-edit",
        arguments=f"{_EDITING}:qwen_image_edit_arguments",
        instructions=KEEP_THE_REST_INSTRUCTIONS,
        text_guidance_scales=(4.0,),
        image_guidance_scale=None,
        steps=50,
        resolution=1024,
        multiple=16,
        cuda_dtype="bfloat16",
    ),
)

#: The registry of editor families (:class:`~contrastkit.registry.Registry`): the
#: built-in ones, then those of installed plugins, then those of :func:`register_editor`.
REGISTRY: Registry[EditorFamily] = Registry(
    "editor family", ENTRY_POINT_GROUP, EditorFamily, lambda one: one.prefix, BUILT_IN,
    key_word="prefix",
)  # fmt: skip


def register_editor(
    new: EditorFamily, *, replace_existing: bool = False, replace: bool | None = None
) -> EditorFamily:
    """Add an editor family (what the ``contrastkit.editors`` entry points do; call it
    yourself for a family defined in a script or notebook).

    ``replace`` is the deprecated spelling of ``replace_existing`` (a
    ``DeprecationWarning``).

    Raises:
        ConfigError: its prefix is taken and ``replace_existing`` is false.
    """
    replace_existing = deprecated_replace("register_editor", replace, replace_existing)
    return REGISTRY.register(new, replace_existing=replace_existing)


def editor_families() -> dict[str, EditorFamily]:
    """Every registered editor family by prefix: the built-in ones, then those of
    installed plugins (loaded on first use), then those of :func:`register_editor`."""
    return REGISTRY.all()


def editor_family(prefix: str) -> EditorFamily | None:
    """The family of ``prefix``, or ``None``.

    Raises:
        ConfigError: a plugin claimed ``prefix`` while it was taken (naming the plugin).
    """
    return REGISTRY.get(prefix)  # type: ignore[no-any-return]


_PREFIX = re.compile(r"^[a-z][a-z0-9_.-]+$")


def parse_editor_spec(spec: str | Path) -> tuple[EditorFamily, str]:
    """The family of an editor spec and the model it names.

    ``PREFIX:TARGET`` with a registered prefix: that family and ``TARGET`` (its
    ``default_model`` when empty). Anything without a prefix (a folder, a Hub id): the
    ``ip2p`` family and the whole spec, as builds made before editor families recorded it.

    Raises:
        ConfigError: an empty spec, or ``WORD:...`` whose word is no registered family
            (and which is not an existing path); the message lists the families.
    """
    text = str(spec).strip()
    if not text:
        raise ConfigError("editor: names no editor model")
    families = editor_families()
    prefix, sep, target = text.partition(":")
    if sep and prefix in families:
        REGISTRY.check(prefix)
        family = families[prefix]
        return family, target.strip() or family.default_model
    if sep and _PREFIX.match(prefix) and not Path(text).expanduser().exists():
        raise ConfigError(
            f"editor: {prefix!r} is not an editor family; use one of "
            f"{', '.join(f'{p}:' for p in families)} (or a folder / Hub id of an "
            "InstructPix2Pix pipeline)"
        )
    return families[DEFAULT_FAMILY], text
