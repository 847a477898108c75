"""Config pieces the tiny transformers builders share (:mod:`contrastkit.tiny.vlm`,
:mod:`contrastkit.tiny.itm` and the test-only builders in ``tests/tiny_models.py``)."""

from __future__ import annotations

from typing import Any

__all__ = ["IMAGE_SIZE", "blip_text_config", "vision_config"]

IMAGE_SIZE = 32
"""Input side of the tiny vision towers, in pixels."""


def vision_config(
    hidden_size: int = 32,
    layers: int = 2,
    heads: int = 4,
    intermediate_size: int = 37,
    **extra: Any,
) -> dict[str, Any]:
    """A ViT vision-tower config: ``layers`` layers of ``heads`` heads, 8 px patches on
    :data:`IMAGE_SIZE` px images (16 patches); ``extra`` keys (``model_type``,
    ``projection_dim``, ...) added."""
    return {
        "hidden_size": hidden_size,
        "intermediate_size": intermediate_size,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "image_size": IMAGE_SIZE,
        "patch_size": 8,
        **extra,
    }


def blip_text_config(vocab_size: int, bos_token_id: int) -> dict[str, int]:
    """A two-layer BLIP text-model config over a word-piece vocabulary (``[PAD]`` 0,
    ``[SEP]`` 3 as EOS and separator), cross-attending a 32-wide vision tower."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "encoder_hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": 32,
        "bos_token_id": bos_token_id,
        "eos_token_id": 3,
        "sep_token_id": 3,
        "pad_token_id": 0,
    }
