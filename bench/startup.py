"""Benchmark: how fast the command line starts.

    python bench/startup.py            # 10 runs of each command
    python bench/startup.py --runs 30

Times ``contrastkit --help`` and ``contrastkit build gensynth --help`` (the longest help)
as a user runs them, a new process each time, against two references measured in the same
run: a bare ``python -c pass`` (the interpreter's own start) and the one-second ceiling
of issue 12. Prints the median and worst of each, and the ratio to the ceiling.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CEILING_S = 1.0


def _times(command: list[str], runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        seconds.append(time.perf_counter() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    exe = shutil.which("contrastkit") or str(Path(sys.executable).with_name("contrastkit"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "contrastkit --help": [exe, "--help"],
        "contrastkit build gensynth --help": [exe, "build", "gensynth", "--help"],
    }
    print(f"{platform.node()} ({platform.processor() or platform.machine()}), "
          f"Python {platform.python_version()}, {args.runs} runs each")  # fmt: skip
    print(f"| command | median s | worst s | median / {CEILING_S:.0f} s ceiling |")
    print("|---|---|---|---|")
    for name, command in commands.items():
        seconds = _times(command, args.runs)
        median = statistics.median(seconds)
        print(f"| `{name}` | {median:.3f} | {max(seconds):.3f} | {median / CEILING_S:.0%} |")


if __name__ == "__main__":
    main()
