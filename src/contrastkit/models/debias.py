"""Prompt-array debiased CLIP (Berg et al. 2022, "A prompt array keeps the bias away:
debiasing vision-language models with adversarial learning", AACL; the debiased baseline
users bring to GenSynth Sec. 5): ``debias-clip:NAME_OR_FILE[:BASE_SPEC]``.

The method leaves CLIP's weights alone and learns ``n`` token embeddings (the "prompt
array") that are put in front of every text (Berg et al. Sec. 3.2, Fig. 2); images are
encoded as by CLIP itself. The published checkpoints hold only that array.

Checkpoint format (established from the authors' repository, github.com/oxai/debias-vision-
lang, ``debias_clip/model/clip.py`` and ``model.py``; their code is not used here):

* a file written by ``torch.save`` of one float tensor of shape ``(n, width)``: the
  prompt embeddings, ``width`` the base model's text-transformer width (512 for ViT-B/16);
  contrastkit also accepts a state dict holding it as ``debias_tokens.weight`` (the
  authors' ``DebiasCLIP`` module) or ``weight`` (an ``nn.Embedding``);
* the base model is not in the file: the authors' table names it per checkpoint
  (:data:`PUBLISHED`: ``ViT-B/16-gender`` is 2 tokens on OpenAI's ViT-B/16, file
  ``best_ndkl_oai-clip-vit-b-16_neptune_run_OXVLB-317_model_e4_step_5334_embeddings.pt``,
  which their loader downloads into ``~/.cache/debias_clip/``);
* text encoding ("prepend", their default and the published model's): the text's token
  embeddings plus CLIP's positional embeddings for positions ``0 .. L-1`` are cut to
  their first ``L - n`` positions and shifted right by ``n``; the ``n`` prompt vectors,
  with no positional embedding added, fill positions ``0 .. n-1``; CLIP's causal text
  transformer and final layer norm run on that, and the text's feature is read at the
  end-of-text token's new position ``argmax(tokens) + n`` (at most ``L - 1``) and
  projected by CLIP's text projection.

Spec forms: ``debias-clip:ViT-B/16-gender`` (the published checkpoint in the local cache,
on ``open_clip:ViT-B-16/openai``); ``debias-clip:FILE`` (a published checkpoint file,
recognised by its file name); ``debias-clip:NAME_OR_FILE:BASE_SPEC`` (any checkpoint on an
explicit ``open_clip:`` base, e.g. a local copy of the OpenAI weights). Nothing is ever
downloaded: a checkpoint missing from the cache raises
:class:`~contrastkit.errors.ModelNotFoundError` naming where it looked and how to get it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contrastkit.errors import ConfigError, ModelNotFoundError

if TYPE_CHECKING:
    import torch

    from contrastkit.models.base import ModelRuntime
    from contrastkit.models.families import LoadContext
    from contrastkit.models.openclip import OpenCLIPScorer

__all__ = [
    "CACHE_DIR",
    "PREFIX",
    "PUBLISHED",
    "DebiasSpec",
    "Published",
    "checkpoint_path",
    "load_debias_clip",
    "parse_debias_spec",
    "read_prompt_array",
]

#: The spec prefix of a prompt-array debiased CLIP.
PREFIX = "debias-clip:"

#: Where the authors' loader saves the published checkpoints (its ``download_root``).
CACHE_DIR = "~/.cache/debias_clip"


@dataclass(frozen=True)
class Published:
    """A published checkpoint of Berg et al.: its file, where it is published, the base
    model (a contrastkit spec) and the number of prompt tokens."""

    file: str
    url: str
    base: str
    tokens: int


#: The checkpoints the authors publish, by the name their loader takes.
PUBLISHED: dict[str, Published] = {
    "ViT-B/16-gender": Published(
        file="best_ndkl_oai-clip-vit-b-16_neptune_run_OXVLB-317_model_e4_step_5334_embeddings.pt",
        url="http://www.robots.ox.ac.uk/~maxbain/oxai-bias/"
        "best_ndkl_oai-clip-vit-b-16_neptune_run_OXVLB-317_model_e4_step_5334_embeddings.pt",
        base="open_clip:ViT-B-16/openai",
        tokens=2,
    ),
}


@dataclass(frozen=True)
class DebiasSpec:
    """A parsed ``debias-clip:`` spec.

    Attributes:
        checkpoint: a published name (:data:`PUBLISHED`) or a file path, as given.
        base: the base model's spec.
        published: the published checkpoint it names (by name or file name), if any.
    """

    checkpoint: str
    base: str
    published: Published | None = None


def _published(checkpoint: str) -> Published | None:
    if checkpoint in PUBLISHED:
        return PUBLISHED[checkpoint]
    name = Path(checkpoint).name
    return next((p for p in PUBLISHED.values() if p.file == name), None)


def check_target(prefix: str, target: str) -> str:
    """The registry's check of a ``debias-clip:`` target; returns the base model's spec.

    Raises:
        ConfigError: see :func:`parse_debias_spec`.
    """
    return parse_debias_spec(f"{prefix}:{target}").base


def parse_debias_spec(spec: str) -> DebiasSpec:
    """Parse ``debias-clip:NAME_OR_FILE[:BASE_SPEC]`` (module docstring). Reads no file.

    Raises:
        ConfigError: a malformed spec, a file whose base model cannot be known, or a base
            that is not an ``open_clip:`` model.
    """
    spec = spec.strip()
    if not spec.startswith(PREFIX):
        raise ConfigError(f"{spec!r} is not a {PREFIX} spec")
    target = spec[len(PREFIX) :].strip()
    names = ", ".join(PUBLISHED)
    if target in PUBLISHED:
        checkpoint, base = target, ""
    else:
        checkpoint, _, base = target.partition(":")
        checkpoint, base = checkpoint.strip(), base.strip()
    if not checkpoint:
        raise ConfigError(f"{spec!r}: write {PREFIX}NAME ({names}) or {PREFIX}FILE:BASE_SPEC")
    published = _published(checkpoint)
    if not base:
        if published is None:
            raise ConfigError(
                f"{spec!r}: {checkpoint} is neither a published checkpoint ({names}) nor one of "
                f"their files, so its base model is unknown; write {PREFIX}{checkpoint}:BASE_SPEC "
                "(e.g. :open_clip:ViT-B-16/openai)"
            )
        base = published.base
    if not base.startswith("open_clip:"):
        raise ConfigError(
            f"{spec!r}: the prompt array is put into an OpenCLIP text tower; the base must be "
            f"an open_clip: spec, not {base!r}"
        )
    return DebiasSpec(checkpoint, base, published)


def checkpoint_path(parsed: DebiasSpec) -> Path:
    """The local file of a parsed spec: a path as given, or a published checkpoint's
    file in :data:`CACHE_DIR`. Never downloads.

    Raises:
        ModelNotFoundError: no such file; the message names where it looked and how to get
            the published checkpoint.
    """
    given = Path(parsed.checkpoint).expanduser()
    if parsed.checkpoint not in PUBLISHED:
        if given.is_file():
            return given
        raise ModelNotFoundError(
            f"debias-clip checkpoint file not found: {given}"
            + (_how_to_get(parsed.published) if parsed.published is not None else "")
        )
    published = PUBLISHED[parsed.checkpoint]
    cached = Path(CACHE_DIR).expanduser() / published.file
    if cached.is_file():
        return cached
    raise ModelNotFoundError(
        f"the debiased CLIP {parsed.checkpoint} (Berg et al. 2022) is not in the local cache: "
        f"looked for {cached}." + _how_to_get(published)
    )


def _how_to_get(published: Published) -> str:
    return (
        f" Get it on a machine with internet access: download {published.url} into "
        f"{CACHE_DIR}/ (the debias_clip package's own loader saves it there), or give the "
        f"file: {PREFIX}PATH/{published.file}. Its base, {published.base}, must be in the "
        "local cache too."
    )


def read_prompt_array(path: Path) -> torch.Tensor:
    """The prompt array of a checkpoint file: a float tensor ``(n, width)``.

    Raises:
        ModelNotFoundError: the file does not load (its error chained) or holds no
            two-dimensional tensor where the format puts one (module docstring).
    """
    import torch

    from contrastkit.models.base import LOAD_ERRORS

    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except LOAD_ERRORS as error:
        raise ModelNotFoundError(
            f"the debias-clip checkpoint {path} does not load ({type(error).__name__}: {error})"
        ) from error
    if isinstance(loaded, dict):
        loaded = loaded.get("debias_tokens.weight", loaded.get("weight"))
    if not isinstance(loaded, torch.Tensor) or loaded.ndim != 2 or not loaded.is_floating_point():
        raise ModelNotFoundError(
            f"the debias-clip checkpoint {path} is not a prompt array: expected a float tensor "
            "(tokens, width), or a state dict holding one as debias_tokens.weight"
        )
    return loaded.detach().float()


def _scorer_class() -> Callable[[str, OpenCLIPScorer, torch.Tensor, bool], OpenCLIPScorer]:
    import torch

    from contrastkit.models.openclip import OpenCLIPScorer

    class DebiasCLIPScorer(OpenCLIPScorer):
        """An OpenCLIP model whose texts are encoded behind a learned prompt array
        (module docstring); images as by the base model."""

        def __init__(self, spec: str, base: OpenCLIPScorer, prompts: torch.Tensor, marked: bool):
            super().__init__(spec, base.model, base.preprocess, base.tokenizer, base.runtime)
            #: random when the base model is, or the prompt file carries the marker
            self.random_weights = base.random_weights or marked
            #: The prompt array, ``(n, width)``, float32 on the model's device.
            self.prompts = prompts.to(base.device, torch.float32)

        def _text_features(self, texts: Sequence[str]) -> torch.Tensor:
            model = self.model
            tokens = self.tokenizer(list(texts)).to(self.device)
            n = int(self.prompts.shape[0])
            cast = model.transformer.get_cast_dtype()
            x = model.token_embedding(tokens).to(cast) + model.positional_embedding.to(cast)
            length = x.shape[1]
            prompts = self.prompts.to(self.device, cast)[None].expand(x.shape[0], -1, -1)
            x = torch.cat([prompts, x[:, : length - n]], dim=1)
            batch_first = getattr(model.transformer, "batch_first", True)
            x = x if batch_first else x.permute(1, 0, 2)
            x = model.transformer(x, attn_mask=model.attn_mask)
            x = x if batch_first else x.permute(1, 0, 2)
            x = model.ln_final(x)
            end = torch.clamp(tokens.argmax(dim=-1) + n, max=length - 1)
            pooled: torch.Tensor = x[torch.arange(x.shape[0], device=x.device), end]
            projection = model.text_projection
            if isinstance(projection, torch.nn.Linear):
                pooled = projection(pooled)
            elif projection is not None:
                pooled = pooled @ projection
            return pooled

    return DebiasCLIPScorer


def load_debias_clip(target: str, runtime: ModelRuntime, context: LoadContext) -> OpenCLIPScorer:
    """Load ``debias-clip:TARGET``: the prompt array from the local file or cache, the base
    model by ``context.load_base`` (the registry's loader).

    Raises:
        ModelNotFoundError: the checkpoint (or the base model) is missing or does not load.
        ConfigError: a malformed spec, or a prompt array that does not fit the base model
            (another width, too many tokens for its context, a text tower that is not
            CLIP's).
    """
    from contrastkit.models.openclip import OpenCLIPScorer

    spec = f"{PREFIX}{target}"
    parsed = parse_debias_spec(spec)
    path = checkpoint_path(parsed)
    prompts = read_prompt_array(path)
    base = context.load_base(parsed.base, runtime)
    assert isinstance(base, OpenCLIPScorer)
    model = base.model
    needed = ("token_embedding", "positional_embedding", "transformer", "ln_final", "attn_mask")
    if any(not hasattr(model, name) for name in needed) or (
        getattr(model, "text_pool_type", "argmax") != "argmax"
    ):
        raise ConfigError(
            f"{spec}: {parsed.base} has no CLIP text tower (token embedding, causal "
            "transformer, end-of-text pooling) to put the prompt array into"
        )
    width = int(model.token_embedding.weight.shape[1])
    positions = int(model.positional_embedding.shape[0])
    if prompts.shape[1] != width:
        raise ConfigError(
            f"{spec}: the prompt array in {path} is {prompts.shape[1]} wide, the text tower "
            f"of {parsed.base} {width}: it was trained on another base model"
        )
    if not 0 <= prompts.shape[0] < positions:
        raise ConfigError(
            f"{spec}: {prompts.shape[0]} prompt tokens leave no room in a {positions}-token context"
        )
    if parsed.published is not None and prompts.shape[0] != parsed.published.tokens:
        raise ConfigError(
            f"{spec}: {path} holds {prompts.shape[0]} prompt tokens, the published "
            f"checkpoint {parsed.published.tokens}"
        )
    from contrastkit.tiny.marker import marked_random

    return _scorer_class()(spec, base, prompts, marked_random(str(path)))
