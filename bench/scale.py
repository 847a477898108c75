"""Benchmark: GenSynth select and export at scale, bounded memory (issue 16, item 5a).

    python bench/scale.py                  # builds of 10k, 50k and 200k edits
    python bench/scale.py --quick          # 2k and 10k edits (< 1 min)
    python bench/scale.py --part select --sizes 1000 5000
    python bench/scale.py --part export --image-size 64
    python bench/scale.py --part project --cost-edits 4   # seconds: costs over 4 edits

**select** (``--part select``): for each size, a synthetic filtered GenSynth build is
written (16 edits per source, 8 per gender, filter scores drawn at random, no images:
select reads none), then in a fresh Python process the select stage
(:func:`run_select_stage`: two streaming passes over the manifest) and the inputs of the
Sec. 4.3 quality checks with ``--quality-sample`` (:func:`quality_sets` with ``sample``,
then text-to-image recall@K over random 64-d embeddings of the sample: the model is
irrelevant to memory) run. The child's wall time and peak RSS are printed per size.

**engines** (``--part engines``): the same tiny GenSynth build (the shipped COCO-format
photos, the tiny InstructPix2Pix and OpenCLIP models of :mod:`contrastkit.tiny`, random
weights: only the plumbing is measured) run by the CLI with ``--engine local`` and with
``--engine ray`` (a local Ray instance started by the run; one torch thread in both, as
each Ray actor has, since CPU rounding depends on the thread count); prints the wall
time of each (Ray's start-up included) and whether the manifests (ids, P_R, P_G,
decisions), the contrast sets and the edit images are identical.

**project** (``--part project``): a projection of the paper's run (11,541 sources x 16
edits x 500 steps = 184,656 edits) on N GPUs from measured costs: the editing rate per
GPU (``--edit-steps-per-s``, default the H100 figures of ``bench/edit.py`` in
bench/RESULTS.md: 272 edit-steps/s at 256 px, 92 at 512 px with 16 edits per batch), and
two costs per edit measured here in this run: the work beside the editor (crop, paste
back, encode as WebP and PNG: on the Ray actors or shard workers) and the driver's serial
part (write the bytes, append the manifest line with an fsync: the driver is the single
writer of the manifest, whichever engine runs).

**writer** (``--part writer``, issue 33 item 5): the export of the same synthetic build
twice per size, each in a fresh process: once as contrastkit writes it (its own writer of
the ``save_to_disk`` Arrow files and the parquet shards, through ``datasets``' internal
``ArrowWriter``), once with that writer replaced by the public API alone
(``Dataset.from_generator`` into a cache folder, ``save_to_disk(max_shard_size=...)``,
``to_parquet`` per shard); same rows, same features. Prints time, peak RSS and growth
of each and the ratios public / hand-written.

**export** (``--part export``): for each size, a synthetic finished contrast build is
written (``--image-size`` px JPEG crops of the shipped photos,
:func:`contrastkit.samples.photo_crops`, quality 90, one distinct file per edit; a
manifest, a contrast set and a GenSwap-style build summary), then
``export_contrast_set`` runs on it in a fresh Python process of its own. For each:
the export's wall time, the time per 1000 edits, the child's peak resident memory
(``VmHWM`` of that process: everything it held since it started, imports and
memory-mapped pages included; not ``ru_maxrss``, which Linux carries over from the
parent's memory at the fork, so that a large parent such as a test worker showed as the
child's peak) and the bytes the export wrote. The last line gives the
ratio of the peak RSS at the largest size to that at the smallest (target: <= 1.5x).
Each build and export is removed before the next size (disk stays under ~1 GB at 200k
edits of 64 px).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CAPTIONS = (
    "A man takes a picture with a camera on a tripod.",
    "The woman is standing next to her bicycle in the street.",
    "A person holding an umbrella in the rain.",
    "He is reading a newspaper on a bench.",
    "She throws a frisbee in a park.",
)


def write_contrast_build(folder: Path, edits: int, *, image_size: int = 64) -> Path:
    """A finished GenSwap-style build of ``edits`` edits (``edits // 2`` sources, one
    masculine and one feminine edit each) in ``folder``: one JPEG per edit, the manifest,
    the contrast set and the build summary, written line by line."""
    from contrastkit.builders.manifest import CONTRAST_SET, MANIFEST, SUMMARY
    from contrastkit.samples import photo_crops

    if edits % 2:
        raise ValueError("edits must be even: one masculine and one feminine per source")
    images = folder / "edits"
    images.mkdir(parents=True)
    paths = photo_crops(images, edits, size=(image_size, image_size))
    genders = ("masculine", "feminine")
    with (
        (folder / MANIFEST).open("w", encoding="utf-8") as manifest,
        (folder / CONTRAST_SET).open("w", encoding="utf-8") as contrast,
    ):
        for n, path in enumerate(paths):
            source, gender = f"src-{n // 2:07d}", genders[n % 2]
            edit_id = f"{source}-{gender[0]}"
            relative = str(path.relative_to(folder))
            box = [4.0, 6.0, float(image_size - 4), float(image_size - 2)]
            label = genders[(n // 2) % 2]
            manifest.write(json.dumps({
                "edit_id": edit_id, "source_id": source, "method": "genswap",
                "target": gender, "source_label": label, "box": box, "seed": n,
                "path": relative, "editor": "synthetic", "donor": f"donor-{n % 97}",
            }) + "\n")  # fmt: skip
            captions = [c.replace("man", "person") for c in CAPTIONS]
            contrast.write(json.dumps({
                "source_id": source, "gender": gender, "edit_id": edit_id,
                "image": relative, "source_image": f"coco/{source}.jpg", "box": box,
                "captions": captions, "original_captions": list(CAPTIONS),
                "method": "genswap", "p_real": None, "p_gender": None,
            }) + "\n")  # fmt: skip
    summary = {
        "genswap": {
            "selection": {"sources": edits // 2},
            "no_face": 0,
            "face_bank": "synthetic",
            "min_age": 20,
            "seed": 0,
            "sources_kept": edits // 2,
            "images": edits,
        }
    }
    (folder / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return folder


_CHILD = """
import json, sys, time
# What the export imports as it runs (datasets loads torch when it is installed): loaded
# before the 'before' reading, so that the growth is what the export itself holds.
import datasets, pyarrow.parquet, torch
from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
def hwm_kib():  # the peak since exec (ru_maxrss also counts the parent's pages at fork)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
before = rss_kib()
start = time.perf_counter()
result = export_contrast_set(ExportContrastConfig(sys.argv[1], sys.argv[2]))
print(json.dumps({
    "seconds": time.perf_counter() - start,
    "rows": result.metadata["total_rows"],
    "before_mib": before / 1024, "hwm_mib": hwm_kib() / 1024,
}))
"""


def write_scored_build(folder: Path, edits: int, *, per_source: int = 16) -> Path:
    """A filtered GenSynth build of ``edits`` edits (``per_source`` per source, half per
    gender) with random filter scores: ``sources.jsonl`` and ``manifest.jsonl`` only,
    written line by line (no images: select and the sampled check inputs read none)."""
    import random

    from contrastkit.builders.manifest import MANIFEST, SOURCES

    if edits % per_source:
        raise ValueError(f"edits must be a multiple of {per_source}")
    rng = random.Random(0)
    folder.mkdir(parents=True)
    genders = ("masculine", "feminine")
    with (
        (folder / SOURCES).open("w", encoding="utf-8") as sources,
        (folder / MANIFEST).open("w", encoding="utf-8") as manifest,
    ):
        for n in range(edits // per_source):
            source = f"{n:012d}"
            sources.write(json.dumps({
                "source_id": source, "path": f"coco/train2017/{source}.jpg",
                "width": 640, "height": 480, "box": [100.0, 50.0, 200.0, 300.0],
                "captions": list(CAPTIONS), "label": genders[n % 2],
            }) + "\n")  # fmt: skip
            for e in range(per_source):
                p_real, p_gender = rng.random(), rng.random()
                manifest.write(json.dumps({
                    "edit_id": f"{source}-{e:02d}", "source_id": source,
                    "method": "instruct-pix2pix", "target": genders[e % 2],
                    "source_label": genders[n % 2], "box": [100.0, 50.0, 200.0, 300.0],
                    "seed": e, "path": f"edits/{source}/{source}-{e:02d}.webp",
                    "editor": "synthetic", "instruction": "make the person a woman",
                    "text_guidance_scale": 9.5, "image_guidance_scale": 1.5, "steps": 100,
                    "p_real": p_real, "p_gender": p_gender,
                    "accepted": p_real > 0.4 and p_gender > 0.4,
                }) + "\n")  # fmt: skip
    return folder


_SELECT_CHILD = """
import json, sys, time
import numpy as np
from contrastkit.builders.gensynth import quality_sets, run_select_stage
from contrastkit.builders.quality import CaptionQueries, recall_at_k
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
def hwm_kib():  # the peak since exec (ru_maxrss also counts the parent's pages at fork)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
before = rss_kib()
start = time.perf_counter()
summary = run_select_stage(sys.argv[1], seed=0)
selected = time.perf_counter() - start
sets = quality_sets(sys.argv[1], sample=int(sys.argv[2]), seed=0)
rng = np.random.default_rng(0)
for labeled in sets.values():  # what the checks embed and retrieve, with random vectors
    owners = [i for i, caps in enumerate(labeled.captions) for _ in caps]
    images = rng.standard_normal((len(labeled.images), 64)).astype(np.float32)
    texts = rng.standard_normal((len(owners), 64)).astype(np.float32)
    recall_at_k(CaptionQueries(texts, owners, images, range(len(images))), images)
print(json.dumps({
    "seconds": time.perf_counter() - start, "select_seconds": selected,
    "rows": summary["images"], "before_mib": before / 1024, "hwm_mib": hwm_kib() / 1024,
}))
"""


def measure_select(build: Path, sample: int) -> dict[str, Any]:
    """The select stage and the sampled quality-check inputs on ``build`` in a fresh
    Python process (see :func:`measure_export` for the figures)."""
    return _measure_child([_SELECT_CHILD, str(build), str(sample)])


def measure_export(build: Path, out: Path) -> dict[str, Any]:
    """Export ``build`` to ``out`` in a fresh Python process (Linux); its time, rows,
    resident memory once the imports are done (``before_mib``), peak resident memory
    (``peak_rss_mib``, the child's ``VmHWM``) and the growth between the two."""
    report = _measure_child([_CHILD, str(build), str(out)])
    report["written_mib"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
    return report


def _measure_child(arguments: list[str]) -> dict[str, Any]:
    """Run ``python -c ARGUMENTS...``: its last stdout line (JSON) with the peak RSS and
    the growth after imports added."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_DATASETS_OFFLINE": "1"}
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", *arguments],
            stdout=stdout,
            stderr=stderr,
            env=env,
        )
        _, status, _ = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"the child failed:\n{stderr.read().decode(errors='replace')}")
        report: dict[str, Any] = json.loads(stdout.read().decode().strip().splitlines()[-1])
    # the child's own high-water mark: its ru_maxrss (os.wait4) would also count the
    # pages of this process the child held between the fork and the exec
    report["peak_rss_mib"] = report.pop("hwm_mib")
    report["growth_mib"] = report["peak_rss_mib"] - report["before_mib"]
    return report


def run_select(sizes: list[int], sample: int, workdir: Path | None) -> None:
    """Print the select table for ``sizes`` (part a, select)."""
    print(f"## select + quality-check inputs (--quality-sample {sample:,})")
    print("| edits | build written (s) | select (s) | select + checks (s) | peak RSS (MiB) "
          "| growth (MiB) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|")
    peaks: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ck-select-", dir=workdir) as tmp:
        for edits in sizes:
            folder = Path(tmp) / f"build-{edits}"
            start = time.perf_counter()
            write_scored_build(folder, edits)
            built = time.perf_counter() - start
            report = measure_select(folder, sample)
            peaks.append(report["peak_rss_mib"])
            print(
                f"| {edits:,} | {built:.1f} | {report['select_seconds']:.1f} | "
                f"{report['seconds']:.1f} | {report['peak_rss_mib']:.0f} | "
                f"{report['growth_mib']:.0f} |",
                flush=True,
            )
            shutil.rmtree(folder)
    print(f"select: peak RSS at {sizes[-1]:,} edits / at {sizes[0]:,}: "
          f"{peaks[-1] / peaks[0]:.2f}x (target <= 1.5x)\n")  # fmt: skip


def run_export(sizes: list[int], image_size: int, workdir: Path | None) -> None:
    """Print the export table for ``sizes`` (part a, export)."""
    print(f"## export ({image_size}px JPEG edits)")
    print(
        "| edits | build written (s) | export (s) | s per 1k edits | peak RSS (MiB) "
        "| growth during export (MiB) | export written (MiB) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    peaks: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ck-scale-", dir=workdir) as tmp:
        for edits in sizes:
            folder = Path(tmp) / f"build-{edits}"
            start = time.perf_counter()
            write_contrast_build(folder, edits, image_size=image_size)
            built = time.perf_counter() - start
            report = measure_export(folder, Path(tmp) / f"out-{edits}")
            peaks.append(report["peak_rss_mib"])
            print(
                f"| {edits:,} | {built:.1f} | {report['seconds']:.1f} | "
                f"{1000 * report['seconds'] / edits:.2f} | {report['peak_rss_mib']:.0f} | "
                f"{report['growth_mib']:.0f} | {report['written_mib']:.0f} |",
                flush=True,
            )
            shutil.rmtree(folder)
            shutil.rmtree(Path(tmp) / f"out-{edits}")
    print(
        f"export: peak RSS at {sizes[-1]:,} edits / at {sizes[0]:,}: "
        f"{peaks[-1] / peaks[0]:.2f}x (target <= 1.5x)\n"
    )


_PUBLIC_CHILD = """
import json, math, sys, tempfile, time
from pathlib import Path
from datasets import Dataset, DatasetDict
from datasets.utils.tqdm import disable_progress_bars
from contrastkit.builders import dataset_files, export
disable_progress_bars()
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
def hwm_kib():  # the peak since exec (ru_maxrss also counts the parent's pages at fork)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
def public_write(out_dir, configs, metadata, *, card=None):
    # what write_export does, through the public API only: rows -> Dataset.from_generator
    # (Arrow files in a cache folder) -> save_to_disk(max_shard_size) -> to_parquet shards
    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory(dir=out_dir.parent) as cache:
        rows = 0
        for name, splits in configs.items():
            loaded = {}
            for split, source in splits.items():
                loaded[split] = Dataset.from_generator(
                    source.rows, features=source.features, cache_dir=cache,
                    fingerprint=f"{name}-{split}",
                )
            DatasetDict(loaded).save_to_disk(
                str(out_dir / "saved" / name), max_shard_size=dataset_files.SAVED_SHARD_BYTES
            )
            for split, dataset in loaded.items():
                shards = max(1, math.ceil(dataset.data.nbytes / dataset_files.MAX_SHARD_BYTES))
                (out_dir / "data" / name).mkdir(parents=True, exist_ok=True)
                for index in range(shards):
                    file = f"{split}-{index:05d}-of-{shards:05d}.parquet"
                    dataset.shard(shards, index, contiguous=True).to_parquet(
                        str(out_dir / "data" / name / file)
                    )
                rows += dataset.num_rows
    return export.ExportResult(out_dir, {}, {"total_rows": rows})
export.write_export = public_write
before = rss_kib()
start = time.perf_counter()
result = export.export_contrast_set(export.ExportContrastConfig(sys.argv[1], sys.argv[2]))
print(json.dumps({
    "seconds": time.perf_counter() - start,
    "rows": result.metadata["total_rows"],
    "before_mib": before / 1024, "hwm_mib": hwm_kib() / 1024,
}))
"""


def measure_public_export(build: Path, out: Path) -> dict[str, Any]:
    """:func:`measure_export` with ``write_export`` replaced by the public ``datasets``
    API (``Dataset.from_generator``, ``save_to_disk(max_shard_size=...)``,
    ``to_parquet`` per shard), the rows and features unchanged."""
    report = _measure_child([_PUBLIC_CHILD, str(build), str(out)])
    report["written_mib"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
    return report


def run_writer(sizes: list[int], image_size: int, workdir: Path | None) -> None:
    """Print the writer comparison for ``sizes`` (issue 33 item 5): the hand-written
    ``save_to_disk`` / parquet writer of ``write_export`` against the public API, each
    export in a fresh process, on the same build."""
    import datasets

    print(f"## export writer: hand-written vs public datasets API ({image_size}px JPEG "
          f"edits, datasets {datasets.__version__})")  # fmt: skip
    print("| edits | writer | export (s) | peak RSS (MiB) | growth during export (MiB) "
          "| export written (MiB) |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|")
    ratios: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ck-writer-", dir=workdir) as tmp:
        for edits in sizes:
            folder = Path(tmp) / f"build-{edits}"
            write_contrast_build(folder, edits, image_size=image_size)
            reports = {}
            for writer, measure in (("hand-written", measure_export),
                                    ("public API", measure_public_export)):  # fmt: skip
                out = Path(tmp) / f"out-{edits}"
                report = reports[writer] = measure(folder, out)
                print(
                    f"| {edits:,} | {writer} | {report['seconds']:.1f} | "
                    f"{report['peak_rss_mib']:.0f} | {report['growth_mib']:.0f} | "
                    f"{report['written_mib']:.0f} |",
                    flush=True,
                )
                shutil.rmtree(out)
            shutil.rmtree(folder)
            mine, public = reports["hand-written"], reports["public API"]
            ratios.append(
                f"{edits:,} edits: peak RSS {public['peak_rss_mib'] / mine['peak_rss_mib']:.2f}x, "
                f"growth {public['growth_mib'] / max(mine['growth_mib'], 1):.2f}x, "
                f"time {public['seconds'] / mine['seconds']:.2f}x"
            )
    print("public API / hand-written (target: peak RSS <= 1.5x to switch): " + "; ".join(ratios))
    print()


def _tiny_build(out: Path, coco: Path, editor: str, clip: str, engine: str) -> float:
    """Run the tiny GenSynth build with ``engine`` in a CLI process; its wall time."""
    command = [
        sys.executable, "-m", "contrastkit", "build", "gensynth", "--coco", str(coco),
        "--out", str(out), "--editor", str(editor), "--embedder", clip,
        "--min-box-side", "64", "--resolution", "32", "--steps", "4", "--scales", "9.5",
        "--k", "10", "--tau-real", "-1", "--tau-gender", "-1", "--no-quality",
        "--batch-size", "4", "--engine", engine, "--json",
    ]  # fmt: skip
    # one torch thread, as each Ray actor has: CPU rounding depends on the thread count
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"--engine {engine} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def _build_outputs(out: Path) -> tuple[list[tuple[Any, ...]], list[str], dict[str, bytes]]:
    """What must match between engines: manifest rows, contrast set, image bytes."""
    from contrastkit.builders.manifest import Manifest, read_contrast_set

    records = Manifest(out).read()
    rows = [(r.edit_id, r.target, r.path, round(r.p_real or 0, 6),
             round(r.p_gender or 0, 6), r.accepted) for r in records]  # fmt: skip
    items = [f"{i.source_id}:{i.gender}:{i.edit_id}" for i in read_contrast_set(out)]
    images = {r.edit_id: (out / r.path).read_bytes() for r in records}
    return rows, items, images


def run_engines(workdir: Path | None) -> None:
    """Print the local-vs-Ray table (part b)."""
    from contrastkit.samples import write_coco
    from contrastkit.tiny.clip import tiny_open_clip
    from contrastkit.tiny.editor import tiny_instruct_pix2pix

    print("## the tiny GenSynth build: --engine local vs --engine ray")
    with tempfile.TemporaryDirectory(prefix="ck-engines-", dir=workdir) as tmp:
        root = Path(tmp)
        coco = write_coco(root / "coco")
        editor = tiny_instruct_pix2pix(root, "editor")
        clip = tiny_open_clip(root / "clip")
        seconds = {e: _tiny_build(root / e, coco, editor, clip, e) for e in ("local", "ray")}
        local, ray = _build_outputs(root / "local"), _build_outputs(root / "ray")
        print("| engine | wall (s) | edits |")
        print("|---|---:|---:|")
        for engine, wall in seconds.items():
            print(f"| {engine} | {wall:.1f} | {len(local[0])} |")
        same = [name for name, a, b in zip(("manifest", "contrast set", "images"),
                                            local, ray, strict=True) if a == b]  # fmt: skip
        print(f"identical: {', '.join(same) or 'nothing'} "
              f"({len(same)} of 3; target: all); ray / local time: "
              f"{seconds['ray'] / seconds['local']:.2f}x\n")  # fmt: skip


PAPER_SOURCES = 11_541
PAPER_EDITS = PAPER_SOURCES * 16
PAPER_STEPS = 500
H100_EDIT_STEPS_PER_S = {256: 272.0, 512: 92.0}  # bench/edit.py on an H100, RESULTS.md


def per_edit_costs(image_format: str, edits: int = 48) -> dict[str, float]:
    """Seconds per finished edit, on a 640x480 photo with a 512 px edit: ``encode``, the
    work done next to the editor (crop, paste back, encode the image: on the Ray actors
    with ``--engine ray``), and ``write``, the driver's serial part (write the bytes
    through a temporary file and a rename, append the manifest line with an fsync)."""
    import io

    from contrastkit.builders.manifest import EditRecord, Manifest
    from contrastkit.curation.editing import crop_for_editing, paste_back
    from contrastkit.io import atomic_write_bytes
    from contrastkit.samples import photo

    original = photo("astronaut").resize((640, 480))
    pil_format = {"webp": "WEBP", "png": "PNG", "jpeg": "JPEG"}[image_format]
    encoded: list[bytes] = []
    start = time.perf_counter()
    for _ in range(edits):
        crop, placement = crop_for_editing(original, (120, 40, 420, 470), 512)
        buffer = io.BytesIO()
        paste_back(original, crop.rotate(180), placement).save(buffer, format=pil_format)
        encoded.append(buffer.getvalue())
    encode = (time.perf_counter() - start) / edits
    with tempfile.TemporaryDirectory(prefix="ck-driver-") as tmp:
        manifest = Manifest(tmp)
        start = time.perf_counter()
        for n, data in enumerate(encoded):
            relative = f"edits/src/{n}.{image_format}"
            atomic_write_bytes(Path(tmp) / relative, data)
            manifest.append(EditRecord(
                edit_id=f"e{n}", source_id="src", method="instruct-pix2pix",
                target="feminine", source_label="masculine", box=[120, 40, 420, 470],
                seed=n, path=relative, editor="bench",
            ))  # fmt: skip
        write = (time.perf_counter() - start) / edits
    return {"encode": encode, "write": write, "bytes": sum(map(len, encoded)) / edits}


def run_projection(gpus: list[int], rates: dict[int, float], edits: int = 48) -> None:
    """Print the projected wall time of the paper's run on each number of GPUs, the costs
    per edit measured over ``edits`` edits."""
    print("## projection of the paper's run (184,656 edits x 500 steps)")
    costs = {fmt: per_edit_costs(fmt, edits) for fmt in ("webp", "png")}
    for fmt, cost in costs.items():
        print(f"- {fmt}: encode {1000 * cost['encode']:.1f} ms/edit (beside the editor), "
              f"driver write {1000 * cost['write']:.1f} ms/edit, "
              f"{cost['bytes'] / 1024:.0f} KiB/edit")  # fmt: skip
    write_hours = PAPER_EDITS * costs["webp"]["write"] / 3600
    print(f"- driver (single writer, WebP): {write_hours:.2f} h for the whole run\n")
    print("| resolution | GPUs | editing (h) | wall (h) | GPU-hours |")
    print("|---:|---:|---:|---:|---:|")
    for resolution, rate in rates.items():
        # each GPU edits and encodes its edits; the driver writes them meanwhile
        per_edit = PAPER_STEPS / rate + costs["webp"]["encode"]
        gpu_hours = PAPER_EDITS * per_edit / 3600
        for count in gpus:
            editing = gpu_hours / count
            print(f"| {resolution} px | {count} | {editing:.1f} | "
                  f"{max(editing, write_hours):.1f} | {gpu_hours:.0f} |")  # fmt: skip
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2k and 10k edits")
    parser.add_argument("--sizes", type=int, nargs="+", help="edit counts (multiples of 16)")
    parts = ("select", "export", "writer", "engines", "project", "all")
    parser.add_argument("--part", choices=parts, nargs="+", default=["all"],
                        help="one or more parts, run in one process")  # fmt: skip
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument(
        "--edit-steps-per-s",
        type=float,
        nargs=2,
        metavar=("AT_256", "AT_512"),
        help="editing rate per GPU at 256 and 512 px (default: the H100 figures)",
    )
    parser.add_argument("--image-size", type=int, default=64, help="JPEG side in px")
    parser.add_argument("--quality-sample", type=int, default=2000, help="images per set")
    parser.add_argument("--workdir", type=Path, help="where builds go (default: a temp dir)")
    parser.add_argument("--cost-edits", type=int, default=48,
                        help="edits the projection's per-edit costs are measured over")  # fmt: skip
    args = parser.parse_args()
    sizes = args.sizes or ([2_000, 10_000] if args.quick else [10_000, 50_000, 200_000])
    print(
        f"# GenSynth at scale: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}\n"
    )
    if {"select", "all"} & set(args.part):
        run_select(sizes, args.quality_sample, args.workdir)
    if {"export", "all"} & set(args.part):
        run_export(sizes, args.image_size, args.workdir)
    if {"writer", "all"} & set(args.part):
        run_writer(sizes, args.image_size, args.workdir)
    if {"engines", "all"} & set(args.part):
        run_engines(args.workdir)
    if {"project", "all"} & set(args.part):
        rates = H100_EDIT_STEPS_PER_S
        if args.edit_steps_per_s:
            rates = dict(zip((256, 512), args.edit_steps_per_s, strict=True))
        run_projection(args.gpus, rates, args.cost_edits)


if __name__ == "__main__":
    main()
