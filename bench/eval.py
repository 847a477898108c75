"""Benchmark the evaluator against the official runner's way of scoring.

Workload: the 690 images of VisoGender (460 OP + 230 OO rows of the official annotation
files shipped in tests/data), each a distinct 320x240 JPEG cut from a real public-domain
photo and written to a temporary folder, scored on the resolution task (1150 cases: OP
images with both templates) by OpenCLIP ViT-B-32 with random weights (compute does not
depend on the weights).

(a) official-style: one image at a time; for every template the image is decoded, and the
    image and its candidate captions go through the model together (``model(image,
    texts)``), re-encoding the captions every time, as the official ``run_cliplike.py``
    does with ``processor(text=..., images=...)``.
(b) contrastkit: ``score_dataset`` reads every image through the image pipeline
    (worker processes decode; on CUDA the model's transforms run on the GPU),
    embeds images in batches, and embeds each distinct caption once.

Also measured in the same run: (f) the model's bare forward passes of the run at the same
batch size and precision (``encode_pixels`` on a ready batch on the device, plus the text
tower on every distinct caption the run encoded): the ceiling, so
that (b) reads as a share of what the model allows (target: 90% on a CPU, 80% on a
GPU); (p) the pipeline alone, no model (target: 3x the forward rate); and (e)
``embed_images`` on the same images (the pipeline feeding the image tower alone), against
(b) rerun with the captions already cached: the difference is the evaluator's own work
per image outside the model and the pipeline (building and writing the raw records; on a
CPU it is within the noise of the model's time). On a GPU the
dataset is repeated ``--copies`` times (default 20, 13,800 images) for a steady state.

Usage:  python bench/eval.py [--quick] [--device cuda] [--batch-size 256] [--copies 20]
        python bench/eval.py --smoke    # seconds: a tiny OpenCLIP model, 1 row per occupation
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from contrastkit.config import ModelConfig
from contrastkit.evaluators.data import ImageLoader, load_items, visogender_files
from contrastkit.evaluators.runner import EvalConfig, ImageBatches, score_dataset
from contrastkit.models import load_scorer
from contrastkit.models.openclip import OpenCLIPScorer
from contrastkit.pipeline import DECODE_MODES
from contrastkit.samples import write_visogender_workload
from contrastkit.templates import captions, templates_for
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv
from embed import device_name, end_to_end_rate, forward_rate, model_spec, pipeline_rate, sync

ROOT = Path(__file__).resolve().parents[1]


def write_workload(folder: Path, keep: dict[str, int] | None, copies: int = 1) -> list[Path]:
    """The official rows with local JPEGs; ``keep``: rows kept per occupation and
    context (``None``: all); ``copies`` > 1 repeats the dataset under new IDs (a longer
    steady state for a fast GPU)."""
    tsvs = list(visogender_files())
    paths = []
    for copy in range(copies):
        sub = folder / f"copy{copy}"
        sub.mkdir()
        for path in write_visogender_workload(sub, tsvs, per_occupation=keep):
            if copies > 1:  # IDs must be unique per context across the copies
                table = read_visogender_tsv(path)
                rows = [
                    replace(r, idx=f"{r.idx}-{copy}", url=f"copy{copy}/{r.url}") for r in table.rows
                ]
                path = folder / f"{copy}_{path.name}"
                write_visogender_tsv(path, rows, table.context)
            paths.append(path)
    return paths


def official_style(scorer: OpenCLIPScorer, items: list, loader: ImageLoader) -> float:
    """Seconds for (a): per image and template, decode, then model(image, captions)."""

    tokenizer = scorer.tokenizer
    model = scorer.model
    start = time.perf_counter()
    for item in items:
        for template in templates_for(item.row.context):
            image = loader.open(item)
            texts = list(captions(item.row, template).values())
            pixels = scorer.preprocess(image)[None].to(scorer.device, scorer.dtype)
            with torch.inference_mode():
                image_features, text_features, scale = model(
                    pixels, tokenizer(texts).to(scorer.device)
                )
                logits = scale * image_features @ text_features.T
            int(logits.argmax())
    return time.perf_counter() - start


def text_seconds(scorer: OpenCLIPScorer, texts: list[str], batch_size: int) -> float:
    """Seconds of the bare text forward passes of ``texts`` at ``batch_size``."""
    with torch.inference_mode(), scorer._precision():
        scorer._text_features(texts[:batch_size])  # warm-up
        sync(scorer.device)
        start = time.perf_counter()
        for begin in range(0, len(texts), batch_size):
            scorer._text_features(texts[begin : begin + batch_size])
        sync(scorer.device)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="138 images instead of 690")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: auto)")
    parser.add_argument("--batch-size", type=int, default=None, help="32 on CPU, 256 on GPU")
    parser.add_argument("--copies", type=int, default=None, help="dataset copies (GPU: 20)")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--decode", default="auto", choices=DECODE_MODES)
    parser.add_argument("--skip-official", action="store_true", help="skip (a)")
    parser.add_argument("--smoke", action="store_true", help="a tiny model, 1 row per occupation")
    args = parser.parse_args()
    cuda = (args.device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    batch_size = args.batch_size or (8 if args.smoke else 256 if cuda else 32)
    copies = args.copies or (20 if cuda and not args.smoke else 1)
    keep = {"OP": 1, "OO": 1} if args.smoke else {"OP": 4, "OO": 2} if args.quick else None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        items = load_items(write_workload(folder, keep, copies))
        spec = model_spec(args.smoke, folder / "model")
        loader = ImageLoader()
        cases = sum(len(templates_for(item.row.context)) for item in items)
        config = ModelConfig(
            device=args.device, dtype=args.dtype, batch_size=batch_size, decode=args.decode
        )
        scorer = load_scorer(spec, config)
        assert isinstance(scorer, OpenCLIPScorer)
        device = scorer.device
        print(
            f"workload: {len(items)} images, {cases} resolution cases, {spec} (random weights), "
            f"device {device} ({device_name(device)}), dtype {scorer.dtype}, batch {batch_size}, "
            f"decode {args.decode}, torch threads {torch.get_num_threads()}"
        )
        rate_a = None
        if not args.skip_official:
            baseline = load_scorer(spec, replace(config, batch_size=1))
            assert isinstance(baseline, OpenCLIPScorer)
            official_items = items[: len(items) // copies]
            official_style(baseline, official_items[:2], loader)  # warm-up
            seconds_a = official_style(baseline, official_items, loader)
            rate_a = len(official_items) / seconds_a
            print(f"(a) official-style, one image at a time: {rate_a:.1f} images/s")
        warm = items[: 2 * batch_size]  # warm-up on another scorer: its captions stay cold
        warm_scorer = load_scorer(spec, config)
        batches = ImageBatches(loader, batch_size)
        score_dataset(warm, warm_scorer, folder / "warm", EvalConfig(), batches)
        start = time.perf_counter()
        score_dataset(items, scorer, folder / "out_b", EvalConfig(tasks=("resolution",)), batches)
        rate_b = len(items) / (time.perf_counter() - start)
        texts = list(scorer._text_cache)  # every distinct caption (b) encoded
        print(f"(b) contrastkit evaluate (resolution): {rate_b:.1f} images/s")
        start = time.perf_counter()
        score_dataset(items, scorer, folder / "out_c", EvalConfig(), batches)
        rate_c = len(items) / (time.perf_counter() - start)
        print(f"(b') resolution + retrieval in one pass: {rate_c:.1f} images/s")
        sources = [loader.source(item) for item in items]
        piped = pipeline_rate(scorer, sources, batch_size)
        image_rate = forward_rate(scorer, batch_size, max(4 * batch_size, min(len(items), 4096)))
        text_time = text_seconds(scorer, texts, batch_size)
        rate_e = end_to_end_rate(scorer, sources, batch_size)
        start = time.perf_counter()  # (b) again, every caption cached: images only
        score_dataset(items, scorer, folder / "out_b2", EvalConfig(tasks=("resolution",)), batches)
        rate_b_cached = len(items) / (time.perf_counter() - start)
        forward = len(items) / (len(items) / image_rate + text_time)
    target = 0.8 if device.type == "cuda" else 0.9
    print(
        f"(f) the model's bare forward passes of the run at batch {batch_size}: {forward:.1f} "
        f"images/s ({image_rate:.1f} images/s for the images, plus {text_time:.2f} s for its "
        f"{len(texts)} distinct captions)"
    )
    print(f"(p) image pipeline alone, no model: {piped:.1f} images/s = {piped / forward:.1f}x (f) "
          f"[target >= 3x: {'met' if piped >= 3 * forward else 'NOT met'}]")  # fmt: skip
    outside = 1e6 * (1 / rate_b_cached - 1 / rate_e)
    print(
        f"(e) embed_images on the same images: {rate_e:.1f} images/s, (b) with its captions "
        f"cached: {rate_b_cached:.1f} images/s: the evaluator's work outside the model and "
        f"pipeline: {outside:.0f} us/image"
    )
    if rate_a is not None:
        print(f"ratio (b)/(a): {rate_b / rate_a:.1f}x")
    print(f"(b) as a share of (f): {100 * rate_b / forward:.0f}% [target >= {100 * target:.0f}%: "
          f"{'met' if rate_b >= target * forward else 'NOT met'}]")  # fmt: skip


if __name__ == "__main__":
    main()
