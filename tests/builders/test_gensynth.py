"""GenSynth stages (Sec. 4.1-4.2) end to end with a tiny InstructPix2Pix pipeline and a
tiny OpenCLIP model on the shipped photos; resume after SIGKILL. (The Sec. 4.3 metrics:
tests/evaluators/test_quality.py; the whole job with them: tests/apps/test_gensynth.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    quality_sets,
    read_embeddings,
    read_summary,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
    update_summary,
)
from contrastkit.builders.manifest import Manifest, read_contrast_set
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.curation.knn_filter import KnnFilterSettings, knn_filter
from contrastkit.errors import DataFormatError, StateError
from contrastkit.models import load_scorer
from contrastkit.schema import Gender
from factories import hold_build_lock

ROOT = Path(__file__).parents[2]
SETTINGS = EditSettings(steps=2, resolution=32)
BOXES = {"1": (0, 60, 335, 512), "2": (18, 14, 368, 512), "3": (10, 20, 510, 600)}


@pytest.mark.slow
def test_pipeline_stages_on_real_photos(
    coco_dir: Path,
    tiny_editor_dir: Path,
    tiny_clip_spec: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "build"
    editor = load_editor(tiny_editor_dir, ModelConfig(batch_size=4))
    # PNG (lossless): the background check below is pixel for pixel (WebP, the default,
    # is lossy; tests/builders/test_gensynth_shards.py covers it).
    report = run_edit_stage(
        EditStageConfig(coco_dir, out, SETTINGS, min_box_side=64, image_format="png"), editor
    )
    assert (report.sources, report.planned, report.edited) == (3, 48, 48)
    records = Manifest(out).read()
    assert len(records) == 48 and len({r.edit_id for r in records}) == 48
    first = records[0]
    assert (first.instruction, first.text_guidance_scale, first.steps) == (
        "Make this person more masculine", 9.5, 2
    )  # fmt: skip
    # The background outside the person box is the original, pixel for pixel.
    for record in records[::7]:
        original = np.asarray(
            Image.open(coco_dir / "train2017" / f"{int(record.source_id):012d}.jpg")
        )
        edited = np.asarray(Image.open(out / record.path))
        left, top, right, bottom = BOXES[record.source_id]
        outside = np.ones(original.shape[:2], dtype=bool)
        outside[top:bottom, left:right] = False
        assert edited.shape == original.shape
        assert np.array_equal(edited[outside], original[outside])
        assert not np.array_equal(edited[~outside], original[~outside])
    # A rerun finds everything finished.
    again = run_edit_stage(EditStageConfig(coco_dir, out, SETTINGS, min_box_side=64), editor)
    assert (again.skipped_finished, again.edited) == (48, 0)

    scorer = load_scorer(tiny_clip_spec)
    summary = run_filter_stage(out, scorer, FilterSettings(k=10, tau_real=0.08, tau_gender=0.5))
    assert summary["k_effective"] == 10 and summary["edits"] == 48
    # The manifest's scores are Eq. 4-5 on the cached embeddings.
    scored = Manifest(out).read()
    vectors = read_embeddings(out, scorer.spec)
    assert len(vectors) == 3 + 48
    result = knn_filter(
        np.stack([vectors[f"real:{s}"] for s in ("1", "2", "3")]),
        ["masculine", "feminine", "feminine"],
        np.stack([vectors[f"edit:{r.edit_id}"] for r in scored]),
        [r.target for r in scored],
        KnnFilterSettings(k=10),
    )
    assert [r.p_real for r in scored] == pytest.approx(result.p_real.tolist())
    assert [r.p_gender for r in scored] == pytest.approx(result.p_gender.tolist())
    assert [r.accepted for r in scored] == result.accepted.tolist()
    assert summary["accepted"] == int(result.accepted.sum())
    assert set(summary["by_text_guidance_scale"]) == {"9.5", "15"}
    _crash_mid_embedding_loses_at_most_one_shard(out, scorer, vectors, monkeypatch)

    # Accept everything (thresholds below 0) to exercise selection.
    run_filter_stage(out, scorer, FilterSettings(k=10, tau_real=-1, tau_gender=-1))
    select = run_select_stage(out, seed=0)
    assert select["sources_kept"] == 3 and select["images"] == 6
    items = read_contrast_set(out)
    assert [(i.source_id, i.gender) for i in items] == [
        (s, g) for s in "123" for g in ("masculine", "feminine")
    ]
    assert items[1].captions[0] == "A woman takes a picture with a camera on a tripod."
    assert items[2].captions[0] == "A man in an orange space suit smiles for his portrait."
    built = json.loads((out / "build_summary.json").read_text())
    assert set(built) == {"edit", "filter", "select"}
    assert read_summary(out) == built

    # What the Sec. 4.3 checks score (Tab. 2's rows), read from the build folder.
    sets = quality_sets(out)
    assert list(sets) == ["contrast_set", "original", "all_edits"]
    assert [len(s.images) for s in sets.values()] == [6, 3, 48]
    assert sets["contrast_set"].images[1] == out / items[1].image
    assert sets["contrast_set"].captions[1] == tuple(items[1].captions)
    assert sets["original"].genders == (Gender.MASCULINE, Gender.FEMININE, Gender.FEMININE)
    feminine_edit = next(i for i, r in enumerate(scored) if r.target == "feminine")
    assert sets["all_edits"].genders[feminine_edit] is Gender.FEMININE
    assert sets["all_edits"].captions[feminine_edit][0] == items[1].captions[0]
    # A sample read straight from the build (only the sampled edits materialized) is
    # the same draw as sampling the whole sets, and knows the size it came from.
    sampled = quality_sets(out, sample=5, seed=3)
    for name, whole in sets.items():
        drawn = whole.sample(5, seed=3)
        got = sampled[name]
        assert (got.images, got.genders, got.captions) == (
            drawn.images,
            drawn.genders,
            drawn.captions,
        )
        assert got.total == len(whole.images) and len(got.images) == min(5, got.total)


class _Counting:
    """A scorer that counts the images it embeds and fails on batch ``fail_at``."""

    def __init__(self, scorer: object, fail_at: int | None = None):
        self.scorer, self.fail_at, self.batches, self.rows = scorer, fail_at, 0, 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.scorer, name)

    def encode_pixels(self, pixels: object) -> object:
        self.batches += 1
        if self.batches == self.fail_at:
            raise RuntimeError("the machine went away")
        vectors = self.scorer.encode_pixels(pixels)  # type: ignore[attr-defined]
        self.rows += len(vectors)
        return vectors


def _crash_mid_embedding_loses_at_most_one_shard(
    out: Path, scorer: object, vectors: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embeddings are checkpointed per shard: a crash on the 5th batch of 4 keeps the two
    finished shards of 8; the rerun embeds only the other 51 - 16 crops."""
    import shutil

    from contrastkit.builders.gensynth import filter as filter_stage

    shutil.rmtree(out / "embeddings")
    monkeypatch.setattr(filter_stage, "SHARD_ROWS", 8)
    crashing = _Counting(scorer, fail_at=5)
    with pytest.raises(RuntimeError, match="went away"):
        run_filter_stage(out, crashing, FilterSettings(k=10), batch_size=4)  # type: ignore[arg-type]
    assert len(read_embeddings(out, scorer.spec)) == 16  # type: ignore[attr-defined]
    counting = _Counting(scorer)
    run_filter_stage(out, counting, FilterSettings(k=10), batch_size=4)  # type: ignore[arg-type]
    assert counting.rows == 51 - 16
    again = read_embeddings(out, scorer.spec)  # type: ignore[attr-defined]
    assert again.keys() == vectors.keys()
    for key, vector in vectors.items():
        np.testing.assert_allclose(again[key], vector, atol=1e-6)


def test_a_new_selection_drops_the_checks_of_the_old_one(tmp_path: Path) -> None:
    update_summary(tmp_path, "quality", {"contrast_set": {"images": 6}})
    update_summary(tmp_path, "select", {"images": 4}, stale=("quality",))
    assert read_summary(tmp_path) == {"select": {"images": 4}}
    (tmp_path / "build_summary.json").write_text("[1, 2]")
    with pytest.raises(DataFormatError, match="expected a JSON object"):
        read_summary(tmp_path)


def test_stages_out_of_order_are_state_errors(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="run the edit stage first"):
        run_select_stage(tmp_path)
    with pytest.raises(StateError, match="run the edit stage first"):
        run_filter_stage(tmp_path, object())  # type: ignore[arg-type]


def test_torn_manifest_line_is_not_counted_and_is_cut_before_appending(tmp_path: Path) -> None:
    from contrastkit.builders.manifest import EditRecord

    manifest = Manifest(tmp_path)
    record = EditRecord("1-M1-g9.5", "1", "instruct-pix2pix", "masculine", "masculine",
                        [0, 0, 1, 1], 7, "edits/1/a.png", "tiny")  # fmt: skip
    manifest.append(record)
    with manifest.path.open("a") as handle:
        handle.write('{"edit_id": "1-M2-g9')  # killed mid-write
    assert [r.edit_id for r in Manifest(tmp_path).read()] == ["1-M1-g9.5"]
    Manifest(tmp_path).append(record.__class__(**{**record.__dict__, "edit_id": "1-F1-g15"}))
    assert [r.edit_id for r in Manifest(tmp_path).read()] == ["1-M1-g9.5", "1-F1-g15"]
    manifest.path.write_text(manifest.path.read_text() + manifest.path.read_text())
    with pytest.raises(ValueError, match="listed twice"):
        Manifest(tmp_path).read()


def _cli(out: Path, coco_dir: Path, editor: Path, clip: str, *extra: str) -> list[str]:
    return ["build", "gensynth", "--coco", str(coco_dir), "--out", str(out), "--editor",
            str(editor), "--embedder", clip, "--min-box-side", "64", "--resolution", "32",
            "--k", "10", "--tau-real", "-1", "--tau-gender", "-1", *extra]  # fmt: skip


#: The killed run: the CLI in a child process whose edit stage SIGKILLs itself as it
#: is about to write its KILL_AT-th image (windows of 2 edits: after two whole windows
#: and the first image of the third), a deterministic point in the middle of a window.
KILL_AT = 6
_KILLED_RUN = """
import os, signal, sys
import contrastkit.builders.gensynth.edit as stage
from contrastkit.cli import main
write, calls = stage.atomic_write_bytes, []
def write_or_die(path, data):
    calls.append(path)
    if len(calls) == int(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    write(path, data)
stage.atomic_write_bytes = write_or_die
sys.argv = ["contrastkit", *sys.argv[1:]]
main()
"""


@pytest.mark.model_outputs
@pytest.mark.slow
def test_sigkill_mid_build_then_rerun_gives_the_same_set(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """The promise of resume (docs/pipeline.md, "What is bit-identical"): after a SIGKILL
    mid-window, finished edits are kept byte for byte and never rewritten, the rerun
    makes exactly the missing edit ids, and, with the same settings and thread count,
    the manifest, the filter's scores and decisions, the contrast set and every image
    are byte-identical to an uninterrupted run (each missing edit is made in the batch
    it had there). Tolerance 0: no pixel bound measured on one CPU holds on another."""
    import torch

    runner = CliRunner()
    args = ("--steps", "4", "--limit", "2", "--scales", "9.5", "--no-quality",
            "--batch-size", "2")  # fmt: skip
    reference = tmp_path / "reference"
    done = runner.invoke(app, _cli(reference, coco_dir, tiny_editor_dir, tiny_clip_spec, *args))
    assert done.exit_code == 0, done.output
    shown = " ".join(done.output.split())  # the console wraps long lines
    assert re.search(r"edits accepted .*search: (faiss|numpy) on cpu\)", shown), shown

    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "KILL_AT": str(KILL_AT),
           "OMP_NUM_THREADS": str(torch.get_num_threads())}  # fmt: skip
    edit_only = _cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, *args, "--stage", "edit")
    killed = subprocess.run([sys.executable, "-c", _KILLED_RUN, *edit_only], env=env,
                            capture_output=True, timeout=300)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    finished = [r.edit_id for r in Manifest(out).read()]
    assert len(finished) == 4  # two whole windows; the third's first image is not finished
    orphans = {p.stem for p in (out / "edits").rglob("*.webp")} - set(finished)
    assert len(orphans) == 1
    kept = {p: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns)
            for p in (out / "edits").rglob("*.webp") if p.stem in finished}  # fmt: skip
    assert len(kept) == 4

    rerun = runner.invoke(app, [*_cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, *args),
                                "--json"])  # fmt: skip
    assert rerun.exit_code == 0, rerun.output
    summary = json.loads(rerun.stdout)
    assert summary["edit"]["skipped_finished"] == 4
    assert summary["edit"]["edited"] == 12
    for path, (data, inode, mtime) in kept.items():  # kept byte for byte, never rewritten
        assert (path.read_bytes(), path.stat().st_ino, path.stat().st_mtime_ns) == (
            data, inode, mtime)  # fmt: skip
    ours, theirs = Manifest(out).read(), Manifest(reference).read()
    assert [r.edit_id for r in ours][:4] == finished
    assert len({r.edit_id for r in ours}) == 16
    assert ours == theirs  # ids, order, paths, p_real, p_gender and decisions
    assert not list(out.rglob("*.tmp"))
    for record in ours:
        assert (out / record.path).read_bytes() == (reference / record.path).read_bytes()
    ours_set, theirs_set = read_contrast_set(out), read_contrast_set(reference)
    assert ours_set == theirs_set and len(ours_set) > 0
    for item in ours_set:
        assert (out / item.image).read_bytes() == (reference / item.image).read_bytes()


@pytest.mark.slow
def test_cli_stage_errors(coco_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["build", "gensynth", "--out", str(tmp_path / "o"),
                                 "--stage", "edit"])  # fmt: skip
    assert result.exit_code == 2 and "needs --coco" in result.stderr
    result = runner.invoke(app, ["build", "gensynth", "--out", str(tmp_path / "o"), "--coco",
                                 str(coco_dir), "--editor", str(tmp_path / "missing")])  # fmt: skip
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert "model not found" in result.stderr
    result = runner.invoke(app, ["build", "gensynth", "--out", str(tmp_path / "o"), "--stage",
                                 "select", "--no-quality"])  # fmt: skip
    assert result.exit_code == 2 and "run the edit stage" in result.stderr


def test_a_second_run_on_a_build_folder_is_refused_and_touches_nothing(
    coco_dir: Path, tmp_path: Path
) -> None:
    """While one process runs a stage on a build folder (holds its lock), another run of
    any stage there fails at once naming the holder, and leaves the first run's
    temporary files alone; once the holder is gone, the folder is usable again."""

    out = tmp_path / "build"
    out.mkdir()
    in_flight = out / ".edit-in-flight.png.tmp"
    in_flight.write_bytes(b"half an image")
    release = tmp_path / "release"
    holder = hold_build_lock(out, release)
    try:
        editor = object()  # never reached: the lock is checked first
        with pytest.raises(StateError, match=rf"pid {holder.pid}@"):
            run_edit_stage(EditStageConfig(coco_dir, out, SETTINGS), editor)  # type: ignore[arg-type]
        with pytest.raises(StateError, match="another `contrastkit build gensynth` run"):
            run_select_stage(out)
        assert in_flight.read_bytes() == b"half an image"
    finally:
        release.touch()
        holder.wait(timeout=30)
    with pytest.raises(StateError, match="no finished edits"):  # the lock is free again
        run_select_stage(out)
