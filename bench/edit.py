"""Benchmark: InstructPix2Pix edits per second, one edit per call against batched editing.

    python bench/edit.py            # CUDA: SD1.5 architecture, 256 and 512 px, fp16
    python bench/edit.py --quick    # fewer edits and steps
    python bench/edit.py --families # each editor family: ratio to the denoiser's ceiling
    python bench/edit.py --families --device cuda --resolutions 256,512

Both arms run contrastkit's :class:`~contrastkit.curation.editing.InstructPix2PixEditor`
on the same crops, instructions, seeds and settings:

(a) one edit per pipeline call (``batch_size=1``), the way a simple loop over edits runs;
(b) contrastkit's batched editing (``--batch`` edits per forward pass).

On CUDA the pipeline has InstructPix2Pix's architecture (Stable Diffusion 1.5's UNet with
8 input channels, its VAE, a CLIP ViT-L/14 text encoder; random weights: the compute does
not depend on them) in float16, at 256 and 512 px, and the script projects the GPU-hours
of the paper's COCO run: 11,541 sources x 16 edits x 500 steps (GenSynth Tab. 2, App.
A.2), from the per-step time of (b). On the CPU it runs a small configuration (the SD1.5
UNet takes minutes per edit there), so its figures only compare (a) and (b).
Target (issue 5): (b) >= 2x (a) on a GPU.

``--families`` (issue 35): for each editor family (ip2p, sdxl-ip2p, flux-kontext,
qwen-image-edit) its tiny pipeline (:mod:`contrastkit.tiny.editor`, random weights) edits
``--edits`` crops at ``--batch`` per call through :class:`DiffusersEditor`; the
denoiser's (UNet's / transformer's) calls of one edit batch are recorded and replayed
bare (same inputs, same batch, no pipeline around them): their rate is the ceiling of
edit-steps per second, and the script prints the editor's rate as a share of it, at each
of ``--resolutions`` (default 32 px; the GPU run of bench/gpu/run.sh: 256 and 512). With
tiny models the denoiser is cheap, so the share says how much the pipeline around it
(text encoders, VAE, scheduler, image processing) costs at that size, not at full size.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from contrastkit.curation.editing import (  # noqa: E402
    EditSettings,
    EditSpec,
    InstructPix2PixEditor,
    crop_for_editing,
    plan_edits,
)
from contrastkit.tiny.editor import build_instruct_pix2pix  # noqa: E402

SOURCES, EDITS_PER_SOURCE, PAPER_STEPS = 11_541, 16, 500


def _crops(resolution: int, n: int) -> list[Image.Image]:
    from contrastkit.samples import photo

    names = ("astronaut", "camera", "grace_hopper")
    boxes = {
        "astronaut": (18, 14, 368, 512),
        "camera": (0, 60, 335, 512),
        "grace_hopper": (10, 20, 510, 600),
    }
    crops = [crop_for_editing(photo(name), boxes[name], resolution)[0] for name in names]
    return [crops[i % len(crops)] for i in range(n)]


def _rate(
    editor: InstructPix2PixEditor, crops: list[Image.Image], specs: list[EditSpec], device: str
) -> float:
    editor.edit(crops[: editor.batch_size], specs[: editor.batch_size])  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    editor.edit(crops, specs)
    if device == "cuda":
        torch.cuda.synchronize()
    return len(specs) / (time.perf_counter() - start)


def _denoiser_seconds(
    editor: Any, crops: list[Image.Image], specs: list[EditSpec], device: str
) -> float:
    """Seconds of the denoiser's calls of one edit batch, recorded and replayed bare."""
    denoiser = getattr(editor.pipeline, "unet", None) or editor.pipeline.transformer
    calls: list[tuple[tuple, dict]] = []
    forward = denoiser.forward

    def record(*a, _forward=forward, _calls=calls, **k):  # type: ignore[no-untyped-def]
        _calls.append((a, k))
        return _forward(*a, **k)

    denoiser.forward = record
    editor.edit(crops[: editor.batch_size], specs[: editor.batch_size])
    denoiser.forward = forward
    with torch.no_grad():
        for a, k in calls:  # warm-up
            denoiser(*a, **k)
        _sync(device)
        start = time.perf_counter()
        for a, k in calls:
            denoiser(*a, **k)
        _sync(device)
    return time.perf_counter() - start


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _families(args: argparse.Namespace) -> None:
    """Each editor family's tiny pipeline: edit-steps/s against the denoiser's ceiling, at
    each of ``--resolutions`` (default 32 px)."""
    from contrastkit.config import ModelConfig
    from contrastkit.curation.editing import load_editor
    from contrastkit.tiny import editor as tiny

    builders = {
        "ip2p": tiny.tiny_instruct_pix2pix,
        "sdxl-ip2p": tiny.tiny_sdxl_instruct_pix2pix,
        "flux-kontext": tiny.tiny_flux_kontext,
        "qwen-image-edit": tiny.tiny_qwen_image_edit,
    }
    batch, steps = args.batch or 4, args.steps or 4
    resolutions = [int(r) for r in (args.resolutions or "32").split(",")]
    edits = args.edits or 2 * batch
    gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else "none"
    print(f"machine: {platform.machine()}, {torch.get_num_threads()} CPU threads, "
          f"{args.device} (GPU: {gpu}); tiny pipelines (random weights), {steps} steps, "
          f"{edits} edits at {batch} per call")  # fmt: skip
    print("| family | px | edit-steps/s | denoiser ceiling, edit-steps/s | share |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for prefix, build in builders.items():
            spec = build(Path(folder), prefix)  # PREFIX:FOLDER/PREFIX
            editor = load_editor(spec, ModelConfig(device=args.device, batch_size=batch))
            for resolution in resolutions:
                crops = _crops(resolution, edits)
                settings = EditSettings.for_family(prefix, steps=steps, resolution=resolution)
                specs = [s for i in range(edits) for s in plan_edits(str(i), settings)][:edits]
                specs = [
                    s if s.text_guidance_scale == specs[0].text_guidance_scale else specs[0]
                    for s in specs
                ]  # one guidance group: full batches
                rate = _rate(editor, crops, specs, args.device) * steps
                # the recorded calls are one batch of `steps`
                ceiling = batch * steps / _denoiser_seconds(editor, crops, specs, args.device)
                print(f"| {prefix} | {resolution} | {rate:.2f} | {ceiling:.2f} | "
                      f"{rate / ceiling:.0%} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer edits and steps")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=None, help="edits per call in (b)")
    parser.add_argument("--edits", type=int, default=None, help="edits per arm")
    parser.add_argument("--steps", type=int, default=None, help="denoising steps per edit")
    parser.add_argument(
        "--resolutions",
        default=None,
        help="e.g. 256,512 (default 256,512 on CUDA, 64,128 on a CPU; --families: 32)",
    )
    parser.add_argument("--families", action="store_true", help="each editor family, tiny")
    args = parser.parse_args()
    if args.families:
        _families(args)
        return
    cuda = args.device.startswith("cuda")
    arch = "sd15" if cuda else "small"
    batch = args.batch or (16 if cuda else 8)
    edits = args.edits or (batch * (2 if args.quick else 4))
    default_steps = (10 if args.quick else 20) if cuda else (4 if args.quick else 10)
    steps = args.steps or default_steps
    resolutions = [
        int(r) for r in (args.resolutions or ("256,512" if cuda else "64,128")).split(",")
    ]
    dtype = torch.float16 if cuda else torch.float32
    with tempfile.TemporaryDirectory() as folder:
        pipeline = build_instruct_pix2pix(arch, folder=Path(folder)).to(args.device, dtype)
    pipeline.set_progress_bar_config(disable=True)
    gpu = torch.cuda.get_device_name() if cuda else "none"
    print(f"machine: {platform.machine()}, {torch.get_num_threads()} CPU threads, GPU: {gpu}")
    print(
        f"pipeline: {arch} InstructPix2Pix architecture, random weights, {dtype}, "
        f"{steps} steps, text + image guidance (3 UNet passes per step)"
    )
    for resolution in resolutions:
        settings = EditSettings(steps=steps, resolution=resolution)
        specs = [spec for i in range(edits) for spec in plan_edits(str(i), settings)][:edits]
        specs.sort(key=lambda s: s.text_guidance_scale)
        crops = _crops(resolution, edits)
        one = _rate(
            InstructPix2PixEditor(pipeline, name=arch, batch_size=1),
            crops,
            specs,
            "cuda" if cuda else "cpu",
        )
        many = _rate(
            InstructPix2PixEditor(pipeline, name=arch, batch_size=batch),
            crops,
            specs,
            "cuda" if cuda else "cpu",
        )
        print(f"\n{resolution} px, {edits} edits")
        print(f"  (a) one edit per call     : {one:8.3f} edits/s")
        print(f"  (b) batched ({batch:2d} per call) : {many:8.3f} edits/s")
        print(f"  (b) / (a)                 : {many / one:8.2f}x  (target >= 2x on GPU)")
        hours = SOURCES * EDITS_PER_SOURCE / (many * steps / PAPER_STEPS) / 3600
        where = "GPU" if cuda else "CPU (small config, not the paper's model)"
        print(
            f"  projected {where}-hours, {SOURCES:,} x {EDITS_PER_SOURCE} edits x "
            f"{PAPER_STEPS} steps with (b): {hours:,.1f}"
        )


if __name__ == "__main__":
    main()
