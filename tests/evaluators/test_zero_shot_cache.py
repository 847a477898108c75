"""The zero-shot disparity job keeps its image and prompt embeddings: a rerun embeds
nothing, an interrupted run resumes where it stopped, a changed prompt embeds only the
new prompts (:mod:`contrastkit.evaluators.tasks.zero_shot.cache`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import contrastkit.models as models
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import StateError
from contrastkit.evaluators.tasks.zero_shot.cache import EmbeddingCache
from contrastkit.evaluators.tasks.zero_shot.groups import GroupingOptions, load_grouped
from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityConfig, zero_shot_disparity
from contrastkit.io import exclusive_lock
from zero_shot_data import write_vg

runner = CliRunner()


class InterruptedRunError(RuntimeError):
    """What the counting scorer raises to simulate a run stopped part-way."""


class Counting:
    """A real scorer that counts what it embeds; ``stop_after`` image batches it raises
    :class:`InterruptedRunError`; ``forbid`` makes any embedding fail."""

    def __init__(self, inner: Any, *, stop_after: int | None = None, forbid: bool = False):
        self.inner, self.stop_after, self.forbid = inner, stop_after, forbid
        self.images = 0
        self.batches = 0
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _image_batch(self, n: int) -> None:
        assert not self.forbid, "the cache should have made embedding images unnecessary"
        if self.stop_after is not None and self.batches >= self.stop_after:
            raise InterruptedRunError(f"stopped after {self.batches} batches")
        self.batches += 1
        self.images += n

    def encode_pixels(self, pixels: Any) -> Any:
        self._image_batch(len(pixels))
        return self.inner.encode_pixels(pixels)

    def encode_images(self, images: Sequence[Any]) -> Any:
        self._image_batch(len(images))
        return self.inner.encode_images(images)

    def encode_texts(self, texts: Sequence[str]) -> Any:
        assert not self.forbid, "the cache should have made embedding prompts unnecessary"
        self.texts += list(texts)
        return self.inner.encode_texts(texts)


@pytest.fixture(scope="module")
def spec(tiny_clip_spec: str) -> str:
    """The session's tiny OpenCLIP model (tests/conftest.py)."""
    return tiny_clip_spec


@pytest.fixture(scope="module")
def vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg") / "vg")


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch, spec: str) -> Any:
    """``use(**options)`` makes the next runs load the tiny model wrapped in a
    :class:`Counting` with those options, and returns the wrapper."""
    real = models.load_scorer

    def install(**options: Any) -> Counting:
        wrapper = Counting(real(spec, ModelConfig(workers=0, batch_size=8)), **options)
        monkeypatch.setattr(models, "load_scorer", lambda *args, **kwargs: wrapper)
        return wrapper

    return install


def _config(spec: str, vg: Path, out: Path, **options: Any) -> ZeroShotDisparityConfig:
    options = {"min_images": 5, "bootstrap": 0, "plots": False, **options}
    return ZeroShotDisparityConfig(
        data=vg, out=out, model=spec, model_config=ModelConfig(workers=0, batch_size=8), **options
    )


def _aps(results: dict[str, Any]) -> dict[str, tuple[float, float]]:
    return {c["concept"]: (c["ap_men"], c["ap_women"]) for c in results["concepts"]}


@pytest.mark.slow
def test_a_rerun_embeds_nothing_and_gives_the_same_results(
    spec: str, vg: Path, tmp_path: Path, use: Any
) -> None:
    n_images = len(load_grouped(vg, GroupingOptions(min_images=5)).images)
    first = use()
    result = zero_shot_disparity(_config(spec, vg, tmp_path))
    assert first.images == n_images and len(first.texts) == 4
    assert result.results["cache"] == {
        "folder": "cache",
        "images": {"reused": 0, "computed": n_images},
        "prompts": {"reused": 0, "computed": 4},
    }
    assert sorted(p.name for p in (result.folder / "cache").glob("*.npz")) == [
        "images.npz", "texts.npz",
    ]  # fmt: skip

    use(forbid=True)  # any embedding now fails the run: all must come from the cache
    code = runner.invoke(
        app, ["evaluate", "--task", "zero-shot-disparity", "--data", str(vg), "--model", spec,
              "--out", str(tmp_path), "--min-images", "5", "--bootstrap", "0"],
    )  # fmt: skip
    assert code.exit_code == 0, code.output
    assert f"{n_images} images and 4 prompts reused" in code.output
    assert "0 images and 0 prompts computed" in code.output
    again = json.loads((result.folder / "disparity.json").read_text(encoding="utf-8"))
    assert again["cache"]["images"] == {"reused": n_images, "computed": 0}
    assert again["cache"]["prompts"] == {"reused": 4, "computed": 0}
    assert _aps(again) == _aps(dict(result.results))


@pytest.mark.model_outputs
@pytest.mark.slow
def test_an_interrupted_run_resumes_and_embeds_only_the_rest(
    spec: str, vg: Path, tmp_path: Path, use: Any
) -> None:
    n_images = len(load_grouped(vg, GroupingOptions(min_images=5)).images)
    use(stop_after=3)  # three batches of 8 images are embedded, then the run stops
    with pytest.raises(InterruptedRunError):
        zero_shot_disparity(_config(spec, vg, tmp_path / "resumed"))
    cache = next((tmp_path / "resumed").glob("*/zero_shot/cache"))
    assert len(list(cache.glob("images.part-*.npz"))) == 3  # flushed batch by batch

    second = use()
    resumed = zero_shot_disparity(_config(spec, vg, tmp_path / "resumed"))
    assert second.images == n_images - 24
    assert resumed.results["cache"]["images"] == {"reused": 24, "computed": n_images - 24}
    assert not list(cache.glob("images.part-*.npz"))  # merged into images.npz

    use()
    whole = zero_shot_disparity(_config(spec, vg, tmp_path / "whole"))
    assert _aps(dict(resumed.results)) == _aps(dict(whole.results))


@pytest.mark.slow
def test_a_changed_prompt_or_concept_set_embeds_only_what_is_missing(
    spec: str, vg: Path, tmp_path: Path, use: Any
) -> None:
    use()
    zero_shot_disparity(_config(spec, vg, tmp_path))
    changed = use()
    result = zero_shot_disparity(_config(spec, vg, tmp_path, prompt="a photo of a {}."))
    assert changed.images == 0
    assert sorted(changed.texts) == [
        "a photo of a chair.", "a photo of a dress.", "a photo of a hair.",
        "a photo of a necktie.",
    ]  # fmt: skip
    assert result.results["cache"]["prompts"] == {"reused": 0, "computed": 4}
    # the new prompts' scores are the model's: same as a run that starts from nothing
    use()
    fresh = zero_shot_disparity(_config(spec, vg, tmp_path / "fresh", prompt="a photo of a {}."))
    assert _aps(dict(result.results)) == _aps(dict(fresh.results))

    fewer = use(forbid=True)  # a stricter filter: a subset of concepts and images, all kept
    narrow = zero_shot_disparity(_config(spec, vg, tmp_path, min_images=6))
    assert fewer.images == 0 and narrow.results["counts"]["concepts_kept"] == 2
    assert narrow.results["cache"]["prompts"] == {"reused": 2, "computed": 0}


def test_a_second_run_on_the_same_folder_is_refused(
    spec: str, vg: Path, tmp_path: Path, use: Any
) -> None:
    use(forbid=True)
    config = _config(spec, vg, tmp_path)
    cache = config.folder / "cache"
    with exclusive_lock(cache / ".lock", str(cache), "test"), pytest.raises(StateError):
        zero_shot_disparity(config)


def test_the_cache_keeps_one_models_embeddings_and_skips_broken_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3, 4)).astype(np.float32)
    cache = EmbeddingCache(tmp_path, "images", "open_clip:a", "torch.float32")
    cache.add(["x", "y"], vectors[:2])
    cache.add(["z"], vectors[2:])

    again = EmbeddingCache(tmp_path, "images", "open_clip:a", "torch.float32")
    assert again.missing(["z", "w", "x", "w"]) == ["w"]
    np.testing.assert_array_equal(again.matrix(["z", "x"]), vectors[[2, 0]])
    # another model or precision under the same folder reuses nothing
    assert len(EmbeddingCache(tmp_path, "images", "open_clip:b", "torch.float32")) == 0
    assert len(EmbeddingCache(tmp_path, "images", "open_clip:a", "torch.float16")) == 0

    again.consolidate()
    assert [p.name for p in tmp_path.glob("images*.npz")] == ["images.npz"]
    (tmp_path / "images.part-000007.npz").write_bytes(b"cut short")  # unreadable: skipped
    reread = EmbeddingCache(tmp_path, "images", "open_clip:a", "torch.float32")
    np.testing.assert_array_equal(reread.matrix(["x", "y", "z"]), vectors)
    reread.add(["w"], vectors[:1])  # numbered after the broken part, which is never read
    assert (tmp_path / "images.part-000008.npz").is_file()
    reread.consolidate()
    assert [p.name for p in tmp_path.glob("images*.npz")] == ["images.npz"]
    assert len(EmbeddingCache(tmp_path, "images", "open_clip:a", "torch.float32")) == 4
