"""The dataset card of a GenSynth export states what the build guarantees, from its
recorded settings (issue 43, item 6): the editor by its family's name, image guidance
only where the family has one, the compositing and its dilation, and whether the pixels
around the person are the photo's exactly (lossless storage, or mask edits) or only up
to the codec's error (lossy box edits)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.data_cards import render_card
from contrastkit.models import load_scorer

SMALL = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)


def _card(coco: Path, editor_dir: Path, clip: str, out: Path, **options: object) -> Path:
    settings = EditSettings(
        text_guidance_scales=(9.5,),
        steps=2,
        resolution=32,
        **options.pop("edit", {}),  # type: ignore[arg-type]
    )
    editor = load_editor(editor_dir, ModelConfig(device="cpu", batch_size=4))
    run_edit_stage(
        EditStageConfig(coco, out / "build", settings, min_box_side=64, limit=1, **options),  # type: ignore[arg-type]
        editor,
    )
    scorer = load_scorer(clip, ModelConfig(device="cpu"))
    run_filter_stage(out / "build", scorer, FilterSettings(k=3, tau_real=-1, tau_gender=-1))
    run_select_stage(out / "build", seed=0)
    export_contrast_set(ExportContrastConfig(build=out / "build", out=out / "set"))
    return out / "set"


def _text(card: str) -> str:
    return " ".join(card.split())


@pytest.mark.slow
def test_a_default_box_build_says_its_context_is_the_photo_up_to_webp_noise(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    exported = _card(coco_dir, tiny_editor_dir, tiny_clip_spec, tmp_path)
    card = _text((exported / "README.md").read_text())
    assert "build's PNGs" not in card  # the false sentence
    assert "lossy WebP at quality 90" in card and "not pixel for pixel" in card
    assert "(InstructPix2Pix, random weights)" in card and "image guidance 1.5" in card
    assert "pasted back inside the person box, feathered over 0.08" in card
    assert "mask" not in card.split("## Preprocessing")[1].split("## Uses")[0]

    # The same build recorded as a FLUX.1 Kontext one: named so, no image guidance, and
    # its guidance called what it is.
    metadata = json.loads((exported / "build_metadata.json").read_text())
    flux = copy.deepcopy(metadata)
    flux["build_summary"]["edit"]["editor_family"] = "flux-kontext"
    flux["build_summary"]["edit"]["settings"]["image_guidance_scale"] = None
    from collections import Counter

    from contrastkit.builders.edit_facts import edit_facts

    flux["edit_facts"] = edit_facts(
        flux["build_summary"], Counter({"box": 2}), Counter({"webp": 2})
    )
    text = _text(render_card(flux))
    assert "FLUX.1 Kontext [dev]" in text and "InstructPix2Pix" not in text
    assert "image guidance" not in text and "distilled guidance 9.5" in text
    assert "| distilled guidance | edits | accepted | rate |" in text


@pytest.mark.slow
def test_a_lossless_box_build_and_a_mask_build_say_their_context_is_exact(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    png = _card(coco_dir, tiny_editor_dir, tiny_clip_spec, tmp_path / "png", image_format="png")
    card = _text((png / "README.md").read_text())
    assert "lossless PNG" in card
    assert "every pixel outside the person box equals the source photo's" in card

    mask = _card(
        coco_dir, tiny_editor_dir, tiny_clip_spec, tmp_path / "mask",
        edit={"composite": "mask", "mask_dilation": 0.3},
    )  # fmt: skip
    card = _text((mask / "README.md").read_text())
    assert "dilated by 0.3 of the box's shorter side" in card
    assert "every pixel outside the person's mask dilated by 0.3" in card
    assert "stored as lossy WebP at quality 90" in card and "lossless WebP" in card
    assert "feathered over 0.08" not in card
    facts = json.loads((mask / "build_metadata.json").read_text())["edit_facts"]
    assert facts["composite"] == "mask" and facts["composites"] == {"mask": 2}
