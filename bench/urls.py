"""Benchmark: URL checking throughput and memory against a local server with latency.

    python bench/urls.py                 # full run (N=2000, 100 ms latency, memory 2k->20k)
    python bench/urls.py --quick         # smaller, about a minute

A separate server process (``tests/loopback.py``) serves N distinct small JPEGs from
127.0.0.1..127.0.0.H on one port, adding ``--latency`` seconds to every response, like a
far-away image host. On the same URLs it measures URLs/second of

(a) a sequential checker like the official VisoGender script: ``requests.get`` one URL
    at a time, status code only, no image check;
(b) contrastkit's checker at its default settings (64 in flight, 16 per host), which also
    decodes every image fully and hashes it;
(c) img2dataset (``--img2dataset PATH`` to its executable, or found on PATH), files
    output, no resizing; its wall time includes its start-up.

and reports (b)/(a), (b) against the concurrency/latency limit
``min(concurrency, hosts x per_host) / latency``, and the peak resident memory of a
process that streams N=2,000 and N=20,000 URLs through the checker (``iter_checks``).
Targets (issue 3): (b) >= 50x (a); (b) >= 70% of the limit; memory flat in N.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from contrastkit.curation.urls import CheckConfig, Status, iter_checks  # noqa: E402


@contextmanager
def image_server(latency: float, hosts: int) -> Iterator[int]:
    """Start the loopback image server in its own process; yield its port."""
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "loopback.py"), "--latency", str(latency),
         "--hosts", str(hosts)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening"):
            raise RuntimeError(f"server did not start: {line!r}")
        yield int(line.split()[1])
    finally:
        process.terminate()
        process.wait(10)


def make_urls(port: int, n: int, hosts: int, offset: int = 0) -> Iterator[str]:
    for i in range(offset, offset + n):
        yield f"http://127.0.0.{1 + i % hosts}:{port}/img/{i}.jpg"


def sequential(urls: list[str]) -> float:
    """The official script's way: one requests.get at a time, no session, status only."""
    import requests

    started = time.perf_counter()
    failed = 0
    for url in urls:
        failed += requests.get(url).status_code != 200
    elapsed = time.perf_counter() - started
    assert failed == 0, f"{failed} sequential requests failed"
    return len(urls) / elapsed


def contrastkit_rate(urls: list[str], config: CheckConfig) -> float:
    async def run() -> int:
        ok = 0
        async for result in iter_checks(urls, config):
            ok += result.status is Status.OK
        return ok

    started = time.perf_counter()
    ok = asyncio.run(run())
    elapsed = time.perf_counter() - started
    assert ok == len(urls), f"only {ok} of {len(urls)} URLs were ok"
    return len(urls) / elapsed


def img2dataset_rate(executable: str, urls: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        url_list = Path(folder) / "urls.txt"
        url_list.write_text("\n".join(urls) + "\n")
        started = time.perf_counter()
        subprocess.run(
            [executable, "--url_list", str(url_list), "--output_folder", f"{folder}/out",
             "--processes_count", "2", "--thread_count", "64", "--resize_mode", "no",
             "--output_format", "files", "--number_sample_per_shard", "10000",
             "--disable_all_reencoding", "True", "--timeout", "30"],
            check=True, capture_output=True,
        )  # fmt: skip
        elapsed = time.perf_counter() - started
        fetched = len(list(Path(folder, "out").rglob("*.jpg")))
        assert fetched == len(urls), f"img2dataset fetched {fetched} of {len(urls)}"
    return len(urls) / elapsed


def memory_child(port: int, n: int, hosts: int) -> None:
    """Stream n URLs through the checker (as a generator) and print the peak RSS in MiB."""
    config = CheckConfig(allow_private=True)

    async def run() -> int:
        ok = 0
        async for result in iter_checks(make_urls(port, n, hosts), config):
            ok += result.ok
        return ok

    ok = asyncio.run(run())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{ok} {peak:.1f}")


def peak_memory(port: int, n: int, hosts: int) -> tuple[float, float]:
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(n), "--port", str(port),
         "--hosts", str(hosts)],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert int(out[0]) == n, f"memory run: {out[0]} of {n} ok"
    return float(out[1]), n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="URLs for the throughput runs")
    parser.add_argument("--sequential-n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per response")
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--memory", default="2000,20000", help="N values for peak memory")
    parser.add_argument("--img2dataset", default=shutil.which("img2dataset"))
    parser.add_argument("--quick", action="store_true", help="N=1000, memory 1000,5000")
    parser.add_argument("--append", type=Path, help="append the figures to this markdown file")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.port, args.memory_child, args.hosts)
        return
    if args.quick:
        args.n, args.sequential_n, args.memory = 1000, 100, "1000,5000"

    config = CheckConfig(allow_private=True)
    in_flight = min(config.concurrency, args.hosts * config.per_host)
    limit = in_flight / args.latency
    rows: list[tuple[str, str]] = []
    with image_server(args.latency, args.hosts) as port:
        seq = sequential(list(make_urls(port, args.sequential_n, args.hosts)))
        ours = contrastkit_rate(list(make_urls(port, args.n, args.hosts, offset=args.n)), config)
        rows.append(("(a) sequential requests.get", f"{seq:.1f} URLs/s"))
        rows.append(("(b) contrastkit (decode + hash)", f"{ours:.1f} URLs/s"))
        if args.img2dataset:
            i2d = img2dataset_rate(args.img2dataset, list(make_urls(port, args.n, args.hosts)))
            rows.append(("(c) img2dataset (2 proc x 64 threads)", f"{i2d:.1f} URLs/s"))
        else:
            rows.append(("(c) img2dataset", "not installed: skipped"))
        rows.append(("(b) / (a)", f"{ours / seq:.1f}x (target >= 50x)"))
        rows.append(
            (f"(b) / limit {in_flight}/{args.latency:g}s = {limit:.0f} URLs/s",
             f"{ours / limit:.0%} (target >= 70%)")
        )  # fmt: skip
        sizes = [int(n) for n in args.memory.split(",")]
        peaks = [peak_memory(port, n, args.hosts) for n in sizes]
        for n, (peak, rate) in zip(sizes, peaks, strict=True):
            rows.append((f"peak RSS streaming N={n:,}", f"{peak:.0f} MiB ({rate:.0f} URLs/s)"))
        rows.append(
            (f"peak RSS N={sizes[-1]:,} / N={sizes[0]:,}",
             f"{peaks[-1][0] / peaks[0][0]:.2f} (target: flat, ~1.0)")
        )  # fmt: skip

    header = (
        f"### {datetime.now(timezone.utc):%Y-%m-%d} `python bench/urls.py"
        f"{' --quick' if args.quick else ''}`\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        f"; latency {args.latency * 1000:.0f} ms, {args.hosts} loopback hosts, N={args.n:,}.\n"
    )
    table = "\n".join(["| measure | figure |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows])
    print(header + "\n" + table)
    if args.append:
        with args.append.open("a") as handle:
            handle.write("\n" + header + "\n" + table + "\n")


if __name__ == "__main__":
    main()
