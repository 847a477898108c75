"""Encoder-decoder captioners (BLIP-2 with FLAN-T5, InstructBLIP with FLAN-T5 or a
decoder-only language model) on tiny saved models loaded through the registry: batched
continuation log-probabilities against a step-by-step computation through the models' own
public forward, the prefix placements, the instruction, the spec options, a CLI run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

import tiny_models
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError
from contrastkit.models import PronounScorer, load_model, parse_spec
from contrastkit.models.captioning import CaptioningScorer
from contrastkit.models.registry import random_weights, weights_note
from eval_data import write_small_dataset

runner = CliRunner()
PREFIXES = ["The doctor and", "The nurse and", "The teacher and", "The baker and"]
CONTINUATIONS = [" his", " her", " their"]  # " their" is three tokens in both vocabularies


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("encoder_decoder")
    return {
        "blip2_t5": tiny_models.tiny_blip2_t5(folder),
        "instructblip_t5": tiny_models.tiny_instructblip(folder, "t5"),
        "instructblip_opt": tiny_models.tiny_instructblip(folder, "opt"),
    }


def _load(spec: str, batch_size: int = 2) -> CaptioningScorer:
    scorer = load_model(spec, ModelConfig(device="cpu", batch_size=batch_size))
    assert isinstance(scorer, PronounScorer) and isinstance(scorer, CaptioningScorer)
    return scorer


def _stepwise(
    scorer: CaptioningScorer, image: Image.Image, prefix: str, continuation: str, placement: str
) -> float:
    """The reference: one public ``model(...)`` call per continuation token, with the
    token layout the module docstring documents written out here from the tokenizers
    (query placeholders first, the processor's own special tokens), reading the
    next-token distribution at the last decoder position."""
    model, tokenizer = scorer.model, scorer.tokenizer
    pixels = scorer.image_processor(images=[image.convert("RGB")], return_tensors="pt")[
        "pixel_values"
    ]
    queries = [model.config.image_token_index] * model.config.num_query_tokens
    extra: dict[str, torch.Tensor] = {}
    llm_prefix = prefix
    if scorer.family == "instructblip":
        instruction = scorer.instruction or ""
        encoded = scorer.qformer_tokenizer(instruction, return_tensors="pt")
        extra = {
            "qformer_input_ids": encoded["input_ids"],
            "qformer_attention_mask": encoded["attention_mask"],
        }
        llm_prefix = f"{instruction} {prefix}" if instruction else prefix
    encoder_decoder = not model.config.use_decoder_only_language_model
    if encoder_decoder and placement == "encoder":
        encoder = queries + tokenizer(llm_prefix)["input_ids"]  # with its final </s>
        decoder = [model.config.text_config.decoder_start_token_id]
        tail = tokenizer(continuation, add_special_tokens=False)["input_ids"]
    elif encoder_decoder:
        encoder = queries + tokenizer(scorer.instruction or "")["input_ids"]
        decoder = [model.config.text_config.decoder_start_token_id]
        decoder += tokenizer(prefix, add_special_tokens=False)["input_ids"]
        tail = tokenizer(prefix + continuation, add_special_tokens=False)["input_ids"]
        tail = tail[len(decoder) - 1 :]
    else:
        encoder = []
        decoder = [*queries, tokenizer.bos_token_id]
        head = tokenizer(llm_prefix, add_special_tokens=False)["input_ids"]
        whole = tokenizer(llm_prefix + continuation, add_special_tokens=False)["input_ids"]
        assert whole[: len(head)] == head
        decoder += head
        tail = whole[len(head) :]
    total = 0.0
    for j, token in enumerate(tail):
        with torch.no_grad():
            if encoder_decoder:
                logits = model(
                    pixel_values=pixels,
                    input_ids=torch.tensor([encoder]),
                    decoder_input_ids=torch.tensor([decoder + tail[:j]]),
                    **extra,
                ).logits[0, -1]
            else:
                logits = model(
                    pixel_values=pixels, input_ids=torch.tensor([decoder + tail[:j]]), **extra
                ).logits[0, -1]
        total += torch.log_softmax(logits.double(), dim=-1)[token].item()
    return total


CASES = [
    ("blip2_t5", "", "encoder"),
    ("blip2_t5", "?prefix=decoder", "decoder"),
    ("instructblip_t5", "", "encoder"),
    ("instructblip_t5", "?prefix=decoder&instruction=A+photo+of", "decoder"),
    ("instructblip_opt", "", "decoder"),
]


@pytest.mark.parametrize(("model", "options", "placement"), CASES)
def test_batched_logprobs_equal_a_step_by_step_computation(
    model: str,
    options: str,
    placement: str,
    specs: dict[str, str],
    photos: list[Image.Image],
) -> None:
    scorer = _load(specs[model] + options)
    assert scorer.prefix_placement == placement
    assert scorer.encoder_decoder == model.endswith("_t5")
    # single- and multi-token continuations (" their" is "▁the i r" / "Ġthe i r")
    assert len(scorer.continuation_ids(PREFIXES[0], " his")) == 1
    assert len(scorer.continuation_ids(PREFIXES[0], " their")) == 3
    # prefixes of different lengths in one batch of two: padding is exercised
    got = scorer.continuation_logprobs(photos, PREFIXES, CONTINUATIONS)
    assert got.shape == (4, 3) and got.dtype == np.float64 and np.all(got < 0)
    for i in (0, 1):  # prefixes of different token counts, in one batch of two
        for c in (0, 2):  # " his" (one token) and " their" (three)
            expected = _stepwise(scorer, photos[i], PREFIXES[i], CONTINUATIONS[c], placement)
            assert got[i, c] == pytest.approx(expected, abs=1e-5), (model, i, c)
    # one image at a time gives the same numbers as batches with padding
    alone = _load(specs[model] + options, batch_size=1)
    np.testing.assert_allclose(
        alone.continuation_logprobs(photos, PREFIXES, CONTINUATIONS), got, atol=1e-5
    )


def test_the_prefix_and_the_image_condition_the_decoder(
    specs: dict[str, str], photos: list[Image.Image]
) -> None:
    scorer = _load(specs["blip2_t5"])
    same = [photos[1], photos[1]]
    by_prefix = scorer.continuation_logprobs(same, PREFIXES[:2], CONTINUATIONS)
    assert np.abs(by_prefix[0] - by_prefix[1]).max() > 1e-4  # the encoder reads the prefix
    by_image = scorer.continuation_logprobs(photos[:2], PREFIXES[:1] * 2, CONTINUATIONS)
    assert np.abs(by_image[0] - by_image[1]).max() > 1e-5  # and the image
    decoder = _load(specs["blip2_t5"] + "?prefix=decoder")
    other = decoder.continuation_logprobs(same, PREFIXES[:2], CONTINUATIONS)
    assert np.abs(other - by_prefix).max() > 1e-4  # the two placements differ


def test_instructblip_instruction_reaches_qformer_and_language_model(
    specs: dict[str, str], photos: list[Image.Image]
) -> None:
    default = _load(specs["instructblip_t5"])
    assert default.instruction == "A short image caption:"
    other = _load(specs["instructblip_t5"] + "?instruction=A+photo+of")
    assert other.instruction == "A photo of"
    none = _load(specs["instructblip_t5"] + "?instruction=")
    assert none.instruction == ""
    scores = [
        s.continuation_logprobs(photos[:1], PREFIXES[:1], CONTINUATIONS)
        for s in (default, other, none)
    ]
    assert np.abs(scores[0] - scores[1]).max() > 1e-4
    assert np.abs(scores[0] - scores[2]).max() > 1e-4
    assert none.encoder_ids("The doctor and") == none.tokenizer("The doctor and")["input_ids"]


def test_registry_detects_the_language_model_and_names_random_weights(
    specs: dict[str, str], model_dir: Path, tiny_specs: dict[str, str]
) -> None:
    t5 = _load(specs["blip2_t5"])
    opt = _load(tiny_specs["blip2"])  # the OPT BLIP-2 through the same prefix
    assert t5.encoder_decoder and not opt.encoder_decoder
    assert t5.start_ids == [0]  # T5's decoder start (pad) token
    assert parse_spec(specs["instructblip_t5"]).kind == "captioning"
    with_options = specs["blip2_t5"] + "?prefix=decoder"
    assert random_weights(with_options) and t5.random_weights
    note = weights_note(with_options)
    assert note is not None and "pipeline check" in note


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        ("?prefix=middle", "option 'prefix' is 'middle'; use one of encoder, decoder"),
        ("?colour=red", "unknown option 'colour'"),
        ("?prefix=encoder&prefix=decoder", "given twice"),
        ("?prefix", "KEY=VALUE"),
    ],
)
def test_malformed_options_fail_when_the_spec_is_parsed(suffix: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_spec("blip2:Salesforce/blip2-flan-t5-xl" + suffix)  # nothing is loaded


def test_options_a_model_cannot_take_are_config_errors(
    specs: dict[str, str], tiny_specs: dict[str, str]
) -> None:
    with pytest.raises(ConfigError, match="'instruction' is for instructblip: models"):
        parse_spec(specs["blip2_t5"] + "?instruction=A+photo+of")
    with pytest.raises(ConfigError, match="'prefix' is for blip2:, instructblip:"):
        parse_spec(tiny_specs["git"] + "?prefix=decoder")
    with pytest.raises(ConfigError, match=r"prefix: .*decoder-only language model"):
        _load(specs["instructblip_opt"] + "?prefix=encoder")
    with pytest.raises(ConfigError, match=r"prefix: .*decoder-only language model"):
        _load(tiny_specs["blip2"] + "?prefix=encoder")
    folder = specs["blip2_t5"].partition(":")[2]
    with pytest.raises(ConfigError, match="holds a 'blip-2' model, not 'instructblip'"):
        load_model(f"instructblip:{folder}")


@pytest.mark.slow
def test_evaluate_scores_visogender_rows_with_both_encoder_decoder_families(
    specs: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_small_dataset(data)
    out = tmp_path / "out"
    models = [specs["blip2_t5"], specs["instructblip_t5"] + "?prefix=decoder"]
    result = runner.invoke(
        app,
        ["evaluate", "--data", str(data), "--model", models[0], "--model", models[1],
         "--task", "resolution", "--out", str(out), "--device", "cpu", "--json",
         "--subsample-runs", "20", "--baseline-runs", "40", "--bootstrap", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert len(entries) == 2
    for entry in entries:
        assert entry["headlines"]["random_weights"] is True
        benchmark = next(iter(json.loads(Path(entry["files"]["benchmark"]).read_text()).values()))
        assert benchmark["random_weights"] is True
        resolution = benchmark["resolution_bias"]
        assert 0.0 <= resolution["all_images"]["RA_avg"] <= 1.0
    # every scored case carries finite log-probabilities of his / her / their
    raw = [
        json.loads(line)
        for folder in out.iterdir()
        if (folder / "raw_resolution.jsonl").is_file()
        for line in (folder / "raw_resolution.jsonl").read_text().splitlines()
    ]
    assert raw and all(np.isfinite(list(r["scores"].values())).all() for r in raw)
    assert {len(r["scores"]) for r in raw} == {3}
