"""InstructPix2Pix editing (GenSynth Sec. 4.1, App. A.2, Tab. 7) with a tiny real pipeline."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from contrastkit.config import ModelConfig
from contrastkit.curation.editing import (
    DEFAULT_INSTRUCTIONS,
    EditSettings,
    crop_for_editing,
    feather_mask,
    load_editor,
    paste_back,
    plan_edits,
    read_instructions,
)
from contrastkit.errors import ConfigError, DataFormatError, ModelNotFoundError
from contrastkit.samples import photo
from contrastkit.schema import Gender


def test_plan_has_16_seeded_edits_per_source() -> None:
    specs = plan_edits("391895", EditSettings())
    assert len(specs) == 16  # 4 instructions x 2 genders x 2 scales (Tab. 2)
    assert len({s.edit_id for s in specs}) == 16
    assert {s.text_guidance_scale for s in specs} == {9.5, 15.0}
    assert {s.steps for s in specs} == {500}
    assert specs[0].edit_id == "391895-M1-g9.5" and specs[0].target is Gender.MASCULINE
    assert specs[0].instruction == "Make this person more masculine"
    assert "Convert this into a woman" in {s.instruction for s in specs}
    assert DEFAULT_INSTRUCTIONS[Gender.FEMININE][1] == "Make this person look like a woman"
    # Seeds depend on the build seed and the edit, not on the order of planning.
    again = plan_edits("391895", EditSettings())
    assert [s.seed for s in again] == [s.seed for s in specs]
    assert plan_edits("391895", EditSettings(seed=1))[0].seed != specs[0].seed
    assert len({s.seed for s in specs}) == 16


def test_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="resolution: must be a positive multiple of 8"):
        EditSettings(resolution=100)
    with pytest.raises(ConfigError, match="instructions: no edit instructions for feminine"):
        EditSettings(instructions={Gender.MASCULINE: ("Make it a man",)})


def test_crop_resize_pad_and_paste_keep_the_background() -> None:
    image = photo("camera")
    box = (0, 60, 335, 512)
    crop, placement = crop_for_editing(image, box, 64, margin=0.1)
    assert crop.size == (64, 64)
    assert placement.crop == (0, 15, 369, 512)  # margin 34 px / 45 px, clipped
    assert placement.size[1] == 64 and placement.offset[1] == 0
    edited = Image.new("RGB", (64, 64), (255, 0, 0))
    out = np.asarray(paste_back(image, edited, placement, feather=0.1))
    original = np.asarray(image)
    outside = np.ones(original.shape[:2], dtype=bool)
    outside[60:512, 0:335] = False
    assert np.array_equal(out[outside], original[outside])
    assert tuple(out[300, 160]) == (255, 0, 0)  # deep inside the box: the edit
    # The ramp: the box's edge row is mostly original.
    assert abs(int(out[60, 160, 1]) - int(original[60, 160, 1])) < 10


def test_feather_mask_ramps_from_edge_to_centre() -> None:
    mask = feather_mask(40, 20, 0.25)
    assert mask.shape == (20, 40)
    assert mask[10, 20] == 1.0 and mask[0, 0] < 0.05
    assert np.all(np.diff(mask[10, :20]) >= 0)


@pytest.mark.slow
class _FloatOutputs:
    """The real pipeline, asked for float outputs (``output_type="np"``) whatever the
    editor asks; it keeps them and hands the editor the images it expects."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline, self.outputs = pipeline, []  # type: list[np.ndarray]

    def __call__(self, **kwargs: Any) -> Any:
        result = self.pipeline(**{**kwargs, "output_type": "np"})
        self.outputs.extend(result.images)
        result.images = self.pipeline.numpy_to_pil(result.images)
        return result


def test_each_edit_is_independent_of_its_batch_up_to_float_rounding(
    tiny_editor_dir: Path,
) -> None:
    """Per-edit seeds: an edit made in a batch of 4 and alone is the same edit. In float64
    the two agree to 1e-9 of the pixel range on any CPU (the batch changes only the
    kernels' rounding, 1e-16 relative here); in float32 they may differ by a grey level
    or more, which is why resume keeps each edit's batch (docs/pipeline.md, "What is
    bit-identical"; measured by bench/edit_invariance.py)."""
    import torch
    from diffusers import StableDiffusionInstructPix2PixPipeline

    from contrastkit.curation.editing import InstructPix2PixEditor

    settings = EditSettings(steps=3, resolution=32)
    specs = plan_edits("1", settings)[:5]
    crop, _ = crop_for_editing(photo("astronaut"), (18, 14, 368, 512), 32)
    pipeline = StableDiffusionInstructPix2PixPipeline.from_pretrained(
        tiny_editor_dir, dtype=torch.float64
    )
    pipeline.set_progress_bar_config(disable=True)
    floats = _FloatOutputs(pipeline)
    batched = InstructPix2PixEditor(floats, name="tiny", batch_size=4).edit([crop] * 5, specs)
    assert [im.size for im in batched] == [(32, 32)] * 5
    one_by_one = InstructPix2PixEditor(floats, name="tiny", batch_size=1)
    one_by_one.edit([crop] * 5, specs)
    rerun = one_by_one.edit([crop], [replace(specs[0])])
    first, second, again = floats.outputs[:5], floats.outputs[5:10], floats.outputs[10]
    for a, b in zip(first, second, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    np.testing.assert_allclose(again, first[0], rtol=0, atol=1e-9)
    assert np.array_equal(np.asarray(rerun[0]), np.asarray(batched[0]))
    # Different seeds give different edits.
    assert not np.array_equal(np.asarray(batched[0]), np.asarray(batched[2]))
    # The editor the build loads (float32 on the CPU): the same batch gives the same
    # bytes every time.
    editor = load_editor(tiny_editor_dir, ModelConfig(batch_size=4))
    made = [np.asarray(im) for im in editor.edit([crop] * 5, specs)]
    remade = [np.asarray(im) for im in editor.edit([crop] * 5, specs)]
    assert all(np.array_equal(a, b) for a, b in zip(made, remade, strict=True))


@pytest.mark.slow  # imports diffusers (about 6 s)
def test_missing_editor_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        load_editor(tmp_path / "nowhere")
    with pytest.raises(ModelNotFoundError, match="hf download contrastkit-tests/no-such-model"):
        load_editor("contrastkit-tests/no-such-model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        ModelNotFoundError, match="not an InstructPix2Pix pipeline folder"
    ) as caught:
        load_editor(tmp_path / "empty")
    assert caught.value.__cause__ is not None  # the loader's own error is kept


@pytest.mark.slow  # imports diffusers (about 6 s)
def test_a_broken_pipeline_folder_is_reported_with_its_cause(
    tiny_editor_dir: Path, tmp_path: Path
) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_editor_dir, broken)
    (broken / "unet" / "config.json").write_text("{ not json")
    with pytest.raises(ModelNotFoundError, match="does not load") as caught:
        load_editor(broken)
    assert isinstance(caught.value.__cause__, (OSError, ValueError))


def test_instructions_are_read_from_a_table(tmp_path: Path) -> None:
    table = tmp_path / "instructions.csv"
    table.write_text(
        "gender,instruction\nfeminine,Make her a woman\nM,Make him a man\n"
        "masculine,  Turn into a man  \n"
    )
    found = read_instructions(table)
    assert found == {
        Gender.FEMININE: ("Make her a woman",),
        Gender.MASCULINE: ("Make him a man", "Turn into a man"),
    }
    table.write_text("gender,instruction\nfemale,Make her a woman\n")
    with pytest.raises(DataFormatError, match="field 'gender'") as caught:
        read_instructions(table)
    assert caught.value.line == 2 and caught.value.__cause__ is not None
    table.write_text("gender,instruction\nfeminine,Make her a woman\n")
    with pytest.raises(DataFormatError, match="no instruction for masculine"):
        read_instructions(table)
    table.write_text("gender,instruction\nfeminine,\n")
    with pytest.raises(DataFormatError, match="empty instruction"):
        read_instructions(table)
