"""CLIP-clip (Wang et al. 2021; GenSynth Sec. 5): the m dimensions with the highest mutual
information with the gender label are the ones dropped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clipclip_data import informative_embeddings
from contrastkit.audit.clipclip import (
    ClipClip,
    ClippedScorer,
    fit_clip_clip,
    mutual_information,
    parse_clip_clip_spec,
)
from contrastkit.cli import app
from contrastkit.errors import ConfigError, DataFormatError


def _embeddings(seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """400 rows x 12 dims: dim 3 depends strongly on the label, dim 7 less, dim 5
    weakly; the rest is noise (:func:`clipclip_data.informative_embeddings`)."""
    return informative_embeddings(seed)


def test_the_most_informative_dimensions_are_dropped() -> None:
    x, labels = _embeddings()
    information = mutual_information(x, [label == "masculine" for label in labels])
    assert information.shape == (12,)
    assert np.argsort(-information)[:3].tolist() == [3, 7, 5]
    assert information[3] < np.log(2) + 1e-12  # never above H(g) for a balanced label
    choice = fit_clip_clip(x, labels, 2)
    assert choice.dropped == (3, 7)
    assert choice.kept.tolist() == [0, 1, 2, 4, 5, 6, 8, 9, 10, 11]
    assert fit_clip_clip(x, labels, 3).dropped == (3, 7, 5)
    assert fit_clip_clip(x, labels + ["undefined"] * 0, 0).dropped == ()
    with pytest.raises(ConfigError):
        fit_clip_clip(x, labels, 12)
    with pytest.raises(ConfigError):
        fit_clip_clip(x, ["masculine"] * 400, 2)


def test_independent_dimensions_carry_almost_no_information() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2000, 4))
    information = mutual_information(x, rng.random(2000) < 0.5)
    assert information.max() < 0.01


class _Fixed:
    """A dual encoder whose images embed as given rows and texts as (1, 1, 1, 1)."""

    spec = "fixed"

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def encode_images(self, images: Sequence[object]) -> np.ndarray:
        return self.rows[: len(images)]

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.full((len(texts), 4), 0.5, dtype=np.float32)

    def score(self, images: Sequence[object], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def test_clipped_scorer_keeps_the_other_dimensions_normalised(tmp_path: Path) -> None:
    rows = np.array([[0.9, 0.3, 0.3, 0.1], [0.1, 0.7, 0.7, 0.1]], dtype=np.float32)
    choice = ClipClip(4, (0, 3), (0.5, 0.0, 0.0, 0.2))
    scorer = ClippedScorer(_Fixed(rows), choice)  # type: ignore[arg-type]
    images = scorer.encode_images([object(), object()])  # type: ignore[list-item]
    np.testing.assert_allclose(images, np.full((2, 2), 1 / np.sqrt(2)), rtol=1e-6)
    np.testing.assert_allclose(scorer.score([object()], ["a"]), [[1.0]], rtol=1e-6)  # type: ignore[list-item]
    assert scorer.spec == "clip-clip:m=2:fixed"
    path = choice.save(tmp_path / "choice.json")
    assert ClipClip.load(path) == choice
    assert json.loads(path.read_text(encoding="utf-8"))["m"] == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dims": 4, "dropped": [4], "mutual_information": []}))
    with pytest.raises(DataFormatError):
        ClipClip.load(bad)
    wrong_width = ClippedScorer(_Fixed(rows), ClipClip(8, (0,), (0.0,) * 8))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="8"):
        wrong_width.encode_texts(["a"])


def test_clip_clip_specs() -> None:
    parsed = parse_clip_clip_spec("clip-clip:m=100,fit=data/coco:open_clip:ViT-B-32/openai")
    assert (parsed.m, parsed.fit, parsed.base) == (
        100,
        Path("data/coco"),
        "open_clip:ViT-B-32/openai",
    )
    assert parsed.split is None
    split = parse_clip_clip_spec("clip-clip:m=5,fit=coco,split=train2017:open_clip:x")
    assert (split.split, split.base) == ("train2017", "open_clip:x")
    loaded = parse_clip_clip_spec("clip-clip:load=choice.json:hf-clip:openai/clip-vit-base-patch32")
    assert loaded.load == Path("choice.json") and loaded.m is None
    for bad in ("clip-clip:m=1:open_clip:x", "clip-clip:m=x,fit=d:open_clip:x",
                "clip-clip:m=1,fit=d", "clip-clip:k=1,fit=d:open_clip:x",
                "clip-clip:m=1,fit=d,load=f:open_clip:x"):  # fmt: skip
        with pytest.raises(ConfigError):
            parse_clip_clip_spec(bad)


@pytest.mark.slow
def test_audit_scores_a_fitted_clip_clip_model(planted_coco, tmp_path: Path) -> None:
    from contrastkit.tiny.clip import tiny_open_clip

    base = tiny_open_clip(tmp_path / "models")
    data = planted_coco(masculine=12, feminine=8, undefined=5, with_files=True)
    spec = f"clip-clip:m=5,fit={data}:{base}"
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["audit", str(data), "--out", str(out), "--only", "baselines", "--model", base,
         "--model", spec, "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert {"random", "tfidf", base, spec} == set(report["baselines"]["models"])
    saved = ClipClip.load(out / report["baselines"]["clip_clip_files"][spec])
    assert saved.dims == 32 and len(saved.dropped) == 5 and saved.kept.size == 27
    information = np.asarray(saved.mutual_information)
    assert information[list(saved.dropped)].min() >= np.delete(information, saved.dropped).max()
    assert "CLIP-clip" in (out / "audit.md").read_text(encoding="utf-8")
    # a saved choice is loaded as it is
    again = CliRunner().invoke(
        app,
        ["audit", str(data), "--out", str(tmp_path / "again"), "--only", "baselines",
         "--model", f"clip-clip:load={out / 'clip_clip_2.json'}:{base}", "--device", "cpu"],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    copied = json.loads((tmp_path / "again" / "audit.json").read_text(encoding="utf-8"))
    named = copied["baselines"]["clip_clip_files"]  # the file the report names exists
    assert ClipClip.load(tmp_path / "again" / next(iter(named.values()))) == saved
