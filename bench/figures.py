"""Benchmark: writing one model's VisoGender plots as PNG and SVG, laid out once for both
formats, against laid out once per format.

    python bench/figures.py              # best of 5 rounds
    python bench/figures.py --smoke      # one round

Draws the plots of a real VisoGender result (``tests/golden/evaluate_visogender.json``:
the tiny model's ``benchmark.json``, every part present) with the product's own figure
code, then times, on fresh figures each round:

(a) the baseline: each figure saved as PNG and as SVG with its layout engine live, so
    that each save lays the figure out again (what ``save_formats`` did before
    ``lay_out_once``);
(b) ``save_formats``: the figure laid out once, then both formats saved.

Drawing the figures is outside both timings. Prints the seconds of each per model folder
(CPU time of this process) and the ratio (b)/(a).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from contrastkit.evaluators.report.figures import FORMATS, save_figure, save_formats
from contrastkit.evaluators.tasks.visogender.plots import figures

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "evaluate_visogender.json"


def _results() -> dict[str, Any]:
    """The results object of the golden VisoGender run."""
    files = json.loads(GOLDEN.read_text(encoding="utf-8"))
    [benchmark] = [value for name, value in files.items() if name.endswith("benchmark.json")]
    [results] = benchmark.values()
    return dict(results)


def _per_format(figure: Any, stem: Path) -> None:
    for fmt in FORMATS:  # the layout engine stays live: each save lays the figure out
        save_figure(figure, stem.with_name(f"{stem.name}.{fmt}"))


def _once(figure: Any, stem: Path) -> None:
    save_formats(figure, stem)


def _seconds(save: Callable[[Any, Path], None], results: dict[str, Any], out: Path) -> float:
    """CPU seconds to save every figure of ``results`` with ``save``."""
    drawn = figures(results)
    start = time.process_time()
    for stem, figure in drawn.items():
        save(figure, out / stem)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one round")
    args = parser.parse_args()
    rounds = 1 if args.smoke else args.rounds
    results = _results()
    count = len(figures(results))
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        base = min(_seconds(_per_format, results, out) for _ in range(rounds))
        once = min(_seconds(_once, results, out) for _ in range(rounds))
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"{count} figures, PNG and SVG each, best of {rounds} round(s), CPU seconds:")
    print(f"  (a) laid out once per format: {base:.3f} s")
    print(f"  (b) laid out once (save_formats): {once:.3f} s")
    print(f"  ratio (b)/(a): {once / base:.2f}")


if __name__ == "__main__":
    main()
