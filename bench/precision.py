"""Benchmark: decisions and speed of the evaluator in float32, float16 and bfloat16.

Workload: the 690 official VisoGender rows with real-photo JPEGs (as ``bench/eval.py``),
resolution task (1150 cases), OpenCLIP ViT-B-32 with random weights. For each precision
(OpenCLIP runs under ``torch.autocast``), the run's images/s and the share of cases whose
winner equals float32's: his/her (``predicted``) and his/her/their
(``predicted_with_neutral``), with the largest float32 margin among the changed cases.
Random weights make margins tiny (a stress test: a trained model separates its
candidates by far more than half-precision rounding).

Usage:  python bench/precision.py [--device cuda]
        python bench/precision.py --smoke    # seconds: a tiny OpenCLIP model, 1 row per occupation
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from contrastkit.config import ModelConfig
from contrastkit.evaluators.data import ImageLoader, load_items, visogender_files
from contrastkit.evaluators.runner import EvalConfig, ImageBatches, score_dataset
from contrastkit.models import load_scorer
from contrastkit.samples import write_visogender_workload
from embed import device_name, model_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--smoke", action="store_true", help="a tiny model, 1 row per occupation")
    args = parser.parse_args()
    cuda = (args.device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")
    dtypes = ("float32", "float16", "bfloat16") if cuda else ("float32", "bfloat16")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tsvs = list(visogender_files())
        keep = {"OP": 1, "OO": 1} if args.smoke else None
        items = load_items(write_visogender_workload(folder, tsvs, per_occupation=keep))
        spec = model_spec(args.smoke, folder / "model")
        torch.manual_seed(0)
        base = load_scorer(spec, ModelConfig(device=args.device, dtype="float32", batch_size=64))
        state = {k: v.clone() for k, v in base.model.state_dict().items()}  # type: ignore[attr-defined]
        print(f"{spec} (random weights), device {base.device} ({device_name(base.device)})")
        runs = {}
        for name in dtypes:
            scorer = load_scorer(spec, ModelConfig(device=args.device, dtype=name, batch_size=64))
            scorer.model.load_state_dict(state)  # type: ignore[attr-defined]
            config = EvalConfig(tasks=("resolution",))
            start = time.perf_counter()
            run = score_dataset(
                items, scorer, folder / name, config, ImageBatches(ImageLoader(), 64)
            )
            runs[name] = (run.resolution, len(items) / (time.perf_counter() - start))
    full = runs["float32"][0]
    for name, (records, rate) in runs.items():
        two = sum(a["predicted"] == b["predicted"] for a, b in zip(full, records, strict=True))
        three = 0
        margin = 0.0
        for a, b in zip(full, records, strict=True):
            if a["predicted_with_neutral"] == b["predicted_with_neutral"]:
                three += 1
            else:
                top = sorted(a["scores"].values(), reverse=True)
                margin = max(margin, top[0] - top[1])
        print(
            f"{name:9s} {rate:8.1f} images/s  his/her winners as float32: {two}/{len(full)} "
            f"({100 * two / len(full):.2f}%)  his/her/their: {three}/{len(full)} "
            f"({100 * three / len(full):.2f}%), largest float32 margin changed: {margin:.2e}"
        )


if __name__ == "__main__":
    main()
