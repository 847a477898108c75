"""The editors: diffusers editing pipelines of the editor families, batched and seeded.

GenSynth (seeds/001) Sec. 4.1 and Appendix A.2 edit each person crop with
InstructPix2Pix (Brooks et al., 2022). :class:`DiffusersEditor` runs the diffusers
pipeline of an editor family (:mod:`contrastkit.curation.editor_families`:
InstructPix2Pix, the paper's, by default; SDXL InstructPix2Pix, FLUX.1 Kontext,
Qwen-Image-Edit) on several edits per forward batch (edits that share guidance settings;
one seeded generator per edit), in the family's dtype on CUDA; each family's
``arguments`` function (:func:`instruct_pix2pix_arguments` ...) turns an
:class:`EditBatch` into its pipeline's keywords. :func:`locate_editor` checks that an
editor can be loaded, :func:`load_editor` loads it. Everything here is re-exported by
:mod:`contrastkit.curation.editing`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from contrastkit.config import ModelConfig
from contrastkit.curation.editor_families import (
    DEFAULT_FAMILY,
    EditorFamily,
    editor_family,
    parse_editor_spec,
)
from contrastkit.errors import ConfigError, ModelNotFoundError, ResourceError
from contrastkit.schema import Gender
from contrastkit.tiny.marker import marked_random
from contrastkit.tiny.quiet import tiny_model_warnings_hidden

__all__ = [
    "DEFAULT_EDITOR",
    "DEFAULT_IMAGE_GUIDANCE_SCALE",
    "DiffusersEditor",
    "EditBatch",
    "EditSpec",
    "Editor",
    "InstructPix2PixEditor",
    "check_family",
    "check_instruct_pix2pix",
    "editor_dtype",
    "editor_is_cached",
    "flux_kontext_arguments",
    "instruct_pix2pix_arguments",
    "load_editor",
    "locate_editor",
    "qwen_image_edit_arguments",
    "sdxl_instruct_pix2pix_arguments",
]

#: Not stated in the paper: InstructPix2Pix's own default image guidance.
DEFAULT_IMAGE_GUIDANCE_SCALE = 1.5
#: The public InstructPix2Pix checkpoint.
DEFAULT_EDITOR = "timbrooks/instruct-pix2pix"


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


class Editor(Protocol):
    """Anything that edits batches of crops: InstructPix2Pix, or a test double."""

    @property
    def name(self) -> str:
        """What to record as the editor in the manifest."""
        ...

    def edit(self, images: Sequence[Image.Image], specs: Sequence[EditSpec]) -> list[Image.Image]:
        """Edit ``images[i]`` as ``specs[i]`` says; return one image per spec."""
        ...


@dataclass(frozen=True)
class EditBatch:
    """One forward pass of an editor: what an editor family's ``arguments`` function
    (:attr:`~contrastkit.curation.editor_families.EditorFamily.arguments`) turns into its
    pipeline's keyword arguments.

    Attributes:
        prompts: the instruction of each edit.
        images: the editor inputs (RGB squares), one per prompt.
        text_guidance_scale, image_guidance_scale, steps: what the batch's edits share
            (an image guidance of ``None``: the family's default, or none).
        size: the side of the square inputs.
    """

    prompts: list[str]
    images: list[Image.Image]
    text_guidance_scale: float
    image_guidance_scale: float | None
    steps: int
    size: int


def instruct_pix2pix_arguments(batch: EditBatch) -> dict[str, Any]:
    """``StableDiffusionInstructPix2PixPipeline`` keywords of one batch (the output
    size is the input's)."""
    return {
        "prompt": batch.prompts, "image": batch.images, "num_inference_steps": batch.steps,
        "guidance_scale": batch.text_guidance_scale,
        "image_guidance_scale": DEFAULT_IMAGE_GUIDANCE_SCALE
        if batch.image_guidance_scale is None else batch.image_guidance_scale,
    }  # fmt: skip


def sdxl_instruct_pix2pix_arguments(batch: EditBatch) -> dict[str, Any]:
    """``StableDiffusionXLInstructPix2PixPipeline`` keywords: those of InstructPix2Pix
    and the output size (SDXL's default is its UNet's sample size, not the input's)."""
    return {**instruct_pix2pix_arguments(batch), "height": batch.size, "width": batch.size}


def flux_kontext_arguments(batch: EditBatch) -> dict[str, Any]:
    """``FluxKontextPipeline`` keywords: the guidance is the distilled guidance
    embedding; the input is used at its own size (a square at the family's resolution;
    1024 is one of Kontext's preferred resolutions), not resized again."""
    size = batch.size
    return {
        "prompt": batch.prompts, "image": batch.images, "num_inference_steps": batch.steps,
        "guidance_scale": batch.text_guidance_scale, "height": size, "width": size,
        "max_area": size * size, "_auto_resize": False,
    }  # fmt: skip


def qwen_image_edit_arguments(batch: EditBatch) -> dict[str, Any]:
    """``QwenImageEditPipeline`` keywords: true classifier-free guidance against the
    model card's negative prompt ``" "``."""
    return {
        "prompt": batch.prompts, "image": batch.images, "num_inference_steps": batch.steps,
        "true_cfg_scale": batch.text_guidance_scale,
        "negative_prompt": [" "] * len(batch.prompts),
        "height": batch.size, "width": batch.size,
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
        if len(images) != len(specs):
            raise ValueError(f"{len(images)} images for {len(specs)} edit specs")
        groups: dict[tuple[float, float | None, int], list[int]] = defaultdict(list)
        for i, spec in enumerate(specs):
            groups[(spec.text_guidance_scale, spec.image_guidance_scale, spec.steps)].append(i)
        results: dict[int, Image.Image] = {}
        with tiny_model_warnings_hidden(self.random_weights):
            self._edit_groups(images, specs, groups, results)
        return [results[i] for i in range(len(specs))]

    def _edit_groups(
        self,
        images: Sequence[Image.Image],
        specs: Sequence[EditSpec],
        groups: dict[tuple[float, float | None, int], list[int]],
        results: dict[int, Image.Image],
    ) -> None:
        """Edit each group of specs that share their guidance and steps, in batches."""
        import torch

        for (text_scale, image_scale, steps), indices in groups.items():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                inputs = [images[i].convert("RGB") for i in chunk]
                arguments = self._arguments(
                    EditBatch(
                        [specs[i].instruction for i in chunk], inputs, text_scale, image_scale,
                        steps, inputs[0].width,
                    )
                )  # fmt: skip
                output = self.pipeline(
                    **arguments,
                    generator=[torch.Generator("cpu").manual_seed(specs[i].seed) for i in chunk],
                    output_type="pil",
                )
                for i, edited in zip(chunk, output.images, strict=True):
                    results[i] = edited


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


#: The names of the errors a request raises when the network, not the Hub, fails
#: (httpx, requests, the socket module, huggingface_hub's offline mode).
_NETWORK_ERRORS = frozenset({
    "ConnectError", "ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout",
    "TimeoutException", "NetworkError", "OfflineModeIsEnabled", "gaierror",
})  # fmt: skip


def _network_failure(error: BaseException) -> BaseException | None:
    """The error in ``error``'s chain that says the network failed, or ``None``."""
    current: BaseException | None = error
    seen: list[BaseException] = []
    while current is not None and current not in seen:
        if type(current).__name__ in _NETWORK_ERRORS or isinstance(current, ConnectionError):
            return current
        seen.append(current)
        current = current.__cause__ or current.__context__
    return None


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
        f"`huggingface-cli download`){licence}, or allow downloads: pass download=True "
        "(`--allow-download`); or give the folder of a pipeline saved with save_pretrained"
    )


def locate_editor(model: str | Path, *, download: bool = False) -> bool:
    """Check, without loading anything, that the editor spec ``model`` (``PREFIX:TARGET``,
    or a folder / Hub id of an InstructPix2Pix pipeline) can be loaded: its target is a
    local folder, or a Hub id in the local Hugging Face cache (or ``download``). Jobs
    call it before their slow work, so that a missing editor fails at once.

    Returns:
        Whether the target is a local folder.

    Raises:
        ConfigError: an unknown editor family prefix; a pipeline of another family than
            the spec's (:func:`check_family`, naming the prefix to give).
        ModelNotFoundError: no such folder; a file; a Hub id not in the cache (without
            ``download``; the message says how to get it).
    """
    family, name = parse_editor_spec(model)
    path = Path(name).expanduser()
    if path.is_dir():
        check_family(model, path / "model_index.json")
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
    check_family(model, _cached_index(name))
    return False


def _cached_index(model: str) -> Path | None:
    """The cached ``model_index.json`` of the Hub pipeline ``model`` (``None``: not
    cached)."""
    from huggingface_hub import try_to_load_from_cache

    if not _HUB_ID.match(model):
        return None
    found = try_to_load_from_cache(model, "model_index.json")
    return Path(found) if isinstance(found, str) else None


def check_family(spec: str | Path, index: Path | None) -> None:
    """Refuse an editor spec whose family does not match the pipeline it names: the
    pipeline class its ``model_index.json`` (at ``index``) records is another
    registered family's (an SDXL InstructPix2Pix folder given without its ``sdxl-ip2p:``
    prefix, or with ``ip2p:``). A class no family claims is left to the loader and the
    family's own check; so is a missing or unreadable index.

    Raises:
        ConfigError: naming the pipeline, its family and the spec to give instead.
    """

    from contrastkit.curation.editor_families import editor_families

    if index is None or not index.is_file():
        return
    from contrastkit.records import read_json

    try:
        recorded = read_json(index).get("_class_name")  # bounded (records.MAX_JSON_BYTES)
    except (OSError, ValueError, AttributeError):
        return
    family, name = parse_editor_spec(spec)
    if not isinstance(recorded, str) or recorded == family.pipeline:
        return
    owners = [f for f in editor_families().values() if f.pipeline == recorded]
    if not owners:
        return
    right = owners[0]
    given = "no prefix (an InstructPix2Pix pipeline)" if str(spec).strip() == name else (
        f"the {family.prefix}: prefix (a {family.pipeline})"
    )  # fmt: skip
    raise ConfigError(
        f"editor: {name} is a {recorded}, the {right.prefix} editor family's, but the "
        f"spec {str(spec).strip()!r} has {given}: give --editor {right.prefix}:{name}"
    )


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
        ConfigError: an unknown editor family prefix; a pipeline of another family than
            the spec's (:func:`check_family`: the message names the prefix to give).
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
        offline = _network_failure(error) if config.download else None
        if offline is not None:
            raise ResourceError(
                f"editor model {name!r} could not be downloaded: no connection to the "
                f"Hugging Face Hub ({type(offline).__name__}: {offline}); check the network, "
                f"or download it on a machine with internet access (`hf download {name}`) "
                "and copy its ~/.cache/huggingface here"
            ) from error
        if config.download:
            raise  # a bug, not a missing model
        raise ModelNotFoundError(
            f"editor model {name!r} is in the Hugging Face cache but does not load ({what}); "
            f"an interrupted download? Delete it with `hf cache delete` and download it "
            f"again (`hf download {name}`)"
        ) from error
    if not local:
        check_family(model, _cached_index(name))  # downloaded just now
    family.check_pipeline(pipeline, name)
    pipeline = pipeline.to(device)
    pipeline.set_progress_bar_config(disable=True)
    return DiffusersEditor(
        pipeline, name=str(model).strip(), batch_size=config.batch_size, family=family,
        dtype=chosen,
    )  # fmt: skip
