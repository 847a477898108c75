"""One registry from model spec strings to adapters.

=================================  =====================================================
spec                               loads
=================================  =====================================================
``open_clip:ARCH/TAG``             OpenCLIP architecture + pretrained tag (cached)
``open_clip:ARCH/PATH``            OpenCLIP architecture + checkpoint file
``open_clip:ARCH/random``          OpenCLIP architecture, random weights (benchmarks)
``open_clip:FOLDER``               folder with ``open_clip_config.json`` + weights
``hf-clip:ID_OR_FOLDER``           transformers CLIP / SigLIP dual encoder
``blip:ID_OR_FOLDER``              transformers BLIP captioning model
``git:ID_OR_FOLDER``               transformers GIT captioning model
``blip2:ID_OR_FOLDER``             transformers BLIP-2 captioning model (OPT or FLAN-T5)
``instructblip:ID_OR_FOLDER``      transformers InstructBLIP (Vicuna/OPT or FLAN-T5)
``blip2:ID?prefix=decoder``        captioning options (:mod:`.caption_options`)
``clip-clip:load=FILE:BASE``       CLIP-clip (Wang et al. 2021): dual encoder ``BASE``
                                   minus the dimensions a saved choice drops
                                   (:mod:`.clipclip`; fitted by ``contrastkit audit``)
``debias-clip:NAME``               published prompt-array debiased CLIP (Berg et al.
                                   2022) from the local cache (:mod:`.debias`)
``debias-clip:FILE:BASE``          a prompt-array checkpoint file on OpenCLIP ``BASE``
``blip-itm:ID_OR_FOLDER``          transformers BLIP image-text matching (ITM) head
``vilt:ID_OR_FOLDER``              transformers ViLT image-text retrieval head
``vlm:ID_OR_FOLDER[?OPTIONS]``     generative VLM (LLaVA, Qwen2-VL, PaliGemma, ...;
                                   :mod:`.vlm`), scored by continuation or multiple
                                   choice (``?protocol=multiple-choice``)
=================================  =====================================================

Dual encoders are :class:`ImageTextScorer`\\ s, captioning models :class:`PronounScorer`\\ s,
image-text-matching models (kind ``matching``) :class:`CaptionScorer`\\ s
(:mod:`.itm`).
Where and how a model runs (device, dtype, batch size, whether weights may be downloaded)
is one :class:`~contrastkit.config.ModelConfig`, shared with every other job that loads a
model. Nothing is downloaded unless ``ModelConfig(download=True)``: a model neither on
disk nor in the local cache raises :class:`~contrastkit.errors.ModelNotFoundError` saying
how to get it; a folder or cached copy that does not load raises it too, saying so, with
the loader's own error chained.

This module imports no torch: specs parse (and configs validate) without it.

Example:
    >>> from contrastkit.config import ModelConfig
    >>> from contrastkit.models import load_scorer
    >>> config = ModelConfig(device="cpu", batch_size=64)
    >>> scorer = load_scorer("open_clip:ViT-B-32/openai", config)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError
from contrastkit.interfaces import (
    AnswerScorer,
    CaptionGenerator,
    CaptionScorer,
    ImageTextScorer,
    PronounScorer,
)
from contrastkit.models.families import LoadContext, ModelFamily, families, family
from contrastkit.tiny.marker import random_weights_note, spec_has_random_weights

if TYPE_CHECKING:
    from contrastkit.models.base import ModelRuntime

#: What a loader may return: an adapter of at least one of these protocols.
_MODEL_PROTOCOLS = (ImageTextScorer, PronounScorer, CaptionScorer, AnswerScorer, CaptionGenerator)

__all__ = [
    "ModelSpec",
    "check_dual",
    "has_capability",
    "load_model",
    "load_scorer",
    "locate_model",
    "parse_spec",
    "random_weights",
    "weights_note",
]


def __getattr__(name: str) -> Any:
    """The dicts the registry was made of before :mod:`.families` (kept, derived from the
    table, for code that reads them): ``KINDS`` (prefix -> kind), ``FAMILY_DOCS`` (prefix
    -> (what it loads, example)), ``FAMILIES`` (captioning prefix -> transformers
    ``model_type``). Any other name is an AttributeError at once, without the table (and
    its plugins) being loaded: ``from ... import`` asks for ``__path__``."""
    if name not in ("KINDS", "FAMILY_DOCS", "FAMILIES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    table = families()
    if name == "KINDS":
        return {prefix: f.kind for prefix, f in table.items()}
    if name == "FAMILY_DOCS":
        return {prefix: (f.loads, f.example) for prefix, f in table.items()}
    if name == "FAMILIES":
        return {
            prefix: f.model_type
            for prefix, f in table.items()
            if f.kind == "captioning" and f.model_type
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: ``prefix`` (``open_clip``, ``hf-clip``, ``blip`` ...) and ``target``."""

    prefix: str
    target: str

    @property
    def family(self) -> ModelFamily:
        """The registered family of :attr:`prefix`."""
        found = family(self.prefix)
        assert found is not None, "parse_spec made this spec"
        return found

    @property
    def kind(self) -> str:
        """``dual``, ``captioning`` or ``matching``."""
        return self.family.kind

    @property
    def capabilities(self) -> frozenset[str]:
        """What the model can do (:data:`.families.CAPABILITIES`)."""
        return self.family.capabilities

    def __str__(self) -> str:
        return f"{self.prefix}:{self.target}"


def parse_spec(spec: str) -> ModelSpec:
    """Split ``PREFIX:TARGET``.

    Raises:
        ConfigError: no prefix, an unknown prefix, or an empty target; a malformed
            ``clip-clip:`` / ``debias-clip:`` spec or one whose base is no dual encoder; a
            ``clip-clip:m=M,fit=DATA:BASE`` spec, which only ``contrastkit audit`` fits (the
            message says how, and how to use the saved choice); a captioning spec with
            ``?`` options it does not take (:mod:`.caption_options`).
    """
    prefix, sep, target = spec.strip().partition(":")
    table = families()
    if not sep or prefix not in table:
        raise ConfigError(
            f"model spec {spec!r} must start with one of {', '.join(p + ':' for p in table)} "
            "(e.g. open_clip:ViT-B-32/openai, hf-clip:openai/clip-vit-base-patch32, "
            "blip:Salesforce/blip-image-captioning-large)"
        )
    if not target.strip():
        raise ConfigError(f"model spec {spec!r} names no model after {prefix!r}")
    family(prefix)  # a plugin that claimed this prefix too is named here
    parsed = ModelSpec(prefix, target.strip())
    base = table[prefix].check_target(parsed.target)  # options are checked before loading
    if table[prefix].wraps_base and base is not None:
        check_dual(base)
    return parsed


def has_capability(spec: str, capability: str) -> bool:
    """Whether the model ``spec`` names can do ``capability`` (``embeddings``,
    ``pronouns``, ``captions``, ``answers`` or ``descriptions``; see :mod:`.families`).

    Raises:
        ConfigError: a malformed spec.
    """
    return capability in parse_spec(spec).capabilities


def random_weights(spec: str) -> bool:
    """Whether ``spec`` names a model with random weights: ``open_clip:ARCH/random``, or
    a local model folder (or a checkpoint file in one) that carries the random-weights
    marker every :mod:`contrastkit.tiny` model is saved with
    (:data:`~contrastkit.tiny.marker.MARKER_FILE`); a ``clip-clip:`` or ``debias-clip:``
    spec when its base model has random weights (or a ``debias-clip:`` checkpoint file
    carries the marker). Never raises, never loads anything: anything else (a Hub id, a
    pretrained tag, a malformed spec) is ``False``."""
    stripped = spec.strip()
    try:
        if stripped.startswith("clip-clip:"):
            from contrastkit.models.clipclip import parse_clip_clip_spec

            return random_weights(parse_clip_clip_spec(stripped).base)
        if stripped.startswith("debias-clip:"):
            from contrastkit.models.debias import parse_debias_spec
            from contrastkit.tiny.marker import marked_random

            parsed = parse_debias_spec(stripped)
            return marked_random(parsed.checkpoint) or random_weights(parsed.base)
    except ConfigError:
        return False
    prefix, _, target = stripped.partition(":")
    known = family(prefix)
    if known is not None and known.kind == "captioning" and "?" in target:  # options
        from contrastkit.models.caption_options import strip_caption_options

        return spec_has_random_weights(f"{prefix}:{strip_caption_options(target)}")
    return spec_has_random_weights(spec)


def weights_note(spec: str) -> str | None:
    """The plain sentence every report of ``spec`` carries when its weights are random
    (:func:`random_weights`), else ``None``."""
    return random_weights_note(spec) if random_weights(spec) else None


def locate_model(spec: str, config: ModelConfig | None = None) -> None:
    """Check that the weights ``spec`` names are on this machine (a folder, a checkpoint
    file, the local cache), or may be downloaded (``config.download``), without loading
    them. Jobs call it for every model before slow work (fetching images, parsing a
    dataset), so that a missing model fails at once instead of after it. A
    ``debias-clip:`` checkpoint is checked when it loads.

    Raises:
        ModelNotFoundError: weights neither on disk nor cached (says how to get them).
        ConfigError: a malformed spec, an unknown OpenCLIP architecture or tag.
    """
    parsed = parse_spec(spec)
    download = bool(config is not None and config.download)
    family = parsed.family
    if family.wraps_base:
        base = family.check_target(parsed.target)
        if base is not None:
            locate_model(base, config)
    family.locate_target(parsed.target, download)


def load_model(
    spec: str, config: ModelConfig | None = None
) -> ImageTextScorer | PronounScorer | CaptionScorer | AnswerScorer | CaptionGenerator:
    """Load the adapter a spec names.

    Args:
        spec: see the module docstring.
        config: device (``None``: CUDA when available), dtype (``None``: float32),
            batch size, and whether weights missing from the cache may be downloaded;
            default ``ModelConfig()``.

    Returns:
        An :class:`ImageTextScorer` for dual encoders, a :class:`PronounScorer` for
        captioning models, a :class:`CaptionScorer` for image-text-matching models.

    Raises:
        ModelNotFoundError: weights neither on disk nor cached (says how to get them), or a
            folder, checkpoint or cached copy that does not load (its error chained).
        ConfigError: a malformed spec, unknown architecture or tag, a spec prefix that does
            not match the saved model, or a device/dtype this machine cannot use.
    """
    from contrastkit.models.base import ModelRuntime

    parsed = parse_spec(spec)
    runtime = ModelRuntime.resolve(config)
    return _load(parsed, runtime)


def _load(
    parsed: ModelSpec, runtime: ModelRuntime
) -> ImageTextScorer | PronounScorer | CaptionScorer | AnswerScorer | CaptionGenerator:
    loader = parsed.family.load_function()
    model = loader(parsed.target, runtime, LoadContext(parsed.prefix, _load_dual))
    if not isinstance(model, _MODEL_PROTOCOLS):
        raise ConfigError(
            f"{parsed}: the loader of model family {parsed.prefix!r} ({parsed.family.loader}) "
            f"returned {type(model).__name__}, which is no ImageTextScorer, PronounScorer, "
            "CaptionScorer or AnswerScorer"
        )
    return model


def _load_dual(spec: str, runtime: ModelRuntime) -> ImageTextScorer:
    """The dual encoder ``spec`` names (the base model of a wrapper spec)."""
    model = _load(check_dual(spec), runtime)
    assert isinstance(model, ImageTextScorer)
    return model


def check_dual(spec: str) -> ModelSpec:
    """Parse ``spec`` and make sure it names a dual encoder.

    Raises:
        ConfigError: a malformed spec, or a captioning spec (``blip:``, ``git:``,
            ``blip2:``), which has no image-text embedding space.
    """
    parsed = parse_spec(spec)
    if "embeddings" in parsed.capabilities:
        return parsed
    if parsed.kind == "matching":
        raise ConfigError(
            f"{spec} is an image-text-matching model: it scores (image, caption) pairs with "
            "a fused encoder and has no image-text embedding space; use it on stereotype "
            "probe sets or contrast sets, or an open_clip: or hf-clip: model for embeddings"
        )
    raise ConfigError(
        f"{spec} is a captioning model: it scores pronoun continuations, not image-text "
        "similarity; use an open_clip: or hf-clip: model for embeddings"
    )


def load_scorer(spec: str, config: ModelConfig | None = None) -> ImageTextScorer:
    """Load a dual encoder (:class:`ImageTextScorer`): image and text embeddings.

    Same arguments as :func:`load_model`.

    Raises:
        ConfigError: for a captioning spec (``blip:``, ``git:``, ``blip2:``), which has no
            image-text embedding space; plus everything :func:`load_model` raises.
    """
    from contrastkit.models.base import ModelRuntime

    parsed = check_dual(spec)
    model = _load(parsed, ModelRuntime.resolve(config))
    assert isinstance(model, ImageTextScorer)
    return model
