"""Contrast sets scored by caption scorers (blip-itm:, vilt:, vlm:): the image x query
matrix of the model's own caption scores, every metric unchanged, pair preference alone
from each query's own two versions, scores reused on rerun; captioning models refused."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import contrast_features
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError
from contrastkit.evaluators.contrast import (
    RAW_SCORES_FILE,
    RETRIEVAL_NOT_COMPUTED,
    CaptionRun,
    ContrastLabels,
    ContrastSettings,
    caption_score_matrix,
    evaluate_contrast,
    load_contrast,
    resolve_contrast_metrics,
    write_contrast_outputs,
)
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.evaluators.tasks.contrast_sets import ContrastTaskSettings
from contrastkit.evaluators.tasks.stereotype import caption_scores
from contrastkit.interfaces import CaptionScorer
from contrastkit.models import load_model

datasets.disable_progress_bars()
runner = CliRunner()

#: Red channel of each source's (masculine, feminine) image: source 0 prefers the
#: masculine version, source 1 the feminine one, source 2 ties.
REDS = {"0": (200, 100), "1": (50, 130), "2": (120, 120)}


def contrast_export(folder: Path, reds: dict[str, tuple[int, int]] = REDS) -> Path:
    """An export-shaped folder: per source a masculine and a feminine 32 px image whose red
    channel is ``reds[source]``, one neutral caption per source (of different lengths)."""
    rows: dict[str, list[object]] = {name: [] for name in contrast_features()}
    for source, pair in reds.items():
        for gender, red in zip(("masculine", "feminine"), pair, strict=True):
            values = {
                "source_id": source, "gender": gender,
                "image": Image.new("RGB", (32, 32), (red, 40 + 30 * int(source), 90)),
                "edit_id": f"{source}-{gender}", "method": "gensynth",
                "source_label": "masculine", "captions": [f"A person in scene {source}."],
                "neutral_captions": [f"A person{' at work' * int(source)} in scene {source}."],
                "original_captions": [f"A man in scene {source}."],
                "box": [0.0, 0.0, 32.0, 32.0], "p_real": 0.5, "p_gender": 0.9,
                "instruction": "x", "text_guidance_scale": 9.5, "image_guidance_scale": 1.5,
                "steps": 2, "seed": 0, "donor": None,
            }  # fmt: skip
            for name in rows:
                rows[name].append(values[name])
    data = datasets.Dataset.from_dict(rows, features=contrast_features())
    datasets.DatasetDict({"test": data}).save_to_disk(str(folder / "saved" / "contrast"))
    return folder


class PlantedScores:
    """A caption scorer whose score is the image's red channel / 255 plus 0.01 per
    character of the caption (so columns cannot be swapped unnoticed); counts the
    (image, caption) pairs it scores and can fail after some calls."""

    spec = "planted:red"
    score_kind = "planted: red / 255 + 0.01 x caption length"

    def __init__(self, fail_after: int | None = None) -> None:
        self.cells: list[tuple[int, str]] = []
        self.calls = 0
        self.fail_after = fail_after

    def caption_scores(
        self, images: Sequence[Image.Image], captions: Sequence[Sequence[str]]
    ) -> np.ndarray:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("interrupted")
        self.calls += 1
        result = np.zeros((len(images), len(captions[0]) if captions else 0))
        for i, (image, row) in enumerate(zip(images, captions, strict=True)):
            red = int(np.asarray(image)[0, 0, 0])
            for j, caption in enumerate(row):
                self.cells.append((red, caption))
                result[i, j] = red / 255 + 0.01 * len(caption)
        return result


def planted(red: int, caption: str) -> float:
    return red / 255 + 0.01 * len(caption)


class OnlyPronouns:
    """A captioning model: scores pronoun continuations, not captions."""

    spec = "blip:planted"

    def continuation_logprobs(
        self, images: Sequence[Image.Image], prefixes: Sequence[str], continuations: Sequence[str]
    ) -> np.ndarray:
        return np.zeros((len(images), len(continuations)))


class RedDual:
    """A dual encoder scoring like :class:`PlantedScores` without the caption term."""

    spec = "dual:red"

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        reds = np.array([np.asarray(i)[0, 0, 0] / 255 for i in images], dtype=np.float32)
        return np.stack([reds, np.sqrt(1 - reds**2)], axis=1).astype(np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        result: np.ndarray = self.encode_images(images) @ self.encode_texts(texts).T
        return result


def test_planted_scores_give_hand_computed_metrics(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    model = PlantedScores()
    assert isinstance(model, CaptionScorer)
    result = evaluate_contrast(
        dataset, model, ContrastSettings(ks=(1, 5), batch_size=4, metrics="all")
    )
    summary = result["summary"]
    assert (summary["images"], summary["sources"], summary["queries"]) == (6, 3, 3)
    # Every query ranks by red: m0 200, f1 130, m2 = f2 120, f0 100, m1 50.
    retrieval = summary["retrieval"]
    assert retrieval["bias@1"]["mean"] == 1.0 and retrieval["bias_gensynth@1"]["mean"] == 1.0
    # Top 5: m0, f1, m2, f2, f0: 2 masculine, 3 feminine.
    assert retrieval["bias@5"]["mean"] == pytest.approx(-0.2)
    assert retrieval["bias_gensynth@5"]["mean"] == pytest.approx(-0.2)
    assert retrieval["bias@5"]["sigma"] == pytest.approx(0.0)
    pairs = summary["pairs"]
    # Source 0 prefers masculine, 1 feminine, 2 ties: (1 + 0 + 0.5) / 3.
    assert pairs["queries_with_pair"] == 3 and pairs["masculine_preferred"] == pytest.approx(0.5)
    assert pairs["mean_gap"] == pytest.approx((100 - 80 + 0) / 3 / 255)
    first = result["queries"][0]
    assert first["top"] == ["0:masculine", "1:feminine", "2:masculine", "2:feminine", "0:feminine"]
    assert first["score_masculine"] == planted(200, first["query"])
    assert first["score_feminine"] == planted(100, first["query"])
    scoring = summary["scoring"]
    assert scoring["score_kind"] == PlantedScores.score_kind
    assert (scoring["metrics"], scoring["unit"]) == ("all", "image-query pair")
    assert (scoring["computed"], scoring["reused"], scoring["all_metrics_passes"]) == (18, 0, 18)
    assert len(model.cells) == 18  # every image against every query, once


def test_pair_preference_alone_scores_only_each_querys_own_two_versions(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    full = evaluate_contrast(dataset, PlantedScores(), ContrastSettings(ks=(1, 5), metrics="all"))
    model = PlantedScores()
    assert resolve_contrast_metrics(model) == "pairs"  # the default for caption scorers
    result = evaluate_contrast(dataset, model, ContrastSettings(ks=(1, 5), bootstrap=20))
    summary = result["summary"]
    assert sorted(model.cells) == sorted(
        (red, f"A person{' at work' * int(s)} in scene {s}.")
        for s, pair in REDS.items() for red in pair
    )  # fmt: skip
    # the same pair preference, with its bootstrap interval over the queries (issue 31)
    interval = summary["pairs"].pop("masculine_preferred_ci")
    assert summary["pairs"] == full["summary"]["pairs"]
    assert interval["resamples"] == 20 and interval["low"] <= 0.5 <= interval["high"]
    assert summary["retrieval"] == {} and summary["retrieval_note"] == RETRIEVAL_NOT_COMPUTED
    assert summary["bootstrap"]["resamples"] == 20 and summary["warnings"] == []
    assert summary["scoring"]["metrics"] == "pairs" and summary["scoring"]["model_passes"] == 6
    for mine, theirs in zip(result["queries"], full["queries"], strict=True):
        assert mine == {k: theirs[k] for k in mine} and "top" not in mine
    files = write_contrast_outputs(result, tmp_path / "out", ContrastLabels(model.spec, "set"))
    report = files["report"].read_text()
    assert "Retrieval bias is not computed: pair preference only" in report
    assert "its own photo's two versions, 6 image-caption model passes" in report
    assert "6 x 3 = 18 passes (`--contrast-metrics all`)" in report
    benchmark = json.loads(files["benchmark"].read_text())
    assert benchmark["score_kind"] == PlantedScores.score_kind


def test_scores_are_reused_on_rerun_and_after_an_interruption(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    raw = tmp_path / "out" / RAW_SCORES_FILE
    interrupted = PlantedScores(fail_after=1)
    with pytest.raises(RuntimeError, match="interrupted"):
        caption_score_matrix(
            dataset, interrupted, ["q one", "q two"], run=CaptionRun(batch_size=4, raw_scores=raw)
        )  # one call of two images x two queries, then the failure
    assert len(interrupted.cells) == 4
    resumed = PlantedScores()
    matrix = caption_score_matrix(
        dataset, resumed, ["q one", "q two"], run=CaptionRun(batch_size=4, raw_scores=raw)
    )
    assert (matrix.computed, matrix.reused, len(resumed.cells)) == (8, 4, 8)
    reds = [red for pair in REDS.values() for red in pair]
    want = np.array([[planted(r, "q one"), planted(r, "q two")] for r in reds])
    np.testing.assert_array_equal(matrix.scores, want)
    # pairs first, then every metric: the pair cells are read back, the rest scored
    first = PlantedScores()
    evaluate_contrast(
        dataset, first, ContrastSettings(ks=(1,), raw_scores=tmp_path / "b" / RAW_SCORES_FILE)
    )
    second = PlantedScores()
    again = evaluate_contrast(
        dataset,
        second,
        ContrastSettings(ks=(1,), metrics="all", raw_scores=tmp_path / "b" / RAW_SCORES_FILE),
    )
    assert (len(first.cells), len(second.cells)) == (6, 12)
    assert (again["summary"]["scoring"]["reused"], again["summary"]["scoring"]["computed"]) == (
        6, 12,
    )  # fmt: skip
    third = PlantedScores()
    evaluate_contrast(
        dataset,
        third,
        ContrastSettings(ks=(1,), metrics="all", raw_scores=tmp_path / "b" / RAW_SCORES_FILE),
    )
    assert third.calls == 0
    # another model's scores (same file) are not reused
    other = PlantedScores()
    other.spec = "planted:other"
    evaluate_contrast(
        dataset, other, ContrastSettings(ks=(1,), raw_scores=tmp_path / "b" / RAW_SCORES_FILE)
    )
    assert len(other.cells) == 6


def test_captioning_models_are_refused(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    with pytest.raises(ConfigError, match=r"blip:planted scores pronoun continuations only"):
        evaluate_contrast(dataset, OnlyPronouns())
    config = EvaluateConfig(
        data=(str(tmp_path / "set"),), models=("git:/no/such/model",), out=tmp_path / "res"
    )
    with pytest.raises(ConfigError, match=r"git:/no/such/model is a captioning model.*vlm:"):
        evaluate(config)  # refused before it would load (the folder does not exist)
    with pytest.raises(ConfigError, match="contrast_metrics must be one of auto, all, pairs"):
        ContrastTaskSettings(metrics="some")


def test_a_dual_encoder_defaults_to_every_metric_and_can_score_pairs_only(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    assert resolve_contrast_metrics(RedDual()) == "all"
    full = evaluate_contrast(dataset, RedDual(), ContrastSettings(ks=(1, 5)))
    assert "scoring" not in full["summary"] and full["summary"]["retrieval"]
    pairs = evaluate_contrast(dataset, RedDual(), ContrastSettings(ks=(1, 5), metrics="pairs"))
    assert pairs["summary"]["pairs"] == full["summary"]["pairs"]
    assert pairs["summary"]["retrieval"] == {}
    files = write_contrast_outputs(full, tmp_path / "out", ContrastLabels("dual:red", "set"))
    benchmark = json.loads(files["benchmark"].read_text())
    assert benchmark["score_kind"].startswith("cosine similarity")
    assert benchmark["scoring"]["unit"] == "embedding"
    assert "one embedding per image and per query (6 + 3 model passes)" in (
        files["report"].read_text()
    )


@pytest.fixture(scope="module")
def caption_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from contrastkit.tiny.itm import tiny_blip_itm
    from contrastkit.tiny.vlm import tiny_llava

    folder = tmp_path_factory.mktemp("caption-models")
    return {"vlm": tiny_llava(folder), "blip-itm": tiny_blip_itm(folder)}


@pytest.mark.slow
@pytest.mark.parametrize("family", ["vlm", "blip-itm"])
def test_tiny_caption_scorers_score_a_contrast_export_from_the_command_line(
    tmp_path: Path, caption_models: dict[str, str], family: str
) -> None:
    spec = caption_models[family]
    folder = contrast_export(tmp_path / "set")
    out = tmp_path / "res"
    args = ["evaluate", "--data", str(folder), "--model", spec, "--out", str(out), "--k", "2,4",
            "--bootstrap", "50", "--batch-size", "4"]  # fmt: skip
    result = runner.invoke(app, [*args, "--contrast-metrics", "all"])
    assert result.exit_code == 0, result.output
    assert "18 image-query pairs scored, 0 reused" in " ".join(result.output.split())
    [model_dir] = [p for p in out.iterdir() if p.is_dir()]
    benchmark = json.loads((model_dir / "benchmark.json").read_text())
    assert benchmark["random_weights"] is True and benchmark["weights_note"]
    kind = "log-likelihood" if family == "vlm" else "match"
    assert kind in benchmark["score_kind"]
    summary = benchmark["summary"]
    assert summary["scoring"]["metrics"] == "all" and summary["queries"] == 3
    assert {"bias@2", "maxskew@4", "NDKL"} <= set(summary["retrieval"])
    assert "mean_ci" in summary["retrieval"]["bias@2"]
    # the matrix is the adapter's own caption_scores of each image with the queries
    dataset = load_contrast(folder)
    queries = [q for captions in dataset["neutral_captions"] for q in captions]
    model = load_model(spec, ModelConfig(device="cpu", batch_size=32))
    images = list(dataset["image"])
    direct = caption_scores(model, images, [queries] * len(images))
    stored: dict[str, dict[str, float]] = {}
    for line in (model_dir / RAW_SCORES_FILE).read_text().splitlines():
        record = json.loads(line)  # image: SOURCE:GENDER:HASH
        stored.setdefault(record["image"].rsplit(":", 1)[0], {}).update(record["scores"])
    names = [f"{source}:{gender}" for source in REDS for gender in ("masculine", "feminine")]
    matrix = np.array([[stored[name][q] for q in queries] for name in names])
    np.testing.assert_allclose(matrix, direct, rtol=1e-5, atol=1e-6)
    raw = [json.loads(line) for line in (model_dir / "raw_contrast.jsonl").read_text().splitlines()]
    for index, record in enumerate(raw):
        column = queries.index(record["query"])
        assert record["score_masculine"] == matrix[2 * index, column]
        assert record["score_feminine"] == matrix[2 * index + 1, column]
    report = (model_dir / "report.md").read_text()
    assert f"Score: {benchmark['score_kind']}." in report
    assert "6 x 3 = 18 image-caption model passes" in report
    assert "Random weights" in report
    # a rerun reuses every score; the default (pairs) reads the pair cells back
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    text = " ".join(again.output.split())
    assert "0 image-query pairs scored, 6 reused" in text
    assert "retrieval metrics not computed" in text
    pairs = json.loads((model_dir / "benchmark.json").read_text())["summary"]
    assert pairs["pairs"] == summary["pairs"] and pairs["retrieval"] == {}
