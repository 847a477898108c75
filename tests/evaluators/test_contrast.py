"""Contrast-set evaluation: known similarities give known metrics; exports and Hub-style
folders evaluate end to end from the command line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import (
    ExportVisoGenderConfig,
    contrast_features,
    export_visogender,
)
from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.contrast import evaluate_contrast, load_contrast
from contrastkit.evaluators.hub import hub_name

datasets.disable_progress_bars()
runner = CliRunner()


class RedMeansMasculine:
    """Image embedding (red, blue) normalised; every text embeds as (1, 0): a model whose
    neutral queries always prefer the red (masculine) version."""

    spec = "known:red"

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        rows = np.array([np.asarray(i, dtype=np.float32).mean(axis=(0, 1))[[0, 2]] for i in images])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def contrast_export(folder: Path, sources: int = 3) -> Path:
    """An export-shaped folder: per source a red masculine and a blue feminine image."""
    rows = {name: [] for name in contrast_features()}  # type: dict[str, list[object]]
    for s in range(sources):
        for gender, colour in (("masculine", (200, 10, 60)), ("feminine", (60, 10, 200))):
            image = Image.new("RGB", (32, 32), colour)
            values = {
                "source_id": str(s), "gender": gender, "image": image, "edit_id": f"{s}-{gender}",
                "method": "gensynth", "source_label": "masculine",
                "captions": [f"A {'man' if gender == 'masculine' else 'woman'} in scene {s}."],
                "neutral_captions": [f"A person in scene {s}."],
                "original_captions": [f"A man in scene {s}."], "box": [0.0, 0.0, 32.0, 32.0],
                "p_real": 0.5, "p_gender": 0.9, "instruction": "x", "text_guidance_scale": 9.5,
                "image_guidance_scale": 1.5, "steps": 2, "seed": s, "donor": None,
            }  # fmt: skip
            for name in rows:
                rows[name].append(values[name])
    data = datasets.Dataset.from_dict(rows, features=contrast_features())
    datasets.DatasetDict({"test": data}).save_to_disk(str(folder / "saved" / "contrast"))
    return folder


def test_known_similarities_give_known_metrics(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    result = evaluate_contrast(dataset, RedMeansMasculine(), ks=(2, 4), batch_size=4)
    summary = result["summary"]
    assert (summary["images"], summary["sources"], summary["queries"]) == (6, 3, 3)
    retrieval = summary["retrieval"]
    # The top 2 of every query are red (masculine): Bias@2 = 1 in both conventions.
    assert retrieval["bias@2"]["mean"] == pytest.approx(1.0)
    assert retrieval["bias_gensynth@2"]["mean"] == pytest.approx(1.0)
    # Top 4: three masculine, one feminine -> VisoGender (3 - 1) / 4, GenSynth (3 - 1) / 4.
    assert retrieval["bias@4"]["mean"] == pytest.approx(0.5)
    assert retrieval["bias_gensynth@4"]["mean"] == pytest.approx(0.5)
    assert retrieval["bias@4"]["sigma"] == pytest.approx(0.0)
    pairs = summary["pairs"]
    assert pairs["queries_with_pair"] == 3 and pairs["masculine_preferred"] == 1.0
    red = np.array([200, 60]) / np.linalg.norm([200, 60])
    blue = np.array([60, 200]) / np.linalg.norm([60, 200])
    assert pairs["mean_gap"] == pytest.approx(red[0] - blue[0], abs=1e-5)
    first = result["queries"][0]
    assert first["top"][:3] == ["0:masculine", "1:masculine", "2:masculine"]


def test_a_dataset_without_the_contrast_columns_is_refused(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"source_id": ["1"]}).save_to_disk(str(tmp_path / "d"))
    with pytest.raises(DataFormatError, match="'gender': a contrast set needs this column"):
        load_contrast(tmp_path / "d")


def test_hub_names() -> None:
    assert hub_name("hf:me/set") == "me/set"
    assert hub_name("hf:/tmp") == "/tmp"  # a folder laid out like a Hub repository
    assert hub_name("me/set") is None and hub_name("data/OP.tsv") is None
    with pytest.raises(ValueError, match="expected hf:USER/NAME"):
        hub_name("hf:not a repo")


@pytest.mark.slow
def test_evaluate_a_contrast_export_from_the_command_line(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    folder = contrast_export(tmp_path / "set", sources=4)
    result = runner.invoke(
        app, ["evaluate", "--data", str(folder), "--model", tiny_clip_spec, "--out",
              str(tmp_path / "res"), "--k", "2,4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [model_dir] = [p for p in (tmp_path / "res").iterdir() if p.is_dir()]
    benchmark = json.loads((model_dir / "benchmark.json").read_text())
    assert benchmark["task"] == "contrast" and benchmark["summary"]["queries"] == 4
    raw = [json.loads(line) for line in (model_dir / "raw_contrast.jsonl").read_text().splitlines()]
    assert len(raw) == 4 and {"score_masculine", "score_feminine"} <= set(raw[0])
    assert "## Pair preference" in (model_dir / "report.md").read_text()
    assert (model_dir / "plots" / "contrast_bias.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_evaluate_reads_a_hub_style_dataset(
    tmp_path: Path, tiny_clip_spec: str, official_oo: Path
) -> None:
    """`hf:` goes through datasets.load_dataset, here on a folder laid out like a Hub
    repository (what `publish --dry-run` writes), with images from local files."""
    from contrastkit.builders.publish import PublishConfig, publish
    from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv

    table = read_visogender_tsv(official_oo)
    photo = tmp_path / "photo.png"
    Image.new("RGB", (40, 40), (120, 80, 40)).save(photo)
    rows = [r.__class__(**{**r.__dict__, "url": str(photo)}) for r in table.rows[:20]]
    write_visogender_tsv(tmp_path / "oo.tsv", rows, table.context)
    export_visogender(ExportVisoGenderConfig(files=(tmp_path / "oo.tsv",), out=tmp_path / "export"))
    publish(PublishConfig(tmp_path / "export", "me/oo", dry_run=True, tree=tmp_path / "tree"))
    result = runner.invoke(
        app, ["evaluate", "--data", f"hf:{tmp_path / 'tree'}", "--model", tiny_clip_spec,
              "--out", str(tmp_path / "res"), "--task", "resolution"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "res" / "_data").iterdir())  # the local copy of the Hub data


@pytest.mark.slow
def test_evaluate_contrast_sets_from_python(tmp_path: Path, tiny_clip_spec: str) -> None:
    """Two contrast sets, one model: one report per data folder, from the Python API."""
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.job import EvaluateConfig, evaluate
    from contrastkit.evaluators.runner import EvalConfig

    first = contrast_export(tmp_path / "first", sources=4)
    second = contrast_export(tmp_path / "second", sources=2)
    result = evaluate(
        EvaluateConfig(
            data=(str(first), str(second)),
            models=(tiny_clip_spec,),
            out=tmp_path / "res",
            model=ModelConfig(device="cpu", batch_size=3),
            settings=EvalConfig(ks=(2, 4)),
        )
    )
    assert result.kind == "contrast" and result.comparison is None
    assert [e.data for e in result.evaluations] == [str(first), str(second)]
    assert [e.folder.name for e in result.evaluations] == ["first", "second"]
    one = result.evaluations[0]
    assert one.scored_images == 8 and one.summary["queries"] == 4
    assert set(one.summary["retrieval"]) >= {"bias@2", "bias@4", "bias_gensynth@4"}
    assert one.files["plot"].read_bytes()[:4] == b"\x89PNG"
    assert json.loads(one.files["benchmark"].read_text())["summary"]["ks"] == [2, 4]


@pytest.mark.slow
def test_contrast_sets_cannot_be_mixed_with_visogender_data(
    tmp_path: Path, tiny_clip_spec: str, official_oo: Path
) -> None:
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import EvaluateConfig, evaluate

    folder = contrast_export(tmp_path / "set")
    config = EvaluateConfig(
        data=(str(folder), str(official_oo)), models=(tiny_clip_spec,), out=tmp_path / "res"
    )
    with pytest.raises(ConfigError, match="mixes contrast sets"):
        evaluate(config)
    with pytest.raises(ConfigError, match="captioning model"):
        evaluate(
            EvaluateConfig(data=(str(folder),), models=("blip:some/model",), out=tmp_path / "r")
        )


def test_a_contrast_set_without_neutral_captions_is_a_data_error(tmp_path: Path) -> None:
    folder = contrast_export(tmp_path / "set", sources=1)
    saved = folder / "saved" / "contrast"
    data = datasets.load_from_disk(str(saved))["test"]
    data = data.map(lambda row: {"neutral_captions": []})
    datasets.DatasetDict({"test": data}).save_to_disk(str(tmp_path / "empty"))
    with pytest.raises(DataFormatError, match="no neutral captions") as info:
        load_contrast(tmp_path / "empty")
    assert info.value.field == "neutral_captions"
