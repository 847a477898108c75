"""Every benchmark under ``bench/`` still runs: each script in its smallest mode (tiny
models, a handful of items: seconds), to the end.

Each runs as its own ``__main__`` in the test's process (``runpy``, its folder first on
``sys.path`` as ``python bench/X.py`` has it): a fresh process would spend seconds
importing torch and the model libraries the test process has imported already. The
scripts that measure another process start it themselves.

The benchmarks call the package's lower-level functions directly; a refactor that changes
one of their signatures must break this test, not the next person measuring (a changed
``image_batches`` signature once left ``bench/eval.py`` and ``bench/embed.py`` crashing
with no test noticing). The figures printed here are meaningless: tiny models, a loaded
machine. A new script must add its smallest mode to :data:`SMOKE`.
"""

from __future__ import annotations

import contextlib
import io
import runpy
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
    "figures.py": [["--smoke"]],
    "knn.py": [["--sizes", "2000", "--max-queries", "100"]],
    "precision.py": [["--smoke"]],
    "scale.py": [["--part", "select", "export", "writer", "project", "--sizes", "32",
                  "--quality-sample", "16", "--image-size", "16", "--cost-edits", "1"]],
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
def test_the_bench_script_runs_to_the_end(script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.chdir(BENCH)
    monkeypatch.syspath_prepend(str(BENCH))
    threads = torch.get_num_threads()
    for args in SMOKE[script]:
        monkeypatch.setattr(sys, "argv", [str(BENCH / script), *args])
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                runpy.run_path(str(BENCH / script), run_name="__main__")
        except SystemExit as stop:
            assert stop.code in (None, 0), f"{script} {' '.join(args)}: exit {stop.code}"
        finally:
            torch.set_num_threads(threads)  # a script may set its own
        assert out.getvalue().strip(), f"{script} printed no figures"
