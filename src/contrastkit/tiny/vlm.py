"""Tiny generative vision-language models (real architectures, random weights) for the
``vlm:`` adapter (:mod:`contrastkit.models.vlm`).

* :func:`tiny_llava`: a ``LlavaForConditionalGeneration`` (a 1-layer CLIP vision tower, a
  2-layer Llama text model) with a ``LlavaProcessor`` carrying LLaVA-1.5's chat template
  (``USER: <image>\\n... ASSISTANT: ...``) and an ``<image>`` token;
* :func:`tiny_qwen2_vl`: a ``Qwen2VLForConditionalGeneration`` (a 1-layer vision
  transformer with 2x2 patch merging, a 2-layer Qwen2 text model with multimodal rotary
  positions) with a ``Qwen2VLProcessor`` carrying Qwen2-VL's ChatML template and its
  ``<|vision_start|><|image_pad|>...<|vision_end|>`` image tokens;
* :func:`tiny_paligemma`: a ``PaliGemmaForConditionalGeneration`` (a 1-layer SigLIP
  vision tower, a 2-layer Gemma text model) with a ``PaliGemmaProcessor``: no chat
  template, the prefix-LM prompt (image tokens, BOS, instruction, a newline);
* :func:`tiny_instructblip`: an ``InstructBlipForConditionalGeneration`` (a 1-layer ViT,
  a 1-layer Q-Former with 4 queries, a 2-layer Llama text model) with an
  ``InstructBlipProcessor``: no chat template, no ``position_ids`` (right padding only).

All use the byte-level BPE tokenizer of :mod:`contrastkit.tiny.tokenizers` (so nothing is
downloaded) in which
" his" and " her" are single tokens and " their" is three (``Ġthe`` + ``i`` + ``r``), so
multi-token continuations are exercised. Each folder is saved with ``save_pretrained``,
carries the random-weights marker (:mod:`contrastkit.tiny.marker`) and loads as
``vlm:FOLDER``. Their scores mean nothing: they are pipeline checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contrastkit.tiny.configs import vision_config
from contrastkit.tiny.marker import mark_random_weights
from contrastkit.tiny.tokenizers import byte_bpe_tokenizer

__all__ = [
    "LLAVA_CHAT_TEMPLATE",
    "QWEN2_VL_CHAT_TEMPLATE",
    "tiny_instructblip",
    "tiny_llava",
    "tiny_paligemma",
    "tiny_qwen2_vl",
]

#: LLaVA-1.5's chat template (as llava-hf/llava-1.5-7b-hf ships it): images first, then text.
LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ message['role'].upper() + ': '}}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' '}}{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)

#: Qwen2-VL's ChatML template (the image part of Qwen/Qwen2-VL-2B-Instruct's).
QWEN2_VL_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _vision_config(**extra: Any) -> dict[str, Any]:
    """The 1-layer, 16-wide vision tower of LLaVA, PaliGemma and InstructBLIP (32 px
    images, 8 px patches); ``extra`` keys added."""
    return vision_config(hidden_size=16, layers=1, heads=2, intermediate_size=24, **extra)


def _text_config(vocab_size: int, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
        "pad_token_id": 0,
        **extra,
    }


def _save(path: Path, model: Any, processor: Any, name: str) -> str:
    """Save ``model`` (in eval mode) and its processor into ``path``, mark the folder as
    random weights, and return its spec ``vlm:FOLDER``."""
    model.eval()
    model.save_pretrained(path)
    processor.save_pretrained(path)
    mark_random_weights(path, f"tiny {name} model (contrastkit.tiny.vlm)")
    return f"vlm:{path}"


def tiny_llava(folder: Path, name: str = "tiny-llava", seed: int = 0) -> str:
    """Write a tiny LLaVA model folder under ``folder/name``; return its spec
    ``vlm:FOLDER``. The vision tower sees 32 px images in 8 px patches: 16 image tokens
    per image (the CLS token dropped, ``vision_feature_select_strategy="default"``)."""
    import torch
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_bpe_tokenizer(path, ("<image>",), bos_token="</s>", eos_token="</s>")
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    )
    llava_processor: Any = LlavaProcessor
    processor = llava_processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_CHAT_TEMPLATE,
    )
    torch.manual_seed(seed)
    config = LlavaConfig(
        vision_config=_vision_config(model_type="clip_vision_model", projection_dim=16),
        text_config={
            "model_type": "llama",
            **_text_config(len(tokenizer), bos_token_id=1, eos_token_id=1),
        },
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        projector_hidden_act="gelu",
    )
    return _save(path, LlavaForConditionalGeneration(config), processor, "LLaVA")


def tiny_qwen2_vl(folder: Path, name: str = "tiny-qwen2-vl", seed: int = 0) -> str:
    """Write a tiny Qwen2-VL model folder under ``folder/name``; return its spec
    ``vlm:FOLDER``. Images are resized to between 32x32 and 64x64 pixels (multiples of
    16: 8 px patches merged 2x2), so an image gives 4 to 16 image tokens depending on its
    aspect ratio, and rows of a batch really have different lengths."""
    import torch
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    specials = (
        "<|im_start|>",
        "<|im_end|>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
        "<|video_pad|>",
        "<|endoftext|>",
    )
    tokenizer = byte_bpe_tokenizer(path, specials, eos_token="<|im_end|>")
    image_processor = Qwen2VLImageProcessor(
        size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64},
        patch_size=8,
        temporal_patch_size=2,
        merge_size=2,
    )
    video_processor = Qwen2VLVideoProcessor(patch_size=8, temporal_patch_size=2, merge_size=2)
    qwen_processor: Any = Qwen2VLProcessor
    processor = qwen_processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=QWEN2_VL_CHAT_TEMPLATE,
    )
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in specials}
    torch.manual_seed(seed)
    config = Qwen2VLConfig(
        vision_config={
            "depth": 1,
            "embed_dim": 16,
            "hidden_size": 32,
            "mlp_ratio": 2,
            "num_heads": 2,
            "patch_size": 8,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        text_config=_text_config(
            len(tokenizer),
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 1, 1],
            },
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    return _save(path, Qwen2VLForConditionalGeneration(config), processor, "Qwen2-VL")


def tiny_paligemma(folder: Path, name: str = "tiny-paligemma", seed: int = 0) -> str:
    """Write a tiny PaliGemma model folder under ``folder/name``; return its spec
    ``vlm:FOLDER``. 32 px images in 8 px patches: 16 image tokens."""
    import torch
    from transformers import (
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
    )

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_bpe_tokenizer(path, (), bos_token="</s>", eos_token="</s>")
    image_processor: Any = SiglipImageProcessor(size={"height": 32, "width": 32})
    image_processor.image_seq_length = 16
    paligemma_processor: Any = PaliGemmaProcessor
    processor = paligemma_processor(image_processor=image_processor, tokenizer=tokenizer)
    torch.manual_seed(seed)
    config = PaliGemmaConfig(
        vision_config=_vision_config(model_type="siglip_vision_model", projection_dim=16),
        text_config={
            "model_type": "gemma",
            **_text_config(len(processor.tokenizer), bos_token_id=1, eos_token_id=1, head_dim=8),
        },
        image_token_index=processor.image_token_id,
        projection_dim=32,
    )
    text_config: Any = config.text_config
    text_config.num_image_tokens = 16
    return _save(path, PaliGemmaForConditionalGeneration(config), processor, "PaliGemma")


def tiny_instructblip(folder: Path, name: str = "tiny-instructblip", seed: int = 0) -> str:
    """Write a tiny InstructBLIP model folder under ``folder/name``; return its spec
    ``vlm:FOLDER``. The Q-Former's 4 query outputs are the image tokens."""
    import torch
    from transformers import (
        BlipImageProcessor,
        InstructBlipConfig,
        InstructBlipForConditionalGeneration,
        InstructBlipProcessor,
    )

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = byte_bpe_tokenizer(path, (), bos_token="</s>", eos_token="</s>")
    (path / "qformer_tokenizer").mkdir(exist_ok=True)
    qformer_tokenizer = byte_bpe_tokenizer(
        path / "qformer_tokenizer", (), bos_token="</s>", eos_token="</s>"
    )
    instructblip_processor: Any = InstructBlipProcessor
    processor = instructblip_processor(
        image_processor=BlipImageProcessor(size={"height": 32, "width": 32}),
        tokenizer=tokenizer,
        qformer_tokenizer=qformer_tokenizer,
        num_query_tokens=4,
    )
    torch.manual_seed(seed)
    config = InstructBlipConfig(
        vision_config=_vision_config(),
        qformer_config={
            "vocab_size": len(qformer_tokenizer),
            "hidden_size": 16,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 24,
            "encoder_hidden_size": 16,
            "max_position_embeddings": 256,
            "pad_token_id": 0,
        },
        text_config={
            "model_type": "llama",
            **_text_config(len(processor.tokenizer), bos_token_id=1, eos_token_id=1),
        },
        num_query_tokens=4,
        image_token_index=processor.tokenizer.convert_tokens_to_ids("<image>"),
    )
    return _save(path, InstructBlipForConditionalGeneration(config), processor, "InstructBLIP")
