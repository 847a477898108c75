"""Model families as data: one :class:`ModelFamily` record per spec prefix.

A family says what a spec ``PREFIX:TARGET`` loads, what the loaded model can do
(its *capabilities*), how its part after the prefix is checked before anything loads, and
which function loads it, as an import path, so that this table imports no torch. A new
family is one adapter module and one record, either in :data:`BUILT_IN` or, from another
package, through the ``contrastkit.models`` entry point group (see :func:`families`):

.. code-block:: toml

    # the plugin's pyproject.toml
    [project.entry-points."contrastkit.models"]
    mymodel = "my_package.contrastkit_plugin:FAMILY"

Capabilities, not prefixes, decide which task takes which model:

``embeddings``
    image and text embeddings in one space (an :class:`~contrastkit.interfaces.ImageTextScorer`):
    retrieval, zero-shot disparities, the GenSynth filter, the audit's probes;
``pronouns``
    the log-probability of a caption's continuation (a
    :class:`~contrastkit.interfaces.PronounScorer`): VisoGender resolution;
``captions``
    a score for an (image, caption) pair (a dual encoder's similarity or a
    :class:`~contrastkit.interfaces.CaptionScorer`): stereotype probing, contrast sets;
``answers``
    answers a question about an image: the log-probability of each option letter and a
    generated answer (``letter_logprobs`` and ``generate_answers``, as
    :class:`~contrastkit.models.vlm.VLMScorer` has them): decision probes;
``descriptions``
    writes its own caption of an image (a :class:`~contrastkit.interfaces.CaptionGenerator`:
    ``generate_captions``, greedy): the captioning families (BLIP, GIT, BLIP-2,
    InstructBLIP) and generative VLMs; tasks that count what a model says about a person.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contrastkit.errors import ConfigError
from contrastkit.plugins import is_import_path, resolve
from contrastkit.registry import Registry, deprecated_replace

if TYPE_CHECKING:
    from contrastkit.models.base import ModelRuntime

__all__ = [
    "BUILT_IN",
    "CAPABILITIES",
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "LoadContext",
    "ModelFamily",
    "families",
    "family",
    "register_model",
]

#: What a loaded model can do (see the module docstring).
CAPABILITIES = ("embeddings", "pronouns", "captions", "answers", "descriptions")

#: The capabilities of each kind of model ``contrastkit models list`` shows.
_KIND_CAPABILITIES = {
    "dual": frozenset({"embeddings", "captions"}),
    "captioning": frozenset({"pronouns", "descriptions"}),
    "matching": frozenset({"captions"}),
}

#: The entry point group third-party packages add model families through.
ENTRY_POINT_GROUP = "contrastkit.models"


@dataclass(frozen=True)
class LoadContext:
    """What a loader gets besides its target and runtime: the spec prefix it was called
    for, and the registry's loader of a base dual encoder (for wrappers)."""

    prefix: str
    load_base: Callable[[str, ModelRuntime], Any]


@dataclass(frozen=True)
class ModelFamily:
    """One spec prefix and everything the registry needs to know about it.

    Attributes:
        prefix: what a spec starts with, before the ``:`` (``open_clip``, ``vlm`` ...).
        kind: ``dual``, ``captioning`` or ``matching``: how reports describe it.
        loads: one line on what it loads (``contrastkit models list`` shows it).
        example: an example spec.
        loader: ``"module:function"`` called as ``function(target, runtime, context)``
            (a :class:`LoadContext`); it returns the adapter.
        locate: ``"module:function"`` called as ``function(target, download)``: check,
            without loading anything, that the weights are on this machine (or may be
            downloaded); it raises :class:`~contrastkit.errors.ModelNotFoundError`
            otherwise. A wrapper's base model is located through its own family.
            ``None``: nothing to check before loading.
        check: ``"module:function"`` called as ``function(prefix, target)`` before
            anything loads; it raises :class:`~contrastkit.errors.ConfigError` for a
            target it cannot take and returns the base model's spec of a wrapper (or
            ``None``). ``None``: any non-empty target is accepted.
        wraps_base: the target names a base dual encoder (CLIP-clip, debiased CLIP): the
            spec has random weights when its base does, and the base must have the
            ``embeddings`` capability.
        model_type: the transformers ``model_type`` the saved model must have, if any.
        capabilities: what the loaded model can do; default: those of its ``kind``.
        source: the distribution that registered it (``contrastkit`` for the built-in
            families).
    """

    prefix: str
    kind: str
    loads: str
    example: str
    loader: str
    check: str | None = None
    locate: str | None = None
    wraps_base: bool = False
    model_type: str | None = None
    capabilities: frozenset[str] = field(default_factory=frozenset)
    source: str = "contrastkit"

    def __post_init__(self) -> None:
        if not self.prefix or ":" in self.prefix or self.prefix != self.prefix.strip():
            raise ConfigError(f"model family prefix {self.prefix!r}: a word without ':'")
        if self.kind not in _KIND_CAPABILITIES:
            raise ConfigError(
                f"model family {self.prefix!r}: kind must be one of "
                f"{', '.join(_KIND_CAPABILITIES)}, not {self.kind!r}"
            )
        capabilities = frozenset(self.capabilities) or _KIND_CAPABILITIES[self.kind]
        unknown = sorted(capabilities - set(CAPABILITIES))
        if unknown:
            raise ConfigError(
                f"model family {self.prefix!r}: unknown capabilities {unknown}; use "
                f"{', '.join(CAPABILITIES)}"
            )
        object.__setattr__(self, "capabilities", capabilities)
        for name in ("loader", "check", "locate"):
            path = getattr(self, name)
            if path is not None and not is_import_path(path):
                raise ConfigError(
                    f"model family {self.prefix!r}: {name} must be 'module:function', not {path!r}"
                )

    def load_function(self) -> Callable[..., Any]:
        """The loader, imported."""
        return resolve(self.loader, f"model family {self.prefix!r} ({self.source})")

    def locate_target(self, target: str, download: bool) -> None:
        """Run :attr:`locate` on ``target`` (nothing when the family has none)."""
        if self.locate is not None:
            resolve(self.locate, f"model family {self.prefix!r} ({self.source})")(target, download)

    def check_target(self, target: str) -> str | None:
        """Run :attr:`check` on ``target``; the base model's spec of a wrapper, or
        ``None``."""
        if self.check is None:
            return None
        result = resolve(self.check, f"model family {self.prefix!r} ({self.source})")(
            self.prefix, target
        )
        return result if isinstance(result, str) else None


_MODELS = "contrastkit.models"
_CAPTIONING_CHECK = f"{_MODELS}.caption_options:check_caption_target"
_HF = f"{_MODELS}.hf:hf_locate_target"

#: The families contrastkit ships, in the order ``contrastkit models list`` shows them.
BUILT_IN: tuple[ModelFamily, ...] = (
    ModelFamily(
        "open_clip", "dual",
        "OpenCLIP dual encoder: ARCH/TAG, ARCH/CHECKPOINT, ARCH/random or a saved folder",
        "open_clip:ViT-B-32/openai", f"{_MODELS}.openclip:load_open_clip",
        locate=f"{_MODELS}.openclip:locate_target",
    ),
    ModelFamily(
        "hf-clip", "dual",
        "transformers CLIP / SigLIP dual encoder (Hub id in the cache, or a folder)",
        "hf-clip:openai/clip-vit-base-patch32", f"{_MODELS}.hf_clip:load_hf_clip", locate=_HF,
    ),
    ModelFamily(
        "clip-clip", "dual",
        "CLIP-clip (Wang et al. 2021): a dual encoder minus the dimensions a saved choice "
        "drops (fitted by contrastkit audit)",
        "clip-clip:load=clipclip.json:open_clip:ViT-B-32/openai",
        f"{_MODELS}.clipclip:load_clip_clip_scorer", check=f"{_MODELS}.clipclip:check_target",
        wraps_base=True,
    ),
    ModelFamily(
        "debias-clip", "dual",
        "prompt-array debiased CLIP (Berg et al. 2022) from the cache, or FILE:BASE",
        "debias-clip:ViT-B/16-gender", f"{_MODELS}.debias:load_debias_clip",
        check=f"{_MODELS}.debias:check_target", wraps_base=True,
    ),
    ModelFamily(
        "blip", "captioning",
        "transformers BLIP captioning model, scored by continuation log-probability",
        "blip:Salesforce/blip-image-captioning-large", f"{_MODELS}.captioning:load_captioning",
        check=_CAPTIONING_CHECK, model_type="blip", locate=_HF,
    ),
    ModelFamily(
        "git", "captioning",
        "transformers GIT captioning model, scored by continuation log-probability",
        "git:microsoft/git-large-coco", f"{_MODELS}.captioning:load_captioning",
        check=_CAPTIONING_CHECK, model_type="git", locate=_HF,
    ),
    ModelFamily(
        "blip2", "captioning",
        "transformers BLIP-2 captioning model (OPT or FLAN-T5 language model), scored by "
        "continuation log-probability; FLAN-T5 reads the prefix in its encoder (?prefix=)",
        "blip2:Salesforce/blip2-opt-2.7b", f"{_MODELS}.captioning:load_captioning",
        check=_CAPTIONING_CHECK, model_type="blip-2", locate=_HF,
    ),
    ModelFamily(
        "instructblip", "captioning",
        "transformers InstructBLIP (Vicuna or FLAN-T5), scored by continuation "
        "log-probability after a captioning instruction (?instruction=, ?prefix=)",
        "instructblip:Salesforce/instructblip-flan-t5-xl",
        f"{_MODELS}.captioning:load_captioning", check=_CAPTIONING_CHECK,
        model_type="instructblip", locate=_HF,
    ),
    ModelFamily(
        "blip-itm", "matching",
        "transformers BLIP image-text matching head, scored by the match logit "
        "(stereotype probing, contrast sets)",
        "blip-itm:Salesforce/blip-itm-base-coco", f"{_MODELS}.itm:load_matching",
        model_type="blip", locate=_HF,
    ),
    ModelFamily(
        "vilt", "matching",
        "transformers ViLT image-text retrieval head, scored by its logit (stereotype "
        "probing, contrast sets)",
        "vilt:dandelin/vilt-b32-finetuned-coco", f"{_MODELS}.itm:load_matching",
        model_type="vilt", locate=_HF,
    ),
    ModelFamily(
        "vlm", "captioning",
        "generative VLM through AutoModelForImageTextToText and its chat template (LLaVA, "
        "Qwen2-VL, PaliGemma, InstructBLIP ...); ?protocol=continuation|multiple-choice",
        "vlm:llava-hf/llava-1.5-7b-hf?protocol=multiple-choice", f"{_MODELS}.vlm:load_vlm",
        check=f"{_MODELS}.vlm_spec:check_target", locate=_HF,
        # caption log-likelihood too
        capabilities=frozenset({"pronouns", "captions", "answers", "descriptions"}),
    ),
)  # fmt: skip

#: The registry of model families (:class:`~contrastkit.registry.Registry`): the
#: built-in ones, then those of installed plugins, then those of :func:`register_model`.
REGISTRY: Registry[ModelFamily] = Registry(
    "model family", ENTRY_POINT_GROUP, ModelFamily, lambda one: one.prefix, BUILT_IN,
    key_word="prefix",
)  # fmt: skip
_registered = REGISTRY.records


def register_model(
    new: ModelFamily, *, replace_existing: bool = False, replace: bool | None = None
) -> ModelFamily:
    """Add a model family to the registry (what the ``contrastkit.models`` entry points
    do; call it yourself for a family defined in a script or notebook).

    ``replace`` is the deprecated spelling of ``replace_existing`` (a
    ``DeprecationWarning``).

    Raises:
        ConfigError: its prefix is taken and ``replace_existing`` is false.
    """
    replace_existing = deprecated_replace("register_model", replace, replace_existing)
    return REGISTRY.register(new, replace_existing=replace_existing)


def families() -> dict[str, ModelFamily]:
    """Every registered family by prefix: the built-in ones, then those of installed
    plugins (loaded on first use), then those of :func:`register_model`."""
    return REGISTRY.all()


def family(prefix: str) -> ModelFamily | None:
    """The family of ``prefix``, or ``None``.

    Raises:
        ConfigError: a plugin claimed ``prefix`` while it was taken (naming the plugin).
    """
    return REGISTRY.get(prefix)  # type: ignore[no-any-return]
