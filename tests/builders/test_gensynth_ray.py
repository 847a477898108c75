"""``build gensynth --engine ray``: a real local Ray instance runs the tiny GenSynth build
(tiny InstructPix2Pix + tiny OpenCLIP on the shipped photos) and gives the build folder of
``--engine local``: the same manifest rows, decisions, contrast set, edit image bytes and
embedding shards; a run started locally and resumed with Ray ends identical too. A
non-InstructPix2Pix family (tiny FLUX.1 Kontext) gives the local folder on Ray as well.

Both engines run torch with one CPU thread: Ray gives each 1-CPU actor one thread
(``OMP_NUM_THREADS=1``), and on the CPU the float rounding of a forward pass depends on
the thread count, so that is the like-for-like comparison.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from contrastkit.builders.gensynth import read_embeddings, read_summary
from contrastkit.builders.gensynth.job import GenSynthConfig, build_gensynth
from contrastkit.builders.manifest import Manifest
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings
from contrastkit.errors import ConfigError

#: One local Ray instance at a time: these modules run on one xdist worker.
pytestmark = pytest.mark.xdist_group("ray")

EDIT = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)
MODEL = ModelConfig(device="cpu", batch_size=4)


def models_only_on_ray(patch: pytest.MonkeyPatch) -> None:
    """Make loading a model in this process an error: with the ray engine only the
    actors load them (they import the real loaders)."""

    def loaded_in_the_driver(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("engine ray loaded a model in the driver")

    patch.setattr("contrastkit.curation.editing.load_editor", loaded_in_the_driver)
    patch.setattr("contrastkit.models.load_scorer", loaded_in_the_driver)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """This process's torch on one thread, as in a 1-CPU Ray actor (see the docstring)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def config(out: Path, coco: Path, editor: Path, embedder: str, **changes: Any) -> GenSynthConfig:
    base = GenSynthConfig(
        out=out, coco=coco, min_box_side=64, editor=str(editor), embedder=embedder, edit=EDIT,
        k=3, tau_real=-1, tau_gender=0.5, quality=False, model=MODEL,
    )  # fmt: skip
    return replace(base, **changes)


def outcome(out: Path, embedder: str) -> dict[str, Any]:
    """What a user relies on in a build folder: manifest rows, accepted edits, the
    contrast set, each edit's image bytes (by edit id) and the cached embeddings."""
    records = Manifest(out).read()
    return {
        "rows": [
            (r.edit_id, r.source_id, r.target, r.path, r.editor, r.p_real, r.p_gender, r.accepted)
            for r in records
        ],
        "accepted": sorted(r.edit_id for r in records if r.accepted),
        "contrast_set": (out / "contrast_set.jsonl").read_text(),
        "images": {r.edit_id: (out / r.path).read_bytes() for r in records},
        "embeddings": read_embeddings(out, embedder),
    }


def assert_same(ray: dict[str, Any], local: dict[str, Any]) -> None:
    assert [row[:5] for row in ray["rows"]] == [row[:5] for row in local["rows"]]
    for got, want in zip(ray["rows"], local["rows"], strict=True):
        assert got[5] == pytest.approx(want[5], abs=1e-6)  # p_real
        assert got[6] == pytest.approx(want[6], abs=1e-6)  # p_gender
        assert got[7] == want[7]  # accepted
    assert ray["accepted"] == local["accepted"]
    assert ray["contrast_set"] == local["contrast_set"]
    assert ray["images"].keys() == local["images"].keys()
    assert all(ray["images"][key] == local["images"][key] for key in local["images"])
    assert ray["embeddings"].keys() == local["embeddings"].keys()
    for key, vector in local["embeddings"].items():
        np.testing.assert_allclose(ray["embeddings"][key], vector, atol=1e-6)


@pytest.mark.model_outputs
@pytest.mark.slow
def test_engine_ray_builds_the_same_folder_as_local_and_resumes_a_local_run(
    ray_local: Any,
    one_thread: None,
    coco_dir: Path,
    tiny_editor_dir: Path,
    tiny_clip_spec: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local_out = tmp_path / "local"
    local = build_gensynth(config(local_out, coco_dir, tiny_editor_dir, tiny_clip_spec))
    assert local.stages == ("edit", "filter", "select") and local.sources_kept
    expected = outcome(local_out, tiny_clip_spec)
    assert len(expected["rows"]) == 24  # 3 sources x 2 genders x 4 instructions
    assert 0 < len(expected["accepted"]) < 24  # the filter kept some and dropped some

    # Edited locally (one source), then the whole build on Ray through the command line:
    # the Ray run makes only the missing edits (every window of two of the three
    # sources), filters and selects on Ray, and the folder ends as the local one.
    ray_out = tmp_path / "ray"
    first = build_gensynth(
        config(ray_out, coco_dir, tiny_editor_dir, tiny_clip_spec, limit=1, stage="edit")
    )
    assert first.summary["edit"]["edited"] == 8
    command = [
        "build", "gensynth", "--out", str(ray_out), "--coco", str(coco_dir),
        "--editor", str(tiny_editor_dir), "--embedder", tiny_clip_spec, "--steps", "2",
        "--resolution", "32", "--scales", "9.5", "--min-box-side", "64", "--k", "3",
        "--tau-real", "-1", "--tau-gender", "0.5", "--no-quality", "--device", "cpu",
        "--batch-size", "4", "--engine", "ray", "--json",
    ]  # fmt: skip
    with monkeypatch.context() as patch:
        models_only_on_ray(patch)
        result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    assert (summary["edit"]["skipped_finished"], summary["edit"]["edited"]) == (8, 16)
    assert summary["filter"]["edits"] == 24
    assert_same(outcome(ray_out, tiny_clip_spec), expected)
    ray_summary, local_summary = read_summary(ray_out), read_summary(local_out)
    for counts in (ray_summary["edit"], local_summary["edit"]):  # the resume's own counts
        del counts["skipped_finished"], counts["edited"]
    for summary in (ray_summary, local_summary):  # each run's own options (and limit)
        del summary["settings"]
    assert ray_summary == local_summary  # counts, rates, model flags


@pytest.mark.slow
def test_engine_ray_builds_a_kontext_folder_as_local_and_records_the_family(
    ray_local: Any,
    one_thread: None,
    coco_dir: Path,
    tiny_clip_spec: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A non-InstructPix2Pix family on Ray: the actors load the tiny FLUX.1 Kontext
    pipeline from its spec, run the family's card defaults and give the local folder."""
    from contrastkit.tiny.editor import tiny_flux_kontext

    instructions = tmp_path / "instructions.csv"
    instructions.write_text(
        "gender,instruction\nfeminine,Change the person to a woman\n"
        "masculine,Change the person to a man\n"
    )
    editor = tiny_flux_kontext(tmp_path)  # flux-kontext:FOLDER
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    build_gensynth(
        GenSynthConfig(
            out=local_out, coco=coco_dir, limit=2, min_box_side=64, editor=editor,
            embedder=tiny_clip_spec, edit={"steps": 2, "resolution": 32},
            instructions=instructions, k=3, tau_real=-1, tau_gender=-1, quality=False,
            model=MODEL,
        )
    )  # fmt: skip
    expected = outcome(local_out, tiny_clip_spec)
    assert len(expected["rows"]) == 4  # 2 sources x 2 genders x 1 instruction
    assert len(expected["accepted"]) == 4  # the thresholds accept every edit
    command = [
        "build", "gensynth", "--out", str(ray_out), "--coco", str(coco_dir), "--limit", "2",
        "--editor", editor, "--embedder", tiny_clip_spec, "--steps", "2", "--resolution",
        "32", "--instructions", str(instructions), "--min-box-side", "64", "--k", "3",
        "--tau-real", "-1", "--tau-gender", "-1", "--no-quality", "--device", "cpu",
        "--batch-size", "4", "--engine", "ray", "--json",
    ]  # fmt: skip
    with monkeypatch.context() as patch:
        models_only_on_ray(patch)
        result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert_same(outcome(ray_out, tiny_clip_spec), expected)
    assert {row[4] for row in expected["rows"]} == {editor}
    assert {r.method for r in Manifest(ray_out).read()} == {"flux-kontext"}
    ray_summary, local_summary = read_summary(ray_out), read_summary(local_out)
    assert ray_summary["edit"]["editor_family"] == "flux-kontext"
    assert ray_summary["edit"]["editor_pipeline"] == "FluxKontextPipeline"
    assert ray_summary["settings"]["edit"] == local_summary["settings"]["edit"]
    assert ray_summary["settings"]["edit"]["text_guidance_scales"] == [2.5]  # the card's
    for summary in (ray_summary, local_summary):  # each run's own options
        del summary["settings"]
    assert ray_summary == local_summary


@pytest.mark.slow
def test_an_actor_error_reaches_the_user_as_with_the_local_engine(
    ray_local: Any, coco_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    missing = tmp_path / "no-editor"
    command = [
        "build", "gensynth", "--out", str(tmp_path / "out"), "--coco", str(coco_dir),
        "--editor", str(missing), "--embedder", tiny_clip_spec, "--limit", "1",
        "--steps", "2", "--resolution", "32", "--no-quality", "--device", "cpu",
        "--engine", "ray",
    ]  # fmt: skip
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2
    assert f"editor model folder '{missing}' does not exist" in result.output
    assert not Manifest(tmp_path / "out").read()  # nothing half-written


# -- fast: configuration --------------------------------------------------------------------


def test_the_engine_fields_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^engine: must be one of local, ray, not 'spark'"):
        GenSynthConfig(out=tmp_path, stage="select", quality=False, engine="spark")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r'^ray_address: only used with engine "ray"'):
        GenSynthConfig(out=tmp_path, stage="select", quality=False, ray_address="auto")  # type: ignore[arg-type]


def test_engine_ray_without_ray_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    with pytest.raises(ConfigError, match=r'^engine: .*pip install "contrastkit\[ray\]"'):
        GenSynthConfig(out=tmp_path, stage="select", quality=False, engine="ray")  # type: ignore[arg-type]
    result = CliRunner().invoke(
        app, ["build", "gensynth", "--out", str(tmp_path), "--stage", "select", "--engine", "ray"]
    )
    assert result.exit_code == 2 and "contrastkit[ray]" in result.output


def test_the_local_engine_never_imports_ray() -> None:
    code = (
        "import sys, contrastkit, contrastkit.cli, contrastkit.builders.gensynth.job, "
        "contrastkit.builders.gensynth, contrastkit.curation.maintenance\n"
        "from contrastkit.builders.gensynth.job import GenSynthConfig\n"
        "GenSynthConfig(out='o', stage='select', quality=False)\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
