"""Editing pipelines of every editor family with the real architecture and random weights.

``StableDiffusionInstructPix2PixPipeline`` from configs: an 8-channel-input UNet, a
2-block VAE, a 2-layer CLIP text encoder and a CLIP BPE tokenizer made from a small
vocabulary, saved with ``save_pretrained`` so tests load it through the same
``from_pretrained`` path a user's model takes. The same for the other editor families
(:mod:`contrastkit.curation.editor_families`): :func:`tiny_sdxl_instruct_pix2pix`,
:func:`tiny_flux_kontext`, :func:`tiny_qwen_image_edit`. Each folder carries the
random-weights marker. Like every tiny builder (:mod:`contrastkit.tiny`), each writes to
``FOLDER/NAME`` (``NAME`` defaults to the model's, e.g. ``tiny-instruct-pix2pix``) and
returns the spec that loads it (``ip2p:FOLDER/tiny-instruct-pix2pix``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from diffusers import (
    AutoencoderKL,
    EulerAncestralDiscreteScheduler,
    StableDiffusionInstructPix2PixPipeline,
    UNet2DConditionModel,
)
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

from contrastkit.tiny.marker import mark_random_weights

#: Words the tiny tokenizer knows (the rest map to <|endoftext|>-style unknowns).
_WORDS = ("make", "this", "person", "more", "feminine", "masculine", "look", "like", "a",
          "woman", "man", "turn", "into", "convert")  # fmt: skip


def _tokenizer(folder: Path) -> CLIPTokenizer:
    folder.mkdir(parents=True, exist_ok=True)
    letters = sorted({c for word in _WORDS for c in word})
    vocab: dict[str, int] = {}
    for token in ["<|startoftext|>", "<|endoftext|>", *letters, *(c + "</w>" for c in letters),
                  *(w + "</w>" for w in _WORDS)]:  # fmt: skip
        vocab.setdefault(token, len(vocab))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return CLIPTokenizer(
        str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=77
    )


def build_instruct_pix2pix(arch: str = "tiny", *, folder: Path) -> Any:
    """An unsaved ``StableDiffusionInstructPix2PixPipeline`` with random weights.

    ``arch``: ``tiny`` (a few thousand parameters, for tests), ``small`` (a CPU
    benchmark size) or ``sd15`` (Stable Diffusion 1.5's UNet with 8 input channels, its
    VAE and a CLIP ViT-L/14 text encoder: InstructPix2Pix's architecture; compute cost
    does not depend on the weights). ``folder`` holds the tokenizer files.
    """
    torch.manual_seed(0)
    sizes = {
        # blocks, layers per block, cross-attention width, head dim, norm groups, VAE blocks
        "tiny": ((8, 16), 1, 16, 2, 4, (8, 16)),
        "small": ((32, 64, 64), 1, 64, 8, 16, (16, 32, 32)),
        "sd15": ((320, 640, 1280, 1280), 2, 768, 8, 32, (128, 256, 512, 512)),
    }
    blocks, layers, cross, heads, groups, vae_blocks = sizes[arch]
    n = len(blocks)
    unet = UNet2DConditionModel(  # type: ignore[no-untyped-call]
        sample_size=64 if arch == "sd15" else 16,
        in_channels=8,
        out_channels=4,
        block_out_channels=blocks,
        layers_per_block=layers,
        down_block_types=("DownBlock2D",) * (n == 2) + ("CrossAttnDownBlock2D",) * (n - 1)
        + ("DownBlock2D",) * (n > 2),
        up_block_types=("UpBlock2D",) * (n > 2) + ("CrossAttnUpBlock2D",) * (n - 1)
        + ("UpBlock2D",) * (n == 2),
        cross_attention_dim=cross,
        attention_head_dim=heads,
        norm_num_groups=groups,
    )  # fmt: skip
    vae = AutoencoderKL(  # type: ignore[no-untyped-call]
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * len(vae_blocks),
        up_block_types=("UpDecoderBlock2D",) * len(vae_blocks),
        block_out_channels=vae_blocks,
        latent_channels=4,
        norm_num_groups=groups,
        layers_per_block=2 if arch == "sd15" else 1,
    )
    tokenizer = _tokenizer(folder / "_tokenizer_src")
    text = {"tiny": (16, 32, 2, 2), "small": (64, 128, 2, 4), "sd15": (768, 3072, 12, 12)}[arch]
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer),
            hidden_size=text[0],
            intermediate_size=text[1],
            num_hidden_layers=text[2],
            num_attention_heads=text[3],
            max_position_embeddings=77,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        )
    )
    return StableDiffusionInstructPix2PixPipeline(  # type: ignore[no-untyped-call]
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(  # type: ignore[no-untyped-call]
            beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear"
        ),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def tiny_instruct_pix2pix(folder: Path, name: str = "tiny-instruct-pix2pix") -> str:
    """Build and save (``save_pretrained``) a tiny InstructPix2Pix pipeline; any multiple of 8
    works as the image size. Written under ``folder/name`` (as every tiny builder); returns its
    editor spec, ``ip2p:FOLDER``."""
    path = Path(folder) / name
    build_instruct_pix2pix("tiny", folder=path).save_pretrained(path)
    mark_random_weights(path, "tiny InstructPix2Pix pipeline (contrastkit.tiny.editor)")
    return f"ip2p:{path}"


def _clip_text_config(vocab_size: int, hidden: int = 16, projection: int | None = None) -> Any:
    values: dict[str, Any] = {
        "vocab_size": vocab_size, "hidden_size": hidden, "intermediate_size": 2 * hidden,
        "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 77,
        "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1,
    }  # fmt: skip
    if projection is not None:
        values["projection_dim"] = projection
    return CLIPTextConfig(**values)


def _t5_tokenizer() -> Any:
    """A T5 (unigram) tokenizer over the letters and :data:`_WORDS` (nothing downloaded)."""
    from transformers import T5Tokenizer

    letters = sorted({c for word in _WORDS for c in word})
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -2.0)]
    pieces += [(f"\u2581{w}", -1.0) for w in _WORDS] + [(c, -3.0) for c in letters]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def tiny_sdxl_instruct_pix2pix(folder: Path, name: str = "tiny-sdxl-instruct-pix2pix") -> str:
    """Build and save a tiny ``StableDiffusionXLInstructPix2PixPipeline`` (random weights): an
    8-channel-input SDXL UNet with ``text_time`` conditioning, two CLIP text encoders (the
    second with a projection) and a 2-block VAE. Written under ``folder/name`` (as every tiny
    builder); returns its editor spec, ``sdxl-ip2p:FOLDER``."""
    path = Path(folder) / name
    from diffusers import StableDiffusionXLInstructPix2PixPipeline
    from transformers import CLIPTextModelWithProjection

    torch.manual_seed(0)
    tokenizer = _tokenizer(path / "_tokenizer_src")
    unet = UNet2DConditionModel(  # type: ignore[no-untyped-call]
        sample_size=16, in_channels=8, out_channels=4, block_out_channels=(8, 16),
        layers_per_block=1, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
        use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=4, transformer_layers_per_block=(1, 1),
        projection_class_embeddings_input_dim=6 * 4 + 16, cross_attention_dim=32,
        norm_num_groups=4,
    )  # fmt: skip
    vae = AutoencoderKL(  # type: ignore[no-untyped-call]
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16),
        latent_channels=4, norm_num_groups=4, layers_per_block=1,
    )  # fmt: skip
    pipeline: Any = StableDiffusionXLInstructPix2PixPipeline(  # type: ignore[no-untyped-call]
        vae=vae,
        text_encoder=CLIPTextModel(_clip_text_config(len(tokenizer))),
        text_encoder_2=CLIPTextModelWithProjection(
            _clip_text_config(len(tokenizer), projection=16)
        ),
        tokenizer=tokenizer,
        tokenizer_2=tokenizer,
        unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(  # type: ignore[no-untyped-call]
            beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear"
        ),
        add_watermarker=False,
    )
    pipeline.save_pretrained(path)
    mark_random_weights(path, "tiny SDXL InstructPix2Pix pipeline (contrastkit.tiny.editor)")
    return f"sdxl-ip2p:{path}"


def tiny_flux_kontext(folder: Path, name: str = "tiny-flux-kontext") -> str:
    """Build and save a tiny ``FluxKontextPipeline`` (random weights): a 1 + 1 block
    ``FluxTransformer2DModel`` with guidance embedding (as FLUX.1 Kontext [dev]), a CLIP and a
    T5 text encoder, and a 4-block VAE (8x down). Written under ``folder/name`` (as every tiny
    builder); returns its editor spec, ``flux-kontext:FOLDER``."""
    path = Path(folder) / name
    from diffusers import (
        FlowMatchEulerDiscreteScheduler,
        FluxKontextPipeline,
        FluxTransformer2DModel,
    )
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(0)
    tokenizer = _tokenizer(path / "_tokenizer_src")
    tokenizer_2 = _t5_tokenizer()
    transformer = FluxTransformer2DModel(  # type: ignore[no-untyped-call]
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
        attention_head_dim=8, num_attention_heads=2, joint_attention_dim=16,
        pooled_projection_dim=16, guidance_embeds=True, axes_dims_rope=(2, 2, 4),
    )  # fmt: skip
    vae = AutoencoderKL(  # type: ignore[no-untyped-call]
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4, block_out_channels=(4, 4, 4, 4),
        latent_channels=4, norm_num_groups=2, layers_per_block=1,
        use_quant_conv=False, use_post_quant_conv=False,
        shift_factor=0.0609, scaling_factor=1.5035,
    )  # fmt: skip
    text_encoder_2 = T5EncoderModel(
        T5Config(
            vocab_size=len(tokenizer_2), d_model=16, d_kv=8, d_ff=32, num_layers=1,
            num_heads=2, relative_attention_num_buckets=8, pad_token_id=0, eos_token_id=1,
        )
    )  # fmt: skip
    pipeline: Any = FluxKontextPipeline(  # type: ignore[no-untyped-call]
        scheduler=FlowMatchEulerDiscreteScheduler(),  # type: ignore[no-untyped-call]
        vae=vae,
        text_encoder=CLIPTextModel(_clip_text_config(len(tokenizer))),
        tokenizer=tokenizer,
        text_encoder_2=text_encoder_2,
        tokenizer_2=tokenizer_2,
        transformer=transformer,
    )
    pipeline.save_pretrained(path)
    mark_random_weights(path, "tiny FLUX.1 Kontext pipeline (contrastkit.tiny.editor)")
    return f"flux-kontext:{path}"


def tiny_qwen_image_edit(folder: Path, name: str = "tiny-qwen-image-edit") -> str:
    """Build and save a tiny ``QwenImageEditPipeline`` (random weights): a 1-layer
    ``QwenImageTransformer2DModel``, a 3-level Qwen-Image VAE (8x down) and a tiny Qwen2.5-VL
    text encoder (a 1-layer vision tower, a 1-layer language model) with a ``Qwen2VLProcessor``
    over the byte-level BPE of :mod:`contrastkit.tiny.tokenizers` (the image processor resizes
    to at most 64x64 pixels, so the prompt image gives a few tokens). The pipeline encodes its
    input image at about 1024x1024 whatever the output size (Qwen-Image-Edit's conditioning
    size, not a setting), so one call takes seconds on a CPU even with these sizes. Written
    under ``folder/name`` (as every tiny builder); returns its editor spec,
    ``qwen-image-edit:FOLDER``."""
    path = Path(folder) / name
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImageEditPipeline,
        QwenImageTransformer2DModel,
    )
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    from contrastkit.tiny.tokenizers import byte_bpe_tokenizer

    torch.manual_seed(0)
    path.mkdir(parents=True, exist_ok=True)
    specials = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>", "<|endoftext|>")  # fmt: skip
    (path / "_tokenizer_src").mkdir(parents=True, exist_ok=True)
    tokenizer = byte_bpe_tokenizer(path / "_tokenizer_src", specials, eos_token="<|im_end|>")
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in specials}
    qwen_processor: Any = Qwen2VLProcessor
    processor = qwen_processor(
        image_processor=Qwen2VLImageProcessor(
            size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64},
            patch_size=8, temporal_patch_size=2, merge_size=2,
        ),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(patch_size=8, temporal_patch_size=2, merge_size=2),
    )  # fmt: skip
    config = Qwen2_5_VLConfig(
        vision_config={
            "depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2,
            "out_hidden_size": 32, "patch_size": 8, "spatial_merge_size": 2,
            "temporal_patch_size": 2, "fullatt_block_indexes": [0], "window_size": 32,
        },
        text_config={
            "vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 37,
            "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 2048, "pad_token_id": 0,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [2, 1, 1]},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )  # fmt: skip
    text_encoder: Any = Qwen2_5_VLForConditionalGeneration(config)
    text_encoder.eval()
    transformer = QwenImageTransformer2DModel(  # type: ignore[no-untyped-call]
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(2, 2, 4),
    )  # fmt: skip
    vae = AutoencoderKLQwenImage(  # type: ignore[no-untyped-call]
        base_dim=2, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
        temperal_downsample=[False, True, True], latents_mean=[0.0] * 4, latents_std=[1.0] * 4,
    )  # fmt: skip
    pipeline: Any = QwenImageEditPipeline(  # type: ignore[no-untyped-call]
        scheduler=FlowMatchEulerDiscreteScheduler(),  # type: ignore[no-untyped-call]
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        processor=processor,
        transformer=transformer,
    )
    pipeline.save_pretrained(path)
    mark_random_weights(path, "tiny Qwen-Image-Edit pipeline (contrastkit.tiny.editor)")
    return f"qwen-image-edit:{path}"
