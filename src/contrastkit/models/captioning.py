"""Captioning models scored by continuation log-probabilities: ``blip:``, ``git:``,
``blip2:``, ``instructblip:`` (transformers ``BlipForConditionalGeneration``,
``GitForCausalLM``, ``Blip2ForConditionalGeneration`` and
``InstructBlipForConditionalGeneration``, the last two with a decoder-only language model
such as OPT / Vicuna or an encoder-decoder one, FLAN-T5).

VisoGender Sec. 3.4 resolves a pronoun with a captioning model by comparing
``p_cap(t | i, c)`` for the candidate pronouns after a partial caption ``c`` ("The doctor
and"). A pronoun may be several tokens (" their" often is), so the score of a
continuation ``w = (w_1..w_m)`` is the chain rule::

    log p(w | i, c) = sum_j log p_cap(w_j | i, c, w_1..w_{j-1})

computed for every candidate in one teacher-forced forward pass (right-padded, so the
causal mask keeps each position's logits what they would be without padding; padded
encoder positions are masked out of attention).

Token sequences follow each family's own generation set-up:

* BLIP: ``[text_config.bos_token_id]`` (``[DEC]``) + prefix + continuation; the image
  enters through cross-attention. (``generate`` replaces the processor's ``[CLS]`` by this
  token and drops the trailing ``[SEP]``.)
* GIT: ``[CLS]`` (``config.bos_token_id``) + prefix + continuation, after the image
  tokens, which the model prepends itself.
* BLIP-2 with a decoder-only language model (OPT): the query-token image embeddings, then
  the tokenizer's BOS (``</s>`` for OPT) + prefix + continuation.
* BLIP-2 with FLAN-T5 (an encoder-decoder language model): BLIP-2 was pre-trained with a
  *prefix language-modelling* loss for these models (Li et al. 2023, Sec. 3.3): a text is
  split in two, the prefix goes with the query embeddings into the T5 **encoder** and the
  suffix is the target of the **decoder**; its VQA and prompted captioning put the prompt
  on the encoder side too (transformers' ``Blip2Processor`` tokenizes the prompt as
  ``input_ids``, the encoder input). So by default the encoder reads
  ``[query embeddings] + prefix + </s>`` (the tokenizer's own special tokens, as the
  processor adds them) and the decoder scores the continuation after
  ``decoder_start_token_id`` alone (``prefix="encoder"``). The spec option
  ``?prefix=decoder`` (:mod:`.caption_options`) instead gives the encoder
  ``[query embeddings] + </s>`` (an empty prompt, as unprompted captioning does) and forces
  the decoder through ``decoder_start + prefix`` before the continuation, the way a
  decoder-only captioner reads a partial caption.
* InstructBLIP: as BLIP-2, with an instruction (default
  :data:`~.caption_options.DEFAULT_INSTRUCTION`, "A short image caption:", the first of the
  captioning templates it was instruction-tuned with; ``?instruction=`` changes it). The
  **Q-Former reads the instruction alone** (its instruction-aware query features, Dai et
  al. 2023 Sec. 2.3; the partial caption is text for the language model to continue, not an
  instruction), tokenized by its own word-piece tokenizer (``qformer_tokenizer/``) with
  ``[CLS]`` / ``[SEP]``. The language model reads ``instruction + " " + prefix`` where
  BLIP-2 reads the prefix: after the BOS for Vicuna / OPT, in the encoder for FLAN-T5
  (with ``?prefix=decoder``, the encoder reads the instruction and the decoder the
  prefix).

Prefix and continuation are tokenized together and split where the prefix's tokens end,
so a tokenizer that marks word starts (byte-level BPE's ``Ġ``, SentencePiece's ``▁``) sees
the space it would see in running text; a continuation that starts the decoder's text
(encoder placement) is tokenized on its own.

Captions (:meth:`CaptioningScorer.generate_captions`, the ``descriptions`` capability) are
generated the same way with nothing to continue: greedy search by the model's own
``generate`` (the language model's, after the query embeddings, for the Q-Former families)
from the start token(s) alone (BLIP, GIT: the unconditional caption), from BLIP-2's empty
prompt, or after InstructBLIP's instruction (in the encoder for FLAN-T5); the ``?prefix=``
option does not change them. Every row of a batch has the same prompt, so none is padded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image

from contrastkit.config import require
from contrastkit.errors import ConfigError
from contrastkit.models.base import LoadedParts, ModelRuntime, batched, to_rgb
from contrastkit.models.caption_options import (
    DEFAULT_INSTRUCTION,
    PREFIX_PLACEMENTS,
    CaptionOptions,
    split_caption_options,
)
from contrastkit.models.families import LoadContext
from contrastkit.models.hf import (
    hf_expect_model_type,
    hf_from_pretrained,
    hf_load_model,
    hf_text_and_image_processors,
)
from contrastkit.models.registry import FAMILIES, random_weights
from contrastkit.pipeline import HFPreprocess

__all__ = ["FAMILIES", "CaptioningScorer", "load_captioning"]

#: Families built on BLIP-2's Q-Former, whose language model may be encoder-decoder.
QFORMER_FAMILIES = ("blip2", "instructblip")


class CaptioningScorer:
    """A :class:`~contrastkit.models.PronounScorer` and
    :class:`~contrastkit.interfaces.CaptionGenerator` over a transformers captioning model
    of one of :data:`FAMILIES`.

    Attributes:
        encoder_decoder: whether the language model is encoder-decoder (FLAN-T5).
        prefix_placement: ``"encoder"`` or ``"decoder"``: where the partial caption goes
            (see the module docstring); always ``"decoder"`` for a decoder-only model.
        instruction: the InstructBLIP instruction (``""`` for none; ``None`` for the
            other families).
    """

    def __init__(
        self,
        spec: str,
        family: str,
        parts: LoadedParts,
        runtime: ModelRuntime,
        options: CaptionOptions | None = None,
    ):
        if family not in FAMILIES:
            raise ConfigError(f"unknown captioning family {family!r}; use one of {list(FAMILIES)}")
        batch_size = runtime.batch_size
        require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
        options = options or CaptionOptions()
        prefix_placement, instruction = options.prefix, options.instruction
        qformer_tokenizer = parts.qformer_tokenizer
        model = parts.model
        self.spec = spec
        self.family = family
        self.model = model
        self.tokenizer = parts.tokenizer
        self.image_processor = parts.image_processor
        #: the processor as the image pipeline runs it (:mod:`contrastkit.pipeline`)
        self.image_preprocess = HFPreprocess(parts.image_processor)
        self.pipeline = runtime.pipeline
        self.device = runtime.device
        self.dtype = runtime.dtype
        self.batch_size = batch_size
        self.encoder_decoder = family in QFORMER_FAMILIES and not bool(
            model.config.use_decoder_only_language_model
        )
        if prefix_placement is None:
            prefix_placement = "encoder" if self.encoder_decoder else "decoder"
        require(
            prefix_placement in PREFIX_PLACEMENTS,
            "prefix",
            f"use one of {', '.join(PREFIX_PLACEMENTS)}, not {prefix_placement!r}",
        )
        require(
            self.encoder_decoder or prefix_placement == "decoder",
            "prefix",
            f"{spec} has a decoder-only language model: the partial caption can only be "
            "read by the decoder (prefix=encoder is for FLAN-T5 models)",
        )
        self.prefix_placement = prefix_placement
        if family == "instructblip":
            self.instruction: str | None = (
                DEFAULT_INSTRUCTION if instruction is None else instruction.strip()
            )
            require(
                qformer_tokenizer is not None,
                "qformer_tokenizer",
                "InstructBLIP needs its Q-Former tokenizer",
            )
        else:
            require(
                instruction is None, "instruction", f"only instructblip: takes one, not {family}:"
            )
            self.instruction = None
        self.qformer_tokenizer = qformer_tokenizer
        self._prefix_cache: dict[str, list[int]] = {}
        self._split_cache: dict[tuple[str, str], list[int]] = {}
        #: Whether the weights are random (a marked tiny-model folder): every report of
        #: this model then says its figures are a pipeline check.
        self.random_weights = random_weights(spec)

    # -- tokens -----------------------------------------------------------------------
    @property
    def start_ids(self) -> list[int]:
        """The token(s) a caption starts with in this family (see the module docstring);
        for an encoder-decoder language model, the decoder's start token."""
        config = self.model.config
        if self.family == "blip":
            token = config.text_config.bos_token_id
        elif self.family == "git":
            token = config.bos_token_id
            if token is None:
                token = self.tokenizer.cls_token_id
        elif self.encoder_decoder:
            token = self.model.language_model.config.decoder_start_token_id
        else:
            token = self.tokenizer.bos_token_id
            if token is None:
                token = config.text_config.bos_token_id
        return [] if token is None else [int(token)]

    def _encode(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    def _with_instruction(self, prefix: str) -> str:
        """The text the language model reads for ``prefix``: InstructBLIP's instruction,
        a space and the prefix; the prefix alone for the other families."""
        if not self.instruction:
            return prefix
        return f"{self.instruction} {prefix}" if prefix else self.instruction

    def _decoder_text(self, prefix: str) -> str:
        """The text the continuation follows in the decoder's (or the causal model's)
        token sequence."""
        if self.encoder_decoder:
            return prefix if self.prefix_placement == "decoder" else ""
        return self._with_instruction(prefix)

    def encoder_ids(self, prefix: str) -> list[int]:
        """The text tokens the language model's encoder reads after the query embeddings,
        with the tokenizer's special tokens (FLAN-T5: a final ``</s>``), as transformers'
        processors tokenize a prompt; encoder-decoder models only.

        Raises:
            ValueError: for a decoder-only language model.
        """
        if not self.encoder_decoder:
            raise ValueError(f"{self.spec} has no encoder: its language model is decoder-only")
        text = (
            self._with_instruction(prefix)
            if self.prefix_placement == "encoder"
            else (self.instruction or "")
        )
        ids: list[int] = self.tokenizer(text)["input_ids"]
        return ids

    def prefix_ids(self, prefix: str) -> list[int]:
        """Start token(s) + the tokens the continuation follows in the (decoder) sequence:
        the prefix (after InstructBLIP's instruction, for a decoder-only model), or nothing
        when an encoder-decoder model reads the prefix in its encoder."""
        if prefix not in self._prefix_cache:
            self._prefix_cache[prefix] = self.start_ids + self._encode(self._decoder_text(prefix))
        return self._prefix_cache[prefix]

    def continuation_ids(self, prefix: str, continuation: str) -> list[int]:
        """The tokens ``continuation`` adds after ``prefix`` (at least one).

        Raises:
            ValueError: if the continuation adds no token.
        """
        key = (prefix, continuation)
        if key not in self._split_cache:
            context = self._decoder_text(prefix)
            head = self._encode(context) if context else []
            whole = self._encode(context + continuation)
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

    def _query_embeds(self, pixels: torch.Tensor) -> torch.Tensor:
        """The projected Q-Former outputs, ``(n_images, num_query_tokens, lm_hidden)``:
        the image as the language model reads it (transformers' ``get_image_features``;
        InstructBLIP's Q-Former also reads the instruction)."""
        model = self.model
        if self.family == "instructblip":
            encoded = self.qformer_tokenizer(self.instruction or "", return_tensors="pt")
            count = pixels.shape[0]
            ids = encoded["input_ids"].to(self.device).expand(count, -1)
            mask = encoded["attention_mask"].to(self.device).expand(count, -1)
            features = model.get_image_features(
                pixels, qformer_input_ids=ids, qformer_attention_mask=mask, return_dict=True
            )
        else:
            features = model.get_image_features(pixels, return_dict=True)
        projected: torch.Tensor = features.pooler_output
        return projected

    def _text_logits(
        self,
        pixels: torch.Tensor,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        image_index: torch.Tensor,
    ) -> torch.Tensor:
        """Logits at the text positions of a decoder-only model, shape
        ``(rows, text_length, vocab)``; row ``r`` is conditioned on image
        ``image_index[r]``. Each image is encoded once."""
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
        # BLIP-2 / InstructBLIP: vision -> Q-Former -> projection, then the language model
        # on [query embeddings; text embeddings] (Li et al., 2023; transformers' forward).
        projected = self._query_embeds(pixels)
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

    def _seq2seq_logits(
        self,
        pixels: torch.Tensor,
        encoder_rows: list[list[int]],
        decoder_ids: torch.Tensor,
        decoder_mask: torch.Tensor,
        image_index: torch.Tensor,
    ) -> torch.Tensor:
        """Decoder logits of an encoder-decoder language model, ``(rows, length, vocab)``.
        ``encoder_rows[i]`` are the encoder's text tokens for image ``i`` (after its query
        embeddings); each is encoded once, and decoder row ``r`` attends to encoder row
        ``image_index[r]``."""
        from transformers.modeling_outputs import BaseModelOutput

        model = self.model
        language_model = model.language_model
        projected = self._query_embeds(pixels)
        width = max(len(ids) for ids in encoder_rows)
        pad = self.tokenizer.pad_token_id
        text_ids = torch.full((len(encoder_rows), width), 0 if pad is None else int(pad))
        text_mask = torch.zeros((len(encoder_rows), width), dtype=torch.long)
        for i, ids in enumerate(encoder_rows):
            text_ids[i, : len(ids)] = torch.tensor(ids)
            text_mask[i, : len(ids)] = 1
        text_embeds = model.get_input_embeddings()(text_ids.to(self.device))
        embeds = torch.cat([projected.to(text_embeds.dtype), text_embeds], dim=1)
        query_mask = torch.ones(projected.shape[:2], dtype=torch.long)
        mask = torch.cat([query_mask, text_mask], dim=1).to(self.device)
        encoded = language_model.get_encoder()(inputs_embeds=embeds, attention_mask=mask)
        out = language_model(
            encoder_outputs=BaseModelOutput(
                last_hidden_state=encoded.last_hidden_state[image_index]
            ),
            attention_mask=mask[image_index],
            decoder_input_ids=decoder_ids,
            decoder_attention_mask=decoder_mask,
        )
        logits: torch.Tensor = out.logits
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
        pixels = self._pixels(images)
        if self.encoder_decoder:
            logits = self._seq2seq_logits(
                pixels,
                [self.encoder_ids(prefix) for prefix in prefixes],
                input_ids.to(self.device),
                attention.to(self.device),
                image_index,
            )
        else:
            logits = self._text_logits(
                pixels, input_ids.to(self.device), attention.to(self.device), image_index
            )
        scores = np.zeros((n_images, len(continuations)), dtype=np.float64)
        for r, (ids, start) in enumerate(rows):
            positions = torch.arange(start - 1, len(ids) - 1, device=self.device)
            targets = torch.tensor(ids[start:], device=self.device)
            # the softmax in float64 over the rows' own positions only
            logprobs = torch.log_softmax(logits[r, positions].double(), dim=-1)
            total = logprobs[torch.arange(len(targets), device=self.device), targets].sum()
            scores[image_rows[r], r // n_images] = total.item()
        return scores

    # -- generation -------------------------------------------------------------------
    @torch.inference_mode()
    def generate_caption_ids(
        self,
        images: Sequence[Image.Image] | Sequence[torch.Tensor] | torch.Tensor,
        max_new_tokens: int,
    ) -> list[list[int]]:
        """The tokens of each image's generated caption (see the module docstring),
        start token(s) and prompt left out, cut before the first end-of-sequence token:
        at most ``max_new_tokens`` each.

        Raises:
            ConfigError: ``max_new_tokens`` is below 1.
        """
        require(max_new_tokens >= 1, "max_new_tokens", f"must be at least 1, not {max_new_tokens}")
        result: list[list[int]] = []
        for chunk in batched(list(range(len(images))), self.batch_size):
            rows: list[Any] = [images[i] for i in chunk]
            output = self._generate_chunk(self._pixels(rows), max_new_tokens)
            result += [self._caption_tokens(row) for row in output.cpu().tolist()]
        return result

    def generate_captions(
        self,
        images: Sequence[Image.Image] | Sequence[torch.Tensor] | torch.Tensor,
        max_new_tokens: int,
    ) -> list[str]:
        """Each image's caption (a :class:`~contrastkit.interfaces.CaptionGenerator`):
        the tokens of :meth:`generate_caption_ids` decoded without special tokens,
        stripped.

        Raises:
            ConfigError: ``max_new_tokens`` is below 1.
        """
        return [
            str(self.tokenizer.decode(ids, skip_special_tokens=True)).strip()
            for ids in self.generate_caption_ids(images, max_new_tokens)
        ]

    def _generate_chunk(self, pixels: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
        """The model's greedy output for a batch of images: every row has the same prompt,
        so nothing is padded. BLIP and GIT return the start token(s) first; the Q-Former
        families' language model returns the new tokens alone (decoder-only) or after the
        decoder's start token (encoder-decoder)."""
        model = self.model
        count = pixels.shape[0]
        options = {"max_new_tokens": max_new_tokens, "do_sample": False, "num_beams": 1}
        if self.family == "blip":  # its generate starts the decoder with [DEC] itself
            output: torch.Tensor = model.generate(pixel_values=pixels, **options)
            return output[:, len(self.start_ids) :]
        if self.family == "git":
            ids = torch.tensor([self.start_ids] * count, device=self.device)
            output = model.generate(
                pixel_values=pixels, input_ids=ids, attention_mask=torch.ones_like(ids), **options
            )
            return output[:, ids.shape[1] :]
        text = self.encoder_ids("") if self.encoder_decoder else self.prefix_ids("")
        text_embeds = model.get_input_embeddings()(torch.tensor([text] * count, device=self.device))
        embeds = torch.cat([self._query_embeds(pixels).to(text_embeds.dtype), text_embeds], dim=1)
        mask = torch.ones(embeds.shape[:2], dtype=torch.long, device=self.device)
        output = model.language_model.generate(inputs_embeds=embeds, attention_mask=mask, **options)
        return output[:, len(self.start_ids) :] if self.encoder_decoder else output

    def _caption_tokens(self, row: list[int]) -> list[int]:
        """``row`` up to its first end-of-sequence token (a finished row is padded):
        BLIP's ``[SEP]`` (what its ``generate`` stops at), the generation config's end
        token(s) of the (language) model otherwise."""
        model = self.model
        if self.family == "blip":
            eos = model.config.text_config.sep_token_id
        elif self.family == "git":
            eos = model.generation_config.eos_token_id
        else:
            eos = model.language_model.generation_config.eos_token_id
        ends = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        for index, token in enumerate(row):
            if token in ends:
                return row[:index]
        return row

    def __repr__(self) -> str:
        return f"CaptioningScorer({self.spec!r}, device={self.device}, dtype={self.dtype})"


def load_captioning(target: str, runtime: ModelRuntime, context: LoadContext) -> CaptioningScorer:
    """Load a ``blip`` / ``git`` / ``blip2`` / ``instructblip`` captioning model from a hub
    id or folder, with the options of :mod:`.caption_options` after a ``?``.

    BLIP-2 and InstructBLIP load with either kind of language model, told apart by the
    saved config (``use_decoder_only_language_model``): OPT / Vicuna continue the prefix;
    FLAN-T5 reads it in its encoder unless ``?prefix=decoder`` (see the module docstring).

    Args:
        target: the part of the spec after the prefix.
        runtime: device, dtype, batch size, and whether missing weights may be fetched.
        context: ``context.prefix`` is the family, one of :data:`FAMILIES`.

    Raises:
        ModelNotFoundError: neither a folder nor cached (says how to get it), or a folder
            or cached copy that does not load (its error chained).
        ConfigError: the config is another kind of model; an option the model does not
            take (``prefix=encoder`` on a decoder-only language model).
    """
    from transformers import (
        AutoTokenizer,
        Blip2ForConditionalGeneration,
        BlipForConditionalGeneration,
        GitForCausalLM,
        InstructBlipForConditionalGeneration,
    )

    family = context.prefix
    spec = f"{family}:{target}"
    if family not in FAMILIES:
        raise ConfigError(f"unknown captioning family {family!r}; use one of {list(FAMILIES)}")
    target, options = split_caption_options(family, target)
    download = runtime.download
    hf_expect_model_type(spec, target, FAMILIES[family], download=download)
    classes: dict[str, type] = {
        "blip": BlipForConditionalGeneration,
        "git": GitForCausalLM,
        "blip2": Blip2ForConditionalGeneration,
        "instructblip": InstructBlipForConditionalGeneration,
    }
    model, _ = hf_load_model(classes[family], target, runtime)
    tokenizer, processor = hf_text_and_image_processors(target, download=download)
    qformer_tokenizer = None
    if family == "instructblip":
        qformer_tokenizer = hf_from_pretrained(
            AutoTokenizer.from_pretrained, target, "Q-Former tokenizer (qformer_tokenizer/)",
            download=download, subfolder="qformer_tokenizer",
        )  # fmt: skip
    parts = LoadedParts(model, tokenizer, processor, qformer_tokenizer)
    return CaptioningScorer(spec, family, parts, runtime, options)
