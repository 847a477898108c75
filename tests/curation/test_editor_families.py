"""Editor families (issue 35, item 1): the registry, each family's defaults, a missing
model's message, and whole builds through each family's tiny pipeline (real diffusers
architectures built from configs, random weights, marked as such)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contrastkit.builders.gensynth.job import GenSynthConfig, build_gensynth
from contrastkit.builders.manifest import Manifest
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, locate_editor, plan_edits
from contrastkit.curation.editor_families import (
    BUILT_IN,
    EditorFamily,
    editor_families,
    parse_editor_spec,
    register_editor,
)
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.schema import Gender

runner = CliRunner()


def test_a_spec_without_a_family_is_instruct_pix2pix_as_before() -> None:
    assert {"ip2p", "sdxl-ip2p", "flux-kontext", "qwen-image-edit"} <= set(editor_families())
    family, target = parse_editor_spec("timbrooks/instruct-pix2pix")
    assert (family.prefix, target) == ("ip2p", "timbrooks/instruct-pix2pix")
    assert parse_editor_spec("/models/ip2p")[1] == "/models/ip2p"
    family, target = parse_editor_spec("flux-kontext:")
    assert (family.prefix, target) == ("flux-kontext", "black-forest-labs/FLUX.1-Kontext-dev")
    assert parse_editor_spec("qwen-image-edit: /m/q ")[1] == "/m/q"
    with pytest.raises(ConfigError, match="'kontext' is not an editor family; use one of"):
        parse_editor_spec("kontext:black-forest-labs/FLUX.1-Kontext-dev")
    with pytest.raises(ConfigError, match="editor: 'kontext' is not an editor family"):
        GenSynthConfig(out=Path("o"), editor="kontext:x")


def test_each_family_has_its_own_templates_and_card_defaults() -> None:
    # ip2p keeps the paper's settings: they are EditSettings' own defaults.
    assert EditSettings.for_family("ip2p") == EditSettings()
    assert len(plan_edits("1", EditSettings.for_family("ip2p"))) == 16
    kontext = EditSettings.for_family("flux-kontext")
    assert kontext.instructions[Gender.FEMININE][0] == (
        "Change the person to a woman, keep everything else the same"
    )
    assert all("keep" in i or "preserving" in i for i in kontext.instructions[Gender.MASCULINE])
    assert (kontext.text_guidance_scales, kontext.image_guidance_scale, kontext.steps,
            kontext.resolution) == ((2.5,), None, 28, 1024)  # fmt: skip
    qwen = EditSettings.for_family("qwen-image-edit")
    assert (qwen.text_guidance_scales, qwen.steps, qwen.image_guidance_scale) == ((4.0,), 50, None)
    sdxl = EditSettings.for_family("sdxl-ip2p")
    assert (sdxl.text_guidance_scales, sdxl.image_guidance_scale, sdxl.steps,
            sdxl.resolution) == ((3.0,), 1.5, 30, 768)  # fmt: skip
    assert {f.prefix: f.cuda_dtype for f in BUILT_IN} == {
        "ip2p": "float16", "sdxl-ip2p": "float16", "flux-kontext": "bfloat16",
        "qwen-image-edit": "bfloat16",
    }  # fmt: skip
    # Settings recorded as JSON read back onto a family's defaults.
    back = EditSettings.from_json({"steps": 3}, EditSettings.for_family("flux-kontext"))
    assert back.steps == 3 and back.instructions == kontext.instructions
    assert EditSettings.from_json(kontext.to_json()) == kontext


def test_a_taken_prefix_is_refused_and_a_bad_record_is_named() -> None:
    ip2p = editor_families()["ip2p"]
    with pytest.raises(ConfigError, match="already registered"):
        register_editor(EditorFamily(**{**ip2p.__dict__, "steps": 7}))
    with pytest.raises(ConfigError, match="arguments must be 'module:function'"):
        EditorFamily(**{**ip2p.__dict__, "prefix": "mine", "arguments": "nowhere"})


def test_a_missing_model_names_how_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError) as caught:
        locate_editor("flux-kontext:")
    message = str(caught.value)
    assert "hf download black-forest-labs/FLUX.1-Kontext-dev" in message
    assert "gated" in message and "FluxKontextPipeline" in message
    with pytest.raises(ModelNotFoundError, match="hf download Qwen/Qwen-Image-Edit"):
        locate_editor("qwen-image-edit:")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        locate_editor(f"sdxl-ip2p:{tmp_path / 'nowhere'}")


def _tiny(prefix: str, folder: Path) -> Path:
    from contrastkit.tiny import editor

    build = {
        "ip2p": editor.tiny_instruct_pix2pix,
        "sdxl-ip2p": editor.tiny_sdxl_instruct_pix2pix,
        "flux-kontext": editor.tiny_flux_kontext,
        "qwen-image-edit": editor.tiny_qwen_image_edit,
    }[prefix]
    spec = build(folder)  # written to FOLDER/NAME, as every tiny builder; its spec returned
    assert spec == f"{prefix}:{folder / build.__name__.replace('_', '-')}"
    return Path(spec.removeprefix(f"{prefix}:"))


def _one_instruction(tmp_path: Path) -> Path:
    table = tmp_path / "instructions.csv"
    table.write_text(
        "gender,instruction\nfeminine,Change the person to a woman\n"
        "masculine,Change the person to a man\n"
    )
    return table


@pytest.mark.slow
@pytest.mark.parametrize(
    "prefix",
    [
        "sdxl-ip2p",
        "flux-kontext",
        # Qwen-Image-Edit encodes its input at ~1024x1024 whatever the size asked: one
        # call takes seconds on a CPU even tiny; still run, on one source.
        "qwen-image-edit",
    ],
)
@pytest.mark.model_outputs
def test_a_whole_build_through_each_family_records_it_and_resumes(
    prefix: str, coco_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    from contrastkit.tiny.marker import MARKER_FILE

    folder = _tiny(prefix, tmp_path)
    assert (folder / MARKER_FILE).is_file()  # random weights, marked as such
    family = editor_families()[prefix]
    config = GenSynthConfig(
        out=tmp_path / "build", coco=coco_dir, limit=1, min_box_side=64,
        editor=f"{prefix}:{folder}", embedder=tiny_clip_spec,
        edit={"steps": 2, "resolution": 32}, instructions=_one_instruction(tmp_path),
        k=3, tau_real=-1, tau_gender=-1, quality=False,
        model=ModelConfig(device="cpu", batch_size=2),
    )  # fmt: skip
    result = build_gensynth(config)
    assert result.sources_kept == 1 and result.stages == ("edit", "filter", "select")
    edit = result.summary["edit"]
    assert (edit["editor"], edit["editor_family"], edit["editor_pipeline"],
            edit["editor_dtype"]) == (f"{prefix}:{folder}", prefix, family.pipeline,
                                      "float32")  # fmt: skip
    assert edit["editor_random_weights"] is True
    # The settings not given are the family's card defaults, recorded.
    assert edit["settings"]["text_guidance_scales"] == list(family.text_guidance_scales)
    assert edit["settings"]["image_guidance_scale"] == family.image_guidance_scale
    records = Manifest(config.out).read()
    assert len(records) == 2 and {r.method for r in records} == {family.method}
    assert {r.instruction for r in records} == {
        "Change the person to a woman", "Change the person to a man"
    }  # fmt: skip
    # A rerun on the folder takes the recorded editor and settings, and edits nothing.
    again = build_gensynth(GenSynthConfig(out=config.out, stage="edit", limit=1))  # type: ignore[arg-type]
    assert again.summary["edit"]["skipped_finished"] == 2
    assert again.summary["edit"]["edited"] == 0
    assert again.summary["edit"]["editor_family"] == prefix


@pytest.mark.slow
@pytest.mark.parametrize("prefix", ["sdxl-ip2p", "flux-kontext", "qwen-image-edit"])
def test_a_build_from_the_command_line_with_each_family_exports_loads_and_evaluates(
    prefix: str, coco_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    from datasets import DatasetDict, load_from_disk

    from contrastkit.builders.export import load_export

    family = editor_families()[prefix]
    folder = _tiny(prefix, tmp_path)
    out, exported_dir = tmp_path / "build", tmp_path / "x"
    made = runner.invoke(app, [
        "build", "gensynth", "--out", str(out), "--coco", str(coco_dir), "--limit", "1",
        "--min-box-side", "64", "--editor", f"{prefix}:{folder}", "--embedder",
        tiny_clip_spec, "--steps", "2", "--resolution", "32", "--instructions",
        str(_one_instruction(tmp_path)), "--tau-real", "-1", "--tau-gender", "-1", "--k", "3",
        "--no-quality", "--device", "cpu", "--json",
    ])  # fmt: skip
    assert made.exit_code == 0, made.output
    summary: dict[str, Any] = json.loads((out / "build_summary.json").read_text())
    assert summary["edit"]["editor_family"] == prefix
    assert summary["settings"]["edit"]["steps"] == 2
    exported = runner.invoke(app, ["export", "contrast", str(out), "--out", str(exported_dir)])
    assert exported.exit_code == 0, exported.output
    # The set loads as a user loads it: datasets' own reader, and from its parquet files.
    saved = load_from_disk(str(exported_dir / "saved" / "contrast"))
    assert isinstance(saved, DatasetDict)
    assert saved["test"].num_rows == 2 and set(saved["test"]["method"]) == {family.method}
    data = load_export(exported_dir, "contrast", source="parquet")["test"]
    assert data.num_rows == 2 and set(data["method"]) == {family.method}
    metadata = json.loads((exported_dir / "build_metadata.json").read_text())
    recorded = metadata["build_summary"]["edit"]
    assert (recorded["editor_family"], recorded["editor_pipeline"]) == (prefix, family.pipeline)
    assert metadata["random_weights"]["editor"] is True
    scored = runner.invoke(app, [
        "evaluate", "contrast", "--data", str(exported_dir), "--model", tiny_clip_spec,
        "--out", str(tmp_path / "res"), "--k", "1,2",
    ])  # fmt: skip
    assert scored.exit_code == 0, scored.output
    [model_dir] = [p for p in (tmp_path / "res").iterdir() if p.is_dir()]
    benchmark = json.loads((model_dir / "benchmark.json").read_text())
    assert benchmark["task"] == "contrast" and benchmark["summary"]["queries"] > 0
