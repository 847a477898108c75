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
(b) contrastkit: ``score_dataset`` decodes each image once, embeds images in batches, and
    embeds each distinct caption once.

Also measured: the model's own image forward rate at the same batch size (preprocessed
tensors, no decoding), so that (b) can be read as a share of what the model allows.

Usage:  python bench/eval.py [--quick] [--device cuda] [--batch-size 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import matplotlib
import numpy as np
import torch
from PIL import Image

from contrastkit.config import ModelConfig
from contrastkit.evaluators.data import ImageLoader, load_items
from contrastkit.evaluators.models import load_scorer
from contrastkit.evaluators.models.openclip import OpenCLIPScorer
from contrastkit.evaluators.runner import EvalConfig, score_dataset
from contrastkit.templates import captions, templates_for
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv

ROOT = Path(__file__).resolve().parents[1]
OFFICIAL = ROOT / "tests" / "data" / "visogender_official"


def write_workload(folder: Path, quick: bool) -> list[Path]:
    """The official rows with local JPEGs; ``quick`` keeps 6 images per occupation."""
    photo_path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    with Image.open(photo_path) as opened:
        photo = opened.convert("RGB")
    rng = np.random.default_rng(0)
    paths = []
    n = 0
    for name in ("OP_Visogender_11012024.tsv", "OO_Visogender_10052025.tsv"):
        table = read_visogender_tsv(OFFICIAL / name)
        rows = list(table.rows)
        if quick:
            per_occupation: dict[str, int] = {}
            keep = 4 if table.context.value == "OP" else 2
            rows = [
                r
                for r in rows
                if per_occupation.setdefault(r.occupation, 0) < keep
                and not per_occupation.__setitem__(r.occupation, per_occupation[r.occupation] + 1)
            ]
        new_rows = []
        for row in rows:
            x, y = rng.integers(0, 180), rng.integers(0, 280)
            image_path = folder / f"{n:04d}.jpg"
            photo.crop((x, y, x + 320, y + 240)).save(image_path, quality=90)
            new_rows.append(replace(row, url=image_path.name))
            n += 1
        path = folder / name
        write_visogender_tsv(path, new_rows, table.context)
        paths.append(path)
    return paths


def official_style(scorer: OpenCLIPScorer, items: list, loader: ImageLoader) -> float:
    """Seconds for (a): per image and template, decode, then model(image, captions)."""
    import open_clip

    tokenizer = open_clip.get_tokenizer("ViT-B-32")
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


def forward_rate(scorer: OpenCLIPScorer, batch_size: int, n_images: int) -> float:
    """Images per second of the bare image forward pass at ``batch_size``."""
    pixels = torch.randn(batch_size, 3, 224, 224, device=scorer.device, dtype=scorer.dtype)
    with torch.inference_mode():
        scorer.model.encode_image(pixels)  # warm-up
        if scorer.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        done = 0
        while done < n_images:
            scorer.model.encode_image(pixels)
            done += batch_size
        if scorer.device.type == "cuda":
            torch.cuda.synchronize()
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="138 images instead of 690")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: auto)")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        items = load_items(write_workload(folder, args.quick))
        loader = ImageLoader()
        cases = sum(len(templates_for(item.row.context)) for item in items)
        spec = "open_clip:ViT-B-32/random"
        baseline_scorer = load_scorer(spec, ModelConfig(device=args.device, batch_size=1))
        assert isinstance(baseline_scorer, OpenCLIPScorer)
        device = baseline_scorer.device
        print(
            f"workload: {len(items)} images, {cases} resolution cases, {spec}, device {device}, "
            f"torch threads {torch.get_num_threads()}"
        )
        official_style(baseline_scorer, items[:2], loader)  # warm-up
        seconds_a = official_style(baseline_scorer, items, loader)
        rate_a = len(items) / seconds_a
        print(f"(a) official-style, one image at a time: {seconds_a:.1f} s, {rate_a:.1f} images/s")

        config = EvalConfig(tasks=("resolution",))
        batched_config = ModelConfig(device=args.device, batch_size=args.batch_size)
        scorer = load_scorer(spec, batched_config)
        start = time.perf_counter()
        score_dataset(items, scorer, folder / "out_b", loader, config, batch_size=args.batch_size)
        seconds_b = time.perf_counter() - start
        rate_b = len(items) / seconds_b
        print(
            f"(b) contrastkit, batched ({args.batch_size}), cached captions: {seconds_b:.1f} s, "
            f"{rate_b:.1f} images/s"
        )
        scorer_both = load_scorer(spec, batched_config)
        start = time.perf_counter()
        score_dataset(
            items, scorer_both, folder / "out_c", loader, EvalConfig(), batch_size=args.batch_size
        )
        seconds_c = time.perf_counter() - start
        print(
            f"(b') contrastkit, resolution + retrieval in one pass: {seconds_c:.1f} s, "
            f"{len(items) / seconds_c:.1f} images/s"
        )
        assert isinstance(scorer, OpenCLIPScorer)
        forward = forward_rate(scorer, args.batch_size, min(len(items), 8 * args.batch_size))
        print(f"model image forward pass alone at batch {args.batch_size}: {forward:.1f} images/s")
        print(f"ratio (b)/(a): {rate_b / rate_a:.1f}x")
        print(f"(b) as a share of the forward-pass rate: {100 * rate_b / forward:.0f}%")


if __name__ == "__main__":
    main()
