"""Caption generation (the ``descriptions`` capability): tiny BLIP, GIT, BLIP-2 (OPT and
FLAN-T5 style), InstructBLIP (both) and VLMs built from configs write one caption per
image, by greedy search (checked against an argmax loop over the scorer's own
teacher-forced logits), the same whatever the batch, never longer than asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

import tiny_models
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError
from contrastkit.interfaces import CaptionGenerator
from contrastkit.models import load_model
from contrastkit.models.captioning import CaptioningScorer
from contrastkit.models.families import CAPABILITIES
from contrastkit.models.registry import has_capability
from contrastkit.models.vlm import DESCRIBE_INSTRUCTION, VLMScorer
from contrastkit.tiny.vlm import tiny_llava, tiny_qwen2_vl

CAPTIONERS = ["blip", "git", "blip2", "blip2_t5", "instructblip_t5", "instructblip_opt"]
MAX_NEW = 4


@pytest.fixture(scope="module")
def captioner_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("captioners")
    return {
        "blip": tiny_models.tiny_blip(folder),
        "git": tiny_models.tiny_git(folder),
        "blip2": tiny_models.tiny_blip2(folder),
        "blip2_t5": tiny_models.tiny_blip2_t5(folder),
        "instructblip_t5": tiny_models.tiny_instructblip(folder, "t5"),
        "instructblip_opt": tiny_models.tiny_instructblip(folder, "opt"),
    }


def _captioner(spec: str, batch_size: int) -> CaptioningScorer:
    scorer = load_model(spec, ModelConfig(device="cpu", batch_size=batch_size))
    assert isinstance(scorer, CaptioningScorer)
    return scorer


def _end_token(scorer: CaptioningScorer) -> int:
    """The token each family's captions end at, read from its config."""
    config = scorer.model.config
    if scorer.family == "blip":
        return int(config.text_config.sep_token_id)
    if scorer.family == "git":
        return int(config.eos_token_id)
    return int(config.text_config.eos_token_id)


def _greedy_by_hand(scorer: CaptioningScorer, image: Image.Image, max_new: int) -> list[int]:
    """Greedy decoding without ``generate``: the argmax of the scorer's teacher-forced
    logits after the caption so far, one token at a time, up to the end token."""
    pixels = scorer._pixels([image])
    index = torch.tensor([0])
    start = scorer.start_ids if scorer.encoder_decoder else scorer.prefix_ids("")
    ids = list(start)
    for _ in range(max_new):
        tokens = torch.tensor([ids])
        mask = torch.ones_like(tokens)
        if scorer.encoder_decoder:
            logits = scorer._seq2seq_logits(pixels, [scorer.encoder_ids("")], tokens, mask, index)
        else:
            logits = scorer._text_logits(pixels, tokens, mask, index)
        token = int(logits[0, -1].argmax())
        if token == _end_token(scorer):
            break
        ids.append(token)
    return ids[len(start) :]


@pytest.mark.parametrize("name", CAPTIONERS)
def test_captioners_generate_the_greedy_caption_of_each_image_whatever_the_batch(
    name: str, captioner_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    batched = _captioner(captioner_specs[name], batch_size=len(photos))
    assert isinstance(batched, CaptionGenerator)
    ids = batched.generate_caption_ids(photos, MAX_NEW)
    captions = batched.generate_captions(photos, MAX_NEW)
    assert len(captions) == len(ids) == len(photos)
    assert all(isinstance(caption, str) for caption in captions)
    with torch.inference_mode():
        assert ids == [_greedy_by_hand(batched, image, MAX_NEW) for image in photos]
    decode = batched.tokenizer.decode
    assert captions == [decode(row, skip_special_tokens=True).strip() for row in ids]
    # the limit holds and binds (some caption runs to it: the test would see one too long)
    assert max(len(row) for row in ids) == MAX_NEW
    assert [batched.generate_captions([image], MAX_NEW)[0] for image in photos] == captions
    batched.batch_size = 2  # the batch_size of a loaded model: a last, shorter batch
    assert batched.generate_captions(photos[1:], MAX_NEW) == captions[1:]
    shorter = batched.generate_caption_ids(photos, 2)
    assert shorter == [row[:2] for row in ids]  # greedy: a prefix of the longer caption


def test_git_captions_depend_on_the_image(
    captioner_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    """The batch holds different captions (so keeping each row with its image is tested)."""
    captions = _captioner(captioner_specs["git"], batch_size=4).generate_captions(photos, MAX_NEW)
    assert len(set(captions)) > 1


def test_max_new_tokens_below_one_is_a_config_error(captioner_specs: dict[str, str]) -> None:
    scorer = _captioner(captioner_specs["blip"], batch_size=1)
    with pytest.raises(ConfigError, match="max_new_tokens"):
        scorer.generate_captions([Image.new("RGB", (32, 32))], 0)


@pytest.fixture(scope="module")
def vlm_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("vlms")
    return {"llava": tiny_llava(folder), "qwen2_vl": tiny_qwen2_vl(folder)}


@pytest.mark.parametrize("name", ["llava", "qwen2_vl"])
def test_a_vlm_caption_is_its_answer_to_the_describe_instruction(
    name: str, vlm_specs: dict[str, str], photos: list[Image.Image]
) -> None:
    scorer = load_model(vlm_specs[name], ModelConfig(device="cpu", batch_size=4))
    assert isinstance(scorer, VLMScorer)
    assert isinstance(scorer, CaptionGenerator)
    assert DESCRIBE_INSTRUCTION == "Describe the image in one sentence."
    captions = scorer.generate_captions(photos, MAX_NEW)
    assert len(captions) == len(photos)
    assert captions == scorer.generate_answers(
        photos, [DESCRIBE_INSTRUCTION] * len(photos), MAX_NEW
    )
    assert [scorer.generate_captions([image], MAX_NEW)[0] for image in photos] == captions
    ids = scorer.generate_answer_ids(photos, [DESCRIBE_INSTRUCTION] * len(photos), MAX_NEW)
    decode = scorer.tokenizer.decode
    assert captions == [decode(row, skip_special_tokens=True).strip() for row in ids]
    assert max(len(row) for row in ids) == MAX_NEW  # the limit holds and binds


@pytest.mark.parametrize(
    ("spec", "describes"),
    [
        ("blip:Salesforce/blip-image-captioning-large", True),
        ("git:microsoft/git-large-coco", True),
        ("blip2:Salesforce/blip2-opt-2.7b", True),
        ("instructblip:Salesforce/instructblip-flan-t5-xl", True),
        ("vlm:llava-hf/llava-1.5-7b-hf", True),
        ("open_clip:ViT-B-32/openai", False),
        ("hf-clip:openai/clip-vit-base-patch32", False),
        ("blip-itm:Salesforce/blip-itm-base-coco", False),
    ],
)
def test_descriptions_is_a_capability_of_captioners_and_vlms_only(
    spec: str, describes: bool
) -> None:
    assert "descriptions" in CAPABILITIES
    assert has_capability(spec, "descriptions") is describes


def test_models_list_shows_the_descriptions_capability() -> None:
    result = CliRunner().invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["prefix"]: row for row in json.loads(result.stdout)["families"]}
    assert rows["blip"]["capabilities"] == "pronouns, descriptions"
    assert rows["vlm"]["capabilities"] == "pronouns, captions, answers, descriptions"
    assert rows["open_clip"]["capabilities"] == "embeddings, captions"


def test_a_dual_encoder_generates_no_captions(tiny_clip_spec: str, tmp_path: Path) -> None:
    scorer = load_model(tiny_clip_spec, ModelConfig(device="cpu"))
    assert not isinstance(scorer, CaptionGenerator)
