"""Benchmark: the image pipeline feeding an image encoder, against the encoder's own
forward rate (the ceiling), in one run on one device.

Workload: ``--images`` distinct 320x240 JPEGs (quality 90) cut from real public-domain
photos (matplotlib's Grace Hopper, scikit-image's astronaut, coffee and cat), written to
a temporary folder: the size of COCO person crops and of VisoGender's images.

(f) forward: the model's image forward pass alone at ``--batch-size`` on preprocessed
    tensors already on the device, in the precision the scorer runs in
    (``DualEncoder.encode_pixels``; float16 autocast on CUDA by default). The ceiling.
(w) workers alone: what the worker processes deliver (read, decode and, by the path,
    preprocess or pack each batch), before any work in the main process or on the
    device; with one worker this is the per-core cost that scales with the cores.
(p) pipeline alone: ``contrastkit.pipeline.image_batches`` reading, decoding and
    preprocessing every file into batches on the device, with no model.
(e) end to end: ``embed_images`` (the pipeline feeding the model), what GenSynth's
    KNN-filter embeddings, the contrast-set evaluation and the quality checks run.

Printed: images/s of each, (e)/(f) (target: at least 90% on a CPU, 80% on a GPU) and
(p)/(f) (target: at least 3x).

Usage:  python bench/embed.py [--device cuda] [--batch-size 256] [--images 20000]
        python bench/embed.py --quick          # CPU-sized: 256 images, batch 32
        python bench/embed.py --smoke          # seconds: a tiny OpenCLIP model, 16 images
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from contrastkit.config import ModelConfig
from contrastkit.models import load_scorer
from contrastkit.models.base import DualEncoder
from contrastkit.pipeline import DECODE_MODES, auto_workers, embed_images, image_batches
from contrastkit.pipeline.batches import _Item, _raw_batches, _resolve_mode
from contrastkit.samples import photo_crops

SPEC = "open_clip:ViT-B-32/random"


def model_spec(smoke: bool, folder: Path) -> str:
    """ViT-B-32 with random weights, or (``smoke``) a tiny OpenCLIP model written to
    ``folder``: the same code paths in seconds, the figures meaningless."""
    if not smoke:
        return SPEC
    from contrastkit.tiny.clip import tiny_open_clip

    return tiny_open_clip(folder)


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def forward_rate(scorer: DualEncoder, batch_size: int, n_images: int) -> float:
    """(f): images/s of ``encode_pixels`` on a ready batch on the device."""
    size = int(scorer.image_preprocess(Image.new("RGB", (320, 240))).shape[-1])
    pixels = torch.randn(batch_size, 3, size, size, device=scorer.device)
    scorer.encode_pixels(pixels)  # warm-up
    sync(scorer.device)
    start = time.perf_counter()
    done = 0
    while done < n_images:
        scorer.encode_pixels(pixels)
        done += batch_size
    sync(scorer.device)
    return done / (time.perf_counter() - start)


def pipeline_rate(scorer: DualEncoder, paths: list[Any], batch_size: int) -> float:
    """(p): images/s of the pipeline alone, batches delivered on the model's device."""
    start = time.perf_counter()
    for batch in image_batches(paths, scorer, batch_size=batch_size, config=scorer.pipeline):
        assert batch.pixels is not None
    sync(scorer.device)
    return len(paths) / (time.perf_counter() - start)


def worker_rate(
    scorer: DualEncoder, paths: list[Path], batch_size: int, workers: int, mode: str
) -> float:
    """(w): images/s of the worker processes' side of the pipeline (path ``mode``) alone."""
    dataset = _Item(paths, scorer.image_preprocess, mode)
    start = time.perf_counter()
    for _ in _raw_batches(dataset, batch_size, workers, scorer.pipeline, pin=False):
        pass
    return len(paths) / (time.perf_counter() - start)


def end_to_end_rate(scorer: DualEncoder, paths: list[Path], batch_size: int) -> float:
    """(e): images/s of ``embed_images``."""
    start = time.perf_counter()
    vectors = embed_images(scorer, paths, batch_size=batch_size)
    sync(scorer.device)
    assert vectors.shape[0] == len(paths)
    return len(paths) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cpu or cuda (default: auto)")
    parser.add_argument("--batch-size", type=int, default=None, help="32 on CPU, 256 on GPU")
    parser.add_argument("--images", type=int, default=None, help="512 on CPU, 20000 on GPU")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--decode", default="auto", choices=DECODE_MODES)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="256 images")
    parser.add_argument("--smoke", action="store_true", help="a tiny model, 16 images (seconds)")
    args = parser.parse_args()
    cuda = (args.device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    batch_size = args.batch_size or (8 if args.smoke else 256 if cuda else 32)
    n = args.images or (16 if args.smoke else 256 if args.quick else 20000 if cuda else 512)
    config = ModelConfig(
        device=args.device, dtype=args.dtype, batch_size=batch_size, workers=args.workers,
        decode=args.decode,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        spec = model_spec(args.smoke, Path(tmp) / "model")
        scorer = load_scorer(spec, config)
        assert isinstance(scorer, DualEncoder)
        device = scorer.device
        workers = auto_workers(device) if args.workers is None else args.workers
        mode = _resolve_mode(scorer.pipeline, scorer.image_preprocess, device)
        print(
            f"{spec} (random weights), device {device} ({device_name(device)}), "
            f"dtype {scorer.dtype}, batch {batch_size}, {n} JPEGs 320x240, decode {args.decode} "
            f"({mode}), workers {workers}, torch threads {torch.get_num_threads()}"
        )
        start = time.perf_counter()
        (Path(tmp) / "images").mkdir()
        paths = photo_crops(Path(tmp) / "images", n)
        print(f"wrote the workload in {time.perf_counter() - start:.1f} s")
        end_to_end_rate(scorer, paths[: 2 * batch_size], batch_size)  # warm-up (cuDNN, nvJPEG)
        forward = forward_rate(scorer, batch_size, max(4 * batch_size, min(n, 64 * batch_size)))
        by_workers = worker_rate(scorer, paths, batch_size, workers, mode)
        piped = pipeline_rate(scorer, paths, batch_size)
        whole = end_to_end_rate(scorer, paths, batch_size)
    target = 0.8 if device.type == "cuda" else 0.9
    print(f"(f) forward pass alone:        {forward:9.1f} images/s  (the ceiling)")
    print(f"(w) workers alone:             {by_workers:9.1f} images/s  = "
          f"{by_workers / max(workers, 1):.1f} per worker")  # fmt: skip
    print(f"(p) pipeline alone, no model:  {piped:9.1f} images/s  = {piped / forward:.1f}x (f)"
          f"  [target >= 3x: {'met' if piped >= 3 * forward else 'NOT met'}]")  # fmt: skip
    print(f"(e) pipeline + model:          {whole:9.1f} images/s  = {100 * whole / forward:.0f}% "
          f"of (f)  [target >= {100 * target:.0f}%: "
          f"{'met' if whole >= target * forward else 'NOT met'}]")  # fmt: skip


if __name__ == "__main__":
    main()
