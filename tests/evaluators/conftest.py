"""Fixtures for the evaluator tests: tiny saved models (built once per session) and real
photos that ship with matplotlib and scikit-image."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import tiny_models
from eval_data import grace_hopper, write_small_dataset


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def tiny_specs(model_dir: Path, tiny_clip_spec: str) -> dict[str, str]:
    """Spec strings of every tiny model, by family (OpenCLIP: the session's one model)."""
    return {
        "open_clip": tiny_clip_spec,
        "open_clip_checkpoint": tiny_models.tiny_open_clip_checkpoint(model_dir),
        "hf_clip": tiny_models.tiny_hf_clip(model_dir),
        "siglip": tiny_models.tiny_siglip(model_dir),
        "blip": tiny_models.tiny_blip(model_dir),
        "git": tiny_models.tiny_git(model_dir),
        "blip2": tiny_models.tiny_blip2(model_dir),
    }


@pytest.fixture(scope="session")
def photos() -> list[Image.Image]:
    """Three different real photos (one RGB, one grey converted by the adapter, one crop)."""
    from skimage import data

    astronaut = Image.fromarray(data.astronaut())
    camera = Image.fromarray(data.camera())  # mode "L": adapters must convert it
    hopper = grace_hopper()
    return [hopper, astronaut, camera, hopper.crop((100, 100, 400, 400))]


@pytest.fixture(scope="session")
def noise_image() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (40, 60, 3), dtype=np.uint8))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """The small VisoGender set of ``eval_data`` (OP and OO TSVs, local images)."""
    folder = tmp_path / "data"
    write_small_dataset(folder)
    return folder
