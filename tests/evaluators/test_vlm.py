"""Generative VLMs (``vlm:``): tiny LLaVA and Qwen2-VL models built from configs, loaded
through the registry, scored by both protocols and checked against a one-sequence,
token-by-token computation with the same model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.evaluators.tasks.multiple_choice import (
    score_multiple_choice,
    summarize_multiple_choice,
)
from contrastkit.evaluators.tasks.resolution import resolution_cases
from contrastkit.interfaces import CaptionScorer, ImageTextScorer, PronounScorer
from contrastkit.models import load_model, parse_spec
from contrastkit.models.registry import FAMILY_DOCS, KINDS, random_weights
from contrastkit.models.vlm import VLMScorer
from contrastkit.models.vlm_spec import (
    CONTINUATION_INSTRUCTION,
    multiple_choice_question,
    option_order,
)
from contrastkit.tiny.vlm import tiny_instructblip, tiny_llava, tiny_paligemma, tiny_qwen2_vl
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv
from eval_data import write_small_dataset

FAMILIES = ["llava", "qwen2_vl"]
#: PaliGemma: no chat template, a bidirectional prefix (token_type_ids), 1-based positions;
#: InstructBLIP: no chat template, Q-Former text inputs, no position_ids (right padding).
ALL_FAMILIES = [*FAMILIES, "paligemma", "instructblip"]
PREFIXES = ["The doctor and", "The teacher and", "The baker and", "The lawyer and"]
CONTINUATIONS = [" his", " her", " their"]


@pytest.fixture(scope="module")
def vlm_specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("vlm_models")
    return {
        "llava": tiny_llava(folder),
        "qwen2_vl": tiny_qwen2_vl(folder),
        "paligemma": tiny_paligemma(folder),
        "instructblip": tiny_instructblip(folder),
    }


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    """Four different real photos of different shapes (Qwen2-VL then gives each its own
    number of image tokens, so the rows of a batch differ in length)."""
    from skimage import data

    return [
        Image.fromarray(data.astronaut()),
        Image.fromarray(data.camera()),  # mode "L": the adapter converts it
        Image.fromarray(data.chelsea()),
        Image.fromarray(data.coffee()).crop((0, 0, 200, 400)),
    ]


def _load(spec: str, batch_size: int = 4) -> VLMScorer:
    scorer = load_model(spec, ModelConfig(device="cpu", batch_size=batch_size))
    assert isinstance(scorer, VLMScorer)
    return scorer


def _inputs(scorer: VLMScorer, image: Image.Image, text: str, ids: list[int]) -> dict[str, Any]:
    """One unpadded sequence: what the processor makes of the image and ``text``, then
    ``ids``. Tensors along the sequence are extended the way the model reads them:
    Qwen2-VL's ``mm_token_type_ids`` with 0 (text); PaliGemma's ``token_type_ids`` with 1
    (the causal suffix after its bidirectional prompt)."""
    encoded = scorer.processor(text=[text], images=[image.convert("RGB")], return_tensors="pt")
    added = torch.tensor([ids], dtype=torch.long)
    inputs = {k: v for k, v in encoded.items() if k not in ("attention_mask", "labels")}
    inputs["input_ids"] = torch.cat([encoded["input_ids"], added], dim=1)
    for key, fill in (("mm_token_type_ids", 0), ("token_type_ids", 1)):
        if key in encoded:
            inputs[key] = torch.cat([encoded[key], torch.full_like(added, fill)], dim=1)
    return inputs


def _stepwise(
    scorer: VLMScorer, image: Image.Image, text: str, extra: Sequence[int], tail: Sequence[int]
) -> float:
    """The reference: one sequence, no padding, one public forward pass per scored token
    (``tail``), feeding the tokens before it, reading the next-token distribution at the
    last position. ``extra`` follows the processor's tokens as context (PaliGemma's
    caption prefix)."""
    total = 0.0
    for j, token in enumerate(tail):
        inputs = _inputs(scorer, image, text, [*extra, *tail[:j]])
        with torch.no_grad():
            logits = scorer.model(**inputs).logits[0, -1]
        total += torch.log_softmax(logits.double(), dim=-1)[token].item()
    return total


def _one_pass(
    scorer: VLMScorer, image: Image.Image, text: str, extra: Sequence[int], tail: Sequence[int]
) -> list[float]:
    """The log-probability of each token of ``tail`` from one unpadded forward pass over
    the whole sequence (teacher forcing; one sequence, no batch)."""
    inputs = _inputs(scorer, image, text, [*extra, *tail])
    with torch.no_grad():
        logits = scorer.model(**inputs).logits[0, -len(tail) - 1 : -1]
    logprobs = torch.log_softmax(logits.double(), dim=-1)
    return [logprobs[j, token].item() for j, token in enumerate(tail)]


def test_vlm_is_registered_as_a_pronoun_and_caption_scorer(
    vlm_specs: dict[str, str],
) -> None:
    assert KINDS["vlm"] == "captioning" and "vlm" in FAMILY_DOCS
    for family in FAMILIES:
        scorer = _load(vlm_specs[family])
        assert isinstance(scorer, PronounScorer) and isinstance(scorer, CaptionScorer)
        assert not isinstance(scorer, ImageTextScorer)
        assert scorer.random_weights and scorer.protocol == "continuation"
    # options stay part of the spec and do not hide the random-weights marker
    assert random_weights(vlm_specs["llava"] + "?protocol=multiple-choice")
    assert parse_spec(vlm_specs["qwen2_vl"] + "?padding=left&length_normalise=false").kind


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("?protocol=three-way", "protocol must be one of continuation, multiple-choice"),
        ("?padding=middle", "padding must be left or right"),
        ("?length_normalise=maybe", "length_normalise must be true or false"),
        ("?temperature=0", "unknown option 'temperature'"),
        ("?protocol", "must be KEY=VALUE"),
    ],
)
def test_bad_vlm_options_are_clear_errors(options: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_spec(f"vlm:llava-hf/llava-1.5-7b-hf{options}")


@pytest.mark.slow
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_continuation_logprobs_equal_a_step_by_step_computation(
    family: str, side: str, vlm_specs: dict[str, str], images: list[Image.Image]
) -> None:
    scorer = _load(f"{vlm_specs[family]}?padding={side}", batch_size=5)
    assert scorer.padding_side == ("right" if family == "instructblip" else side)
    text, extra, tail = scorer.split(CONTINUATION_INSTRUCTION, "The doctor and their", 14)
    assert len(tail) == 3  # " their" is three tokens: the chain rule
    context = text + scorer.tokenizer.decode(list(extra))  # PaliGemma: prefix as tokens
    assert context.endswith("The doctor and") and CONTINUATION_INSTRUCTION in context
    assert scorer.tokenizer.decode(list(tail)) == " their"
    got = scorer.continuation_logprobs(images, PREFIXES, CONTINUATIONS)
    assert got.shape == (4, 3) and got.dtype == np.float64 and np.all(got < 0)
    for i, (image, prefix) in enumerate(zip(images, PREFIXES, strict=True)):
        for c, continuation in enumerate(CONTINUATIONS):
            text, extra, tail = scorer.split(
                CONTINUATION_INSTRUCTION, prefix + continuation, len(prefix)
            )
            expected = _stepwise(scorer, image, text, extra, tail)
            assert got[i, c] == pytest.approx(expected, abs=1e-5), (family, side, i, c)
    # the images matter: different photos, different scores
    assert not np.allclose(got[0], got[1], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_batch_size_and_padding_side_do_not_change_scores(
    family: str, vlm_specs: dict[str, str], images: list[Image.Image]
) -> None:
    one = _load(f"{vlm_specs[family]}?padding=right", batch_size=1)
    many = _load(f"{vlm_specs[family]}?padding=left", batch_size=12)
    np.testing.assert_allclose(
        one.continuation_logprobs(images, PREFIXES, CONTINUATIONS),
        many.continuation_logprobs(images, PREFIXES, CONTINUATIONS),
        atol=1e-5,
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_multiple_choice_scores_the_letters_in_the_order_shown(
    family: str, vlm_specs: dict[str, str], images: list[Image.Image]
) -> None:
    scorer = _load(f"{vlm_specs[family]}?protocol=multiple-choice&padding=left", batch_size=4)
    orders = [option_order(f"case-{i}", 3, seed=7) for i in range(len(images))]
    assert orders == [option_order(f"case-{i}", 3, seed=7) for i in range(len(images))]
    assert len({tuple(order) for order in orders}) > 1  # shuffled per case
    got = scorer.multiple_choice_logprobs(images, PREFIXES, CONTINUATIONS, orders)
    assert got.shape == (4, 3)
    for i, (image, prefix, order) in enumerate(zip(images, PREFIXES, orders, strict=True)):
        question = multiple_choice_question(prefix, [CONTINUATIONS[c] for c in order])
        assert question.splitlines()[1:4] == [
            f"{letter}. {CONTINUATIONS[c].strip()}" for letter, c in zip("ABC", order, strict=True)
        ]
        for j, c in enumerate(order):
            text, extra, tail = scorer.split(question, "ABC"[j], 0)
            assert scorer.tokenizer.decode(list(tail)).strip() == "ABC"[j]
            expected = _stepwise(scorer, image, text, extra, tail)
            assert got[i, c] == pytest.approx(expected, abs=1e-5), (family, i, c)
    # the PronounScorer call of a multiple-choice adapter lists the options as given
    identity = scorer.multiple_choice_logprobs(images, PREFIXES, CONTINUATIONS, [[0, 1, 2]] * 4)
    np.testing.assert_allclose(
        scorer.continuation_logprobs(images, PREFIXES, CONTINUATIONS), identity, atol=1e-6
    )
    with pytest.raises(ValueError, match="not a permutation"):
        scorer.multiple_choice_logprobs(images[:1], PREFIXES[:1], CONTINUATIONS, [[0, 0, 1]])


@pytest.mark.slow
@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_caption_scores_are_the_caption_log_likelihood(
    family: str, vlm_specs: dict[str, str], images: list[Image.Image]
) -> None:
    captions = [["The doctor and his", "A cat", "her"], ["The baker and their", "A", "desk"]]
    mean = _load(vlm_specs[family], batch_size=4)
    total = _load(f"{vlm_specs[family]}?length_normalise=false", batch_size=2)
    assert mean.length_normalise and not total.length_normalise
    got_mean = mean.caption_scores(images[:2], captions)
    got_sum = total.caption_scores(images[:2], captions)
    assert got_mean.shape == got_sum.shape == (2, 3)
    for i, options in enumerate(captions):
        for c, caption in enumerate(options):
            text, extra, tail = mean.split("Describe the image.", caption, 0)
            assert mean.tokenizer.decode(list(tail)).strip() == caption
            expected = _one_pass(mean, images[i], text, extra, tail)
            assert got_sum[i, c] == pytest.approx(sum(expected), abs=1e-5)
            assert got_mean[i, c] == pytest.approx(np.mean(expected), abs=1e-5)
    with pytest.raises(ValueError, match="same number of captions"):
        mean.caption_scores(images[:2], [["a", "b"], ["c"]])


class _LetterA:
    """A multiple-choice model that always prefers whatever option is shown as "A"."""

    spec = "test:letter-a"
    protocol = "multiple-choice"

    def multiple_choice_logprobs(
        self, images: Any, prefixes: Any, continuations: Any, orders: Any
    ) -> np.ndarray:
        scores = np.full((len(images), len(continuations)), -5.0)
        for i, order in enumerate(orders):
            scores[i, order[0]] = -1.0
        return scores


def test_a_position_biased_model_is_caught_by_the_option_swap(tmp_path: Path) -> None:
    from contrastkit.evaluators.data import load_items

    paths = write_small_dataset(tmp_path / "data")
    cases = resolution_cases(load_items(tuple(paths.values())), neutral=True)
    records = []
    groups: dict[str, list[Any]] = {}
    for case in cases:
        groups.setdefault(case.template.key, []).append(case)
    for members in groups.values():
        records += score_multiple_choice(_LetterA(), [None] * len(members), members, seed=3)
    summary = summarize_multiple_choice(records, protocol="visogender-official", seed=3)
    assert summary is not None and summary["n_cases"] == len(cases)
    bias = summary["position_bias"]
    assert bias["wins"] == {"A": len(cases), "B": 0, "C": 0}
    assert bias["max_deviation"] == pytest.approx(2 / 3)
    assert bias["reversed"]["wins"]["A"] == len(cases)
    swap = summary["option_swap"]
    assert swap["letter_agreement"] == 1.0
    # "A" holds the first option shown, then the last: the pronoun changes for every case
    assert swap["agreement"] == 0.0
    for record in records:
        choice = record["multiple_choice"]
        assert sorted(choice["letters"].values()) == ["A", "B", "C"]
        assert record["predicted_with_neutral"] == choice["order"][0]
    assert (
        summarize_multiple_choice(
            [{k: v for k, v in r.items() if k != "multiple_choice"} for r in records],
            protocol="visogender-official",
            seed=3,
        )
        is None
    )


@pytest.mark.slow
def test_both_models_and_protocols_score_official_rows_from_the_cli(
    vlm_specs: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    for path in write_small_dataset(data).values():  # one official row per cell: 12 images
        table = read_visogender_tsv(path)
        kept = {(row.occupation, row.cell): row for row in reversed(table.rows)}
        write_visogender_tsv(path, list(kept.values())[::-1], table.context)
    specs = [
        vlm_specs["llava"],
        vlm_specs["llava"] + "?protocol=multiple-choice",
        vlm_specs["qwen2_vl"] + "?padding=left",
        vlm_specs["qwen2_vl"] + "?protocol=multiple-choice",
    ]
    args = ["evaluate", "--data", str(data), "--out", str(tmp_path / "out"), "--json"]
    args += ["--subsample-runs", "20", "--baseline-runs", "40", "--bootstrap", "0"]
    args += ["--device", "cpu", "--task", "resolution"]
    for spec in specs:
        args += ["--model", spec]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    folders = [path for path in (tmp_path / "out").iterdir() if path.is_dir()]
    assert len(folders) == 4
    seen = set()
    for folder in folders:
        _, results = next(iter(json.loads((folder / "benchmark.json").read_text()).items()))
        meta = results["metadata"]
        spec = meta["model_name"]
        seen.add(spec)
        assert results["random_weights"] and "random weights" in results["weights_note"]
        protocol = "multiple-choice" if "multiple-choice" in spec else "continuation"
        assert meta["vlm"]["protocol"] == protocol
        assert meta["vlm"]["continuation_instruction"] == "Complete the description of the image."
        resolution = results["resolution_bias"]
        assert resolution["all_images"]["n"] > 0  # every row scored
        assert "participant_first" in resolution and "neutral" in resolution
        raw = [json.loads(line) for line in (folder / "raw_resolution.jsonl").open()]
        assert len(raw) == meta["n_resolution_cases"]
        report = (folder / "report.md").read_text()
        assert "random weights" in report
        if protocol == "continuation":
            assert "multiple_choice" not in results
            assert "Multiple choice" not in report
            continue
        choice = results["multiple_choice"]
        assert choice["n_cases"] == len(raw)
        assert sum(choice["position_bias"]["wins"].values()) + choice["position_bias"][
            "ties"
        ] == len(raw)
        reversed_ = choice["option_swap"]["reversed"]["all_images"]
        assert reversed_["RA_avg"] is not None and "gender_gap" in reversed_
        assert 0.0 <= choice["option_swap"]["agreement"] <= 1.0
        assert all(set(record["multiple_choice"]["letters"].values()) == {"A", "B", "C"}
                   for record in raw)  # fmt: skip
        assert "## Multiple choice: position bias and option swap" in report
        assert "### With the options reversed" in report
    assert seen == set(specs)


@pytest.mark.slow
def test_a_model_not_in_the_cache_is_a_clear_error_without_the_network(
    tmp_path: Path,
) -> None:
    """No download attempt, no hang: with downloads off (the default) and HF_HUB_OFFLINE,
    in a child process with no network at all where ``unshare -rn`` works."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    code = (
        "from contrastkit.errors import ModelNotFoundError\n"
        "from contrastkit.models import load_model\n"
        "try:\n"
        "    load_model('vlm:contrastkit-test/no-such-vlm?protocol=multiple-choice')\n"
        "except ModelNotFoundError as error:\n"
        "    print('NOT FOUND:', error)\n"
    )
    command = [sys.executable, "-c", code]
    if (
        shutil.which("unshare")
        and subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False).returncode
        == 0
    ):
        command = ["unshare", "-rn", *command]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "NOT FOUND:" in done.stdout and "hf download contrastkit-test/no-such-vlm" in done.stdout
    # and in this process: downloads are off unless asked for, so nothing is fetched
    with pytest.raises(ModelNotFoundError, match="hf download contrastkit-test/no-such-vlm"):
        load_model("vlm:contrastkit-test/no-such-vlm", ModelConfig(device="cpu"))


@pytest.mark.slow
def test_stereotype_probing_scores_captions_by_their_log_likelihood(
    vlm_specs: dict[str, str], tmp_path: Path
) -> None:
    """``evaluate --task stereotype`` takes a VLM as any CaptionScorer: each raw score is
    the adapter's caption log-likelihood (mean per token), and the report says so."""
    from stereoset_data import make_probe_fixture

    probes = make_probe_fixture(tmp_path / "probes")[2]
    out = tmp_path / "out"
    args = ["evaluate", "--task", "stereotype", "--data", str(probes), "--out", str(out)]
    args += ["--device", "cpu", "--bootstrap", "0", "--model", vlm_specs["llava"]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = [path for path in out.iterdir() if path.is_dir()]
    raw = [json.loads(line) for line in (folder / "raw_stereotype.jsonl").open()]
    assert raw and all("mean per caption token" in record["score_kind"] for record in raw)
    scorer = _load(vlm_specs["llava"])
    first = raw[0]
    with Image.open(probes.parent / first["image"]) as image:
        expected = scorer.caption_scores([image.convert("RGB")], [first["captions"]])[0]
    np.testing.assert_allclose(first["scores"], expected, atol=1e-5)
