"""A tiny OpenCLIP model (real architecture, random weights), saved as a model folder."""

from __future__ import annotations

import json
from pathlib import Path

from contrastkit.tiny.marker import mark_random_weights

__all__ = ["IMAGE_SIZE", "open_clip_config", "tiny_open_clip"]

IMAGE_SIZE = 32
"""Input side of the tiny vision tower, in pixels."""


def open_clip_config() -> dict[str, object]:
    """``open_clip.CLIP`` arguments of a 1.7M-parameter model: ViT (2 layers, width 64,
    patch 8) and text transformer (2 layers, width 32) over OpenCLIP's own BPE vocabulary,
    which ships with the package, so it tokenizes offline."""
    return {
        "embed_dim": 32,
        "vision_cfg": {"image_size": IMAGE_SIZE, "layers": 2, "width": 64, "patch_size": 8},
        "text_cfg": {
            "context_length": 16,
            "vocab_size": 49408,
            "width": 32,
            "heads": 4,
            "layers": 2,
        },
    }


def tiny_open_clip(folder: Path, name: str = "tiny-open-clip", seed: int = 0) -> str:
    """Write an OpenCLIP model folder (``open_clip_config.json`` + weights) under
    ``folder/name`` and return its spec, ``open_clip:FOLDER``. Seeded: the same weights
    every time. The folder carries the random-weights marker
    (:mod:`contrastkit.tiny.marker`), so every report of the model says so."""
    import open_clip
    import torch

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = open_clip_config()
    model = open_clip.CLIP(**config)
    torch.save(model.state_dict(), path / "open_clip_pytorch_model.bin")
    (path / "open_clip_config.json").write_text(
        json.dumps({"model_cfg": config, "preprocess_cfg": {}}), encoding="utf-8"
    )
    mark_random_weights(path, "tiny OpenCLIP model (contrastkit.tiny.clip)")
    return f"open_clip:{path}"
