"""InstructPix2Pix pipelines with the real architecture and random weights.

``StableDiffusionInstructPix2PixPipeline`` from configs: an 8-channel-input UNet, a
2-block VAE, a 2-layer CLIP text encoder and a CLIP BPE tokenizer made from a small
vocabulary, saved with ``save_pretrained`` so tests load it through the same
``from_pretrained`` path a user's model takes.
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


def tiny_instruct_pix2pix(folder: Path) -> Path:
    """Build, save (``save_pretrained``) and return the folder of a tiny InstructPix2Pix
    pipeline; any multiple of 8 works as the image size."""
    build_instruct_pix2pix("tiny", folder=folder).save_pretrained(folder)
    mark_random_weights(folder, "tiny InstructPix2Pix pipeline (contrastkit.tiny.editor)")
    return folder
