"""``urls check --engine ray``: a real local Ray instance against a real loopback server
gives the same report, statuses, results file and store as ``--engine local``; and the
configuration errors of the engine (unknown name, Ray missing)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.curation.integrity import URLCheckJobConfig
from contrastkit.curation.urls.distributed import group_by_host, host_of
from contrastkit.errors import ConfigError
from contrastkit.schema import Context, Gender
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, jpeg_bytes, redirect, static

#: One local Ray instance at a time: these modules run on one xdist worker.
pytestmark = pytest.mark.xdist_group("ray")

M, F = Gender.MASCULINE, Gender.FEMININE
HOSTS = ("a.test", "b.test", "c.test")
RAY_TIMEOUT = 240  # seconds for one whole CLI run, Ray start and stop included


def photo(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (80, 80, 3), dtype=np.uint8)
    return jpeg_bytes(Image.fromarray(pixels))


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    routes = {f"/{n}.jpg": static(photo(n)) for n in range(1, 7)}
    routes["/copy-of-1.jpg"] = static(photo(1))  # same bytes under another URL
    routes["/gone.jpg"] = static(b"", "text/plain", 404)
    routes["/page.jpg"] = static(b"<html>not an image</html>", "text/html")
    routes["/moved.jpg"] = redirect("/5.jpg")
    routes["/loop.jpg"] = redirect("/loop.jpg")
    with LoopbackServer(routes) as running:
        yield running


def dataset(server: LoopbackServer, folder: Path) -> list[Path]:
    """An OO and an OP file over three host names (all served by the loopback server)."""
    oo_routes = ["/1.jpg", "/2.jpg", "/gone.jpg", "/1.jpg", "/page.jpg", "/copy-of-1.jpg"]
    op_routes = ["/3.jpg", "/4.jpg", "/moved.jpg", "/loop.jpg", "/6.jpg", "/2.jpg"]
    genders = (M, M, F, F)
    oo = [make_row("doctor", genders[i % 4], n=i + 1,
                   url=server.url(route, HOSTS[i % len(HOSTS)]))
          for i, route in enumerate(oo_routes)]  # fmt: skip
    op = [make_row("nurse", genders[i % 4], genders[(i + 1) % 4], n=i + 1,
                   url=server.url(route, HOSTS[(i + 1) % len(HOSTS)]))
          for i, route in enumerate(op_routes)]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    write_visogender_tsv(folder / "oo.tsv", oo, Context.OO)
    write_visogender_tsv(folder / "op.tsv", op, Context.OP)
    return [folder / "oo.tsv", folder / "op.tsv"]


def arguments(files: list[Path], out: Path, *engine: str) -> list[str]:
    """``urls check`` of ``files`` against the loopback hosts, into ``out``."""
    network = ["--allow-network", "127.0.0.0/8", "--retries", "0", "--timeout", "5"]
    for host in HOSTS:
        network += ["--resolve", f"{host}:127.0.0.1"]
    return ["urls", "check", *map(str, files), "--json", "--store", str(out / "store"),
            "--results", str(out / "results.jsonl"), *network, *engine]  # fmt: skip


def report_of(stdout: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(stdout[stdout.index("{") :])
    return report


def run_cli(files: list[Path], out: Path, *engine: str) -> dict[str, Any]:
    """``contrastkit urls check`` in a process of its own (a real CLI run, with a timeout)."""
    command = [sys.executable, "-m", "contrastkit", *arguments(files, out, *engine)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=RAY_TIMEOUT)
    assert done.returncode == 1, done.stderr  # failing URLs and duplicates: exit code 1
    return report_of(done.stdout)


def run_here(files: list[Path], out: Path, *engine: str) -> dict[str, Any]:
    """``contrastkit urls check`` in this process (the reference run of the local engine)."""
    done = CliRunner().invoke(app, arguments(files, out, *engine))
    assert done.exit_code == 1, done.output  # failing URLs and duplicates: exit code 1
    return report_of(done.stdout)


def timeless(record: dict[str, Any]) -> dict[str, Any]:
    """A result without the fields that differ between any two runs (clock readings)."""
    return {k: v for k, v in record.items() if k not in ("checked_at", "elapsed")}


def store_contents(root: Path) -> tuple[list[Any], list[Any], list[str]]:
    db = root / "index.sqlite"
    with sqlite3.connect(db) as conn:
        objects = sorted(conn.execute("SELECT * FROM objects").fetchall())
        urls = sorted(conn.execute("SELECT url, sha256 FROM urls").fetchall())
    files = sorted(
        str(path.relative_to(root)) for path in root.rglob("*")
        if path.is_file() and path != db and not path.name.startswith(db.name)
    )  # fmt: skip
    return objects, urls, files


@pytest.mark.slow
def test_engine_ray_gives_the_same_report_results_and_store_as_local(
    server: LoopbackServer, tmp_path: Path
) -> None:
    pytest.importorskip("ray", reason='needs Ray: pip install "contrastkit[ray]"')
    files = dataset(server, tmp_path / "data")
    local = run_here(files, tmp_path / "local", "--engine", "local")
    hits = sum(server.hits.values())
    ray = run_cli(files, tmp_path / "ray", "--engine", "ray")  # starts and stops its own Ray
    assert sum(server.hits.values()) > hits  # the Ray run fetched the URLs itself

    statuses = {r["idx"]: r["status"] for r in local["results"]}
    assert statuses == {r["idx"]: r["status"] for r in ray["results"]}
    assert set(statuses.values()) == {
        "ok", "http_error", "not_an_image", "too_many_redirects"
    }  # fmt: skip
    assert {g["kind"] for g in local["duplicates"]} >= {"exact", "same_bytes"}
    for report in (local, ray):
        report.pop("started_at"), report.pop("finished_at")
        report["results"] = [timeless(r) for r in report["results"]]
    assert ray == local

    lines = {
        name: [timeless(json.loads(line))
               for line in (tmp_path / name / "results.jsonl").read_text().splitlines()]
        for name in ("local", "ray")
    }  # fmt: skip
    assert lines["ray"] == lines["local"] == local["results"]
    assert store_contents(tmp_path / "ray" / "store") == store_contents(
        tmp_path / "local" / "store"
    )
    assert len(store_contents(tmp_path / "ray" / "store")[0]) == 6  # six distinct photos


# -- fast: configuration ----------------------------------------------------------------------


def test_an_unknown_engine_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^engine: must be one of local, ray, not 'spark'"):
        URLCheckJobConfig(files=(Path("a.tsv"),), engine="spark")  # type: ignore[arg-type]


def test_a_ray_address_without_the_ray_engine_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r'^ray_address: only used with engine "ray"'):
        URLCheckJobConfig(files=(Path("a.tsv"),), ray_address="auto")


def test_engine_ray_without_ray_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    with pytest.raises(ConfigError, match=r'^engine: .*pip install "contrastkit\[ray\]"'):
        URLCheckJobConfig(files=(Path("a.tsv"),), engine="ray")
    from contrastkit.curation.urls.distributed import ray_session

    with pytest.raises(ConfigError, match=r'pip install "contrastkit\[ray\]"'), ray_session():
        pass


def test_cli_engine_errors_exit_2_before_any_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tsv = tmp_path / "oo.tsv"
    write_visogender_tsv(tsv, [make_row("doctor", M, n=1, url="http://a.test/1.jpg")], Context.OO)
    runner = CliRunner()
    result = runner.invoke(app, ["urls", "check", str(tsv), "--engine", "spark"])
    assert result.exit_code == 2 and "engine" in result.output
    monkeypatch.setitem(sys.modules, "ray", None)
    result = runner.invoke(app, ["urls", "check", str(tsv), "--engine", "ray"])
    assert result.exit_code == 2 and "contrastkit[ray]" in result.output


def test_hosts_are_grouped_whole_and_deterministically() -> None:
    urls = [f"http://{host}/{n}.jpg" for n in range(5) for host in ("a.x", "B.x", "c.x", "d.x")]
    urls += ["not a url", "http://a.x/0.jpg"]  # a duplicate is kept once
    groups = group_by_host(urls, 3)
    assert groups == group_by_host(urls, 3) and len(groups) == 3
    assert sorted(u for g in groups for u in g) == sorted(set(urls))
    hosts = [{host_of(u) for u in g} for g in groups]
    assert all(not (a & b) for i, a in enumerate(hosts) for b in hosts[i + 1 :])
    assert host_of("HTTP://B.x:80/p") == "b.x" and host_of("not a url") == ""
    assert group_by_host(urls, 100) and len(group_by_host(urls, 100)) == 5
    assert [u for g in groups for u in g if host_of(u) == "a.x"] == [
        f"http://a.x/{n}.jpg" for n in range(5)
    ]
