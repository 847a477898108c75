"""Options a captioning spec may carry after its model: ``TARGET?KEY=VALUE&KEY=VALUE``.

=================  ==========================================================================
option             meaning
=================  ==========================================================================
``prefix``         where the partial caption goes in an encoder-decoder language model
                   (BLIP-2 / InstructBLIP with FLAN-T5): ``encoder`` (the default: the text
                   the model continues is encoder input, the way BLIP-2 was pre-trained with
                   its prefix language-modelling loss, Li et al. 2023 Sec. 3.3) or
                   ``decoder`` (the encoder reads the image alone, the decoder is forced
                   through the partial caption, the way a decoder-only captioner reads it).
                   Decoder-only models (OPT, Vicuna) take ``decoder`` only.
``instruction``    ``instructblip:`` only: the instruction the Q-Former reads and the language
                   model sees before the partial caption (default
                   :data:`DEFAULT_INSTRUCTION`; empty for none). URL-quote it in a spec
                   (``+`` for a space): ``?instruction=A+photo+of``.
=================  ==========================================================================

Examples: ``blip2:Salesforce/blip2-flan-t5-xl?prefix=decoder``,
``instructblip:Salesforce/instructblip-flan-t5-xl?instruction=A+short+image+description:``.

This module imports no torch: the registry checks options when it parses a spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

from contrastkit.errors import ConfigError

__all__ = [
    "DEFAULT_INSTRUCTION",
    "PREFIX_PLACEMENTS",
    "CaptionOptions",
    "split_caption_options",
    "strip_caption_options",
]

#: Where a partial caption may go: encoder input, or forced decoder tokens.
PREFIX_PLACEMENTS = ("encoder", "decoder")

#: The instruction ``instructblip:`` uses unless a spec names another: the first of the
#: image-captioning instruction templates InstructBLIP was tuned with (Dai et al. 2023,
#: Appendix, "A short image caption:").
DEFAULT_INSTRUCTION = "A short image caption:"

#: Families that take each option.
_TAKES = {"prefix": ("blip2", "instructblip"), "instruction": ("instructblip",)}


@dataclass(frozen=True)
class CaptionOptions:
    """The options of one captioning spec.

    Attributes:
        prefix: ``"encoder"``, ``"decoder"``, or ``None`` for the placement the model was
            trained with (encoder for an encoder-decoder language model, decoder for a
            decoder-only one).
        instruction: the InstructBLIP instruction, or ``None`` for
            :data:`DEFAULT_INSTRUCTION` (``""``: no instruction).
    """

    prefix: str | None = None
    instruction: str | None = None


def split_caption_options(family: str, target: str) -> tuple[str, CaptionOptions]:
    """Split ``TARGET?KEY=VALUE&...`` into the model target and its options.

    Args:
        family: the spec prefix (``blip2``, ``instructblip`` ...).
        target: the part of the spec after the prefix.

    Raises:
        ConfigError: an option the family does not take, an unknown option, a repeated one,
            a ``prefix`` other than ``encoder`` / ``decoder``, or no model before ``?``.
    """
    model, sep, query = target.partition("?")
    if not sep:
        return target, CaptionOptions()
    spec = f"{family}:{target}"
    if not model.strip():
        raise ConfigError(f"model spec {spec!r} names no model before '?'")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError as error:
        raise ConfigError(
            f"model spec {spec!r}: options after '?' are KEY=VALUE pairs joined by '&' "
            f"(e.g. ?prefix=decoder): {error}"
        ) from error
    values: dict[str, str] = {}
    for key, value in pairs:
        if key not in _TAKES:
            raise ConfigError(
                f"model spec {spec!r}: unknown option {key!r}; {family}: takes "
                f"{', '.join(k for k, families in _TAKES.items() if family in families) or 'none'}"
            )
        if family not in _TAKES[key]:
            raise ConfigError(
                f"model spec {spec!r}: option {key!r} is for "
                f"{', '.join(f + ':' for f in _TAKES[key])} models, not {family}:"
            )
        if key in values:
            raise ConfigError(f"model spec {spec!r}: option {key!r} is given twice")
        values[key] = value
    prefix = values.get("prefix")
    if prefix is not None and prefix not in PREFIX_PLACEMENTS:
        raise ConfigError(
            f"model spec {spec!r}: option 'prefix' is {prefix!r}; use one of "
            f"{', '.join(PREFIX_PLACEMENTS)}"
        )
    return model.strip(), CaptionOptions(prefix=prefix, instruction=values.get("instruction"))


def check_caption_target(prefix: str, target: str) -> None:
    """The registry's check of a captioning spec's target (its ``?`` options).

    Raises:
        ConfigError: an option the family does not take, or a malformed one.
    """
    split_caption_options(prefix, target)


def strip_caption_options(target: str) -> str:
    """``target`` without its ``?KEY=VALUE`` options (never raises)."""
    return target.partition("?")[0].strip()
