"""Benchmark: export at scale, bounded memory (issue 16, item 5a, the export part).

    python bench/scale.py                  # contrast sets of 10k, 50k and 200k edits
    python bench/scale.py --quick          # 2k and 10k edits (< 1 min)
    python bench/scale.py --sizes 1000 5000 --image-size 64

For each size, a synthetic finished contrast build is written (``--image-size`` px JPEG
crops of the shipped photos, :func:`contrastkit.samples.photo_crops`, quality 90, one
distinct file per edit; a manifest, a contrast set and a GenSwap-style build summary),
then ``export_contrast_set`` runs on it in a fresh Python process of its own. For each:
the export's wall time, the time per 1000 edits, the child's peak resident memory
(``ru_maxrss`` of that process from ``os.wait4``: everything it ever held, imports and
memory-mapped pages included) and the bytes the export wrote. The last line gives the
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
import json, resource, sys, time
from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
before = rss_kib()
start = time.perf_counter()
result = export_contrast_set(ExportContrastConfig(sys.argv[1], sys.argv[2]))
print(json.dumps({
    "seconds": time.perf_counter() - start,
    "rows": result.metadata["total_rows"],
    "before_mib": before / 1024,
    "self_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def measure_export(build: Path, out: Path) -> dict[str, Any]:
    """Export ``build`` to ``out`` in a fresh Python process (Linux); its time, rows,
    resident memory once the imports are done (``before_mib``), peak resident memory
    (``peak_rss_mib``, the child's ``ru_maxrss``) and the growth between the two."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_DATASETS_OFFLINE": "1"}
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(build), str(out)],
            stdout=stdout,
            stderr=stderr,
            env=env,
        )
        _, status, usage = os.wait4(child.pid, 0)  # alone gives this child's own rusage
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"the export failed:\n{stderr.read().decode(errors='replace')}")
        report: dict[str, Any] = json.loads(stdout.read().decode().strip().splitlines()[-1])
    report["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux: KiB
    report["growth_mib"] = report["peak_rss_mib"] - report["before_mib"]
    report["written_mib"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2k and 10k edits")
    parser.add_argument("--sizes", type=int, nargs="+", help="edit counts (even numbers)")
    parser.add_argument("--image-size", type=int, default=64, help="JPEG side in px")
    parser.add_argument("--workdir", type=Path, help="where builds go (default: a temp dir)")
    args = parser.parse_args()
    sizes = args.sizes or ([2_000, 10_000] if args.quick else [10_000, 50_000, 200_000])
    print(
        f"# export at scale: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {args.image_size}px JPEG edits"
    )
    print(
        "| edits | build written (s) | export (s) | s per 1k edits | peak RSS (MiB) "
        "| growth during export (MiB) | export written (MiB) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    peaks: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ck-scale-", dir=args.workdir) as tmp:
        for edits in sizes:
            folder = Path(tmp) / f"build-{edits}"
            start = time.perf_counter()
            write_contrast_build(folder, edits, image_size=args.image_size)
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
        f"peak RSS at {sizes[-1]:,} edits / at {sizes[0]:,}: {peaks[-1] / peaks[0]:.2f}x "
        "(target <= 1.5x)"
    )


if __name__ == "__main__":
    main()
