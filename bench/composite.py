"""Benchmark: the cost of putting an edit back, box vs mask (issue 35, items 2 and 4).

    python bench/composite.py            # ~10 s on 2 CPU cores
    python bench/composite.py --json     # the figures as JSON

On the shipped photos with their hand-drawn person outlines (:func:`contrastkit.samples.
write_coco`: the cameraman, the astronaut, Grace Hopper, 512x512 to 512x600), with a
stand-in editor output (the crop, colour-inverted: an edit that changes every pixel it
may), at the paper's editor resolution (512) and margin (0.1):

* **paste**: ms per image of ``paste_back`` (box, feathered) and of ``mask_alpha`` (the
  segmentation decoded, dilated and feathered: once per source, shared by its 16 edits)
  and ``paste_back_mask`` (per edit);
* **storage**: bytes per stored edit as WebP q90 (the default), a whole RGB image for a
  box edit, an RGBA file keeping only the person's pixels for a mask edit;
* **export**: ms per image to read a mask edit back (decode, put onto the decoded source)
  and encode it losslessly for the export, and the exported bytes (lossless WebP) beside
  the lossy whole-image bytes a box edit is exported as;
* **context**: the context measure (:func:`contrastkit.curation.masks.context_change`)
  of each: the share of pixels changed outside the dilated mask and the mean change in
  the box outside the person.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps

from contrastkit.builders.coco import SourceImage, read_coco, select_sources
from contrastkit.builders.manifest import composite_edit, encode_image, encode_lossless
from contrastkit.curation.editing import (
    DEFAULT_MASK_DILATION,
    crop_for_editing,
    paste_back,
    paste_back_mask,
)
from contrastkit.curation.masks import (
    ContextRegions,
    context_change,
    decode_segmentation,
    dilate,
    dilation_pixels,
    mask_alpha,
)
from contrastkit.samples import write_coco


def _ms(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    result = function()  # warm
    start = time.perf_counter()
    for _ in range(repeats):
        result = function()
    return 1000 * (time.perf_counter() - start) / repeats, result


def _measure(source: SourceImage, repeats: int) -> dict[str, Any]:
    """The figures of one source (module docstring)."""
    original = Image.open(source.path).convert("RGB")
    box = source.box.xyxy(original.width, original.height)
    crop, placement = crop_for_editing(original, box, 512, 0.1)
    edited = ImageOps.invert(crop)
    box_ms, boxed = _ms(lambda: paste_back(original, edited, placement, 0.08), repeats)
    pixels = dilation_pixels(box, DEFAULT_MASK_DILATION)

    def alpha_of() -> np.ndarray:
        mask = decode_segmentation(source.segmentation, source.width, source.height)
        return mask_alpha(mask, placement.crop, pixels)

    alpha_ms, alpha = _ms(alpha_of, repeats)
    mask_ms, masked = _ms(lambda: paste_back_mask(original, edited, placement, alpha), repeats)
    box_bytes = encode_image(boxed, "webp", quality=90)
    mask_bytes = encode_image(masked, "webp", quality=90)

    def export() -> bytes:
        stored = Image.open(io.BytesIO(mask_bytes)).convert("RGBA")
        return encode_lossless(composite_edit(stored, original))

    export_ms, exported = _ms(export, repeats)
    person = decode_segmentation(source.segmentation, source.width, source.height)
    grown = dilate(person, pixels)
    in_box = np.zeros_like(grown)
    in_box[box[1] : box[3], box[0] : box[2]] = True
    source_px = np.asarray(original)
    read_box = np.asarray(Image.open(io.BytesIO(box_bytes)).convert("RGB"))
    read_mask = np.asarray(Image.open(io.BytesIO(exported)).convert("RGB"))
    return {
        "source": source.source_id,
        "size": f"{original.width}x{original.height}",
        "box_share": float(in_box.mean()),
        "mask_share": float(grown.mean()),
        "paste_box_ms": box_ms,
        "mask_alpha_ms": alpha_ms,
        "paste_mask_ms": mask_ms,
        "stored_box_bytes": len(box_bytes),
        "stored_mask_bytes": len(mask_bytes),
        "export_mask_ms": export_ms,
        "exported_mask_bytes": len(exported),
        "context_box": context_change(
            source_px, read_box, ContextRegions(~grown, in_box & ~grown, kept=~in_box)
        ),
        "context_mask": context_change(
            source_px, read_mask, ContextRegions(~grown, in_box & ~grown, kept=~grown)
        ),
    }


def run(repeats: int) -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        coco = read_coco(write_coco(Path(folder)))
        for source in select_sources(coco, min_box_side=64).sources:
            rows.append(_measure(source, repeats))
    return {"repeats": repeats, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.repeats)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        "| source | size | box / mask share | paste box ms | mask alpha ms (per source) "
        "| paste mask ms | stored box / mask bytes | export mask ms | exported mask bytes "
        "| changed outside mask box / mask | box context change box / mask |"
    )
    print("|---" * 11 + "|")
    for row in result["rows"]:
        cb, cm = row["context_box"], row["context_mask"]
        print(
            f"| {row['source']} | {row['size']} | {row['box_share']:.0%} / "
            f"{row['mask_share']:.0%} | {row['paste_box_ms']:.1f} | {row['mask_alpha_ms']:.1f} "
            f"| {row['paste_mask_ms']:.1f} | {row['stored_box_bytes']:,} / "
            f"{row['stored_mask_bytes']:,} | {row['export_mask_ms']:.1f} "
            f"| {row['exported_mask_bytes']:,} | {cb['changed_outside_mask']:.1%} / "
            f"{cm['changed_outside_mask']:.1%} | {cb['box_context_change']:.1f} / "
            f"{cm['box_context_change']:.1f} |"
        )


if __name__ == "__main__":
    main()
