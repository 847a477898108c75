"""Image-text-matching adapters (``blip-itm:``, ``vilt:``): tiny models built from configs,
saved, loaded through the registry, and scored exactly as the transformers model's own
forward pass scores each (image, caption) pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import tiny_models
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.interfaces import CaptionScorer, ImageTextScorer
from contrastkit.models import load_model, load_scorer
from contrastkit.models.itm import MatchingScorer
from contrastkit.models.registry import (
    FAMILY_DOCS,
    KINDS,
    check_dual,
    parse_spec,
    random_weights,
)
from contrastkit.tiny.itm import tiny_blip_itm, tiny_vilt

CAPTIONS = [
    ["My sister is caring.", "My sister is rude.", "My sister is hi."],
    ["The chess player was nerdy.", "The chess player was athletic.", "a"],
    ["He is strong", "she is kind and caring", "the photo of a chess player"],
]


@pytest.fixture(scope="module")
def itm_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("itm")
    return {"blip-itm": tiny_blip_itm(folder), "vilt": tiny_vilt(folder)}


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    """Real photos of different sizes and aspect ratios (ViLT pads them with a mask)."""
    from contrastkit.samples import photo

    return [
        photo("astronaut").resize((48, 40)),
        photo("camera").convert("L").resize((30, 60)),  # grey: converted to RGB
        photo("grace_hopper").resize((40, 40)),
    ]


def _direct(model: MatchingScorer, image: Image.Image, caption: str) -> float:
    """The transformers model's own score of one pair: ``model(**inputs)`` on the
    processor's and tokenizer's output."""
    pixels = model.image_processor(images=[image.convert("RGB")], return_tensors="pt")
    tokens = model.tokenizer([caption], return_tensors="pt")
    with torch.no_grad():
        out = model.model(**tokens, **pixels)
    if model.family == "blip-itm":
        return float(out.itm_score[0, 1])  # the "match" logit, before any softmax
    return float(out.logits[0, 0])


@pytest.mark.parametrize("family", ["blip-itm", "vilt"])
def test_scores_equal_the_models_own_forward_pass(
    family: str, itm_specs: dict[str, str], images: list[Image.Image]
) -> None:
    model = load_model(itm_specs[family], ModelConfig(device="cpu", batch_size=2))
    assert isinstance(model, MatchingScorer) and isinstance(model, CaptionScorer)
    assert not isinstance(model, ImageTextScorer)
    assert model.random_weights and random_weights(itm_specs[family])
    scores = model.caption_scores(images, CAPTIONS)
    assert scores.shape == (3, 3) and scores.dtype == np.float64
    pairs = zip(images, CAPTIONS, strict=True)
    expected = [[_direct(model, image, caption) for caption in row] for image, row in pairs]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    # the scores depend on the caption, and are the same whatever the batch size
    assert len({round(v, 7) for v in scores.ravel()}) > 3
    one = load_model(itm_specs[family], ModelConfig(device="cpu", batch_size=1))
    np.testing.assert_allclose(one.caption_scores(images, CAPTIONS), scores, rtol=1e-5)  # type: ignore[union-attr]
    assert model.input_size == (32, 32)
    assert model.caption_scores([], []).shape == (0, 0)
    with pytest.raises(ValueError, match="one sequence of captions per image"):
        model.caption_scores(images, CAPTIONS[:2])


def test_registry_knows_the_matching_kind(itm_specs: dict[str, str]) -> None:
    for prefix in ("blip-itm", "vilt"):
        assert KINDS[prefix] == "matching"
        assert prefix in FAMILY_DOCS and FAMILY_DOCS[prefix][1].startswith(prefix + ":")
        assert parse_spec(f"{prefix}:org/name").kind == "matching"
    with pytest.raises(ConfigError, match=r"matching model.*probe sets or contrast sets"):
        check_dual(itm_specs["vilt"])
    with pytest.raises(ConfigError, match="no image-text embedding space"):
        load_scorer(itm_specs["blip-itm"], ModelConfig(device="cpu"))


def test_a_captioning_checkpoint_is_not_scored_with_a_random_head(tmp_path: Path) -> None:
    blip = tiny_models.tiny_blip(tmp_path)  # BlipForConditionalGeneration: no ITM head
    folder = blip.removeprefix("blip:")
    with pytest.raises(ConfigError, match="no trained itm_head weights"):
        load_model(f"blip-itm:{folder}", ModelConfig(device="cpu"))
    with pytest.raises(ConfigError, match="holds a 'blip' model, not 'vilt'"):
        load_model(f"vilt:{folder}", ModelConfig(device="cpu"))


def test_a_model_not_on_this_machine_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError, match="hf download contrastkit-test/no-such-itm"):
        load_model("vilt:contrastkit-test/no-such-itm", ModelConfig(device="cpu"))
