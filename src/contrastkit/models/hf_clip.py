"""transformers CLIP-family dual encoders: ``hf-clip:ID_OR_FOLDER``.

Any model whose class has ``get_image_features(pixel_values)`` and
``get_text_features(input_ids, attention_mask)`` works; CLIP and SigLIP are tested.
SigLIP was trained with texts padded to the full context length, so its texts are padded
that way (``padding="max_length"``); CLIP texts are padded to the longest in the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from contrastkit.errors import ConfigError
from contrastkit.models.base import DualEncoder, LoadedParts, ModelRuntime
from contrastkit.models.families import LoadContext
from contrastkit.models.hf import (
    hf_load_model,
    hf_model_type,
    hf_text_and_image_processors,
)
from contrastkit.pipeline import HFPreprocess

__all__ = ["HFClipScorer", "load_hf_clip"]

#: Model types whose text tower expects padding to the full context length.
MAX_LENGTH_PADDING = frozenset({"siglip"})


def _features(output: Any) -> torch.Tensor:
    """transformers 4 returns the projected features, 5 an output whose ``pooler_output``
    holds them."""
    if isinstance(output, torch.Tensor):
        return output
    pooled: torch.Tensor = output.pooler_output
    return pooled


class HFClipScorer(DualEncoder):
    """An :class:`~contrastkit.models.ImageTextScorer` over a transformers
    dual encoder (CLIP, SigLIP). Scores are cosine similarities."""

    def __init__(self, spec: str, parts: LoadedParts, runtime: ModelRuntime):
        super().__init__(spec, runtime, image_preprocess=HFPreprocess(parts.image_processor))
        model = parts.model
        self.model = model
        self.tokenizer = parts.tokenizer
        self.image_processor = parts.image_processor
        text_config = getattr(model.config, "text_config", model.config)
        self.max_length = int(getattr(text_config, "max_position_embeddings", 77))
        self.model_type = str(model.config.model_type)

    def _pixel_features(self, pixels: torch.Tensor) -> torch.Tensor:
        return _features(self.model.get_image_features(pixel_values=pixels))

    def _text_features(self, texts: Sequence[str]) -> torch.Tensor:
        padding = "max_length" if self.model_type in MAX_LENGTH_PADDING else True
        tokens = self.tokenizer(
            list(texts),
            padding=padding,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        inputs = {"input_ids": tokens["input_ids"].to(self.device)}
        if "attention_mask" in tokens and self.model_type not in MAX_LENGTH_PADDING:
            inputs["attention_mask"] = tokens["attention_mask"].to(self.device)
        return _features(self.model.get_text_features(**inputs))

    @property
    def embedding_dim(self) -> int:
        """The width of the joint embedding space."""
        config = self.model.config
        dim = getattr(config, "projection_dim", None)
        if dim is None:
            dim = config.text_config.hidden_size
        return int(dim)


def load_hf_clip(
    target: str, runtime: ModelRuntime, context: LoadContext | None = None
) -> HFClipScorer:
    """Load a transformers dual encoder from a hub id or a ``save_pretrained`` folder.

    Args:
        target: the part of the spec after ``hf-clip:``.
        runtime: device, dtype, batch size, and whether missing weights may be fetched.

    Raises:
        ModelNotFoundError: neither a folder nor cached (says how to get it), or a folder
            or cached copy that does not load (its error chained).
        ConfigError: the model is a captioning model or has no image/text features.
    """
    from transformers import AutoModel

    download = runtime.download
    model_type = hf_model_type(target, download=download)
    if model_type in ("blip", "git", "blip-2"):
        raise ConfigError(
            f"hf-clip:{target} is a {model_type} captioning model; use the "
            f"{'blip2' if model_type == 'blip-2' else model_type}: prefix"
        )
    model, _ = hf_load_model(AutoModel, target, runtime)
    if not hasattr(model, "get_image_features") or not hasattr(model, "get_text_features"):
        raise ConfigError(
            f"hf-clip:{target} ({model_type}) is not a dual encoder: it has no "
            "get_image_features/get_text_features"
        )
    tokenizer, processor = hf_text_and_image_processors(target, download=download)
    return HFClipScorer(f"hf-clip:{target}", LoadedParts(model, tokenizer, processor), runtime)
