"""A tiny InstructPix2Pix pipeline with the real architecture and random weights.

``StableDiffusionInstructPix2PixPipeline`` from configs: an 8-channel-input UNet, a
2-block VAE, a 2-layer CLIP text encoder and a CLIP BPE tokenizer made from a small
vocabulary, saved with ``save_pretrained`` so tests load it through the same
``from_pretrained`` path a user's model takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from diffusers import (
    AutoencoderKL,
    EulerAncestralDiscreteScheduler,
    StableDiffusionInstructPix2PixPipeline,
    UNet2DConditionModel,
)
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

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


def tiny_instruct_pix2pix(folder: Path, *, sample_size: int = 16) -> Path:
    """Build, save and return the folder of a tiny InstructPix2Pix pipeline.

    ``sample_size`` is the latent size; images are ``8 * sample_size`` pixels wide... but
    the pipeline accepts any multiple of 8 (the VAE downsamples by 2 with two blocks).
    """
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=sample_size,
        in_channels=8,
        out_channels=4,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=2,
        norm_num_groups=4,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        latent_channels=4,
        norm_num_groups=4,
        layers_per_block=1,
    )
    tokenizer = _tokenizer(folder / "_tokenizer_src")
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=77,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        )
    )
    pipe = StableDiffusionInstructPix2PixPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(
            beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear"
        ),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder)
    return folder
