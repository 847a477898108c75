"""The image pipeline (contrastkit.pipeline): worker decoding, the tensor fast path against
the models' own PIL preprocessing, odd image formats, errors, mixed precision."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from contrastkit.config import ModelConfig
from contrastkit.errors import DataFormatError
from contrastkit.models import load_scorer
from contrastkit.pipeline import (
    PipelineConfig,
    decode,
    embed_images,
    image_batches,
    orient_tensor,
)
from contrastkit.pipeline.sources import DatasetImage

#: Fast path against reference, per embedding: the documented tolerance (docs/pipeline.md).
MIN_COSINE = 0.999

DUAL = ("open_clip", "hf_clip", "siglip")


def _exif(orientation: int) -> Image.Exif:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif


@pytest.fixture(scope="module")
def odd_files(tmp_path_factory: pytest.TempPathFactory, photos: list[Image.Image]) -> list[Path]:
    """Real photos saved as a PNG, a CMYK JPEG, a 16-bit PNG, a grey JPEG, an RGB JPEG
    and JPEGs carrying EXIF orientations 6 and 3."""
    folder = tmp_path_factory.mktemp("odd")
    hopper, astronaut, camera, crop = photos
    files = []

    def save(name: str, image: Image.Image, **options: object) -> None:
        path = folder / name
        image.save(path, **options)
        files.append(path)

    save("astronaut.png", astronaut)
    save("cmyk.jpg", hopper.convert("CMYK"), quality=92)
    sixteen = (np.asarray(camera, dtype=np.uint16) * 257).astype(np.uint16)
    save("sixteen.png", Image.fromarray(sixteen))
    save("grey.jpg", camera, quality=90)
    save("rgb.jpg", crop, quality=90)
    save("rotated6.jpg", hopper.crop((0, 0, 300, 200)), quality=90, exif=_exif(6))
    save("rotated3.jpg", astronaut.crop((50, 0, 350, 220)), quality=90, exif=_exif(3))
    return files


def test_the_odd_files_are_what_they_claim(odd_files: list[Path]) -> None:
    modes = {}
    for path in odd_files:
        with Image.open(path) as image:
            modes[path.name] = (image.format, image.mode)
    assert modes["cmyk.jpg"] == ("JPEG", "CMYK")
    assert modes["sixteen.png"][1] in ("I;16", "I")
    assert modes["grey.jpg"] == ("JPEG", "L")
    assert decode(odd_files[5]).size == (200, 300)  # orientation 6 turns the 300x200 crop


@pytest.mark.parametrize("mode", ["tensor", "worker"])
@pytest.mark.parametrize("family", DUAL)
def test_fast_path_embeddings_match_the_model_s_own_pil_preprocessing(
    family: str, mode: str, tiny_specs: dict[str, str], odd_files: list[Path]
) -> None:
    """The tensor paths (torchvision decoding on the device or in the workers + the
    model's transforms as tensor ops) give the embeddings of the model's own
    preprocessing of the Pillow-decoded image."""
    reference = load_scorer(tiny_specs[family], ModelConfig(device="cpu", decode="pil"))
    fast = load_scorer(tiny_specs[family], ModelConfig(device="cpu", decode=mode))
    by_pil = reference.encode_images([decode(path) for path in odd_files])
    by_model = reference.encode_images(odd_files)  # decoded in worker processes
    by_tensor = fast.encode_images(odd_files)
    np.testing.assert_array_equal(by_model, by_pil)  # the workers run the same code
    # on the CPU, torchvision decodes JPEGs with the same libjpeg-turbo as Pillow and the
    # resize is Pillow's own arithmetic: bit for bit the reference
    np.testing.assert_array_equal(by_tensor, by_pil)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_orient_tensor_turns_pixels_as_pillow_does(orientation: int) -> None:
    rng = np.random.default_rng(orientation)
    pixels = rng.integers(0, 255, (5, 7, 3), dtype=np.uint8)
    image = Image.fromarray(pixels)
    image.getexif()[0x0112] = orientation
    image.info["exif"] = image.getexif().tobytes()
    expected = np.asarray(ImageOps.exif_transpose(image))
    turned = orient_tensor(torch.from_numpy(pixels).permute(2, 0, 1), orientation)
    np.testing.assert_array_equal(turned.permute(1, 2, 0).numpy(), expected)


def _parent_only(parent: int) -> Image.Image:
    if os.getpid() == parent:
        raise OSError("decoded in the calling process")
    return Image.new("RGB", (8, 8), (10, 20, 30))


def test_sources_are_decoded_in_worker_processes() -> None:
    from functools import partial

    sources = [partial(_parent_only, os.getpid()) for _ in range(5)]
    batches = list(image_batches(sources, batch_size=2, config=PipelineConfig(workers=1)))
    assert [list(b.indices) for b in batches] == [[0, 1], [2, 3], [4]]
    assert all(b.images and b.images[0].getpixel((0, 0)) == (10, 20, 30) for b in batches)
    with pytest.raises(DataFormatError, match="decoded in the calling process"):
        list(image_batches(sources, batch_size=2, config=PipelineConfig(workers=0)))


@pytest.mark.parametrize("mode", ["pil", "worker", "tensor"])
def test_a_broken_or_missing_file_is_a_located_error(
    mode: str, tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    """On every path the batches before the bad image arrive, then its error names it
    (raised in the caller, also when a background thread prepares the batches)."""
    model = None
    if mode != "pil":
        model = load_scorer(tiny_specs["open_clip"], ModelConfig(device="cpu"))
    good = tmp_path / "good.jpg"
    Image.new("RGB", (10, 10)).save(good)
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    missing = tmp_path / "missing.jpg"
    config = PipelineConfig(decode=mode, workers=1)  # type: ignore[arg-type]
    for bad, words in ((broken, "cannot be decoded"), (missing, "not found")):
        batches = image_batches([good, good, bad], model, batch_size=2, config=config)
        first = next(batches)
        assert list(first.indices) == [0, 1]  # the batches before the bad one arrive
        with pytest.raises(DataFormatError, match=words) as caught:
            next(batches)
        assert str(bad) in str(caught.value)


@pytest.mark.parametrize("workers", [0, 1])
def test_worker_decoding_packs_mixed_sizes_into_the_reference_pixels(
    workers: int, tiny_specs: dict[str, str], odd_files: list[Path]
) -> None:
    """``decode="worker"``: images of different sizes and formats (PNG, CMYK, 16-bit,
    grey, EXIF-rotated JPEGs) packed into one buffer per batch, in worker processes or in
    threads, come out as the model's own preprocessing of each image, in input order."""
    scorer = load_scorer(tiny_specs["open_clip"], ModelConfig(device="cpu"))
    preprocess = scorer.image_preprocess  # type: ignore[attr-defined]
    sources = odd_files + odd_files[::-1]
    expected = torch.stack([preprocess(decode(path)) for path in sources])
    batches = list(
        image_batches(
            sources, scorer, batch_size=5, config=PipelineConfig(decode="worker", workers=workers)
        )
    )
    assert [len(b.indices) for b in batches] == [5, 5, 4]
    pixels = torch.cat([b.pixels for b in batches if b.pixels is not None])
    assert torch.equal(pixels, expected)


def test_stopping_early_ends_the_background_thread_and_the_workers(
    tiny_specs: dict[str, str], odd_files: list[Path]
) -> None:
    """A caller that stops after the first batch (``break``) leaves no pipeline thread
    and no worker process behind."""
    import multiprocessing
    import threading

    scorer = load_scorer(tiny_specs["open_clip"], ModelConfig(device="cpu"))
    batches = image_batches(
        odd_files * 4, scorer, batch_size=2, config=PipelineConfig(decode="worker", workers=1)
    )
    first = next(batches)
    assert first.pixels is not None and first.pixels.shape[0] == 2
    assert any(t.name == "contrastkit-pipeline" for t in threading.enumerate())
    batches.close()
    assert not any(t.name == "contrastkit-pipeline" for t in threading.enumerate())
    for child in multiprocessing.active_children():
        child.join(timeout=10)
    assert not multiprocessing.active_children()


def test_embed_images_takes_every_kind_of_source(
    tiny_specs: dict[str, str], odd_files: list[Path], tmp_path: Path
) -> None:
    from datasets import Dataset
    from datasets import Image as ImageFeature

    scorer = load_scorer(tiny_specs["open_clip"], ModelConfig(device="cpu", decode="pil"))
    path = odd_files[4]
    data = path.read_bytes()
    dataset = Dataset.from_dict({"image": [str(path)]}).cast_column("image", ImageFeature())
    sources = [
        path,
        str(path),
        data,
        {"bytes": data, "path": None},
        {"bytes": None, "path": str(path)},
        decode(path),
        lambda: decode(path),
        DatasetImage.column_of(dataset, "image")[0],
    ]
    vectors = embed_images(scorer, sources)
    assert vectors.shape == (len(sources), scorer.embedding_dim)
    np.testing.assert_allclose(vectors, np.repeat(vectors[:1], len(sources), 0), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_pipeline_config_is_checked() -> None:
    from contrastkit.errors import ConfigError

    with pytest.raises(ConfigError, match="decode"):
        PipelineConfig(decode="gpu")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="workers"):
        ModelConfig(workers=-1)
    with pytest.raises(ConfigError, match="decode"):
        ModelConfig(decode="fast")


def test_auto_dtype_is_float32_on_the_cpu(tiny_specs: dict[str, str]) -> None:
    from contrastkit.models.base import resolve_dtype

    assert resolve_dtype("auto", torch.device("cpu")) is torch.float32
    assert resolve_dtype(None, torch.device("cpu")) is torch.float32
    assert resolve_dtype("bf16", torch.device("cpu")) is torch.bfloat16
    scorer = load_scorer(tiny_specs["hf_clip"], ModelConfig(device="cpu"))
    assert next(scorer.model.parameters()).dtype is torch.float32  # type: ignore[attr-defined]


def test_hf_weights_load_in_the_asked_dtype(tiny_specs: dict[str, str]) -> None:
    """Loaded in bfloat16 directly (not float32 then cast): every parameter is bf16 and
    scores still come out as unit-norm float32 embeddings."""
    scorer = load_scorer(tiny_specs["siglip"], ModelConfig(device="cpu", dtype="bfloat16"))
    dtypes = {p.dtype for p in scorer.model.parameters()}  # type: ignore[attr-defined]
    assert dtypes == {torch.bfloat16}
    vectors = scorer.encode_images([Image.new("RGB", (40, 30), (200, 10, 10))])
    assert vectors.dtype == np.float32


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@needs_cuda
@pytest.mark.parametrize("mode", ["tensor", "worker"])
@pytest.mark.parametrize("family", DUAL)
def test_gpu_decoding_matches_the_reference_on_cuda(
    family: str, mode: str, tiny_specs: dict[str, str], odd_files: list[Path]
) -> None:
    """On CUDA, against Pillow decoding and the model's own preprocessing in the workers
    (both in float32 on the GPU): ``tensor`` (nvJPEG, the transforms on the GPU) within
    the documented tolerance; ``worker`` (decoded in the workers, the transforms on the
    GPU) to the same pixels, bit for bit."""
    reference = load_scorer(
        tiny_specs[family], ModelConfig(device="cuda", dtype="float32", decode="pil")
    )
    fast = load_scorer(tiny_specs[family], ModelConfig(device="cuda", dtype="float32", decode=mode))
    by_pil = reference.encode_images(odd_files)
    by_gpu = fast.encode_images(odd_files)
    cosines = np.sum(by_gpu * by_pil, axis=1)
    assert cosines.min() >= MIN_COSINE, dict(zip([p.name for p in odd_files], cosines, strict=True))
    if mode == "worker":
        preprocess = fast.image_preprocess  # type: ignore[attr-defined]
        expected = torch.stack([preprocess(decode(path)) for path in odd_files])
        (batch,) = image_batches(
            odd_files, fast, batch_size=len(odd_files), config=PipelineConfig(decode="worker")
        )
        assert batch.pixels is not None and batch.pixels.is_cuda
        assert torch.equal(batch.pixels.cpu(), expected)


# -- decisions on the official workload: fast pipeline vs plain PIL, fp16 vs fp32 ---------


@pytest.fixture(scope="module")
def official_workload(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The 690 official rows (460 OP + 230 OO), each with its own real-photo JPEG."""
    from contrastkit.samples import write_visogender_workload
    from eval_data import OFFICIAL_OO, OFFICIAL_OP

    folder = tmp_path_factory.mktemp("official")
    return write_visogender_workload(folder, [OFFICIAL_OP, OFFICIAL_OO])


def _scored(tsvs: list[Path], scorer: object, out: Path) -> list[dict[str, object]]:
    from contrastkit.evaluators.data import ImageLoader, load_items
    from contrastkit.evaluators.runner import EvalConfig, ImageBatches, score_dataset

    items = load_items(tsvs)
    assert len(items) == 690
    run = score_dataset(
        items, scorer, out, EvalConfig(tasks=("resolution",)), ImageBatches(ImageLoader(), 64)
    )
    assert len(run.resolution) == 1150
    return run.resolution


@pytest.mark.slow
def test_fast_pipeline_and_pil_path_make_the_same_decisions(
    tiny_specs: dict[str, str], official_workload: list[Path], tmp_path: Path
) -> None:
    """The same evaluate run on the official 690-row workload, once through the tensor
    path and once through Pillow in the workers: the same scores, so the same decisions."""
    scorer = load_scorer(tiny_specs["open_clip"], ModelConfig(device="cpu", batch_size=64))
    runs = {}
    for mode in ("pil", "tensor", "worker"):
        scorer.pipeline = PipelineConfig(decode=mode)  # type: ignore[attr-defined]
        runs[mode] = _scored(official_workload, scorer, tmp_path / mode)
    for mode in ("tensor", "worker"):
        assert [r["predicted_with_neutral"] for r in runs["pil"]] == [
            r["predicted_with_neutral"] for r in runs[mode]
        ]
        assert [r["scores"] for r in runs["pil"]] == [r["scores"] for r in runs[mode]]


@pytest.mark.slow
def test_vit_b_32_embeds_the_official_workload_alike_on_both_paths(
    official_workload: list[Path],
) -> None:
    """ViT-B-32 (random weights): images of the official workload (the first 64 of the
    690, to keep the CPU run short; the tiny model's test above covers all 690) give the
    same model input, bit for bit, through Pillow and the tensor and worker paths (its
    224 px resize, centre crop and normalisation), and a batch of them embeds to the same
    vectors through each path's ``encode_images``, so every decision of an evaluate run is
    the same. (Embedding all of them three times would only repeat one forward pass on
    equal inputs.)"""
    from contrastkit.evaluators.data import ImageLoader, load_items

    loader = ImageLoader()
    sources = [loader.source(item) for item in load_items(official_workload)][:64]
    scorer = load_scorer("open_clip:ViT-B-32/random", ModelConfig(device="cpu", batch_size=64))
    pixels, vectors = {}, {}
    for mode in ("pil", "tensor", "worker"):  # one model: weights differ from load to load
        config = PipelineConfig(decode=mode)
        batches = image_batches(sources, scorer, batch_size=64, config=config)
        pixels[mode] = torch.cat([batch.pixels for batch in batches])
        scorer.pipeline = config  # type: ignore[attr-defined]
        vectors[mode] = scorer.encode_images(sources[:8])
    assert pixels["pil"].shape == (64, 3, 224, 224)
    assert torch.equal(pixels["pil"], pixels["tensor"])
    assert torch.equal(pixels["pil"], pixels["worker"])
    assert vectors["pil"].shape == (8, 512)
    np.testing.assert_array_equal(vectors["pil"], vectors["tensor"])
    np.testing.assert_array_equal(vectors["pil"], vectors["worker"])


@pytest.mark.slow
def test_float16_agrees_with_float32_on_decisions(
    tiny_specs: dict[str, str], official_workload: list[Path], tmp_path: Path
) -> None:
    """Half precision (OpenCLIP under autocast, as on a GPU; here on the CPU) picks the
    same his/her winner as float32 in at least 99.5% of the 1150 official cases, and any
    his/her/their winner it changes was a near-tie in float32 (docs/pipeline.md)."""
    from contrastkit.models.base import ModelRuntime
    from contrastkit.models.openclip import load_open_clip

    target = tiny_specs["open_clip"].split(":", 1)[1]
    runs = {}
    for dtype in (torch.float32, torch.float16):
        scorer = load_open_clip(target, ModelRuntime(torch.device("cpu"), dtype, 64, False))
        assert scorer.autocast is (dtype is torch.float16)
        runs[dtype] = _scored(official_workload, scorer, tmp_path / str(dtype))
    full, half = runs[torch.float32], runs[torch.float16]
    same = np.mean([a["predicted"] == b["predicted"] for a, b in zip(full, half, strict=True)])
    assert same >= 0.995
    for a, b in zip(full, half, strict=True):
        if a["predicted_with_neutral"] != b["predicted_with_neutral"]:
            top = sorted(a["scores"].values(), reverse=True)  # type: ignore[attr-defined]
            assert top[0] - top[1] < 2e-3, (a["key"], a["scores"], b["scores"])


@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear", "lanczos"])
def test_pil_resize_is_pillow_bit_for_bit(interpolation: str, photos: list[Image.Image]) -> None:
    from contrastkit.pipeline.preprocess import pil_resize

    filters = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR, "lanczos": Image.LANCZOS}
    for photo in photos[:2]:
        pixels = torch.from_numpy(np.array(photo.convert("RGB"))).permute(2, 0, 1)
        for height, width in ((224, 224), (224, 298), (37, 100), (700, 650), (5, 5)):
            expected = np.asarray(
                photo.convert("RGB").resize((width, height), filters[interpolation])
            )
            got = pil_resize(pixels, (height, width), interpolation).permute(1, 2, 0).numpy()
            np.testing.assert_array_equal(got, expected)
