"""Every benchmark under ``bench/`` still runs: each script in its smallest mode (tiny
models, a handful of items: seconds), in a fresh process, to the end.

The benchmarks call the package's lower-level functions directly; a refactor that changes
one of their signatures must break this test, not the next person measuring (a changed
``image_batches`` signature once left ``bench/eval.py`` and ``bench/embed.py`` crashing
with no test noticing). The figures printed here are meaningless: tiny models, a loaded
machine. A new script must add its smallest mode to :data:`SMOKE`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"

#: Each script's smallest mode: one or more argument lists, run in turn.
SMOKE: dict[str, list[list[str]]] = {
    "blocked.py": [["--images", "400", "--queries", "40", "--pool", "40"]],
    "bootstrap.py": [["--resamples", "20"]],
    "composite.py": [["--repeats", "1"]],
    "edit.py": [["--families", "--device", "cpu", "--edits", "1", "--batch", "1", "--steps", "1"]],
    "edit_invariance.py": [["--smoke"]],
    "embed.py": [["--smoke"]],
    "eval.py": [["--smoke"]],
    "knn.py": [["--sizes", "2000", "--max-queries", "100"]],
    "precision.py": [["--smoke"]],
    "scale.py": [["--part", "select", "export", "writer", "project", "--sizes", "32",
                  "--quality-sample", "16", "--image-size", "16", "--cost-edits", "4"]],
    "startup.py": [["--runs", "1"]],
    "storage.py": [["--smoke"]],
    "urls.py": [["--n", "40", "--sequential-n", "10", "--latency", "0.01", "--hosts", "2",
                 "--memory", "40,80", "--img2dataset", ""]],
}  # fmt: skip


def _scripts() -> list[str]:
    return sorted(p.name for p in BENCH.glob("*.py"))


def test_every_bench_script_has_a_smoke_mode() -> None:
    assert _scripts() == sorted(SMOKE), "add the new script's smallest mode to SMOKE"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_bench_script_runs_to_the_end(script: str) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    for args in SMOKE[script]:
        done = subprocess.run(
            [sys.executable, str(BENCH / script), *args],
            cwd=BENCH, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{script} {' '.join(args)}:\n{done.stderr[-3000:]}"
        assert done.stdout.strip(), f"{script} printed no figures"
