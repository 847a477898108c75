"""An export publishes no path of the exporter's machine (issue 47.6): models given as
local folders are named in the card and build_metadata.json relative to the build
folder, as docs/tutorials/quickstart.md says."""

from __future__ import annotations

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
from contrastkit.builders.portable_specs import portable_spec
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.models import load_scorer


@pytest.mark.slow
def test_the_card_and_metadata_name_local_models_relative_to_the_build_folder(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    build = tmp_path / "runs" / "build"
    editor = load_editor(tiny_editor_dir, ModelConfig(batch_size=8))
    run_edit_stage(
        EditStageConfig(coco_dir, build, EditSettings(steps=1, resolution=32), min_box_side=64),
        editor,
    )
    run_filter_stage(build, load_scorer(tiny_clip_spec), FilterSettings(10, -1, -1))
    run_select_stage(build, seed=0)
    out = tmp_path / "runs" / "export"
    export_contrast_set(ExportContrastConfig(build, out))
    machine = str(Path(tmp_path.anchor) / tmp_path.parts[1])  # /tmp, /home ...
    for name in ("README.md", "build_metadata.json"):
        text = (out / name).read_text()
        assert machine not in text and str(tiny_editor_dir) not in text, name
    metadata = json.loads((out / "build_metadata.json").read_text())
    recorded = metadata["build_summary"]["edit"]["editor"]
    assert (build / recorded).resolve() == tiny_editor_dir.resolve()  # from the build folder
    assert metadata["paths_relative_to"] == "the build folder"
    assert metadata["random_weights"] == {"editor": True, "encoder": True}


def test_hub_ids_tags_and_missing_names_are_kept_as_given(tmp_path: Path) -> None:
    (tmp_path / "models" / "clip").mkdir(parents=True)
    (tmp_path / "ckpt.pt").write_bytes(b"")
    build = tmp_path / "build"
    build.mkdir()
    for spec in ("open_clip:ViT-B-32/openai", "timbrooks/instruct-pix2pix", "ip2p:",
                 "hf-clip:openai/clip-vit-base-patch32"):  # fmt: skip
        assert portable_spec(spec, build) == spec
    assert portable_spec(f"open_clip:{tmp_path}/models/clip", build) == "open_clip:../models/clip"
    assert portable_spec(f"{tmp_path}/models/clip", build) == "../models/clip"
    assert portable_spec(f"open_clip:ViT-B-32/{tmp_path}/ckpt.pt", build) == (
        "open_clip:ViT-B-32/../ckpt.pt"
    )
