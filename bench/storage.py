"""Benchmark: bytes per stored GenSynth edit, PNG before and WebP after (issue 16, item 4).

    python bench/storage.py            # both parts (~1-2 min on 2 CPU cores)
    python bench/storage.py --json     # the figures as JSON
    python bench/storage.py --smoke    # seconds: one source, one step

**tiny** : the tiny GenSynth build (the shipped COCO-format photos of
:func:`contrastkit.samples.write_coco`, 3 sources, the tiny InstructPix2Pix of
:mod:`contrastkit.tiny.editor`, random weights, 2 steps, 8 edits per source) run by
:func:`run_edit_stage` once per ``--image-format`` (png, webp, jpeg at the default quality
90): mean bytes per edit, and the PSNR of each lossy edit against the PNG (lossless) edit
with the same id. The tiny editor's output is noise, which compresses badly: an upper
bound for the box's share of the file.

**photo** : the shipped photos resized to 640x480 (the typical COCO size) stand for a
pasted-back edit (an edit is the source photo with the person box re-drawn), encoded as
PNG, WebP lossless, WebP at quality 80 / 90 / 95 and JPEG at 90 / 95: mean bytes per
image, PSNR against the original pixels, and the storage of the paper's run (11,541
sources x 16 edits = 184,656 edits) in each format.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

PAPER_EDITS = 11_541 * 16


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255**2 / mse)


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def tiny_build(work: Path, smoke: bool = False) -> dict[str, Any]:
    """Bytes per edit of the tiny build in each storage format (``smoke``: one source,
    one step)."""
    from contrastkit.builders.gensynth import EditStageConfig, run_edit_stage
    from contrastkit.builders.manifest import Manifest
    from contrastkit.config import ModelConfig
    from contrastkit.curation.editing import EditSettings, load_editor
    from contrastkit.samples import write_coco
    from contrastkit.tiny.editor import tiny_instruct_pix2pix

    coco = write_coco(work / "coco")
    editor = load_editor(tiny_instruct_pix2pix(work, "editor"), ModelConfig(device="cpu"))
    settings = EditSettings(text_guidance_scales=(9.5,), steps=1 if smoke else 2, resolution=32)
    limit = 1 if smoke else None
    paths: dict[str, dict[str, Path]] = {}
    for image_format in ("png", "webp", "jpeg"):
        out = work / image_format
        stage = EditStageConfig(coco, out, settings, limit=limit, min_box_side=64,
                                image_format=image_format)  # fmt: skip
        run_edit_stage(stage, editor)
        paths[image_format] = {r.edit_id: out / r.path for r in Manifest(out).read()}
    rows: dict[str, Any] = {}
    for image_format, files in paths.items():
        sizes = [p.stat().st_size for p in files.values()]
        psnr = [_psnr(_pixels(paths["png"][e]), _pixels(p)) for e, p in files.items()]
        shape = _pixels(next(iter(files.values()))).shape
        rows[image_format] = {
            "edits": len(files),
            "mean_bytes": float(np.mean(sizes)),
            "vs_png": float(np.mean(sizes)) / float(np.mean([p.stat().st_size
                                                              for p in paths["png"].values()])),
            "mean_psnr_db": float(np.mean(psnr)),
            "first_size": f"{shape[1]}x{shape[0]}",
        }  # fmt: skip
    return rows


def photos() -> dict[str, Any]:
    """Bytes per 640x480 photo in each format, and the paper run's storage."""
    from contrastkit.samples import photo

    images = [photo(n).convert("RGB").resize((640, 480)) for n in
              ("camera", "astronaut", "grace_hopper")]  # fmt: skip
    variants: dict[str, tuple[str, dict[str, Any]]] = {
        "png": ("PNG", {}),
        "webp lossless": ("WEBP", {"lossless": True}),
        "webp q80": ("WEBP", {"quality": 80, "method": 4}),
        "webp q90 (default)": ("WEBP", {"quality": 90, "method": 4}),
        "webp q95": ("WEBP", {"quality": 95, "method": 4}),
        "jpeg q90": ("JPEG", {"quality": 90}),
        "jpeg q95": ("JPEG", {"quality": 95}),
    }
    rows: dict[str, Any] = {}
    for name, (pil_format, options) in variants.items():
        sizes, psnr = [], []
        for image in images:
            buffer = io.BytesIO()
            image.save(buffer, format=pil_format, **options)
            sizes.append(len(buffer.getvalue()))
            with Image.open(io.BytesIO(buffer.getvalue())) as decoded:
                psnr.append(_psnr(np.asarray(image), np.asarray(decoded.convert("RGB"))))
        mean = float(np.mean(sizes))
        rows[name] = {
            "mean_bytes": mean,
            "mean_psnr_db": float(np.mean(psnr)),
            "paper_run_gb": mean * PAPER_EDITS / 1e9,
        }
    png = rows["png"]["mean_bytes"]
    for row in rows.values():
        row["vs_png"] = row["mean_bytes"] / png
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--smoke", action="store_true", help="one source, one step (seconds)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        results = {"tiny": tiny_build(Path(work), args.smoke), "photo_640x480": photos()}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("tiny GenSynth build (3 sources x 8 edits, pasted into the full source photo):")
    print(f"  {'format':<8} {'bytes/edit':>11} {'vs PNG':>7} {'PSNR vs PNG':>12}  size")
    for name, row in results["tiny"].items():
        print(f"  {name:<8} {row['mean_bytes']:>11,.0f} {row['vs_png']:>6.2f}x "
              f"{row['mean_psnr_db']:>10.1f} dB  {row['first_size']}")  # fmt: skip
    print(f"640x480 photos (3), and the paper's {PAPER_EDITS:,} edits:")
    print(f"  {'format':<19} {'bytes':>9} {'vs PNG':>7} {'PSNR':>9} {'paper run':>10}")
    for name, row in results["photo_640x480"].items():
        print(f"  {name:<19} {row['mean_bytes']:>9,.0f} {row['vs_png']:>6.2f}x "
              f"{row['mean_psnr_db']:>6.1f} dB {row['paper_run_gb']:>7.1f} GB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
