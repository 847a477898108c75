"""Benchmark: the resolution bootstrap, vectorised against a Python loop over resamples.

    python bench/bootstrap.py                 # 1000 resamples, the 690 official rows
    python bench/bootstrap.py --resamples 200

Scores every official VisoGender row (460 OP + 230 OO, both OP templates) with seeded
random his / her / their scores and times

(a) the figures alone: ``summarize_resolution(records, bootstrap=0)``;
(b) the figures with ``--resamples`` bootstrap intervals (one weight matrix per context,
    every figure of every resample from matrix products);
(c) the baseline: a Python loop that recomputes the figures on each resampled list of
    records (timed on 50 resamples and scaled to ``--resamples``).

Prints the seconds the intervals add in (b), the loop's projected time, and their ratio.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from contrastkit.evaluators.data import load_items, visogender_files
from contrastkit.evaluators.tasks.resolution import (
    case_record,
    resolution_cases,
    summarize_resolution,
)
from contrastkit.schema import Gender


def _records() -> list[dict[str, object]]:
    items = load_items(list(visogender_files()))
    rng = np.random.default_rng(0)
    genders = (Gender.MASCULINE, Gender.FEMININE, Gender.NEUTRAL)
    return [
        case_record(case, dict(zip(genders, rng.random(3), strict=True)), "random")
        for case in resolution_cases(items, neutral=True)
    ]


def _best(run: object, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    records = _records()
    plain = _best(lambda: summarize_resolution(records, bootstrap=0))
    with_ci = _best(lambda: summarize_resolution(records, bootstrap=args.resamples))
    rng = np.random.default_rng(1)
    by_context = {c: [r for r in records if r["context"] == c] for c in ("OO", "OP")}
    loop_n = 50

    def loop() -> None:
        for _ in range(loop_n):
            sample = [
                rows[i]
                for rows in by_context.values()
                for i in rng.integers(0, len(rows), len(rows))
            ]
            summarize_resolution(sample, bootstrap=0)

    loop_s = _best(loop, repeats=1) * args.resamples / loop_n
    added = with_ci - plain
    print(f"{platform.node()} ({platform.machine()}), Python {platform.python_version()}, "
          f"{len(records)} resolution cases, {args.resamples} resamples")  # fmt: skip
    print("| run | seconds |")
    print("|---|---|")
    print(f"| (a) figures alone | {plain:.3f} |")
    print(f"| (b) figures + intervals | {with_ci:.3f} (intervals add {added:.3f}) |")
    print(f"| (c) Python loop over resamples (projected) | {loop_s:.1f} |")
    print(f"| (c) / (b) | {loop_s / with_ci:.0f}x |")


if __name__ == "__main__":
    main()
