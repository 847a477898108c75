"""Sharded GenSynth builds (issue 16 item 2) and edit storage (item 4): two shard workers
run at once on one build folder, one is SIGKILLed and rerun, `build merge` combines them,
and the filter and select stages then give what a single worker gives; merge refuses
inconsistent shards; edits are stored as WebP, smaller than PNG, and still export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.coco import SourceImage, read_coco, select_sources
from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    MergeConfig,
    Shard,
    merge_shards,
    read_embeddings,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.builders.gensynth.job import GenSynthConfig
from contrastkit.builders.gensynth.shards import ShardInfo, shard_number, write_shard_info
from contrastkit.builders.manifest import (
    EditRecord,
    Manifest,
    read_contrast_set,
    read_sources,
    write_image,
    write_sources,
)
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor, plan_edits
from contrastkit.errors import ConfigError, DataFormatError, StateError
from factories import hold_build_lock

ROOT = Path(__file__).parents[2]
SETTINGS = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)


def _cli(out: Path, coco_dir: Path, editor: Path, clip: str, *extra: str) -> list[str]:
    # --batch-size 1 with one scale: one edit per editor call, so an edit's pixels do not
    # depend on which other edits share its call (the killed run resumes mid-way).
    return ["build", "gensynth", "--coco", str(coco_dir), "--out", str(out), "--editor",
            str(editor), "--embedder", clip, "--min-box-side", "64", "--resolution", "32",
            "--steps", "2", "--scales", "9.5", "--batch-size", "1", "--limit", "2", "--k", "10",
            "--tau-real", "-1", "--tau-gender", "0.35", "--no-quality", *extra]  # fmt: skip


def _rows(out: Path) -> list[tuple[object, ...]]:
    return [
        (r.edit_id, r.source_id, r.target, r.p_real, r.p_gender, r.accepted)
        for r in Manifest(out).read()
    ]


@pytest.mark.slow
def test_two_concurrent_shards_one_killed_and_rerun_merge_to_the_single_worker_build(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    reference = tmp_path / "single"
    done = runner.invoke(app, _cli(reference, coco_dir, tiny_editor_dir, tiny_clip_spec))
    assert done.exit_code == 0, done.output

    out = tmp_path / "sharded"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # The two sources split between the shards (SHA-256 of "1", "2" mod 2).
    assert [shard_number(s, 2) for s in "12"] == [2, 1]
    # Shard 2/2 runs in a process of its own, SIGKILLed (by a thread of this process)
    # once it has finished an edit; shard 1/2 runs meanwhile in this process (whose
    # imports are done), started once shard 2/2 has locked its folder.
    command = _cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, "--shard", "2/2")
    second = subprocess.Popen(
        [sys.executable, "-m", "contrastkit", *command],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    manifest = Shard(2, 2).folder(out) / "manifest.jsonl"

    def kill_after_the_first_edit() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and second.poll() is None:
            if manifest.exists() and manifest.read_text().count("\n") >= 1:
                break
            time.sleep(0.02)
        second.send_signal(signal.SIGKILL)

    killer = threading.Thread(target=kill_after_the_first_edit, daemon=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and second.poll() is None:
            if manifest.parent.exists():  # shard 2/2 has started its edit stage
                break
            time.sleep(0.02)
        killer.start()
        first = runner.invoke(
            app, _cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, "--shard", "1/2")
        )
        killer.join(timeout=300)
        second.communicate(timeout=300)
    finally:
        if second.poll() is None:
            second.kill()
            second.communicate()
    assert second.returncode == -signal.SIGKILL, "shard 2/2 finished before it was killed"
    killed = [r.edit_id for r in Manifest(Shard(2, 2).folder(out)).read()]  # finished ones
    assert 1 <= len(killed) < 8
    assert first.exit_code == 0, first.output
    shown = " ".join(first.stdout.split())
    assert "shard 1/2: 1 source, 8 edits planned, 8 made" in shown
    assert "contrastkit build merge" in shown and "--stage filter" in shown

    # The killed shard is unfinished: merge says so; --partial merges what is there.
    refused = runner.invoke(app, ["build", "merge", str(out)])
    assert refused.exit_code == 2
    assert "2-of-2: unfinished" in refused.stderr and "--shard 2/2" in refused.stderr
    partial = runner.invoke(app, ["build", "merge", str(out), "--partial", "--json"])
    assert partial.exit_code == 0, partial.output
    report = json.loads(partial.stdout)
    assert report["unfinished"] == [2] and report["edits"] == 8 + len(killed)

    # Rerun the killed shard (a second process's work is kept, none redone), merge again.
    rerun = runner.invoke(
        app, [*_cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, "--shard", "2/2"), "--json"]
    )
    assert rerun.exit_code == 0, rerun.output
    edit = json.loads(rerun.stdout)["edit"]
    assert (edit["skipped_finished"], edit["edited"], edit["planned"]) == (
        len(killed),
        8 - len(killed),
        8,
    )
    assert [r.edit_id for r in Manifest(Shard(2, 2).folder(out)).read()][: len(killed)] == killed
    assert edit["shard"] == "2/2" and edit["image_format"] == "webp"
    merged = runner.invoke(app, ["build", "merge", str(out), "--json"])
    assert merged.exit_code == 0, merged.output
    report = json.loads(merged.stdout)
    assert (report["edits"], report["new_edits"], report["missing"], report["unfinished"]) == (
        16, 8 - len(killed), [], []
    )  # fmt: skip
    for stage in ("filter", "select"):
        ran = runner.invoke(
            app, ["build", "gensynth", "--out", str(out), "--embedder", tiny_clip_spec,
                  "--stage", stage, "--k", "10", "--tau-real", "-1", "--tau-gender", "0.35",
                  "--no-quality"],
        )  # fmt: skip
        assert ran.exit_code == 0, ran.output

    # Same rows, in the same order, with the same decisions as the single worker's.
    ours, theirs = _rows(out), _rows(reference)
    assert [r[:3] for r in ours] == [r[:3] for r in theirs] and len(ours) == 16
    assert [r[5] for r in ours] == [r[5] for r in theirs]
    scores = [value for row in ours for value in row[3:5]]
    assert scores == pytest.approx([value for row in theirs for value in row[3:5]], abs=1e-6)
    assert 0 < sum(bool(r[5]) for r in ours) < 16  # the filter decided both ways
    records = {r.edit_id: r for r in Manifest(out).read()}
    for record in Manifest(reference).read():
        path = records[record.edit_id].path
        assert path.startswith("shards/") and path.endswith(".webp")
        assert (out / path).read_bytes() == (reference / record.path).read_bytes()
    a, b = read_contrast_set(out), read_contrast_set(reference)
    assert [(i.source_id, i.gender, i.edit_id, i.captions) for i in a] == [
        (i.source_id, i.gender, i.edit_id, i.captions) for i in b
    ]
    assert len(a) == 4  # every source has an accepted edit of each gender
    # The filter on the merged build reused the shards' embeddings: every one is in a
    # linked shard checkpoint, none was written by the filter stage itself.
    vectors = read_embeddings(out, tiny_clip_spec)
    assert len(vectors) == 2 + 16
    files = sorted(p.name for p in (out / "embeddings").glob("*/*.npz"))
    assert files and all(name.startswith(("shard-1-of-2-", "shard-2-of-2-")) for name in files)
    assert [s.source_id for s in read_sources(out)] == ["1", "2"]
    assert not list(out.rglob("*.tmp"))
    # A merge with nothing new keeps the manifest, filter decisions included.
    again = merge_shards(MergeConfig(out))
    assert again.new_edits == 0 and _rows(out) == ours


def test_the_same_shard_twice_and_a_merge_while_a_shard_runs_are_refused(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    out = tmp_path / "build"
    release = tmp_path / "release"
    holder = hold_build_lock(Shard(1, 2).folder(out), release)
    try:
        result = CliRunner().invoke(
            app, _cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, "--shard", "1/2")
        )
        assert result.exit_code == 2
        message = " ".join(result.stderr.split())
        assert "another `contrastkit build gensynth` run holds" in message
        assert f"pid {holder.pid}@" in message and "1-of-2" in message
        with pytest.raises(StateError, match="that shard is still running"):
            merge_shards(MergeConfig(out))
    finally:
        release.touch()
        holder.wait(timeout=30)
    assert not (Shard(1, 2).folder(out) / "manifest.jsonl").exists()


def _sources(coco_dir: Path) -> list[SourceImage]:
    return select_sources(read_coco(coco_dir), min_box_side=64).sources


@dataclass(frozen=True)
class _Worker:
    """How the worker of a fake shard ran: its edit settings and editor, the sources it
    kept (``only``; default: those it owns) and how many planned edits it finished
    (``edits``; default: all)."""

    settings: EditSettings = SETTINGS
    editor: str = "tiny"
    only: list[SourceImage] | None = None
    edits: int | None = None


def _fake_shard(
    out: Path, shard: Shard, sources: list[SourceImage], worker: _Worker = _Worker()
) -> Path:
    """A shard folder as a worker leaves it, without running a model: its sources,
    ``shard.json`` and its finished edits, with small WebP images."""
    settings, editor, only, edits = worker.settings, worker.editor, worker.only, worker.edits
    folder = shard.folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    mine = only if only is not None else [s for s in sources if shard.owns(s.source_id)]
    write_shard_info(folder, ShardInfo(
        shard, settings=settings, editor=editor,
        selection={"split": "train2017", "limit": None, "min_box_side": 64},
        positions={s.source_id: sources.index(s) for s in mine},
        storage={"image_format": "webp", "image_quality": 90},
    ))  # fmt: skip
    write_sources(folder, mine)
    manifest = Manifest(folder)
    planned = [(s, spec) for s in mine for spec in plan_edits(s.source_id, settings)]
    for source, spec in planned[:edits]:
        path = f"edits/{source.source_id}/{spec.edit_id}.webp"
        write_image(folder / path, Image.new("RGB", (8, 8), (spec.seed % 256, 0, 0)))
        manifest.append(EditRecord(
            spec.edit_id, source.source_id, "instruct-pix2pix", spec.target.value,
            source.label.value, source.box.as_list(), spec.seed, path, editor,
            spec.instruction, spec.text_guidance_scale, spec.image_guidance_scale, spec.steps,
        ))  # fmt: skip
    return folder


def test_merge_restores_the_single_worker_order_and_links_the_embeddings(
    coco_dir: Path, tmp_path: Path
) -> None:
    sources = _sources(coco_dir)
    out = tmp_path / "build"
    for k in (1, 2, 3):
        folder = _fake_shard(out, Shard(k, 3), sources)
        cache = folder / "embeddings" / "0123456789abcdef"
        cache.mkdir(parents=True)
        keys = [f"real:{s.source_id}" for s in Manifest(folder).read()[:1]]
        np.savez(cache / "shard-00000.npz", encoder=np.array("enc"), keys=np.array(keys),
                 vectors=np.full((len(keys), 4), k, dtype=np.float32))  # fmt: skip
    report = merge_shards(MergeConfig(out))
    assert (report.shards, report.merged, report.missing) == (3, (1, 2, 3), ())
    records = Manifest(out).read()
    single = [spec.edit_id for s in sources for spec in plan_edits(s.source_id, SETTINGS)]
    assert [r.edit_id for r in records] == single
    for record in records:
        k = shard_number(record.source_id, 3)
        assert record.path == f"shards/{k}-of-3/edits/{record.source_id}/{record.edit_id}.webp"
        assert (out / record.path).is_file()
    assert [s.source_id for s in read_sources(out)] == [s.source_id for s in sources]
    linked = sorted(p.name for p in (out / "embeddings" / "0123456789abcdef").iterdir())
    assert linked == [f"shard-{k}-of-3-shard-00000.npz" for k in (1, 2, 3)]
    assert report.embedding_files == len(linked)
    summary = json.loads((out / "build_summary.json").read_text())
    assert summary["merge"]["edits"] == len(single)


def test_merge_refuses_inconsistent_shards(coco_dir: Path, tmp_path: Path) -> None:
    sources = _sources(coco_dir)
    owner = {s.source_id: shard_number(s.source_id, 2) for s in sources}

    def build(name: str) -> Path:
        return tmp_path / name

    with pytest.raises(StateError, match="no shards to merge"):
        merge_shards(MergeConfig(tmp_path))

    # Shards of different N.
    out = build("n")
    _fake_shard(out, Shard(1, 2), sources)
    _fake_shard(out, Shard(2, 3), sources)
    with pytest.raises(StateError, match=r"2-of-3: a shard of 3, but .*1-of-2 is a shard of 2"):
        merge_shards(MergeConfig(out))

    # A missing shard, unless --partial; that says which.
    out = build("missing")
    _fake_shard(out, Shard(1, 2), sources)
    with pytest.raises(StateError, match=r"shards 2-of-2 of 2 are missing"):
        merge_shards(MergeConfig(out))
    report = merge_shards(MergeConfig(out, partial=True))
    assert report.missing == (2,) and report.merged == (1,)
    assert {r.source_id for r in Manifest(out).read()} == {s for s, k in owner.items() if k == 1}

    # Different edit settings, or another editor.
    out = build("settings")
    _fake_shard(out, Shard(1, 2), sources)
    steps_4 = EditSettings(text_guidance_scales=(9.5,), steps=4, resolution=32)
    _fake_shard(out, Shard(2, 2), sources, _Worker(settings=steps_4))
    with pytest.raises(StateError, match=r"2-of-2: made with other settings .*edit steps: 2 vs 4"):
        merge_shards(MergeConfig(out))
    out = build("editor")
    _fake_shard(out, Shard(1, 2), sources)
    _fake_shard(out, Shard(2, 2), sources, _Worker(editor="other"))
    with pytest.raises(StateError, match=r"2-of-2: .*editor: 'tiny' vs 'other'"):
        merge_shards(MergeConfig(out))

    # A source in the wrong shard; an edit in two shards.
    stray = next(s for s in sources if owner[s.source_id] == 1)
    out = build("wrong")
    _fake_shard(out, Shard(1, 2), sources, _Worker(only=[]))
    _fake_shard(out, Shard(2, 2), sources, _Worker(only=[stray]))
    with pytest.raises(
        DataFormatError, match=rf"source '{stray.source_id}' belongs to shard 1-of-2"
    ):
        merge_shards(MergeConfig(out))
    out = build("twice")
    _fake_shard(out, Shard(1, 2), sources)
    _fake_shard(out, Shard(2, 2), sources)
    twin = Manifest(Shard(1, 2).folder(out)).read()[0]
    Manifest(Shard(2, 2).folder(out)).append(twin)
    other = Shard(2, 2).folder(out) / twin.path
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_bytes((Shard(1, 2).folder(out) / twin.path).read_bytes())
    with pytest.raises(DataFormatError, match=rf"edit '{twin.edit_id}' is also in 1-of-2"):
        merge_shards(MergeConfig(out))

    # An unfinished shard (killed mid-run), unless --partial.
    out = build("unfinished")
    _fake_shard(out, Shard(1, 2), sources)
    _fake_shard(out, Shard(2, 2), sources, _Worker(edits=3))
    with pytest.raises(StateError, match=r"2-of-2: unfinished \(3 of \d+ edits"):
        merge_shards(MergeConfig(out))
    assert merge_shards(MergeConfig(out, partial=True)).unfinished == (2,)

    # OUT's manifest holds edits of an unsharded run.
    out = build("foreign")
    _fake_shard(out, Shard(1, 2), sources)
    _fake_shard(out, Shard(2, 2), sources)
    record = Manifest(Shard(1, 2).folder(out)).read()[0]
    Manifest(out).append(record)  # path edits/... : OUT's own
    with pytest.raises(StateError, match=r"holds 1 edits that are not from these shards"):
        merge_shards(MergeConfig(out))
    # ... and a shard worker will not start on it, nor an unsharded run on a sharded build.
    with pytest.raises(StateError, match="edits of an unsharded run"):
        run_edit_stage(EditStageConfig(coco_dir, out, SETTINGS, shard=Shard(1, 2)), object())  # type: ignore[arg-type]
    with pytest.raises(StateError, match="this build is sharded"):
        run_edit_stage(EditStageConfig(coco_dir, out, SETTINGS), object())  # type: ignore[arg-type]


def test_shard_and_storage_options_are_checked(tmp_path: Path) -> None:
    assert Shard.parse("2/4") == Shard(2, 4) == Shard.parse((2, 4))
    assert str(Shard(2, 4)) == "2/4" and Shard(2, 4).folder("o") == Path("o/shards/2-of-4")
    for bad in ("0/2", "3/2", "2", "a/b", "1/0"):
        with pytest.raises(ConfigError, match=r"^shard: "):
            Shard.parse(bad)
    # Stable across processes and Python's hash seed: SHA-256 of the id.
    assert [shard_number(str(i), 4) for i in range(6)] == [
        shard_number(str(i), 4) for i in range(6)
    ]
    assert sorted({shard_number(str(i), 4) for i in range(100)}) == [1, 2, 3, 4]
    with pytest.raises(ConfigError, match=r"^shard: .*after `contrastkit build merge`"):
        GenSynthConfig(out=tmp_path, stage="select", shard=Shard(1, 2), quality=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^image_format: "):
        GenSynthConfig(out=tmp_path, stage="select", image_format="gif", quality=False)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^image_quality: "):
        GenSynthConfig(out=tmp_path, stage="select", image_quality=101, quality=False)  # type: ignore[arg-type]
    result = CliRunner().invoke(
        app, ["build", "gensynth", "--out", str(tmp_path), "--shard", "5/2", "--stage", "edit",
              "--coco", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2 and "shard: must be K/N with 1 <= K <= N" in result.stderr


@pytest.mark.slow
def test_edits_are_webp_smaller_than_png_and_still_export(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    from contrastkit.builders.export import ExportContrastConfig, export_contrast_set, load_export
    from contrastkit.models import load_scorer

    editor = load_editor(tiny_editor_dir, ModelConfig(batch_size=4))
    sizes: dict[str, dict[str, int]] = {}
    for image_format in ("webp", "png", "jpeg"):
        out = tmp_path / image_format
        options = {} if image_format == "webp" else {"image_format": image_format}
        config = EditStageConfig(coco_dir, out, SETTINGS, min_box_side=64, limit=1, **options)  # type: ignore[arg-type]
        run_edit_stage(config, editor)
        records = Manifest(out).read()
        assert len(records) == 8
        suffix = {"webp": ".webp", "png": ".png", "jpeg": ".jpg"}[image_format]
        assert all(r.path.endswith(suffix) for r in records)
        sizes[image_format] = {r.edit_id: (out / r.path).stat().st_size for r in records}
        with Image.open(out / records[0].path) as image:
            assert image.format == image_format.upper() and image.size[0] > 300
    assert all(sizes["webp"][e] < sizes["png"][e] / 2 for e in sizes["png"])
    # A build started as PNG keeps its PNG edits when resumed with the new default.
    again = run_edit_stage(
        EditStageConfig(coco_dir, tmp_path / "png", SETTINGS, min_box_side=64, limit=1), editor
    )
    assert again.edited == 0 and all(
        r.path.endswith(".png") for r in Manifest(tmp_path / "png").read()
    )

    out = tmp_path / "webp"
    run_filter_stage(
        out, load_scorer(tiny_clip_spec), FilterSettings(k=5, tau_real=-1, tau_gender=-1)
    )
    assert run_select_stage(out)["images"] == 2
    export_contrast_set(ExportContrastConfig(out, tmp_path / "export"))
    data = load_export(tmp_path / "export", "contrast", source="parquet")["test"]
    items = read_contrast_set(out)
    assert data.num_rows == 2
    for item, row in zip(items, data, strict=True):
        assert row["edit_id"] == item.edit_id
        with Image.open(out / item.image) as stored:
            assert np.array_equal(
                np.asarray(row["image"].convert("RGB")), np.asarray(stored.convert("RGB"))
            )


@pytest.mark.slow
def test_the_next_commands_after_a_shard_and_a_merge_carry_the_build_settings(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """The 'next' hints of `--shard` and `build merge` name the embedder and thresholds
    the shards ran with, and the filter stage on the merged folder uses them without
    being told (the default model is not on this machine)."""
    runner = CliRunner()
    out = tmp_path / "build"
    table = tmp_path / "instructions.csv"
    table.write_text("gender,instruction\nfeminine,Turn into a woman\nmasculine,Turn into a man\n")
    args = _cli(out, coco_dir, tiny_editor_dir, tiny_clip_spec, "--shard", "1/1",
                "--instructions", str(table))  # fmt: skip
    args[args.index("--limit") + 1] = "1"
    shard = runner.invoke(app, args)
    assert shard.exit_code == 0, shard.output
    rest = f"--embedder {tiny_clip_spec} --k 10 --tau-real -1 --tau-gender 0.35"
    filter_command = f"contrastkit build gensynth --out {out} --stage filter {rest}"
    select_command = f"contrastkit build gensynth --out {out} --stage select --embedder"
    assert filter_command in " ".join(shard.stdout.split())
    assert select_command in " ".join(shard.stdout.split())

    merged = runner.invoke(app, ["build", "merge", str(out)])
    assert merged.exit_code == 0, merged.output
    assert f"next: {filter_command}, then {select_command}" in " ".join(merged.stdout.split())

    refilter = runner.invoke(app, ["build", "gensynth", "--out", str(out), "--stage", "filter"])
    assert refilter.exit_code == 0, refilter.output
    filtered = json.loads((out / "build_summary.json").read_text())["filter"]
    assert (filtered["encoder"], filtered["k"], filtered["tau_gender"]) == (
        tiny_clip_spec, 10, 0.35
    )  # fmt: skip
    assert filtered["edits"] == 2
