"""CLIP-clip in the model registry: a saved choice (``clip_clip_N.json``) on any dual encoder,
usable by ``load_scorer`` and ``contrastkit evaluate``; fitting stays in the audit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clipclip_data import informative_embeddings
from contrastkit.audit.clipclip import fit_clip_clip
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.models import load_scorer, parse_spec
from contrastkit.models.clipclip import ClipClip, ClippedScorer
from contrastkit.models.registry import random_weights, weights_note
from contrastkit.pipeline import embed_images
from eval_data import grace_hopper, write_small_dataset

CPU = ModelConfig(device="cpu", batch_size=4)


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class _Rows:
    """A dual encoder whose i-th image embeds as the i-th of given rows."""

    spec = "rows"

    def __init__(self, rows: np.ndarray):
        self.rows = rows.astype(np.float32)
        self.seen = 0

    def encode_images(self, images: Sequence[object]) -> np.ndarray:
        start, self.seen = self.seen, self.seen + len(images)
        return self.rows[start : self.seen]

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self.rows[: len(texts)]

    def score(self, images: Sequence[object], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def test_the_wrapper_drops_exactly_the_fitted_informative_dimensions(tmp_path: Path) -> None:
    x, labels = informative_embeddings()
    choice = fit_clip_clip(x, labels, 2, fitted_on="fixture")
    assert choice.dropped == (3, 7)  # the planted dimensions, most informative first
    saved = ClipClip.load(choice.save(tmp_path / "clip_clip_1.json"))
    assert saved == choice
    scorer = ClippedScorer(_Rows(x), saved)  # type: ignore[arg-type]
    images = scorer.encode_images([object()] * 400)  # type: ignore[list-item]
    kept = [d for d in range(12) if d not in (3, 7)]
    np.testing.assert_allclose(images, _unit(x[:, kept]), rtol=1e-5, atol=1e-6)
    assert scorer.embedding_dim == 10 and scorer.random_weights is False
    # the label can no longer be read off the dropped dimensions: the clipped
    # embeddings separate the genders far less than the raw ones
    masculine = np.array([label == "masculine" for label in labels])
    raw_gap = np.linalg.norm(_unit(x)[masculine].mean(0) - _unit(x)[~masculine].mean(0))
    clipped_gap = np.linalg.norm(images[masculine].mean(0) - images[~masculine].mean(0))
    assert clipped_gap < raw_gap / 3


@pytest.fixture(scope="module")
def tiny(tiny_clip_spec: str) -> str:
    """The session's tiny OpenCLIP model (tests/conftest.py)."""
    return tiny_clip_spec


def test_load_scorer_takes_a_saved_choice_on_a_real_model(tiny: str, tmp_path: Path) -> None:
    dropped = (31, 0, 17, 5)
    path = ClipClip(32, dropped, (0.0,) * 32, "hand-made").save(tmp_path / "clip_clip_2.json")
    spec = f"clip-clip:load={path}:{tiny}"
    assert parse_spec(spec).kind == "dual"
    scorer = load_scorer(spec, CPU)
    base = load_scorer(tiny, CPU)
    assert scorer.spec == spec and isinstance(scorer, ClippedScorer)
    kept = [d for d in range(32) if d not in dropped]
    texts = ["a photo of a doctor", "a photo of a nurse"]
    np.testing.assert_allclose(
        scorer.encode_texts(texts), _unit(base.encode_texts(texts)[:, kept]), atol=1e-6
    )
    photos = [grace_hopper(), grace_hopper().rotate(90)]
    # through the image pipeline (preprocessed pixel batches), as evaluate feeds it
    assert scorer.image_preprocess is not None  # type: ignore[attr-defined]
    clipped = embed_images(scorer, photos)
    np.testing.assert_allclose(clipped, _unit(embed_images(base, photos)[:, kept]), atol=1e-6)
    np.testing.assert_allclose(scorer.encode_images(photos), clipped, atol=1e-6)
    # the base's random weights are carried, in the flag and in every report's note
    assert scorer.random_weights is True  # type: ignore[attr-defined]
    assert random_weights(spec) and (weights_note(spec) or "").startswith(spec)
    assert not random_weights("clip-clip:load=x.json:open_clip:ViT-B-32/openai")


def test_the_registry_refuses_what_it_cannot_load(tiny: str, tmp_path: Path) -> None:
    fit = f"clip-clip:m=5,fit=data/coco:{tiny}"
    with pytest.raises(ConfigError, match="contrastkit audit") as caught:
        load_scorer(fit, CPU)
    assert "clip-clip:load=DIR/clip_clip_N.json:" in str(caught.value)
    with pytest.raises(ConfigError, match="captioning"):
        parse_spec("clip-clip:load=c.json:blip:Salesforce/blip-image-captioning-large")
    with pytest.raises(ConfigError, match="options are"):
        parse_spec(f"clip-clip:k=3:{tiny}")
    with pytest.raises(ModelNotFoundError, match=r"clip_clip_N\.json"):
        load_scorer(f"clip-clip:load={tmp_path / 'none.json'}:{tiny}", CPU)
    wide = ClipClip(64, (1,), (0.0,) * 64).save(tmp_path / "wide.json")
    with pytest.raises(ConfigError, match="64"):
        load_scorer(f"clip-clip:load={wide}:{tiny}", CPU)


@pytest.mark.slow
def test_evaluate_scores_a_saved_choice_end_to_end(tiny: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_small_dataset(data)
    none = ClipClip(32, (), (0.0,) * 32).save(tmp_path / "m0.json")
    some = ClipClip(32, tuple(range(0, 32, 2)), (0.0,) * 32).save(tmp_path / "m16.json")
    specs = [tiny, f"clip-clip:load={none}:{tiny}", f"clip-clip:load={some}:{tiny}"]
    out = tmp_path / "o"
    args = ["evaluate", "--data", str(data / "visogender_OP.tsv"), "--out", str(out), "--json",
            "--device", "cpu", "--subsample-runs", "5", "--baseline-runs", "5"]  # fmt: skip
    result = CliRunner().invoke(app, [*args, *(x for s in specs for x in ("--model", s))])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert [entry["model"] for entry in summary] == specs

    def scores(entry: dict[str, object]) -> list[float]:
        lines = (Path(str(entry["folder"])) / "raw_resolution.jsonl").read_text().splitlines()
        return [v for line in lines for v in json.loads(line)["scores"].values()]

    base, unclipped, clipped = (scores(entry) for entry in summary)
    assert len(base) == len(unclipped) == len(clipped) > 0  # 3 captions per case
    np.testing.assert_allclose(unclipped, base, atol=1e-5)  # m = 0 is the base model
    assert np.abs(np.asarray(clipped) - np.asarray(base)).max() > 1e-3
    results = json.loads((Path(summary[2]["folder"]) / "benchmark.json").read_text())
    results = next(iter(results.values()))
    assert results["random_weights"] is True and specs[2] in results["weights_note"]
    refused = CliRunner().invoke(app, [*args, "--model", f"clip-clip:m=2,fit={data}:{tiny}"])
    assert refused.exit_code == 2 and "contrastkit audit" in refused.stderr
