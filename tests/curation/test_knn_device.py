"""Where the KNN filter runs (issue 15, item 4): the torch search against NumPy, the
choice of backend and device, ``cuda`` refused without CUDA, the ``--knn-device`` option
and the backend/device fields of the build summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.curation import knn_filter as knn
from contrastkit.curation import knn_search
from contrastkit.curation.knn_filter import (
    KnnFilterSettings,
    KnnSearch,
    knn_excluding_self,
    knn_filter,
    resolve_backend,
)
from contrastkit.errors import ConfigError

runner = CliRunner()


def _cuda_visible() -> bool:
    import torch

    faiss_gpus = knn._faiss_gpus()
    return torch.cuda.is_available() or bool(faiss_gpus)


needs_no_cuda = pytest.mark.skipif(_cuda_visible(), reason="this machine has a CUDA GPU")


def _lattice(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` points with integer coordinates in [0, 900)^8: every squared distance, dot
    product and norm is an integer below 2^24, so float32 computes them exactly whatever
    the order of the sums, and the backends can differ only where distances tie."""
    points: np.ndarray = rng.integers(0, 900, size=(n, 8)).astype(np.float32)
    return points


def _tie_free(points: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """The exact ``k`` nearest neighbours (float64, self excluded), after checking that no
    two of the ``k + 1`` nearest distances of any query tie."""
    p = points.astype(np.float64)
    d = ((p[queries][:, None, :] - p[None, :, :]) ** 2).sum(-1)
    d[np.arange(len(queries)), queries] = np.inf
    order = np.argsort(d, axis=1)[:, : k + 1]
    gaps = np.diff(np.take_along_axis(d, order, axis=1), axis=1)
    assert gaps.min() >= 1, "the test data has ties; pick another seed"
    nearest: np.ndarray = order[:, :k]
    return nearest


def test_torch_search_equals_numpy_and_the_definition() -> None:
    rng = np.random.default_rng(7)
    points = _lattice(rng, 600)
    queries = rng.choice(600, size=150, replace=False)
    expected = _tie_free(points, queries, 12)
    by_numpy = knn_excluding_self(points, queries, 12, backend="numpy")
    by_torch = knn_excluding_self(points, queries, 12, backend="torch", device="cpu")
    np.testing.assert_array_equal(by_numpy, expected)
    np.testing.assert_array_equal(by_torch, expected)


@pytest.mark.parametrize(
    ("block_bytes", "tile_points"),
    [(4 * 32 * 64, 64), (4 * 7 * 96, 96), (1 << 20, 1 << 18)],
    ids=["32-query blocks x 64-point tiles", "7 x 96", "one block"],
)
def test_torch_search_blocks_and_tiles_give_the_same_neighbours(
    block_bytes: int, tile_points: int
) -> None:
    """Query blocks, point tiles (merged), a last tile shorter than K + 1, and padding to
    whole groups (601 points, groups of 32) must not change the answer."""
    rng = np.random.default_rng(8)
    points = _lattice(rng, 601)
    queries = rng.choice(601, size=200, replace=False)
    expected = _tie_free(points, queries, 40)
    parts = [points[:250], points[250:251], points[251:]]  # uploaded part by part
    found = knn_search.torch_search(
        parts,
        queries,
        41,
        KnnSearch("torch", "cpu"),
        knn_search.TorchTiling(block_bytes, tile_points),
    )
    assert not (found == queries[:, None]).any()  # the query itself is masked
    np.testing.assert_array_equal(found[:, :40], expected)


def test_torch_filter_equals_numpy_filter() -> None:
    rng = np.random.default_rng(0)
    points = _lattice(rng, 440)
    real, synthetic = points[:40], points[40:]
    real_g = rng.choice(["masculine", "feminine"], size=40).tolist()
    synthetic_g = rng.choice(["masculine", "feminine"], size=400).tolist()
    expected = _tie_free(points, np.arange(40, 440), 20)
    a = knn_filter(real, real_g, synthetic, synthetic_g, KnnFilterSettings(k=20, backend="numpy"))
    b = knn_filter(
        real, real_g, synthetic, synthetic_g, KnnFilterSettings(k=20, backend="torch", device="cpu")
    )
    np.testing.assert_array_equal(a.neighbours, expected)
    np.testing.assert_array_equal(b.neighbours, expected)
    np.testing.assert_allclose(b.p_real, a.p_real, atol=1e-6, rtol=0)
    np.testing.assert_allclose(b.p_gender, a.p_gender, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(b.accepted, a.accepted)
    assert 0 < a.accepted.sum() < 400  # the thresholds decide something here
    assert (a.search, b.search) == (KnnSearch("numpy", "cpu"), KnnSearch("torch", "cpu"))


def test_torch_search_refuses_non_finite_embeddings() -> None:
    points = np.eye(6, dtype=np.float32)
    points[4, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        knn_excluding_self(points, np.arange(3), 2, backend="torch", device="cpu")
    with pytest.raises(ValueError, match="NaN or infinite"):
        knn_filter(points[:2], ["masculine"] * 2, points[2:] * np.nan, ["feminine"] * 4,
                   KnnFilterSettings(k=2, backend="torch", device="cpu"))  # fmt: skip


def test_torch_search_leaves_the_fp32_precision_setting_alone() -> None:
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        knn_excluding_self(np.eye(8, dtype=np.float32), np.arange(8), 3, backend="torch")
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(before)


def test_resolution_on_a_machine_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knn, "_torch_gpus", lambda: 0)
    monkeypatch.setattr(knn, "_faiss_gpus", lambda: 0)  # faiss-cpu
    assert resolve_backend() == KnnSearch("faiss", "cpu", 0)
    assert resolve_backend("auto", "cpu") == KnnSearch("faiss", "cpu", 0)
    assert resolve_backend("torch") == KnnSearch("torch", "cpu", 0)
    assert resolve_backend("numpy", "auto") == KnnSearch("numpy", "cpu", 0)
    assert resolve_backend("faiss", "auto") == KnnSearch("faiss", "cpu", 0)
    for backend in ("auto", "torch"):
        with pytest.raises(ConfigError, match="device 'cuda': no CUDA GPU is visible"):
            resolve_backend(backend, "cuda")
    with pytest.raises(ConfigError, match=r"contrastkit\[faiss-gpu\]"):
        resolve_backend("faiss", "cuda")
    with pytest.raises(ConfigError, match="runs on the CPU only"):
        resolve_backend("numpy", "cuda")
    with pytest.raises(ConfigError, match="device must be one of auto, cpu, cuda"):
        resolve_backend("auto", "gpu")
    with pytest.raises(ConfigError, match="backend must be one of"):
        resolve_backend("cupy")
    monkeypatch.setattr(knn, "_faiss_gpus", lambda: None)  # no FAISS at all
    assert resolve_backend() == KnnSearch("numpy", "cpu", 0)


def test_resolution_on_a_machine_with_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """What runs where torch sees 2 GPUs, with faiss-cpu and with faiss-gpu."""
    monkeypatch.setattr(knn, "_torch_gpus", lambda: 2)
    monkeypatch.setattr(knn, "_faiss_gpus", lambda: 0)  # faiss-cpu: the torch search
    assert resolve_backend() == KnnSearch("torch", "cuda", 2)
    assert resolve_backend("auto", "cuda") == KnnSearch("torch", "cuda", 2)
    assert resolve_backend("auto", "cpu") == KnnSearch("faiss", "cpu", 0)
    assert resolve_backend("faiss", "auto") == KnnSearch("faiss", "cpu", 0)
    assert resolve_backend("numpy") == KnnSearch("numpy", "cpu", 0)
    monkeypatch.setattr(knn, "_faiss_gpus", lambda: 2)  # faiss-gpu: FAISS on both GPUs
    assert resolve_backend() == KnnSearch("faiss", "cuda", 2)
    assert resolve_backend("faiss", "cuda") == KnnSearch("faiss", "cuda", 2)
    assert resolve_backend("torch", "cuda") == KnnSearch("torch", "cuda", 2)
    # Past FAISS's GPU limit of 2048 results per query, auto takes torch.
    assert resolve_backend("auto", "cuda", k=2048) == KnnSearch("torch", "cuda", 2)
    assert resolve_backend("faiss", "auto", k=2048) == KnnSearch("faiss", "cpu", 0)
    with pytest.raises(ConfigError, match="at most 2047 neighbours"):
        resolve_backend("faiss", "cuda", k=2048)


@needs_no_cuda
def test_cuda_without_cuda_is_a_config_error() -> None:
    rng = np.random.default_rng(0)
    real, synthetic = rng.normal(size=(5, 4)), rng.normal(size=(20, 4))
    with pytest.raises(ConfigError, match="device 'cuda': no CUDA GPU is visible"):
        knn_filter(
            real,
            ["masculine"] * 5,
            synthetic,
            ["feminine"] * 20,
            KnnFilterSettings(k=3, device="cuda"),
        )
    with pytest.raises(ConfigError, match="device 'cuda': no CUDA GPU is visible"):
        knn_excluding_self(synthetic, np.arange(3), 3, backend="torch", device="cuda")


@needs_no_cuda
def test_gensynth_config_refuses_cuda_before_any_work(tmp_path: Path) -> None:
    from contrastkit.builders.gensynth.job import GenSynthConfig

    with pytest.raises(ConfigError, match=r"knn_device \(--knn-device\): device 'cuda'"):
        GenSynthConfig(out=tmp_path / "o", stage="filter", knn_device="cuda")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="knn_device: must be one of auto, cpu, cuda"):
        GenSynthConfig(out=tmp_path / "o", stage="filter", knn_device="gpu")  # type: ignore[arg-type]
    # The select stage runs no search: nothing to refuse.
    config = GenSynthConfig(out=tmp_path / "o", stage="select", quality=False, knn_device="cuda")  # type: ignore[arg-type]
    assert config.knn_device == "cuda"
    assert not (tmp_path / "o").exists()


def test_knn_device_option_maps_onto_the_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from contrastkit.builders.gensynth import job
    from contrastkit.cli import app

    seen: list[Any] = []

    def build(config: Any, *, progress: Any = None, notify: Any = None) -> Any:
        seen.append(config)
        return job.GenSynthResult(
            out=config.out, stages=(), summary={}, summary_path=config.out / "s.json",
            manifest=config.out / "m.jsonl", contrast_set=None, sources_kept=None, quality=None,
        )  # fmt: skip

    monkeypatch.setattr(job, "build_gensynth", build)
    common = ["build", "gensynth", "--out", str(tmp_path / "o"), "--stage", "select"]
    for extra, expected in (([], "auto"), (["--knn-device", "cpu"], "cpu")):
        result = runner.invoke(app, [*common, *extra])
        assert result.exit_code == 0, result.output
        assert seen[-1].knn_device == expected
    result = runner.invoke(app, [*common, "--knn-device", "gpu"])
    assert result.exit_code == 2 and "--knn-device" in result.output
    assert len(seen) == 2


@needs_no_cuda
def test_knn_device_cuda_on_the_command_line_without_cuda(tmp_path: Path) -> None:
    from contrastkit.cli import app

    out = tmp_path / "o"
    result = runner.invoke(
        app, ["build", "gensynth", "--out", str(out), "--stage", "filter", "--knn-device", "cuda"]
    )
    assert result.exit_code == 2
    assert "knn_device (--knn-device): device 'cuda': no CUDA GPU is visible" in result.stderr
    assert not out.exists()


def _build_folder(out: Path, sources_dir: Path) -> None:
    """A GenSynth build folder after the edit stage: 3 sources, 4 edits each (random
    pixels, so the embeddings have no ties)."""
    from contrastkit.builders.coco import Box, SourceImage
    from contrastkit.builders.manifest import EditRecord, Manifest, write_image, write_sources
    from contrastkit.schema import Gender

    rng = np.random.default_rng(0)
    sources_dir.mkdir(parents=True)
    sources = []
    manifest = Manifest(out)
    for s, label in enumerate((Gender.MASCULINE, Gender.FEMININE, Gender.FEMININE)):
        path = sources_dir / f"{s}.png"
        Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(path)
        sources.append(SourceImage(str(s), path, 48, 48, Box(4, 4, 40, 40), ("a person",), label))
        for e, target in enumerate(("masculine", "feminine") * 2):
            edit = f"edits/{s}-{e}.png"
            pixels = rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)
            write_image(out / edit, Image.fromarray(pixels))
            manifest.append(
                EditRecord(
                    edit_id=f"{s}-{e}", source_id=str(s), method="instructpix2pix",
                    target=target, source_label=label.value, box=[4, 4, 40, 40], seed=e,
                    path=edit, editor="test", instruction=f"Make this person more {target}",
                    text_guidance_scale=9.5, image_guidance_scale=1.5, steps=2,
                )
            )  # fmt: skip
    write_sources(out, sources)


@pytest.mark.slow
def test_build_summary_says_which_search_ran(
    tiny_clip_spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contrastkit.builders.gensynth.job import GenSynthConfig, build_gensynth
    from contrastkit.config import ModelConfig

    out = tmp_path / "build"
    _build_folder(out, tmp_path / "sources")

    def run(**fields: Any) -> dict[str, Any]:
        result = build_gensynth(
            GenSynthConfig(
                out=out, stage="filter", embedder=tiny_clip_spec, k=4,  # type: ignore[arg-type]
                model=ModelConfig(device="cpu"), **fields,
            )
        )  # fmt: skip
        stored = json.loads(result.summary_path.read_text())["filter"]
        assert stored == result.summary["filter"]
        return stored

    default = run()
    assert default["edits"] == 12 and default["k_effective"] == 4
    assert (default["backend"], default["device"], default["gpus"]) == ("faiss", "cpu", 0)
    by_torch = run(backend="torch", knn_device="cpu")
    assert (by_torch["backend"], by_torch["device"], by_torch["gpus"]) == ("torch", "cpu", 0)
    assert by_torch["mean_p_real"] == pytest.approx(default["mean_p_real"], abs=1e-6)
    assert by_torch["accepted"] == default["accepted"]
    # Where torch sees GPUs, auto would take them: knn_device="cpu" reaches the filter.
    monkeypatch.setattr(knn, "_torch_gpus", lambda: 1)
    pinned = run(backend="torch", knn_device="cpu")
    assert (pinned["backend"], pinned["device"]) == ("torch", "cpu")
    assert knn.resolve_backend("torch", "auto") == KnnSearch("torch", "cuda", 1)
