"""Prompt-array debiased CLIP (Berg et al. 2022) from a local checkpoint: learned token
embeddings put in front of every text of an OpenCLIP base, never downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.models import load_scorer, parse_spec
from contrastkit.models.debias import PUBLISHED, parse_debias_spec
from contrastkit.models.registry import random_weights
from contrastkit.pipeline import embed_images
from eval_data import grace_hopper, write_small_dataset

CPU = ModelConfig(device="cpu", batch_size=4)
PUBLISHED_FILE = PUBLISHED["ViT-B/16-gender"].file
TEXTS = [
    "a photo of a doctor",
    "the nurse and her patient",
    # longer than the tiny model's 16-token context once 2 prompt tokens go in front:
    # its end-of-text token falls off, and the feature is read at the last position
    "one two three four five six seven eight nine ten eleven twelve thirteen",
]


@pytest.fixture(scope="module")
def tiny(tiny_clip_spec: str) -> str:
    """The session's tiny OpenCLIP model (tests/conftest.py)."""
    return tiny_clip_spec


def _prompts(folder: Path, tokens: int, width: int = 32, name: str = "prompts.pt") -> Path:
    """A checkpoint in the published format: ``torch.save`` of a ``(tokens, width)``
    tensor (the authors' ``*_embeddings.pt``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    torch.save(torch.randn(tokens, width, generator=torch.Generator().manual_seed(7)), path)
    return path


def _reference(base: object, prompts: torch.Tensor, texts: list[str]) -> np.ndarray:
    """Berg et al.'s "prepend" text encoding written out step by step on the base model's
    modules: a zero ``(batch, L, width)`` input, the prompts in positions ``0..n-1``, the
    text's token + positional embeddings of positions ``0..L-n-1`` after them, and the
    feature at the end-of-text token's shifted position."""
    model = base.model  # type: ignore[attr-defined]
    tokens = base.tokenizer(texts)  # type: ignore[attr-defined]
    n, length = prompts.shape[0], tokens.shape[1]
    with torch.no_grad():
        raw = model.token_embedding(tokens) + model.positional_embedding
        features = torch.zeros(len(texts), length, prompts.shape[1])
        features[:, :n] = prompts
        features[:, n:] = raw[:, : length - n]
        out = model.ln_final(model.transformer(features, attn_mask=model.attn_mask))
        rows = []
        for i, end in enumerate(tokens.argmax(dim=-1).tolist()):
            rows.append(out[i, min(end + n, length - 1)] @ model.text_projection)
        vectors = torch.stack(rows).numpy()
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_texts_are_encoded_behind_the_prompt_array(tiny: str, tmp_path: Path) -> None:
    path = _prompts(tmp_path / "ckpt", 2)
    spec = f"debias-clip:{path}:{tiny}"
    assert parse_spec(spec).kind == "dual"
    scorer = load_scorer(spec, CPU)
    base = load_scorer(tiny, CPU)
    assert scorer.spec == spec
    prompts = torch.load(path, weights_only=True)
    debiased = scorer.encode_texts(TEXTS)
    np.testing.assert_allclose(debiased, _reference(base, prompts, TEXTS), atol=1e-5)
    assert np.abs(debiased - base.encode_texts(TEXTS)).max() > 1e-2  # the prompts matter
    # images are the base model's, through the same pipeline
    photos = [grace_hopper(), grace_hopper().rotate(90)]
    np.testing.assert_allclose(embed_images(scorer, photos), embed_images(base, photos), atol=1e-6)
    # the base's random weights are carried (the checkpoint's folder has no marker)
    assert scorer.random_weights is True  # type: ignore[attr-defined]
    assert random_weights(spec)


def test_an_empty_prompt_array_is_the_base_model(tiny: str, tmp_path: Path) -> None:
    path = _prompts(tmp_path, 0)
    scorer = load_scorer(f"debias-clip:{path}:{tiny}", CPU)
    base = load_scorer(tiny, CPU)
    np.testing.assert_allclose(scorer.encode_texts(TEXTS), base.encode_texts(TEXTS), atol=1e-6)


def test_a_state_dict_and_the_published_file_name_are_recognised(tiny: str, tmp_path: Path) -> None:
    state = tmp_path / "state.pt"
    torch.save({"debias_tokens.weight": torch.ones(2, 32)}, state)
    scorer = load_scorer(f"debias-clip:{state}:{tiny}", CPU)
    assert scorer.prompts.shape == (2, 32)  # type: ignore[attr-defined]
    published = _prompts(tmp_path / "copy", 2, name=PUBLISHED_FILE)
    parsed = parse_debias_spec(f"debias-clip:{published}")
    assert parsed.base == "open_clip:ViT-B-16/openai" and parsed.published is not None
    assert parse_debias_spec("debias-clip:ViT-B/16-gender").base == "open_clip:ViT-B-16/openai"
    load_scorer(f"debias-clip:{published}:{tiny}", CPU)  # 2 tokens, as published
    wrong = _prompts(tmp_path / "three", 3, name=PUBLISHED_FILE)
    with pytest.raises(ConfigError, match="published checkpoint 2"):
        load_scorer(f"debias-clip:{wrong}:{tiny}", CPU)


def test_a_missing_checkpoint_says_where_it_looked_and_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ModelNotFoundError) as caught:
        load_scorer("debias-clip:ViT-B/16-gender", CPU)
    message = str(caught.value)
    assert str(tmp_path / ".cache" / "debias_clip" / PUBLISHED_FILE) in message
    assert PUBLISHED["ViT-B/16-gender"].url in message
    with pytest.raises(ModelNotFoundError, match="not found"):
        load_scorer(f"debias-clip:{tmp_path / 'none.pt'}:open_clip:ViT-B-32/random", CPU)
    data = tmp_path / "data"
    write_small_dataset(data)
    result = CliRunner().invoke(
        app,
        ["evaluate", "--data", str(data), "--out", str(tmp_path / "o"), "--device", "cpu",
         "--model", "debias-clip:ViT-B/16-gender"],
    )  # fmt: skip
    assert result.exit_code == 2 and "not in the local cache" in result.stderr


def test_checkpoints_that_do_not_fit_are_refused(tiny: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="base model is unknown"):
        parse_spec(f"debias-clip:{tmp_path / 'p.pt'}")
    with pytest.raises(ConfigError, match="open_clip"):
        parse_spec(f"debias-clip:{tmp_path / 'p.pt'}:hf-clip:openai/clip-vit-base-patch32")
    narrow = _prompts(tmp_path / "narrow", 2, width=16)
    with pytest.raises(ConfigError, match="16 wide"):
        load_scorer(f"debias-clip:{narrow}:{tiny}", CPU)
    long = _prompts(tmp_path / "long", 16)
    with pytest.raises(ConfigError, match="no room"):
        load_scorer(f"debias-clip:{long}:{tiny}", CPU)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(ModelNotFoundError, match="does not load"):
        load_scorer(f"debias-clip:{garbage}:{tiny}", CPU)
    vector = tmp_path / "vector.pt"
    torch.save(torch.ones(32), vector)
    with pytest.raises(ModelNotFoundError, match="not a prompt array"):
        load_scorer(f"debias-clip:{vector}:{tiny}", CPU)


@pytest.mark.slow
def test_evaluate_scores_a_debiased_checkpoint_end_to_end(tiny: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_small_dataset(data)
    spec = f"debias-clip:{_prompts(tmp_path / 'ckpt', 2)}:{tiny}"
    result = CliRunner().invoke(
        app,
        ["evaluate", "--data", str(data / "visogender_OP.tsv"), "--out", str(tmp_path / "o"),
         "--model", spec, "--device", "cpu", "--json", "--subsample-runs", "5",
         "--baseline-runs", "5"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)
    assert entry["model"] == spec
    results = json.loads((Path(entry["folder"]) / "benchmark.json").read_text())
    results = next(iter(results.values()))
    assert results["random_weights"] is True
    assert results["resolution_bias"]["all_images"]["n"] > 0
    assert "random weights" in (Path(entry["folder"]) / "report.md").read_text().lower()
