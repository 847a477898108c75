"""The ``vlm:`` spec and its options, parsed without torch (the registry, the reports and
the command line read them before, or without, loading a model).

A spec is ``vlm:ID_OR_FOLDER`` optionally followed by ``?`` and ``&``-separated options::

    vlm:llava-hf/llava-1.5-7b-hf
    vlm:Qwen/Qwen2-VL-2B-Instruct?protocol=multiple-choice
    vlm:./my-llava?protocol=continuation&padding=left&length_normalise=false

* ``protocol``: ``continuation`` (default) or ``multiple-choice``
  (:mod:`contrastkit.models.vlm` describes both);
* ``length_normalise``: ``true`` (default) or ``false``: whether a caption's score
  (:meth:`~contrastkit.models.vlm.VLMScorer.caption_scores`) is the mean
  log-probability per caption token or the sum;
* ``padding``: ``left`` or ``right``: the side batched rows are padded on (default: the
  tokenizer's own ``padding_side``); the scores do not depend on it.

The options are part of the spec, so two protocols of one model are two models to the
evaluator: their own output folders, raw records that are never mixed on resume, and each
report naming the protocol it ran.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypedDict

import numpy as np

from contrastkit.errors import ConfigError

__all__ = [
    "CAPTION_INSTRUCTION",
    "CONTINUATION_INSTRUCTION",
    "DESCRIBE_INSTRUCTION",
    "LETTERS",
    "MC_ANSWER_INSTRUCTION",
    "VLM_PROTOCOLS",
    "VLMMetadata",
    "VLMOptions",
    "multiple_choice_question",
    "option_order",
    "parse_vlm_target",
    "vlm_metadata",
]

#: The scoring protocols of a generative VLM.
VLM_PROTOCOLS = ("continuation", "multiple-choice")

#: The user turn of the continuation protocol (with the image).
CONTINUATION_INSTRUCTION = "Complete the description of the image."

#: The user turn under which a caption's log-likelihood is read (``caption_scores``).
CAPTION_INSTRUCTION = "Describe the image."

#: The user turn a VLM's own caption answers (``generate_captions``, the ``descriptions``
#: capability): one sentence, so that its length is like a captioner's.
DESCRIBE_INSTRUCTION = "Describe the image in one sentence."

#: The last line of a multiple-choice question: LLaVA-1.5's multiple-choice prompt
#: (Liu et al. 2024, "Improved Baselines with Visual Instruction Tuning", Tab. 7), which
#: the evaluation harnesses (lmms-eval, VLMEvalKit) use for lettered options too.
MC_ANSWER_INSTRUCTION = "Answer with the option's letter from the given choices directly."

#: Option letters of the multiple-choice protocol.
LETTERS = "ABCDEFGH"


def multiple_choice_question(prefix: str, options: Sequence[str]) -> str:
    """The user-turn text of the multiple-choice protocol (module docstring): ``options``
    (" his", " her", " their") listed in the given order under letters A, B, C ...

    Raises:
        ValueError: more options than :data:`LETTERS`.
    """
    if len(options) > len(LETTERS):
        raise ValueError(f"at most {len(LETTERS)} options, not {len(options)}")
    lines = [f'Which word completes the description of the image: "{prefix.strip()} ___"?']
    lines += [
        f"{letter}. {option.strip()}" for letter, option in zip(LETTERS, options, strict=False)
    ]
    lines.append(MC_ANSWER_INSTRUCTION)
    return "\n".join(lines)


def option_order(key: str, n_options: int, seed: int) -> list[int]:
    """The seeded order in which the options of case ``key`` are shown: a permutation of
    ``range(n_options)`` that depends only on ``seed`` and ``key`` (stable across runs,
    batches and machines)."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    return [int(i) for i in rng.permutation(n_options)]


_TRUE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclass(frozen=True)
class VLMOptions:
    """The options of a ``vlm:`` spec (module docstring).

    Attributes:
        protocol: one of :data:`VLM_PROTOCOLS`.
        length_normalise: mean (``True``) or summed (``False``) caption log-probability.
        padding: ``left``, ``right`` or ``None`` (the tokenizer's side).
    """

    protocol: str = "continuation"
    length_normalise: bool = True
    padding: str | None = None


def check_target(prefix: str, target: str) -> None:
    """The registry's check of a ``vlm:`` target: its options (protocol, ...), before
    anything loads.

    Raises:
        ConfigError: see :func:`parse_vlm_target`.
    """
    parse_vlm_target(target)


def parse_vlm_target(target: str) -> tuple[str, VLMOptions]:
    """Split the part of a ``vlm:`` spec after the prefix into the model (a Hub id or a
    folder) and its :class:`VLMOptions`.

    Raises:
        ConfigError: an empty model, an option that is not ``KEY=VALUE``, an unknown
            option, or a value it does not take.
    """
    model, _, query = target.strip().partition("?")
    model = model.strip()
    if not model:
        raise ConfigError(f"model spec vlm:{target} names no model before '?'")
    options = VLMOptions()
    for part in filter(None, query.split("&")):
        key, sep, value = part.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        where = f"vlm:{target}: option {part!r}"
        if not sep:
            raise ConfigError(f"{where} must be KEY=VALUE")
        if key == "protocol":
            if value not in VLM_PROTOCOLS:
                raise ConfigError(f"{where}: protocol must be one of {', '.join(VLM_PROTOCOLS)}")
            options = replace(options, protocol=value)
        elif key in ("length_normalise", "length_normalize"):
            if value.lower() not in _TRUE:
                raise ConfigError(f"{where}: length_normalise must be true or false")
            options = replace(options, length_normalise=_TRUE[value.lower()])
        elif key == "padding":
            if value not in ("left", "right"):
                raise ConfigError(f"{where}: padding must be left or right")
            options = replace(options, padding=value)
        else:
            raise ConfigError(
                f"{where}: unknown option {key!r}; use protocol, length_normalise or padding"
            )
    return model, options


class VLMMetadata(TypedDict):
    """What a report records about a ``vlm:`` spec's scoring (:func:`vlm_metadata`)."""

    model: str
    protocol: str
    continuation_instruction: str
    multiple_choice_answer_instruction: str
    caption_instruction: str
    length_normalise: bool
    padding: str


def vlm_metadata(spec: str) -> VLMMetadata | None:
    """What a report records about a ``vlm:`` spec's scoring: the protocol, the fixed
    instructions, length normalisation and padding; ``None`` for any other spec (or a
    malformed one)."""
    prefix, _, target = spec.strip().partition(":")
    if prefix != "vlm":
        return None
    try:
        model, options = parse_vlm_target(target)
    except ConfigError:
        return None
    return {
        "model": model,
        "protocol": options.protocol,
        "continuation_instruction": CONTINUATION_INSTRUCTION,
        "multiple_choice_answer_instruction": MC_ANSWER_INSTRUCTION,
        "caption_instruction": CAPTION_INSTRUCTION,
        "length_normalise": options.length_normalise,
        "padding": options.padding or "tokenizer default",
    }
