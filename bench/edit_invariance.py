"""Measurement: how far one edit (same seed, same settings) moves with the batch it runs in.

    python bench/edit_invariance.py             # the suite's resume test: 32 px, 4 steps
    python bench/edit_invariance.py --steps 8 --resolution 64
    python bench/edit_invariance.py --smoke     # seconds: 1 photo, 1 instruction per gender,
                                                # batches 1 and 2, 1 step, no fresh process

The edit stage (:func:`contrastkit.builders.gensynth.run_edit_stage`) builds the same 16
edits (2 shipped photos x 8 masculine / feminine instructions, one guidance scale) with
the suite's tiny InstructPix2Pix pipeline, as the resume test does, and each figure is
the largest absolute difference, in grey levels (0-255, any channel, any pixel), of the
stored edits (lossless PNG, pasted back into the photo) of two builds made

* with 1, 2 and 8 edits per forward pass (``--batch-size``), against 1;
* with ``torch.set_num_threads(1)`` against 2;
* stored as lossy WebP (the default format) in batches of 8 against 1;
* twice with identical settings in this process, and once more in a fresh process
  (compared byte for byte).

It also times the one way to make an edit independent of its batch by construction on
the CPU (a batch of 1 per forward pass) against the batched editor, as a ratio measured
in the same run. Figures go to ``bench/RESULTS.md``; ``docs/pipeline.md`` ("What is
bit-identical") states the promise they support.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from contrastkit.builders.gensynth import EditStageConfig, run_edit_stage  # noqa: E402
from contrastkit.builders.manifest import Manifest  # noqa: E402
from contrastkit.config import ModelConfig  # noqa: E402
from contrastkit.curation.editing import EditSettings, load_editor  # noqa: E402
from contrastkit.samples import write_coco  # noqa: E402
from contrastkit.tiny.editor import tiny_instruct_pix2pix  # noqa: E402


def _build(
    work: Path, batch: int, threads: int, args: argparse.Namespace, image_format: str = "png"
) -> dict[str, np.ndarray]:
    """The edits of one build (the editor saved in ``work / "editor"``), by edit id, as
    arrays."""
    torch.set_num_threads(threads)
    settings = EditSettings(text_guidance_scales=(9.5,), steps=args.steps,
                            resolution=args.resolution)  # fmt: skip
    if args.smoke:  # 2 edits a build: one instruction per target gender
        settings = replace(settings, instructions={
            gender: texts[:1] for gender, texts in settings.instructions.items()})  # fmt: skip
    out = Path(tempfile.mkdtemp(dir=work))
    editor = load_editor(work / "editor", ModelConfig(device="cpu", batch_size=batch))
    limit = 1 if args.smoke else 2
    stage = EditStageConfig(work / "coco", out, settings, limit=limit, min_box_side=64,
                            edits_per_call=batch, image_format=image_format)  # fmt: skip
    run_edit_stage(stage, editor)
    return {
        r.edit_id: np.asarray(Image.open(out / r.path), dtype=np.int16)
        for r in Manifest(out).read()
    }


def _digest(edits: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for key in sorted(edits):
        digest.update(key.encode() + edits[key].tobytes())
    return digest.hexdigest()


def _max_diff(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> int:
    assert a.keys() == b.keys()
    return max(int(np.abs(a[k] - b[k]).max()) for k in a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--resolution", type=int, default=32)
    parser.add_argument("--smoke", action="store_true",
                        help="1 photo, 2 instructions, batches 1, 2, 1 step, no child")  # fmt: skip
    parser.add_argument("--child", help="(internal) print the digest of one build: WORK")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.resolution = 1, 16
    big = 2 if args.smoke else 8  # the largest batch
    batches = (1, 2) if args.smoke else (1, 2, 8)

    if args.child:
        work = Path(args.child)
        print(_digest(_build(work, big, 2, args)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_coco(work / "coco")
        tiny_instruct_pix2pix(work, "editor")  # the suite's tiny editor, read by _build
        builds = {(b, t): _build(work, b, t, args) for b in batches for t in (1, 2)}
        twice = [(big, 2)] if args.smoke else [(b, t) for b in (1, big) for t in (1, 2)]
        again = {key: _build(work, *key, args) for key in twice}
        webp = {b: _build(work, b, 2, args, "webp") for b in (1, big)}
        child = None if args.smoke else subprocess.run(
            [sys.executable, __file__, "--child", tmp, "--steps", str(args.steps),
             "--resolution", str(args.resolution)],
            check=True, capture_output=True, text=True,
        ).stdout.strip().splitlines()[-1]  # fmt: skip

        torch.set_num_threads(2)
        timings = {}
        repeats = 1 if args.smoke else 3
        for batch in (1, big):
            if not args.smoke:
                _build(work, batch, 2, args)  # warm-up
            start = time.perf_counter()
            for _ in range(repeats):
                _build(work, batch, 2, args)
            timings[batch] = (time.perf_counter() - start) / repeats

    edits = len(builds[(1, 1)])
    print(f"machine: {platform.machine()}, {_cpu()}, torch {torch.__version__}; "
          f"{edits} edits, {args.resolution} px, {args.steps} steps")  # fmt: skip
    for t in (1, 2):
        for b in batches[1:]:
            print(f"  threads {t}: batch {b} vs batch 1: max |diff| = "
                  f"{_max_diff(builds[(b, t)], builds[(1, t)])} grey levels")  # fmt: skip
    for b in batches:
        print(f"  batch {b}: threads 1 vs 2: max |diff| = "
              f"{_max_diff(builds[(b, 1)], builds[(b, 2)])} grey levels")  # fmt: skip
    for (b, t), edits_again in again.items():
        print(f"  batch {b}, threads {t}: build 1 vs build 2 (same process): max |diff| = "
              f"{_max_diff(edits_again, builds[(b, t)])}")  # fmt: skip
    print(f"  stored as WebP (lossy, the default), threads 2: batch {big} vs batch 1: max "
          f"|diff| = {_max_diff(webp[big], webp[1])} grey levels")  # fmt: skip
    fresh = "not run (--smoke)" if child is None else child == _digest(builds[(big, 2)])
    print(f"  batch {big}, threads 2: a fresh process byte-identical: {fresh}")
    ratio = timings[1] / timings[big]
    print(f"  seconds per build: batch 1 {timings[1]:.2f}, batch {big} {timings[big]:.2f}: a "
          f"batch of 1 per pass costs {ratio:.2f}x the batched time")  # fmt: skip


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
