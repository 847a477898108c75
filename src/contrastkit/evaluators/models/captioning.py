"""Captioning models scored by continuation log-probabilities: ``blip:``, ``git:``,
``blip2:`` (transformers ``BlipForConditionalGeneration``, ``GitForCausalLM``,
``Blip2ForConditionalGeneration`` with a decoder-only language model such as OPT).

VisoGender Sec. 3.4 resolves a pronoun with a captioning model by comparing
``p_cap(t | i, c)`` for the candidate pronouns after a partial caption ``c`` ("The doctor
and"). A pronoun may be several tokens (" their" often is), so the score of a
continuation ``w = (w_1..w_m)`` is the chain rule::

    log p(w | i, c) = sum_j log p_cap(w_j | i, c, w_1..w_{j-1})

computed for every candidate in one teacher-forced forward pass (right-padded, so the
causal mask keeps each position's logits what they would be without padding).

Token sequences follow each family's own generation set-up:

* BLIP: ``[text_config.bos_token_id]`` (``[DEC]``) + prefix + continuation; the image
  enters through cross-attention. (``generate`` replaces the processor's ``[CLS]`` by this
  token and drops the trailing ``[SEP]``.)
* GIT: ``[CLS]`` (``config.bos_token_id``) + prefix + continuation, after the image
  tokens, which the model prepends itself.
* BLIP-2: the query-token image embeddings, then the tokenizer's BOS (``</s>`` for OPT)
  + prefix + continuation.

Prefix and continuation are tokenized together and split where the prefix's tokens end,
so a tokenizer that marks word starts (byte-level BPE's ``Ġ``) sees the space it would see
in running text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image

from contrastkit.config import require
from contrastkit.errors import ConfigError
from contrastkit.evaluators.models.base import ModelRuntime, batched, to_rgb
from contrastkit.evaluators.models.hf import (
    hf_from_pretrained,
    hf_model_type,
    hf_text_and_image_processors,
)
from contrastkit.evaluators.models.registry import FAMILIES, random_weights
from contrastkit.pipeline import HFPreprocess, PipelineConfig

__all__ = ["FAMILIES", "CaptioningScorer", "load_captioning"]


class CaptioningScorer:
    """A :class:`~contrastkit.evaluators.models.PronounScorer` over a transformers
    captioning model of one of :data:`FAMILIES`."""

    def __init__(
        self,
        spec: str,
        family: str,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        *,
        device: torch.device,
        dtype: torch.dtype,
        batch_size: int,
        pipeline: PipelineConfig | None = None,
    ):
        if family not in FAMILIES:
            raise ConfigError(f"unknown captioning family {family!r}; use one of {list(FAMILIES)}")
        require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
        self.spec = spec
        self.family = family
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        #: the processor as the image pipeline runs it (:mod:`contrastkit.pipeline`)
        self.image_preprocess = HFPreprocess(image_processor)
        self.pipeline = pipeline or PipelineConfig()
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self._prefix_cache: dict[str, list[int]] = {}
        self._split_cache: dict[tuple[str, str], list[int]] = {}
        #: Whether the weights are random (a marked tiny-model folder): every report of
        #: this model then says its figures are a pipeline check.
        self.random_weights = random_weights(spec)

    # -- tokens -----------------------------------------------------------------------
    @property
    def start_ids(self) -> list[int]:
        """The token(s) a caption starts with in this family (see the module docstring)."""
        config = self.model.config
        if self.family == "blip":
            token = config.text_config.bos_token_id
        elif self.family == "git":
            token = config.bos_token_id
            if token is None:
                token = self.tokenizer.cls_token_id
        else:
            token = self.tokenizer.bos_token_id
            if token is None:
                token = config.text_config.bos_token_id
        return [] if token is None else [int(token)]

    def _encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    def prefix_ids(self, prefix: str) -> list[int]:
        """Start token(s) + the tokens of ``prefix``."""
        if prefix not in self._prefix_cache:
            self._prefix_cache[prefix] = self.start_ids + self._encode(prefix)
        return self._prefix_cache[prefix]

    def continuation_ids(self, prefix: str, continuation: str) -> list[int]:
        """The tokens ``continuation`` adds after ``prefix`` (at least one).

        Raises:
            ValueError: if the continuation adds no token.
        """
        key = (prefix, continuation)
        if key not in self._split_cache:
            head = self._encode(prefix)
            whole = self._encode(prefix + continuation)
            if whole[: len(head)] == head and len(whole) > len(head):
                tail = whole[len(head) :]
            else:
                tail = self._encode(continuation)
            if not tail:
                raise ValueError(f"continuation {continuation!r} after {prefix!r} has no tokens")
            self._split_cache[key] = tail
        return self._split_cache[key]

    # -- model ------------------------------------------------------------------------
    def _pixels(self, images: Sequence[Image.Image] | Sequence[torch.Tensor]) -> torch.Tensor:
        """Model inputs: PIL images go through the processor; tensors are rows the
        pipeline already preprocessed with it (:attr:`image_preprocess`)."""
        if len(images) and isinstance(images[0], torch.Tensor):
            pixels = torch.stack(list(images))  # type: ignore[arg-type]
        else:
            pixels = self.image_processor(
                images=[to_rgb(image) for image in images],  # type: ignore[arg-type]
                return_tensors="pt",
            )["pixel_values"]
        return pixels.to(self.device, self.dtype, non_blocking=True)

    def _text_logits(
        self,
        pixels: torch.Tensor,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        image_index: torch.Tensor,
    ) -> torch.Tensor:
        """Logits at the text positions, shape ``(rows, text_length, vocab)``; row ``r``
        is conditioned on image ``image_index[r]``. Each image is encoded once."""
        model = self.model
        length = input_ids.shape[1]
        if self.family == "blip":
            image_embeds = model.vision_model(pixel_values=pixels).last_hidden_state
            out = model.text_decoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                encoder_hidden_states=image_embeds[image_index],
            )
            logits: torch.Tensor = out.logits
            return logits
        if self.family == "git":
            # GitModel tiles the image features over the text rows (row r gets image
            # r % n_images); rows are laid out continuation-major to match.
            out = model(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixels)
            logits = out.logits[:, -length:, :]
            return logits
        # BLIP-2: vision -> Q-Former -> projection, then the language model on
        # [query embeddings; text embeddings] (Li et al., 2023; transformers' forward).
        image_embeds = model.vision_model(pixel_values=pixels).last_hidden_state
        qformer_dtype = model.query_tokens.dtype
        image_embeds = image_embeds.to(qformer_dtype)
        queries = model.query_tokens.expand(image_embeds.shape[0], -1, -1)
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=self.device)
        query_output = model.qformer(
            query_embeds=queries,
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=image_mask,
        )[0]
        projected = model.language_projection(
            query_output.to(model.language_projection.weight.dtype)
        )
        text_embeds = model.get_input_embeddings()(input_ids)
        embeds = torch.cat([projected[image_index].to(text_embeds.dtype), text_embeds], dim=1)
        query_mask = torch.ones(
            (input_ids.shape[0], projected.shape[1]), dtype=attention_mask.dtype, device=self.device
        )
        out = model.language_model(
            inputs_embeds=embeds, attention_mask=torch.cat([query_mask, attention_mask], dim=1)
        )
        logits = out.logits[:, -length:, :]
        return logits

    @torch.inference_mode()
    def continuation_logprobs(
        self,
        images: Sequence[Image.Image] | Sequence[torch.Tensor] | torch.Tensor,
        prefixes: Sequence[str],
        continuations: Sequence[str],
    ) -> np.ndarray:
        """``log p(continuation | image, prefix)`` summed over the continuation's tokens,
        float64, shape ``(len(images), len(continuations))``.

        Args:
            images: the images: PIL images, or the rows of a batch the pipeline
                preprocessed with :attr:`image_preprocess`.
            prefixes: one partial caption per image ("The doctor and").
            continuations: the candidates, shared by all images (" his", " her").

        Raises:
            ValueError: if ``prefixes`` and ``images`` differ in length.
        """
        if len(prefixes) != len(images):
            raise ValueError(
                f"one prefix per image: {len(images)} images, {len(prefixes)} prefixes"
            )
        result = np.zeros((len(images), len(continuations)), dtype=np.float64)
        if not len(images) or not continuations:
            return result
        order = list(range(len(images)))
        for chunk in batched(order, self.batch_size):
            result[list(chunk)] = self._score_chunk(
                [images[i] for i in chunk], [prefixes[i] for i in chunk], continuations
            )
        return result

    def _score_chunk(
        self, images: list[Any], prefixes: list[str], continuations: Sequence[str]
    ) -> np.ndarray:
        n_images = len(images)
        rows: list[tuple[list[int], int]] = []  # (ids, index where the continuation starts)
        image_rows: list[int] = []
        for continuation in continuations:  # continuation-major, see _text_logits
            for i, prefix in enumerate(prefixes):
                head = self.prefix_ids(prefix)
                if not head:
                    raise ValueError("an empty prefix needs a start token to condition on")
                rows.append((head + self.continuation_ids(prefix, continuation), len(head)))
                image_rows.append(i)
        width = max(len(ids) for ids, _ in rows)
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else int(pad)
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for r, (ids, _) in enumerate(rows):
            input_ids[r, : len(ids)] = torch.tensor(ids)
            attention[r, : len(ids)] = 1
        image_index = torch.tensor(image_rows, device=self.device)
        logits = self._text_logits(
            self._pixels(images), input_ids.to(self.device), attention.to(self.device), image_index
        )
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        scores = np.zeros((n_images, len(continuations)), dtype=np.float64)
        for r, (ids, start) in enumerate(rows):
            positions = torch.arange(start - 1, len(ids) - 1, device=self.device)
            targets = torch.tensor(ids[start:], device=self.device)
            total = logprobs[r, positions, targets].double().sum().item()
            scores[image_rows[r], r // n_images] = total
        return scores

    def __repr__(self) -> str:
        return f"CaptioningScorer({self.spec!r}, device={self.device}, dtype={self.dtype})"


def load_captioning(family: str, target: str, runtime: ModelRuntime) -> CaptioningScorer:
    """Load a ``blip`` / ``git`` / ``blip2`` captioning model from a hub id or folder.

    Args:
        family: the spec prefix, one of :data:`FAMILIES`.
        target: the part of the spec after the prefix.
        runtime: device, dtype, batch size, and whether missing weights may be fetched.

    Raises:
        ModelNotFoundError: neither a folder nor cached (says how to get it), or a folder
            or cached copy that does not load (its error chained).
        ConfigError: the config is another kind of model, or BLIP-2 with an
            encoder-decoder language model (Flan-T5), whose prompt is not continued.
    """
    from transformers import (
        Blip2ForConditionalGeneration,
        BlipForConditionalGeneration,
        GitForCausalLM,
    )

    spec = f"{family}:{target}"
    if family not in FAMILIES:
        raise ConfigError(f"unknown captioning family {family!r}; use one of {list(FAMILIES)}")
    download = runtime.download
    model_type = hf_model_type(target, download=download)
    if model_type != FAMILIES[family]:
        raise ConfigError(f"{spec} holds a {model_type!r} model, not {FAMILIES[family]!r}")
    classes: dict[str, Any] = {
        "blip": BlipForConditionalGeneration,
        "git": GitForCausalLM,
        "blip2": Blip2ForConditionalGeneration,
    }
    model = hf_from_pretrained(
        classes[family].from_pretrained, target, "weights", download=download,
        dtype=runtime.dtype,
    )  # fmt: skip
    if family == "blip2" and not model.config.use_decoder_only_language_model:
        raise ConfigError(
            f"{spec}: BLIP-2 with an encoder-decoder language model (Flan-T5) is not supported; "
            "use an OPT-based BLIP-2 such as Salesforce/blip2-opt-2.7b"
        )
    tokenizer, processor = hf_text_and_image_processors(target, download=download)
    model = model.to(device=runtime.device).eval()
    return CaptioningScorer(
        spec,
        family,
        model,
        tokenizer,
        processor,
        device=runtime.device,
        dtype=runtime.dtype,
        batch_size=runtime.batch_size,
        pipeline=runtime.pipeline,
    )
