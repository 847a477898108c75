"""The model registry and adapters, on tiny saved models loaded through the real code."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError
from contrastkit.models import (
    ImageTextScorer,
    ModelNotFoundError,
    PronounScorer,
    load_model,
    load_scorer,
    parse_spec,
)
from contrastkit.models.captioning import CaptioningScorer

DUAL = ["open_clip", "open_clip_checkpoint", "hf_clip", "siglip"]
CAPTIONING = ["blip", "git", "blip2"]
TEXTS = ["The doctor and his patient", "The doctor and her patient", "The baker and their customer"]


@pytest.mark.parametrize("family", DUAL)
def test_dual_encoder_embeddings_are_unit_float32_and_score_is_their_product(
    family: str, tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    scorer = load_scorer(tiny_specs[family], ModelConfig(batch_size=3))
    assert isinstance(scorer, ImageTextScorer) and scorer.spec == tiny_specs[family]
    images = scorer.encode_images(photos)
    texts = scorer.encode_texts(TEXTS)
    assert images.dtype == texts.dtype == np.float32
    assert images.shape[0] == len(photos) and texts.shape[0] == len(TEXTS)
    assert images.shape[1] == texts.shape[1] == 32
    np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-5)
    scores = scorer.score(photos, TEXTS)
    assert scores.shape == (len(photos), len(TEXTS))
    np.testing.assert_allclose(scores, images @ texts.T, atol=1e-6)
    # different photos give different embeddings (the model really looks at them)
    assert not np.allclose(images[0], images[1], atol=1e-3)


@pytest.mark.parametrize("family", DUAL)
def test_batch_size_does_not_change_embeddings(
    family: str, tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    one = load_scorer(tiny_specs[family], ModelConfig(batch_size=1))
    many = load_scorer(tiny_specs[family], ModelConfig(batch_size=32))
    np.testing.assert_allclose(one.encode_images(photos), many.encode_images(photos), atol=1e-5)
    np.testing.assert_allclose(one.encode_texts(TEXTS), many.encode_texts(TEXTS), atol=1e-5)


def test_text_embeddings_are_cached_per_distinct_caption(tiny_specs: dict[str, str]) -> None:
    scorer = load_scorer(tiny_specs["hf_clip"])
    calls: list[int] = []
    original = scorer._text_features  # type: ignore[attr-defined]

    def counting(texts: list[str]) -> torch.Tensor:
        calls.append(len(texts))
        return original(texts)  # type: ignore[no-any-return]

    scorer._text_features = counting  # type: ignore[attr-defined]
    first = scorer.encode_texts([*TEXTS, TEXTS[0]])
    again = scorer.encode_texts(list(reversed(TEXTS)))
    assert calls == [3]  # three distinct captions, encoded once
    np.testing.assert_array_equal(first[0], first[3])
    np.testing.assert_array_equal(again[::-1], first[:3])


def test_hf_clip_scores_match_the_models_own_logits(
    tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    scorer = load_scorer(tiny_specs["hf_clip"])
    model = scorer.model  # type: ignore[attr-defined]
    pixels = scorer.image_processor(images=photos, return_tensors="pt")["pixel_values"]  # type: ignore[attr-defined]
    tokens = scorer.tokenizer(TEXTS, padding=True, return_tensors="pt")  # type: ignore[attr-defined]
    with torch.no_grad():
        out = model(pixel_values=pixels, **tokens)
    expected = (out.logits_per_image / model.logit_scale.exp()).detach().numpy()
    np.testing.assert_allclose(scorer.score(photos, TEXTS), expected, atol=1e-5)


def test_open_clip_scores_match_the_models_own_forward(
    tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    import open_clip

    scorer = load_scorer(tiny_specs["open_clip"])
    model = scorer.model  # type: ignore[attr-defined]
    pixels = torch.stack([scorer.preprocess(p.convert("RGB")) for p in photos])  # type: ignore[attr-defined]
    tokens = open_clip.get_tokenizer(f"local-dir:{tiny_specs['open_clip'].split(':', 1)[1]}")(TEXTS)
    with torch.no_grad():
        image_features, text_features, _ = model(pixels, tokens)
    expected = (image_features @ text_features.T).numpy()
    np.testing.assert_allclose(scorer.score(photos, TEXTS), expected, atol=1e-5)


def test_siglip_pads_texts_to_the_context_length(tiny_specs: dict[str, str]) -> None:
    scorer = load_scorer(tiny_specs["siglip"])
    model = scorer.model  # type: ignore[attr-defined]
    assert model.config.model_type == "siglip"
    tokens = scorer.tokenizer(  # type: ignore[attr-defined]
        TEXTS[:1], padding="max_length", max_length=32, truncation=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = model.get_text_features(input_ids=tokens["input_ids"])
    expected = getattr(expected, "pooler_output", expected)
    expected = torch.nn.functional.normalize(expected, dim=-1).numpy()
    np.testing.assert_allclose(scorer.encode_texts(TEXTS[:1]), expected, atol=1e-5)


def _stepwise_logprob(
    scorer: CaptioningScorer, image: Image.Image, prefix: str, continuation: str
) -> float:
    """The reference: one public forward pass per continuation token, feeding the tokens
    before it, reading the next-token distribution at the last position."""
    model, tokenizer = scorer.model, scorer.tokenizer
    pixels = scorer.image_processor(images=[image.convert("RGB")], return_tensors="pt")[
        "pixel_values"
    ]
    if scorer.family == "blip":
        start = [model.config.text_config.bos_token_id]
    elif scorer.family == "git":
        start = [tokenizer.cls_token_id]
    else:
        start = [tokenizer.bos_token_id]
    head = start + tokenizer(prefix, add_special_tokens=False)["input_ids"]
    tail = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    if scorer.family == "blip2":
        head = [model.config.image_token_index] * model.config.num_query_tokens + head
    total = 0.0
    for j, token in enumerate(tail):
        ids = torch.tensor([head + tail[:j]])
        with torch.no_grad():
            logits = model(pixel_values=pixels, input_ids=ids).logits[0, -1]
        total += torch.log_softmax(logits.double(), dim=-1)[token].item()
    return total


@pytest.mark.parametrize("family", CAPTIONING)
def test_continuation_logprobs_equal_a_step_by_step_computation(
    family: str, tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    scorer = load_model(tiny_specs[family], ModelConfig(batch_size=2))
    assert isinstance(scorer, PronounScorer) and isinstance(scorer, CaptioningScorer)
    assert not isinstance(scorer, ImageTextScorer)
    continuations = [" his", " her", " their"]
    prefixes = ["The doctor and", "The patient and", "The teacher and", "The baker and"]
    # " their" is several tokens in both tiny vocabularies: the chain rule is exercised
    assert len(scorer.continuation_ids("The doctor and", " their")) > 1
    assert len(scorer.continuation_ids("The doctor and", " his")) == 1
    got = scorer.continuation_logprobs(photos, prefixes, continuations)
    assert got.shape == (4, 3) and got.dtype == np.float64
    for i, (image, prefix) in enumerate(zip(photos, prefixes, strict=True)):
        for c, continuation in enumerate(continuations):
            expected = _stepwise_logprob(scorer, image, prefix, continuation)
            assert got[i, c] == pytest.approx(expected, abs=2e-4), (i, c)
    assert np.all(got < 0)
    # a two-token continuation has a lower log-probability than its first token alone
    first = scorer.continuation_ids("The doctor and", " their")[:1]
    assert first  # sanity


def test_captioning_batch_size_does_not_change_scores(
    tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    prefixes = ["The doctor and", "The patient and", "The teacher and", "The baker and"]
    one = load_model(tiny_specs["git"], ModelConfig(batch_size=1))
    many = load_model(tiny_specs["git"], ModelConfig(batch_size=8))
    assert isinstance(one, CaptioningScorer) and isinstance(many, CaptioningScorer)
    np.testing.assert_allclose(
        one.continuation_logprobs(photos, prefixes, [" his", " her"]),
        many.continuation_logprobs(photos, prefixes, [" his", " her"]),
        atol=1e-4,
    )


def test_captioning_needs_one_prefix_per_image(
    tiny_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    scorer = load_model(tiny_specs["blip"])
    assert isinstance(scorer, CaptioningScorer)
    with pytest.raises(ValueError, match="one prefix per image"):
        scorer.continuation_logprobs(photos, ["The doctor and"], [" his"])
    assert scorer.continuation_logprobs([], [], [" his"]).shape == (0, 1)


def test_load_scorer_refuses_captioning_models(tiny_specs: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="captioning model"):
        load_scorer(tiny_specs["blip"])


def test_spec_prefix_must_match_the_saved_model(tiny_specs: dict[str, str]) -> None:
    blip_dir = tiny_specs["blip"].split(":", 1)[1]
    with pytest.raises(ConfigError, match="captioning model; use the blip: prefix"):
        load_model(f"hf-clip:{blip_dir}")
    with pytest.raises(ConfigError, match="not 'git'"):
        load_model(f"git:{blip_dir}")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ViT-B-32", "must start with one of"),
        ("clip:ViT-B-32", "must start with one of"),
        ("open_clip:", "names no model"),
        ("open_clip:ViT-B-32", "open_clip:ARCH/PRETRAINED"),
        ("open_clip:ViT-B-23/openai", "did you mean ViT-B-32"),
        ("open_clip:ViT-B-32/not-a-tag", "unknown OpenCLIP tag 'not-a-tag'"),
    ],
)
def test_malformed_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_model(spec)


def test_missing_models_say_how_to_get_them(tmp_path: Path) -> None:
    with pytest.raises(
        ModelNotFoundError, match="hf download contrastkit-test/no-such-model"
    ) as info:
        load_model("hf-clip:contrastkit-test/no-such-model")
    assert isinstance(info.value.__cause__, OSError)  # the loader's own error, kept
    with pytest.raises(ModelNotFoundError, match="hf download"):
        load_model("blip2:contrastkit-test/no-such-blip2")
    with pytest.raises(ModelNotFoundError, match="neither a folder nor a Hugging Face model id"):
        load_model("hf-clip:not a model id")
    with pytest.raises(ModelNotFoundError, match="checkpoint file not found"):
        load_model(f"open_clip:ViT-B-32/{tmp_path / 'missing.pt'}")
    with pytest.raises(ModelNotFoundError, match=r"without open_clip_config\.json"):
        load_model(f"open_clip:{tmp_path}")
    with pytest.raises(ModelNotFoundError, match="a folder, but loading its config failed"):
        load_model(f"hf-clip:{tmp_path}")


def _copy(spec: str, folder: Path) -> Path:
    """A copy of a tiny model's folder, to break."""
    source = Path(spec.split(":", 1)[1])
    return Path(shutil.copytree(source, folder / source.name))


def test_a_corrupt_model_folder_says_so_and_keeps_the_cause(
    tiny_specs: dict[str, str], tmp_path: Path
) -> None:
    """A folder that exists but does not load is not reported as "not in the cache": the
    message says what is wrong and the loader's error is chained."""
    broken = _copy(tiny_specs["hf_clip"], tmp_path / "config")
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(
        ModelNotFoundError, match="is a folder, but loading its config failed"
    ) as info:
        load_model(f"hf-clip:{broken}")
    assert "not in the Hugging Face cache" not in str(info.value)
    assert info.value.__cause__ is not None and "JSON" in str(info.value.__cause__)

    unknown = _copy(tiny_specs["hf_clip"], tmp_path / "architecture")
    config = json.loads((unknown / "config.json").read_text())
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "no-such-arch"}))
    with pytest.raises(ModelNotFoundError, match="loading its config failed") as info:
        load_model(f"hf-clip:{unknown}")
    assert isinstance(info.value.__cause__, ValueError)

    weights = _copy(tiny_specs["git"], tmp_path / "weights")
    for path in weights.glob("*.safetensors"):
        path.write_bytes(b"not a safetensors file")
    with pytest.raises(ModelNotFoundError, match="loading its weights failed") as info:
        load_model(f"git:{weights}")
    assert info.value.__cause__ is not None

    clip = _copy(tiny_specs["open_clip"], tmp_path / "open_clip")
    (clip / "open_clip_pytorch_model.bin").write_bytes(b"truncated")
    with pytest.raises(ModelNotFoundError, match="does not load as an OpenCLIP model") as info:
        load_model(f"open_clip:{clip}")
    assert info.value.__cause__ is not None
    (clip / "open_clip_pytorch_model.bin").unlink()  # OpenCLIP would use random weights
    with pytest.raises(ModelNotFoundError, match="but no weights"):
        load_model(f"open_clip:{clip}")
    checkpoint = tmp_path / "broken.pt"
    checkpoint.write_bytes(b"\0" * 10)
    arch = tiny_specs["open_clip_checkpoint"].split(":", 1)[1].split("/", 1)[0]
    with pytest.raises(ModelNotFoundError, match=r"checkpoint .* does not load") as info:
        load_model(f"open_clip:{arch}/{checkpoint}")
    assert info.value.__cause__ is not None


def test_a_bug_inside_a_loader_is_not_reported_as_a_missing_model(
    tiny_specs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what loaders raise for unreadable files is translated; anything else (here a
    ZeroDivisionError standing for a bug) propagates as it is."""
    import transformers

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", broken)
    with pytest.raises(ZeroDivisionError):
        load_model(tiny_specs["hf_clip"])


def test_an_uncached_open_clip_tag_fails_fast_with_instructions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.cache/clip here
    with pytest.raises(ModelNotFoundError) as info:
        load_model("open_clip:ViT-B-32/laion2b_s34b_b79k")
    message = str(info.value)
    assert "hf download laion/CLIP-ViT-B-32-laion2B-s34B-b79K" in message
    assert "--allow-download" in message


def test_device_and_dtype_are_checked(tiny_specs: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="dtype: unknown dtype"):
        ModelConfig(dtype="float8")
    with pytest.raises(ConfigError, match="batch_size: must be at least 1"):
        ModelConfig(batch_size=0)
    with pytest.raises(ConfigError, match="float16 needs a GPU"):
        load_model(tiny_specs["hf_clip"], ModelConfig(device="cpu", dtype="float16"))
    with pytest.raises(ConfigError, match="device: unknown device 'abacus'") as info:
        load_model(tiny_specs["hf_clip"], ModelConfig(device="abacus"))
    assert isinstance(info.value.__cause__, RuntimeError)
    scorer = load_scorer(tiny_specs["hf_clip"], ModelConfig(device="cpu", dtype="bfloat16"))
    assert scorer.model.dtype == torch.bfloat16  # type: ignore[attr-defined]
    assert scorer.encode_texts(TEXTS).dtype == np.float32


def test_importing_the_registry_does_not_import_torch() -> None:
    code = (
        "import sys, contrastkit.models, contrastkit.evaluators.job; "
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_parse_spec() -> None:
    spec = parse_spec("open_clip:ViT-B-32/openai")
    assert (spec.prefix, spec.target, spec.kind) == ("open_clip", "ViT-B-32/openai", "dual")
    assert parse_spec("blip2:Salesforce/blip2-opt-2.7b").kind == "captioning"
    assert str(parse_spec(" git:microsoft/git-large ")) == "git:microsoft/git-large"
