"""A `build merge` killed at any point (issue 44, item 4): the merge is SIGKILLed in a
child process at each of its writes, then rerun; the folder ends as an uninterrupted
merge leaves it (same manifest, same new edits, filter and select marked outdated, the
summary describing the merged set, no temporary file), and until the rerun the filter and
select stages and the export refuse it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.coco import SourceImage, read_coco, select_sources
from contrastkit.builders.gensynth import (
    FilterSettings,
    MergeConfig,
    Shard,
    merge_shards,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.builders.gensynth.merging import JOURNAL
from contrastkit.builders.gensynth.shards import ShardInfo, write_shard_info
from contrastkit.builders.manifest import (
    EditRecord,
    Manifest,
    write_image,
    write_sources,
)
from contrastkit.cli import app
from contrastkit.curation.editing import EditSettings, plan_edits
from contrastkit.errors import StateError
from contrastkit.models import load_scorer

ROOT = Path(__file__).parents[2]
SETTINGS = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)
FILTER = FilterSettings(k=5, tau_real=-1, tau_gender=-1)

#: Run in a child: merge ``sys.argv[1]``, killing itself with SIGKILL at the point
#: ``sys.argv[2]`` names (just after, or just before, one of the merge's writes).
KILLER = r"""
import os, pathlib, signal, sys
import contrastkit.builders.gensynth.shards as shards

out, point = pathlib.Path(sys.argv[1]), sys.argv[2]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if point == "after-manifest":
    rewrite = shards.Manifest.rewrite
    def patched(self, records):
        rewrite(self, records)
        die()
    shards.Manifest.rewrite = patched
elif point == "after-sources":
    write = shards.atomic_write_text
    def patched(path, text):
        write(path, text)
        if pathlib.Path(path).name == "sources.jsonl":
            die()
    shards.atomic_write_text = patched
elif point in ("before-summary", "after-edit-entry"):
    update, calls = shards.update_summary, []
    def patched(*args, **kwargs):
        if point == "after-edit-entry" and calls:
            die()
        if point == "before-summary":
            die()
        calls.append(1)
        return update(*args, **kwargs)
    shards.update_summary = patched
elif point == "before-journal-marker":  # the old manifest kept, the marker not yet
    import contrastkit.builders.gensynth.merging as merging
    write = merging.atomic_write_text
    def patched(path, text):
        if pathlib.Path(path).name == "journal.json":
            die()
        write(path, text)
    merging.atomic_write_text = patched
elif point == "before-journal-end":
    shards.end_merge = lambda out: die()
elif point.startswith("rename-"):  # mid-write: the temporary file is there, not renamed
    name = point[len("rename-"):]
    replace = pathlib.Path.replace
    def patched(self, target):
        if pathlib.Path(target).name == name:
            die()
        return replace(self, target)
    pathlib.Path.replace = patched
shards.merge_shards(shards.MergeConfig(out, partial=True))
"""

POINTS = (
    "before-journal-marker",
    "after-manifest",
    "after-sources",
    "before-summary",
    "after-edit-entry",
    "before-journal-end",
    "rename-manifest.jsonl",
    "rename-sources.jsonl",
    "rename-build_summary.json",
)


def _shard(out: Path, shard: Shard, sources: list[SourceImage], edits: slice) -> None:
    """A shard folder as its worker leaves it, without a model: ``shard.json``, its
    sources and the planned edits ``edits`` (images of the source's size, so the filter
    stage can cut the person box)."""
    folder = shard.folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    mine = [s for s in sources if shard.owns(s.source_id)]
    write_shard_info(folder, ShardInfo(
        shard, settings=SETTINGS, editor="tiny",
        selection={"split": "train2017", "limit": None, "min_box_side": 64},
        positions={s.source_id: sources.index(s) for s in mine},
        storage={"image_format": "webp", "image_quality": 90},
    ))  # fmt: skip
    write_sources(folder, mine)
    planned = [(s, spec) for s in mine for spec in plan_edits(s.source_id, SETTINGS)]
    records = []
    for source, spec in planned[edits]:
        path = f"edits/{source.source_id}/{spec.edit_id}.webp"
        colour = (spec.seed % 256, 40 * (spec.target.value == "feminine"), 0)
        write_image(folder / path, Image.new("RGB", (source.width, source.height), colour))
        records.append(EditRecord(
            spec.edit_id, source.source_id, "instruct-pix2pix", spec.target.value,
            source.label.value, source.box.as_list(), spec.seed, path, "tiny",
            spec.instruction, spec.text_guidance_scale, spec.image_guidance_scale, spec.steps,
        ))  # fmt: skip
    Manifest(folder).append(*records)


def _summary(out: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((out / "build_summary.json").read_text())
    summary["merge"].pop("out")
    return summary


def _temporary(out: Path) -> list[str]:
    return sorted(
        str(p.relative_to(out))
        for p in out.rglob(".*")
        if ".tmp" in p.name and p.relative_to(out).parts[0] != "shards"
    )


@pytest.fixture(scope="module")
def filtered(coco_dir: Path, tiny_clip_spec: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sharded build merged while shard 2 of 2 had 3 edits, filtered and selected; shard
    2 then finished its edits: the next merge adds them."""
    sources = select_sources(read_coco(coco_dir), min_box_side=64).sources
    out = tmp_path_factory.mktemp("merge") / "build"
    _shard(out, Shard(1, 2), sources, slice(None))
    _shard(out, Shard(2, 2), sources, slice(0, 3))
    merge_shards(MergeConfig(out, partial=True))
    run_filter_stage(out, load_scorer(tiny_clip_spec), FILTER)
    run_select_stage(out)
    _shard(out, Shard(2, 2), sources, slice(3, None))
    return out


def _refused_until_merged(out: Path, tmp_path: Path) -> None:
    """Until the merge is finished, nothing reads the half-merged folder."""
    for stage in (lambda: run_select_stage(out), lambda: run_filter_stage(out, object(), FILTER)):  # type: ignore[arg-type]
        with pytest.raises(StateError, match=rf"cut short; run `contrastkit build merge {out}`"):
            stage()
    exported = CliRunner().invoke(
        app, ["export", "contrast", str(out), "--out", str(tmp_path / "x")]
    )
    assert exported.exit_code == 2 and "build merge" in exported.stderr


@pytest.mark.parametrize("point", POINTS)
def test_a_merge_killed_at_any_write_is_finished_by_its_rerun(
    filtered: Path, tmp_path: Path, point: str
) -> None:
    reference, out = tmp_path / "reference", tmp_path / "killed"
    shutil.copytree(filtered, reference, symlinks=True)
    shutil.copytree(filtered, out, symlinks=True)
    clean = merge_shards(MergeConfig(reference))
    total = len(Manifest(filtered).read()) + clean.new_edits  # every source's 8 edits
    assert clean.new_edits > 0 and clean.unfiltered == clean.edits == total == 8 * 3

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(out), point], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert (out / JOURNAL).is_dir()

    if point == "before-journal-marker":  # nothing changed yet: nothing to refuse
        assert Manifest(out).path.read_bytes() == Manifest(filtered).path.read_bytes()
        run_select_stage(out)  # which removes what the killed run left
        assert _temporary(out) == [] and not (out / JOURNAL).exists()
    else:
        _refused_until_merged(out, tmp_path)

    rerun = merge_shards(MergeConfig(out))
    assert (rerun.new_edits, rerun.unfiltered, rerun.edits) == (clean.new_edits, total, total)
    assert Manifest(out).path.read_bytes() == Manifest(reference).path.read_bytes()
    assert (out / "sources.jsonl").read_bytes() == (reference / "sources.jsonl").read_bytes()
    summary = _summary(out)
    assert summary == _summary(reference)
    assert summary["merge"]["edits"] == total and summary["merge"]["unfiltered"] == total
    assert summary["edit"]["planned"] == total and summary["edit"]["edited"] == total
    for stage in ("filter", "select"):
        assert f"added {clean.new_edits} edits" in summary[stage]["stale"]
    assert _temporary(out) == [] and not (out / JOURNAL).exists()
    # the select stage now asks for the filter decisions, as after any merge that adds edits
    with pytest.raises(StateError, match=f"{total} edits have no filter decision"):
        run_select_stage(out)
