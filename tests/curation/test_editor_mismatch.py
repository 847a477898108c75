"""An editor spec whose family does not match its pipeline (issue 43, item 5): an SDXL
InstructPix2Pix folder given without its ``sdxl-ip2p:`` prefix, or with ``ip2p:``, is
refused when the editor is located, before COCO is read or anything is edited, naming the
prefix to give (exit 2), instead of failing at the first edit with a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import load_editor, locate_editor
from contrastkit.errors import ConfigError

runner = CliRunner()


@pytest.fixture(scope="module")
def sdxl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from contrastkit.tiny.editor import tiny_sdxl_instruct_pix2pix

    folder = tmp_path_factory.mktemp("tiny")
    assert tiny_sdxl_instruct_pix2pix(folder, "sdxl") == f"sdxl-ip2p:{folder / 'sdxl'}"
    return folder / "sdxl"


@pytest.mark.slow
@pytest.mark.parametrize("prefix", ["", "ip2p:"])
def test_an_sdxl_folder_without_its_prefix_is_refused_at_load_naming_it(
    prefix: str, sdxl_dir: Path, coco_dir: Path, tmp_path: Path
) -> None:
    spec = f"{prefix}{sdxl_dir}"
    out = tmp_path / "build"
    result = runner.invoke(app, [
        "build", "gensynth", "--coco", str(coco_dir), "--out", str(out), "--editor", spec,
        "--stage", "edit", "--limit", "1", "--min-box-side", "64", "--steps", "2",
        "--resolution", "32", "--device", "cpu",
    ])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"give --editor sdxl-ip2p:{sdxl_dir}" in result.stderr
    assert "StableDiffusionXLInstructPix2PixPipeline" in result.stderr
    assert not (out / "manifest.jsonl").exists()  # nothing was edited
    with pytest.raises(ConfigError, match="sdxl-ip2p editor family"):
        load_editor(spec, ModelConfig(device="cpu"))
    assert locate_editor(f"sdxl-ip2p:{sdxl_dir}") is True  # the right prefix is fine


def test_an_instruct_pix2pix_folder_with_another_family_is_refused(
    tiny_editor_dir: Path,
) -> None:
    for prefix in ("sdxl-ip2p", "flux-kontext"):
        with pytest.raises(ConfigError, match=f"give --editor ip2p:{tiny_editor_dir}"):
            locate_editor(f"{prefix}:{tiny_editor_dir}")
    assert locate_editor(str(tiny_editor_dir)) is True
    assert locate_editor(f"ip2p:{tiny_editor_dir}") is True
