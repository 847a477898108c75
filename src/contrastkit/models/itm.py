"""Image-text-matching heads as :class:`~contrastkit.interfaces.CaptionScorer`\\ s:
``blip-itm:`` (transformers ``BlipForImageTextRetrieval``) and ``vilt:``
(``ViltForImageAndTextRetrieval``).

VLStereoSet Sec. 3.3: a model trained on binary image-text matching "encodes and fuses the
image and text inputs and produces a logit value that indicates how likely the two match";
the logits of an image's candidate captions are then turned into a softmax distribution
over the candidates. The number each adapter returns per (image, caption) pair:

* **BLIP ITM**: the logit of the *match* class of the two-way ITM head,
  ``itm_score[:, 1]`` of ``BlipForImageTextRetrieval(..., use_itm_head=True)`` before any
  softmax (transformers ``modeling_blip.py``: ``itm_head`` is ``Linear(hidden, 2)`` on the
  text encoder's ``[CLS]`` state, cross-attending to the image). This is the number BLIP's
  own retrieval code (and ALBEF's) ranks captions by. The text goes in as the model's
  tokenizer writes it (``[CLS] ... [SEP]``), exactly as ``model(**processor(image,
  text))`` does; the image is encoded once for all of its captions.
* **ViLT**: the single logit of ``rank_output`` on the pooled fused state
  (``ViltForImageAndTextRetrieval(...).logits[:, 0]``). ViLT fuses image patches and text
  tokens from the first layer, so every pair is one full forward pass; images of a batch
  are padded with a ``pixel_mask`` as the processor does.

Both load from a Hub id in the local cache or a ``save_pretrained`` folder through the
same code as the captioning models (:mod:`.hf`): a model not on this machine is a
:class:`~contrastkit.errors.ModelNotFoundError` saying how to get it, never a download
unless ``ModelConfig(download=True)``. A checkpoint without the matching head's weights
(a captioning or pre-training checkpoint of the same architecture) is refused rather than
scored with a randomly initialised head.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from contrastkit.config import require
from contrastkit.errors import ConfigError
from contrastkit.interfaces import caption_width
from contrastkit.models.base import LoadedParts, ModelRuntime, batched, to_rgb
from contrastkit.models.families import BUILT_IN, LoadContext
from contrastkit.models.hf import (
    hf_expect_model_type,
    hf_load_model,
    hf_text_and_image_processors,
)
from contrastkit.models.image_size import processor_input_size
from contrastkit.models.registry import random_weights

__all__ = ["MATCHING_FAMILIES", "MatchingScorer", "load_matching"]

#: Matching spec prefix -> transformers ``model_type`` of the models it loads.
MATCHING_FAMILIES: dict[str, str] = {
    f.prefix: f.model_type for f in BUILT_IN if f.kind == "matching" and f.model_type
}

#: The head whose weights a checkpoint must carry, per family.
_HEADS = {"blip-itm": "itm_head", "vilt": "rank_output"}

#: What the score of each family is, in the words reports use.
SCORE_KINDS = {
    "blip-itm": "BLIP ITM match logit (itm_score[:, 1])",
    "vilt": "ViLT retrieval logit (rank_output)",
}


class MatchingScorer:
    """A :class:`~contrastkit.interfaces.CaptionScorer` over a transformers
    image-text-matching model (``blip-itm`` or ``vilt``; see the module docstring for the
    score).

    Attributes:
        spec: the model spec.
        family: ``blip-itm`` or ``vilt``.
        score_kind: what the scores are, in words.
        input_size: ``(width, height)`` the image processor resizes to (for ViLT, whose
            resize keeps the aspect ratio, the shorter side as a square).
        random_weights: whether the weights are random (a marked tiny-model folder).
    """

    def __init__(self, spec: str, family: str, parts: LoadedParts, runtime: ModelRuntime):
        if family not in MATCHING_FAMILIES:
            raise ConfigError(
                f"unknown matching family {family!r}; use one of {list(MATCHING_FAMILIES)}"
            )
        batch_size = runtime.batch_size
        require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
        self.spec = spec
        self.family = family
        self.model = parts.model
        self.tokenizer = parts.tokenizer
        image_processor = parts.image_processor
        self.image_processor = image_processor
        self.device = runtime.device
        self.dtype = runtime.dtype
        self.batch_size = batch_size
        self.score_kind = SCORE_KINDS[family]
        config = self.model.config
        text_config = getattr(config, "text_config", config)
        self.max_length = int(getattr(text_config, "max_position_embeddings", 40))
        self.input_size = processor_input_size(image_processor)
        self.random_weights = random_weights(spec)

    def _tokens(self, texts: Sequence[str]) -> dict[str, torch.Tensor]:
        tokens = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {name: value.to(self.device) for name, value in tokens.items()}

    def _processed(self, images: Sequence[Image.Image]) -> dict[str, torch.Tensor]:
        rgb = [to_rgb(image) for image in images]
        inputs = self.image_processor(images=rgb, return_tensors="pt")
        pixels = inputs["pixel_values"].to(self.device, self.dtype)
        result = {"pixel_values": pixels}
        if "pixel_mask" in inputs:
            result["pixel_mask"] = inputs["pixel_mask"].to(self.device)
        return result

    @torch.inference_mode()
    def caption_scores(
        self, images: Sequence[Image.Image], captions: Sequence[Sequence[str]]
    ) -> np.ndarray:
        """The matching logit of each image with each of its own candidate captions.

        Args:
            images: the images.
            captions: one sequence of candidates per image, the same number ``k`` each.

        Returns:
            float64, shape ``(len(images), k)``; higher means a better match.

        Raises:
            ValueError: ``captions`` does not have one sequence per image, or the
                sequences differ in length.
        """
        k = caption_width(images, captions)
        result = np.zeros((len(images), k), dtype=np.float64)
        if not len(images) or not k:
            return result
        for chunk in batched(range(len(images)), self.batch_size):
            rows = list(chunk)
            result[rows] = self._score_chunk(
                [images[i] for i in rows], [list(captions[i]) for i in rows]
            )
        return result

    def _score_chunk(self, images: list[Image.Image], captions: list[list[str]]) -> np.ndarray:
        k = len(captions[0])
        texts = [text for row in captions for text in row]  # image-major: row i*k + j
        image_index = torch.arange(len(images), device=self.device).repeat_interleave(k)
        tokens = self._tokens(texts)
        inputs = self._processed(images)
        if self.family == "blip-itm":
            image_embeds = self.model.vision_model(
                pixel_values=inputs["pixel_values"]
            ).last_hidden_state[image_index]
            image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=self.device)
            hidden = self.model.text_encoder(
                input_ids=tokens["input_ids"],
                attention_mask=tokens["attention_mask"],
                encoder_hidden_states=image_embeds,
                encoder_attention_mask=image_mask,
            ).last_hidden_state
            logits = self.model.itm_head(hidden[:, 0, :])[:, 1]
        else:
            pixel_inputs = {name: value[image_index] for name, value in inputs.items()}
            logits = self.model(**tokens, **pixel_inputs).logits[:, 0]
        scores: np.ndarray = logits.float().cpu().numpy().astype(np.float64).reshape(-1, k)
        return scores

    def __repr__(self) -> str:
        return f"MatchingScorer({self.spec!r}, device={self.device}, dtype={self.dtype})"


def load_matching(target: str, runtime: ModelRuntime, context: LoadContext) -> MatchingScorer:
    """Load a ``blip-itm`` / ``vilt`` image-text-matching model from a Hub id or folder.

    Args:
        target: the part of the spec after the prefix.
        runtime: device, dtype, batch size, and whether missing weights may be fetched.
        context: ``context.prefix`` is the family, one of :data:`MATCHING_FAMILIES`.

    Raises:
        ModelNotFoundError: neither a folder nor cached (says how to get it), or a folder
            or cached copy that does not load (its error chained).
        ConfigError: the config is another kind of model, or the checkpoint lacks the
            matching head's weights (a captioning or pre-training checkpoint).
    """
    from transformers import BlipForImageTextRetrieval, ViltForImageAndTextRetrieval

    family = context.prefix
    spec = f"{family}:{target}"
    if family not in MATCHING_FAMILIES:
        raise ConfigError(
            f"unknown matching family {family!r}; use one of {list(MATCHING_FAMILIES)}"
        )
    hf_expect_model_type(spec, target, MATCHING_FAMILIES[family], download=runtime.download)
    loader = BlipForImageTextRetrieval if family == "blip-itm" else ViltForImageAndTextRetrieval
    model, missing = hf_load_model(loader, target, runtime)
    head = _HEADS[family]
    if any(key.startswith(head) for key in missing):
        raise ConfigError(
            f"{spec} has no trained {head} weights (a captioning or pre-training checkpoint?); "
            "give an image-text-matching checkpoint such as "
            + ("Salesforce/blip-itm-base-coco" if family == "blip-itm"
               else "dandelin/vilt-b32-finetuned-coco")
        )  # fmt: skip
    tokenizer, processor = hf_text_and_image_processors(target, download=runtime.download)
    return MatchingScorer(spec, family, LoadedParts(model, tokenizer, processor), runtime)
