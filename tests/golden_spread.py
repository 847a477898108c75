"""Measure how far the golden numbers move across CPU kernel paths, thread counts and
batch sizes on this machine: the evidence behind the tolerances of
``tests/test_golden_outputs.py``.

Each variant runs every golden command (:func:`golden_runs.golden_outputs`) in a fresh
process with its own environment (``ATEN_CPU_CAPABILITY`` picks torch's kernels,
``OMP_NUM_THREADS`` its threads, ``OPENBLAS_CORETYPE`` and ``NPY_DISABLE_CPU_FEATURES``
NumPy's BLAS kernels and SIMD loops) and is compared number by number with the first
variant (this CPU's default path). Printed per command: the largest absolute and relative
change of a JSON float, the largest change of a number printed in markdown (in units of
its last digit) and any other difference (an integer, a string, a structure: a changed
decision, which no tolerance may absorb).

Usage:  python tests/golden_spread.py [--variants NAME,...] [--json FILE]
        (about 40 s per variant on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from golden_runs import FLOAT32_EPS, NUMBER, last_digit  # noqa: E402

#: NumPy's SIMD dispatch targets above AVX2 (left out: its loops take the AVX2 path).
_NO_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"

#: name -> (environment, batch size); the first is the reference.
VARIANTS: dict[str, tuple[dict[str, str], int | None]] = {
    "reference": ({}, None),
    "default-1": ({"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"}, None),
    "default-2": ({"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "2"}, None),
    "avx2-1": ({"ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "1"}, None),
    "avx2-2": ({"ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "2"}, None),
    "avx512-1": ({"ATEN_CPU_CAPABILITY": "avx512", "OMP_NUM_THREADS": "1"}, None),
    "batch-1": ({}, 1),
    "batch-7": ({}, 7),
    "numpy-generic": (
        {"OPENBLAS_CORETYPE": "Prescott", "NPY_DISABLE_CPU_FEATURES": _NO_AVX512}, None
    ),
    "mkl-avx2-1": ({"MKL_ENABLE_INSTRUCTIONS": "AVX2", "OMP_NUM_THREADS": "1"}, None),
    "mkl-sse42-default": (
        {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ATEN_CPU_CAPABILITY": "default"}, None
    ),
    "everything-default-1-batch-5": (
        {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1",
         "OPENBLAS_CORETYPE": "Prescott", "NPY_DISABLE_CPU_FEATURES": _NO_AVX512,
         "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}, 5,
    ),
}  # fmt: skip


@dataclass
class Spread:
    """How far one command's numbers moved from the reference."""

    floats: int = 0
    moved: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_eps: float = 0.0  # max |change| / (float32 eps * (1 + |value|))
    max_units: float = 0.0  # markdown: change in units of the last printed digit
    others: list[str] = field(default_factory=list)

    def add_float(self, want: float, got: float) -> None:
        self.floats += 1
        if want == got or (math.isnan(want) and math.isnan(got)):
            return
        self.moved += 1
        if not (math.isfinite(want) and math.isfinite(got)):
            self.others.append(f"{want!r} -> {got!r}")
            return
        change = abs(want - got)
        self.max_abs = max(self.max_abs, change)
        self.max_rel = max(self.max_rel, change / max(abs(want), abs(got)))
        self.max_eps = max(self.max_eps, change / (FLOAT32_EPS * (1 + abs(want))))

    def add_text(self, want: str, got: str, where: str) -> None:
        if want == got:
            return
        if NUMBER.split(want) != NUMBER.split(got):
            self.others.append(f"{where}: text differs")
            return
        for a, b in zip(NUMBER.findall(want), NUMBER.findall(got), strict=True):
            self.max_units = max(self.max_units, abs(float(a) - float(b)) / last_digit(a))


def _walk(want: Any, got: Any, where: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            yield from _walk(want.get(key), got.get(key), f"{where}.{key}")
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for n, (a, b) in enumerate(zip(want, got, strict=True)):
            yield from _walk(a, b, f"{where}[{n}]")
    else:
        yield where, want, got


def spread(want: Any, got: Any) -> Spread:
    """Every difference between two outputs of one command."""
    result = Spread()
    for where, a, b in _walk(want, got, ""):
        if isinstance(a, float) and isinstance(b, float):
            result.add_float(a, b)
        elif isinstance(a, str) and isinstance(b, str):
            result.add_text(a, b, where)
        elif a != b or type(a) is not type(b):
            result.others.append(f"{where}: {a!r} -> {b!r}")
    return result


def _child(out: Path, batch_size: int | None) -> None:
    from golden_runs import golden_outputs

    with tempfile.TemporaryDirectory() as tmp:
        outputs = golden_outputs(Path(tmp), batch_size)
    out.write_text(json.dumps(outputs), encoding="utf-8")


def run_variant(name: str, folder: Path) -> dict[str, Any]:
    """The outputs of every golden command under variant ``name``, in a fresh process."""
    env, batch_size = VARIANTS[name]
    out = folder / f"{name}.json"
    command = [sys.executable, __file__, "--child", str(out)]
    if batch_size is not None:
        command += ["--batch-size", str(batch_size)]
    subprocess.run(command, env={**os.environ, **env}, check=True, cwd=HERE.parent)
    return json.loads(out.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.batch_size)
        return
    names = ["reference", *(n for n in args.variants.split(",") if n != "reference")]
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        reference = run_variant("reference", Path(tmp))
        for name in names[1:]:
            outputs = run_variant(name, Path(tmp))
            for command in reference:
                s = spread(reference[command], outputs[command])
                figures.setdefault(command, {})[name] = s.__dict__
                print(f"{name:30s} {command:40s} floats {s.floats:5d} moved {s.moved:5d} "
                      f"abs {s.max_abs:.2e} rel {s.max_rel:.2e} eps {s.max_eps:.2f} "
                      f"md units {s.max_units:g} other {len(s.others)} {s.others[:3]}",
                      flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
