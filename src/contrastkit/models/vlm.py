"""Generative vision-language models (``vlm:``): LLaVA, LLaVA-NeXT, Qwen2-VL, PaliGemma,
InstructBLIP and any other model transformers' ``AutoModelForImageTextToText`` loads,
with its ``AutoProcessor`` and the model's own chat template. Tiny LLaVA, Qwen2-VL,
PaliGemma and InstructBLIP models (:mod:`contrastkit.tiny.vlm`) check every path below
against a one-sequence, token-by-token computation; LLaVA-NeXT shares LLaVA's path (its
varying number of image crops is zero-padded across the rows of a batch; its
``image_sizes`` say which are real).

The spec is ``vlm:ID_OR_FOLDER[?OPTIONS]`` (:mod:`.vlm_spec`: ``protocol``,
``length_normalise``, ``padding``). The adapter is a
:class:`~contrastkit.interfaces.PronounScorer` (VisoGender resolution, its neutral and
template-flip analyses), a :class:`~contrastkit.interfaces.CaptionScorer`
(``evaluate --task stereotype``: VLStereoSet-style probing), an
:class:`~contrastkit.interfaces.AnswerScorer` and a
:class:`~contrastkit.interfaces.CaptionGenerator` (its greedy answer to
:data:`~.vlm_spec.DESCRIBE_INSTRUCTION`).

Prompts
-------
Every score is a log-probability of assistant-turn tokens in a conversation with one user
turn holding the image and an instruction. With a chat template the conversation is
rendered by it, the assistant turn continued (``continue_final_message``), so each model
sees its own format: LLaVA-1.5 ``USER: <image>\\nINSTRUCTION ASSISTANT: ANSWER``, Qwen2-VL
``<|im_start|>user\\n<|vision_start|>...<|vision_end|>INSTRUCTION<|im_end|>\\n
<|im_start|>assistant\\nANSWER``. Without one:

* PaliGemma (a prefix-LM with no chat template): the processor's own prompt (image tokens,
  BOS, the instruction, ``\\n``; attended bidirectionally), then the answer tokens,
  causal (``token_type_ids`` 1), as PaliGemma is trained and generates;
* any other model (InstructBLIP): the text ``INSTRUCTION\\nANSWER`` through its processor,
  up to the scored part (InstructBLIP's Q-Former reads that text too: the instruction and,
  under the continuation protocol, the caption prefix).

The answer's first token carries the space before it as in generated text (the prompt up
to the answer is cut before trailing spaces).

Protocols
---------
*continuation* (default; VisoGender Sec. 3.4 for captioners): the user turn is the image
and :data:`~.vlm_spec.CONTINUATION_INSTRUCTION` ("Complete the description of the
image."); the assistant turn starts with the caption prefix ("The doctor and"); the score
of a continuation ``w = (w_1..w_m)`` (" his") is
``sum_j log p(w_j | image, instruction, prefix, w_1..w_{j-1})``, teacher-forced in one
batched forward pass and equal to feeding the tokens one at a time. The prefix and
continuation are tokenized together (as running text) and split where the prefix ends.

*multiple-choice* (the A/B/C form of the lmms-eval / VLMEvalKit style harnesses): the user
turn is the image and ::

    Which word completes the description of the image: "The doctor and ___"?
    A. her
    B. their
    C. his
    Answer with the option's letter from the given choices directly.

and the score of an option is the log-probability of its letter at the start of the
assistant turn (the answer position; summed over the letter's tokens where a vocabulary
splits " A" into a space and the letter). :meth:`VLMScorer.continuation_logprobs` lists
the options in the order given; the evaluator shuffles them per case with a seed and
scores every case a second time with the order reversed (:meth:`VLMScorer.multiple_choice_logprobs`;
:mod:`contrastkit.evaluators.tasks.multiple_choice` reports how often each letter wins
whatever it holds, and the result with the options reversed, GenderBias-VL's option-swap
test).

Captions
--------
:meth:`VLMScorer.caption_scores`: the user turn is the image and
:data:`~.vlm_spec.CAPTION_INSTRUCTION` ("Describe the image."), the caption is the
assistant turn; its score is the mean log-probability per caption token
(``length_normalise=true``, default) or the sum (``false``). The mean is the default
because the candidates compared (VLStereoSet's stereotype / anti-stereotype / unrelated
captions, a contrast pair's two captions) differ in length, and a sum penalises every
extra token whatever the image shows.

Batching
--------
Rows (an image with one answer) are padded on the tokenizer's ``padding_side`` or the
``padding`` option; the attention mask hides the padding, position ids are counted over the
real tokens (Qwen2-VL's multimodal rotary positions are computed by the model from the
attention mask and ``mm_token_type_ids``), so a row's scores do not depend on its batch or
padding side. A model whose forward takes no ``position_ids`` is always right-padded.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from contrastkit.config import require
from contrastkit.errors import ConfigError
from contrastkit.interfaces import caption_width
from contrastkit.models.base import ModelRuntime, batched, to_rgb
from contrastkit.models.families import LoadContext
from contrastkit.models.hf import hf_from_pretrained, hf_load_model, hf_model_type
from contrastkit.models.registry import random_weights
from contrastkit.models.vlm_batch import collate_rows
from contrastkit.models.vlm_spec import (
    CAPTION_INSTRUCTION,
    CONTINUATION_INSTRUCTION,
    DESCRIBE_INSTRUCTION,
    LETTERS,
    VLMOptions,
    multiple_choice_question,
    option_order,
    parse_vlm_target,
)

__all__ = [
    "DESCRIBE_INSTRUCTION",
    "LETTERS",
    "VLMScorer",
    "load_vlm",
    "multiple_choice_question",
    "option_order",
]


@dataclass(frozen=True)
class _Row:
    """One sequence to score: the image, the text the processor reads (instruction and
    answer up to the scored part), token ids appended after the processor's, and the
    scored tokens."""

    image: int
    text: str
    extra: tuple[int, ...]
    tail: tuple[int, ...]


class VLMScorer:
    """A :class:`~contrastkit.interfaces.PronounScorer` and
    :class:`~contrastkit.interfaces.CaptionScorer` over a transformers image-text-to-text
    model (module docstring).

    Attributes:
        protocol: ``continuation`` or ``multiple-choice``.
        length_normalise: whether :meth:`caption_scores` is a mean per token.
        padding_side: ``left`` or ``right``.
        random_weights: whether the weights are random (a marked tiny-model folder).
    """

    def __init__(
        self,
        spec: str,
        model: Any,
        processor: Any,
        runtime: ModelRuntime,
        options: VLMOptions | None = None,
    ):
        batch_size = runtime.batch_size
        require(batch_size >= 1, "batch_size", f"must be at least 1, not {batch_size}")
        options = options or VLMOptions()
        self.spec = spec
        self.model = model
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.options = options
        self.protocol = options.protocol
        self.length_normalise = options.length_normalise
        self.model_type = str(model.config.model_type)
        self.chat_template = bool(getattr(processor, "chat_template", None))
        parameters = inspect.signature(model.forward).parameters
        self._takes_positions = "position_ids" in parameters
        self._takes_keep = "logits_to_keep" in parameters
        #: Qwen2-VL and kin compute their multimodal rotary positions themselves.
        self._own_positions = hasattr(getattr(model, "model", model), "get_rope_index")
        side = options.padding or getattr(self.tokenizer, "padding_side", None) or "right"
        self.padding_side = side if self._takes_positions else "right"
        self.device = runtime.device
        self.dtype = runtime.dtype
        self.batch_size = batch_size
        self.pipeline = runtime.pipeline
        self.random_weights = random_weights(spec)
        self._tail_cache: dict[tuple[str, int], tuple[str, tuple[int, ...], tuple[int, ...]]] = {}

    @property
    def score_kind(self) -> str:
        """What :meth:`caption_scores` returns, in words (reports print it)."""
        how = "mean per caption token" if self.length_normalise else "summed over its tokens"
        return (
            f'caption log-likelihood as the answer to "{CAPTION_INSTRUCTION}" ({how}; '
            "higher: better match)"
        )

    # -- prompts and tokens -----------------------------------------------------------
    def render(self, instruction: str, answer: str) -> str:
        """The conversation text (image placeholder unexpanded) ending with ``answer``
        as the start of the assistant turn (module docstring, "Prompts")."""
        if self.chat_template:
            user = [{"type": "image"}, {"type": "text", "text": instruction}]
            messages = [
                {"role": "user", "content": user},
                {"role": "assistant", "content": [{"type": "text", "text": answer}]},
            ]
            text: str = self.processor.apply_chat_template(
                messages, continue_final_message=True, tokenize=False
            )
            return text
        if self.model_type == "paligemma":
            return answer
        return f"{instruction}\n{answer}"

    def _ids(self, text: str, *, special: bool) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=special)["input_ids"]
        return ids

    def split(
        self, instruction: str, answer: str, at: int
    ) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
        """How the answer ``answer`` is scored from character ``at`` on: the text the
        processor reads (with the image), token ids appended after the processor's, and
        the tokens scored (at least one).

        ``answer[:at]`` is part of the conditioning (the caption prefix of the
        continuation protocol); ``answer[at:]`` is scored. The whole text is tokenized
        once and split where the conditioning text's tokens end, so the scored tokens are
        those of running text; when the tokenizer merges across that point, the scored
        part is tokenized on its own.

        Raises:
            ValueError: the scored part has no tokens.
        """
        key = (f"{instruction}\x00{answer}", at)
        if key in self._tail_cache:
            return self._tail_cache[key]
        if self.model_type == "paligemma" and not self.chat_template:
            # the processor builds image tokens + BOS + instruction + "\n" itself
            head_ids = self._ids(answer[:at], special=False)
            whole = self._ids(answer, special=False)
            tail = whole[len(head_ids) :] if whole[: len(head_ids)] == head_ids else []
            if not tail:
                tail = self._ids(answer[at:], special=False)
            image_token = getattr(self.processor, "image_token", "<image>")
            result = (f"{image_token}{instruction}", tuple(head_ids), tuple(tail))
        else:
            text = self.render(instruction, answer)
            start = text.rindex(answer) if answer else len(text)
            head = text[: start + at]
            if at == 0:
                head = head.rstrip(" ")
            head_ids = self._ids(head, special=True)
            whole = self._ids(text, special=True)
            tail = whole[len(head_ids) :] if whole[: len(head_ids)] == head_ids else []
            if not tail:
                tail = self._ids(text[len(head) :], special=False)
            result = (head, (), tuple(tail))
        if not result[2]:
            raise ValueError(f"nothing to score in {answer[at:]!r} after {answer[:at]!r}")
        self._tail_cache[key] = result
        return result

    def _row(self, image: int, instruction: str, answer: str, at: int) -> _Row:
        text, extra, tail = self.split(instruction, answer, at)
        return _Row(image, text, extra, tail)

    # -- the model --------------------------------------------------------------------
    def _encode(self, image: Image.Image, text: str) -> dict[str, torch.Tensor]:
        """The processor's tensors for one image and one text (batch dimension 1)."""
        encoded = self.processor(text=[text], images=[to_rgb(image)], return_tensors="pt")
        return {
            key: value
            for key, value in encoded.items()
            if isinstance(value, torch.Tensor) and key != "labels"  # PaliGemma's training labels
        }

    def row_inputs(self, row: _Row, images: Sequence[Image.Image]) -> dict[str, torch.Tensor]:
        """The unpadded model inputs of ``row`` with every scored token (batch
        dimension 1): what a one-sequence, step-by-step computation feeds the model."""
        encoded = self._encode(images[row.image], row.text)
        return self._extend(encoded, list(row.extra) + list(row.tail))

    def _extend(self, encoded: dict[str, torch.Tensor], ids: list[int]) -> dict[str, torch.Tensor]:
        """``encoded`` with ``ids`` appended to its token sequence (and to the tensors
        that run along it)."""
        length = encoded["input_ids"].shape[1]
        added = torch.tensor([ids], dtype=encoded["input_ids"].dtype)
        out = dict(encoded)
        out["input_ids"] = torch.cat([encoded["input_ids"], added], dim=1)
        for key, value in encoded.items():
            if key == "input_ids" or key.startswith("qformer_") or value.dim() != 2:
                continue
            if value.shape == (1, length):
                fill = 1 if key == "attention_mask" else self._token_type_fill(key)
                extra = torch.full((1, len(ids)), fill, dtype=value.dtype)
                out[key] = torch.cat([value, extra], dim=1)
        return out

    def _token_type_fill(self, key: str) -> int:
        """The value a per-token tensor other than the mask takes on answer tokens:
        PaliGemma's ``token_type_ids`` mark them as the causal suffix (1); every other
        per-token tensor (``mm_token_type_ids``: text) is 0."""
        return 1 if key == "token_type_ids" and self.model_type == "paligemma" else 0

    def _collate(
        self, rows: Sequence[dict[str, torch.Tensor]]
    ) -> tuple[dict[str, torch.Tensor], list[int]]:
        """Pad and stack rows (:func:`.vlm_batch.collate_rows`), with position ids
        counted over the real tokens where the model takes them; also each row's offset
        (padding before it)."""
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else int(pad)
        batch, offsets = collate_rows(rows, pad, left=self.padding_side == "left")
        if self._takes_positions and not self._own_positions:
            mask = batch["attention_mask"]
            positions = mask.long().cumsum(-1) - 1
            if self.model_type == "paligemma":
                positions = positions + 1  # PaliGemma counts positions from 1
            batch["position_ids"] = positions.clamp(min=0)
        return batch, offsets

    def _forward(self, batch: Mapping[str, torch.Tensor], keep: int) -> torch.Tensor:
        """Log-probabilities (float32) of the last ``keep`` positions of every row."""
        inputs: dict[str, torch.Tensor | int] = {}
        for key, value in batch.items():
            value = value.to(self.device)
            if value.is_floating_point():
                value = value.to(self.dtype)
            inputs[key] = value
        if self._takes_keep:
            inputs["logits_to_keep"] = keep
        out = self.model(**inputs, use_cache=False)
        logits: torch.Tensor = out.logits[:, -keep:, :]
        return torch.log_softmax(logits.float(), dim=-1)

    @torch.inference_mode()
    def score_rows(self, rows: Sequence[_Row], images: Sequence[Image.Image]) -> list[list[float]]:
        """The log-probability of each scored token of each row, in batches of
        ``batch_size`` rows (the rows of one image adjacent, so it is processed once)."""
        results: list[list[float]] = []
        encoded: dict[tuple[int, str], dict[str, torch.Tensor]] = {}
        for chunk in batched(list(rows), self.batch_size):
            tails = [list(row.tail) for row in chunk]
            inputs = []
            for row, tail in zip(chunk, tails, strict=True):
                key = (row.image, row.text)
                if key not in encoded:
                    encoded = {key: self._encode(images[row.image], row.text)}
                inputs.append(self._extend(encoded[key], list(row.extra) + tail))
            batch, offsets = self._collate(inputs)
            width = batch["input_ids"].shape[1]
            starts = [
                offsets[r] + inputs[r]["input_ids"].shape[1] - len(tail)
                for r, tail in enumerate(tails)
            ]
            keep = width - min(starts) + 1
            logprobs = self._forward(batch, keep)
            first = width - keep  # padded position of logprobs[:, 0]
            for r, tail in enumerate(tails):
                positions = torch.arange(starts[r] - 1, starts[r] - 1 + len(tail)) - first
                targets = torch.tensor(tail)
                values = logprobs[r, positions.to(self.device), targets.to(self.device)]
                results.append(values.double().cpu().tolist())
        return results

    # -- the protocols ----------------------------------------------------------------
    def continuation_logprobs(
        self,
        images: Sequence[Image.Image],
        prefixes: Sequence[str],
        continuations: Sequence[str],
    ) -> np.ndarray:
        """``log p(continuation | image, prefix)`` under this adapter's protocol, float64,
        shape ``(len(images), len(continuations))``: the summed log-probability of the
        continuation's tokens after the prefix (``continuation``), or the log-probability
        of the letter of each continuation listed in the given order (``multiple-choice``).

        Raises:
            ValueError: ``prefixes`` and ``images`` differ in length.
        """
        if len(prefixes) != len(images):
            raise ValueError(
                f"one prefix per image: {len(images)} images, {len(prefixes)} prefixes"
            )
        if self.protocol == "multiple-choice":
            order = list(range(len(continuations)))
            return self.multiple_choice_logprobs(
                images, prefixes, continuations, [order] * len(images)
            )
        rows = [
            self._row(i, CONTINUATION_INSTRUCTION, prefix + continuation, len(prefix))
            for i, prefix in enumerate(prefixes)
            for continuation in continuations
        ]
        return self._sums(rows, images, len(images), len(continuations), normalise=False)

    def multiple_choice_logprobs(
        self,
        images: Sequence[Image.Image],
        prefixes: Sequence[str],
        continuations: Sequence[str],
        orders: Sequence[Sequence[int]],
    ) -> np.ndarray:
        """The multiple-choice score of each continuation, float64, shape
        ``(len(images), len(continuations))``: for image ``i`` the options are shown in
        the order ``orders[i]`` (letter ``j`` holds ``continuations[orders[i][j]]``) and
        the score of a continuation is the log-probability of its letter as the start of
        the answer (summed over the letter's tokens: one in real vocabularies; a space
        and the letter where a tokenizer has no " A" token).

        Raises:
            ValueError: lengths that differ, or an order that is not a permutation.
        """
        if not len(prefixes) == len(images) == len(orders):
            raise ValueError("one prefix and one option order per image")
        k = len(continuations)
        result = np.zeros((len(images), k), dtype=np.float64)
        if not len(images) or not k:
            return result
        rows = []
        for i, (prefix, order) in enumerate(zip(prefixes, orders, strict=True)):
            if sorted(order) != list(range(k)):
                raise ValueError(f"option order {list(order)} is not a permutation of {k}")
            question = multiple_choice_question(prefix, [continuations[c] for c in order])
            rows += [self._row(i, question, letter, 0) for letter in LETTERS[:k]]
        scores = self.score_rows(rows, images)
        for i, order in enumerate(orders):
            for j, c in enumerate(order):
                result[i, c] = float(np.sum(scores[i * k + j]))
        return result

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        """The log-probability of each of the letters ``A``, ``B`` ... (``k`` of them) as
        the answer to ``instructions[i]`` about ``images[i]``, float64, shape
        ``(len(images), k)``: the multiple-choice protocol's score with a question of the
        caller's (``evaluate --task decisions`` writes its own, listing the options under
        the letters).

        Raises:
            ValueError: ``instructions`` and ``images`` differ in length, or ``k`` is
                not between 1 and the number of letters.
        """
        if len(instructions) != len(images):
            raise ValueError("one instruction per image")
        if not 1 <= k <= len(LETTERS):
            raise ValueError(f"between 1 and {len(LETTERS)} letters, not {k}")
        rows = [
            self._row(i, instruction, letter, 0)
            for i, instruction in enumerate(instructions)
            for letter in LETTERS[:k]
        ]
        return self._sums(rows, images, len(images), k, normalise=False)

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """The model's own answer to ``instructions[i]`` about ``images[i]``: the tokens of
        :meth:`generate_answer_ids` decoded, special tokens dropped, stripped.

        Raises:
            ValueError: ``instructions`` and ``images`` differ in length, or
                ``max_new_tokens`` is below 1.
        """
        return [
            str(self.tokenizer.decode(ids, skip_special_tokens=True)).strip()
            for ids in self.generate_answer_ids(images, instructions, max_new_tokens)
        ]

    @torch.inference_mode()
    def generate_answer_ids(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[list[int]]:
        """The tokens the model generates in answer to ``instructions[i]`` about
        ``images[i]``: greedy decoding (no sampling, one beam) of at most
        ``max_new_tokens`` tokens from the start of the assistant turn (the very text the
        letters of :meth:`letter_logprobs` are scored after), the end token included when
        one is generated. One image at a time, so no answer depends on its batch.

        Raises:
            ValueError: ``instructions`` and ``images`` differ in length, or
                ``max_new_tokens`` is below 1.
        """
        if len(instructions) != len(images):
            raise ValueError("one instruction per image")
        require(max_new_tokens >= 1, "max_new_tokens", f"must be at least 1, not {max_new_tokens}")
        answers = []
        for image, instruction in zip(images, instructions, strict=True):
            text, extra, _ = self.split(instruction, "A", 0)
            encoded = self._encode(image, text)
            if extra:
                encoded = self._extend(encoded, list(extra))
            inputs = {
                key: value.to(self.device).to(self.dtype)
                if value.is_floating_point()
                else value.to(self.device)
                for key, value in encoded.items()
            }
            pad = self.tokenizer.pad_token_id
            if pad is None:
                pad = self.tokenizer.eos_token_id
            output = self.model.generate(
                **inputs, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                pad_token_id=pad,
            )  # fmt: skip
            answers.append(output[0, inputs["input_ids"].shape[1] :].cpu().tolist())
        return answers

    def generate_captions(self, images: Sequence[Image.Image], max_new_tokens: int) -> list[str]:
        """The model's own one-sentence description of each image (a
        :class:`~contrastkit.interfaces.CaptionGenerator`): :meth:`generate_answers` to
        :data:`~.vlm_spec.DESCRIBE_INSTRUCTION`, "Describe the image in one sentence.".

        Raises:
            ConfigError: ``max_new_tokens`` is below 1.
        """
        return self.generate_answers(images, [DESCRIBE_INSTRUCTION] * len(images), max_new_tokens)

    def caption_scores(
        self, images: Sequence[Image.Image], captions: Sequence[Sequence[str]]
    ) -> np.ndarray:
        """The log-likelihood of each image's candidate captions as the answer to
        "Describe the image.", float64, shape ``(len(images), k)``: the mean
        log-probability per caption token (``length_normalise``, default) or the sum.

        Raises:
            ValueError: ``captions`` and ``images`` differ in length, images with
                different numbers of captions, or an empty caption.
        """
        k = caption_width(images, captions)
        rows = [
            self._row(i, CAPTION_INSTRUCTION, caption, 0)
            for i, options in enumerate(captions)
            for caption in options
        ]
        return self._sums(rows, images, len(images), k, normalise=self.length_normalise)

    def _sums(
        self,
        rows: Sequence[_Row],
        images: Sequence[Image.Image],
        n: int,
        k: int,
        *,
        normalise: bool,
    ) -> np.ndarray:
        result = np.zeros((n, k), dtype=np.float64)
        if not rows:
            return result
        for index, values in enumerate(self.score_rows(rows, images)):
            total = float(np.sum(values))
            result[index // k, index % k] = total / len(values) if normalise else total
        return result

    def __repr__(self) -> str:
        return (
            f"VLMScorer({self.spec!r}, protocol={self.protocol}, device={self.device}, "
            f"dtype={self.dtype})"
        )


def load_vlm(target: str, runtime: ModelRuntime, context: LoadContext | None = None) -> VLMScorer:
    """Load a ``vlm:`` model (a Hub id in the local cache, or a folder) with its
    processor.

    Args:
        target: the part of the spec after ``vlm:``, options included.
        runtime: device, dtype, batch size, and whether missing weights may be fetched.

    Raises:
        ModelNotFoundError: neither a folder nor cached (says how to get it; nothing is
            downloaded without ``download``), or files that do not load.
        ConfigError: malformed options, or a model ``AutoModelForImageTextToText`` does
            not load (not an image-text-to-text model), or a processor with no tokenizer.
    """
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    model_id, options = parse_vlm_target(target)
    spec = f"vlm:{target}"
    download = runtime.download
    model_type = hf_model_type(model_id, download=download)
    if model_type not in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        raise ConfigError(
            f"{spec} holds a {model_type!r} model, which is not an image-text-to-text model "
            "(AutoModelForImageTextToText); vlm: loads LLaVA, LLaVA-NeXT, Qwen2-VL, "
            "PaliGemma, InstructBLIP and the like"
        )
    model, _ = hf_load_model(AutoModelForImageTextToText, model_id, runtime)
    processor = hf_from_pretrained(
        AutoProcessor.from_pretrained, model_id, "processor", download=download
    )
    if getattr(processor, "tokenizer", None) is None:
        raise ConfigError(f"{spec}: its processor has no tokenizer")
    return VLMScorer(spec, model, processor, runtime, options)
