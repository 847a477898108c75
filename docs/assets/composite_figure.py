"""Draw docs/assets/composite-box-vs-mask.png: one source of a tiny GenSynth build (the
bundled photos, a tiny random-weight InstructPix2Pix), its masculine edit pasted back in
the person's box and inside the person's mask, and how far each differs from the source.

    python docs/assets/composite_figure.py          # about a minute on a CPU
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.samples import write_coco
from contrastkit.tiny.clip import tiny_open_clip
from contrastkit.tiny.editor import tiny_instruct_pix2pix

HERE = Path(__file__).parent


def build(
    root: Path, coco: Path, editor: str, clip: str, composite: str
) -> tuple[Image.Image, str]:
    """The exported masculine version of the first source, built with ``composite``, and
    its source id."""
    import datasets

    out = root / f"build-{composite}"
    args = ["build", "gensynth", "--out", str(out), "--coco", str(coco), "--limit", "1",
            "--min-box-side", "64", "--editor", str(editor), "--embedder", clip,
            "--steps", "4", "--resolution", "64", "--scales", "9.5", "--k", "3",
            "--tau-real", "-1", "--tau-gender", "-1", "--device", "cpu",
            "--composite", composite, "--image-format", "png"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    if result.exit_code != 0:
        sys.exit(result.output)
    export = root / f"export-{composite}"
    result = CliRunner().invoke(app, ["export", "contrast", str(out), "--out", str(export)])
    if result.exit_code != 0:
        sys.exit(result.output)
    rows = datasets.load_from_disk(str(export / "saved" / "contrast"))["test"]
    gender = rows.features["gender"]
    names = gender.int2str if hasattr(gender, "int2str") else (lambda value: value)
    row = next(r for r in rows if names(r["gender"]) == "masculine")
    return row["image"].convert("RGB"), str(row["source_id"])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        coco = write_coco(root / "coco")
        editor = tiny_instruct_pix2pix(root, "editor")
        clip = tiny_open_clip(root / "clip")
        box, source_id = build(root, coco, editor, clip, "box")
        mask, _ = build(root, coco, editor, clip, "mask")
        captions = json.loads(next((coco / "annotations").glob("captions_*.json")).read_text())
        [name] = [i["file_name"] for i in captions["images"] if str(i["id"]) == source_id]
        source = Image.open(coco / "train2017" / name).convert("RGB")
    panels = [("source photo", source), ("box: pasted in the person's box", box),
              ("mask: inside the person's mask", mask)]  # fmt: skip
    figure = Figure(figsize=(12, 6.4), layout="constrained")
    axes = figure.subplots(2, 3)
    for axis, (title, image) in zip(axes[0], panels, strict=True):
        axis.imshow(image)
        axis.set_title(title, fontsize=10)
        axis.axis("off")
    axes[1][0].axis("off")
    axes[1][0].text(0.0, 0.5, "Changed pixels (white), against\nthe source photo, below each\n"
                    "version.\n\nRandom-weight tiny editor: the\nedits are noise; what matters\n"
                    "is where they land.", fontsize=10, va="center")  # fmt: skip
    for axis, (title, image) in zip(axes[1][1:], panels[1:], strict=True):
        changed = np.abs(np.asarray(image, np.int16) - np.asarray(source, np.int16)).max(2) > 0
        axis.imshow(changed, cmap="gray", vmin=0, vmax=1)
        axis.set_title(
            f"{title.split(':')[0]}: {changed.mean():.0%} of pixels changed", fontsize=10
        )
        axis.axis("off")
    figure.suptitle("Box vs mask compositing (tiny build, random weights: a pipeline check)",
                    color="darkred")  # fmt: skip
    figure.savefig(HERE / "composite-box-vs-mask.png", dpi=80)


if __name__ == "__main__":
    main()
