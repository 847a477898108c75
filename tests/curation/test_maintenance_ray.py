"""``urls maintain --engine ray``: the checks run as Ray tasks on a real local Ray instance
against a real loopback server, and the state database (history and row states), the
rewritten TSVs, the image store and the outcome are those of ``--engine local``, over
two nightly runs with a link breaking in between."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.curation import integrity
from contrastkit.curation.maintenance import MaintainConfig, MaintenanceResult, maintain
from contrastkit.curation.urls import CheckConfig
from contrastkit.errors import ConfigError
from contrastkit.schema import Context, Gender
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, Switchable, noise_jpeg, redirect, static

#: One local Ray instance at a time: these modules run on one xdist worker.
pytestmark = pytest.mark.xdist_group("ray")

M, F = Gender.MASCULINE, Gender.FEMININE
DAY0 = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)
HOSTS = ("a.test", "b.test", "c.test")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    routes: dict[str, Any] = {f"/{n}.jpg": Switchable(noise_jpeg(n)) for n in range(1, 6)}
    routes["/gone.jpg"] = static(b"", "text/plain", 404)
    routes["/page.jpg"] = static(b"<html>not an image</html>", "text/html")
    routes["/moved.jpg"] = redirect("/5.jpg")
    with LoopbackServer(routes) as running:
        yield running


def tables(server: LoopbackServer, folder: Path) -> tuple[Path, Path]:
    """An OO and an OP file over three host names, all served by the loopback server."""
    oo_routes = ["/1.jpg", "/2.jpg", "/gone.jpg", "/3.jpg"]
    op_routes = ["/4.jpg", "/page.jpg", "/moved.jpg", "/1.jpg"]
    genders = (M, M, F, F)
    oo = [make_row("doctor", genders[i], n=i + 1, url=server.url(route, HOSTS[i % 3]))
          for i, route in enumerate(oo_routes)]  # fmt: skip
    op = [make_row("nurse", genders[i], genders[(i + 1) % 4], n=i + 1,
                   url=server.url(route, HOSTS[(i + 1) % 3]))
          for i, route in enumerate(op_routes)]  # fmt: skip
    folder.mkdir(parents=True)
    write_visogender_tsv(folder / "oo.tsv", oo, Context.OO)
    write_visogender_tsv(folder / "op.tsv", op, Context.OP)
    return folder / "oo.tsv", folder / "op.tsv"


def nightly(
    folder: Path, when: datetime, engine: str, monkeypatch: pytest.MonkeyPatch
) -> MaintenanceResult:
    """One run of the job; with ``ray``, checking a URL in this process is an error (the
    Ray workers import the real checker)."""
    network = CheckConfig(
        allowed_networks=("127.0.0.0/8",), resolve=tuple((h, "127.0.0.1") for h in HOSTS),
        retries=0, total_timeout=5, read_timeout=2,
    )  # fmt: skip
    config = MaintainConfig(
        files=(folder / "oo.tsv", folder / "op.tsv"), db=folder / "state.sqlite",
        network=network, store=folder / "store", per_cell=1,
        engine=engine,  # type: ignore[arg-type]
    )  # fmt: skip
    with monkeypatch.context() as patch:
        if engine == "ray":
            patch.setattr(integrity, "check_urls", checked_in_the_driver)
        return maintain(config, now=when)


def checked_in_the_driver(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("engine ray checked URLs in the driver")


def database(folder: Path) -> dict[str, list[Any]]:
    """The history, the row states and the runs (without their file paths, which name
    each engine's own folder)."""
    queries = {
        "checks": "SELECT * FROM checks",
        "row_state": "SELECT * FROM row_state",
        "runs": "SELECT run_id, started_at, finished_at, outcome FROM runs",
    }
    with sqlite3.connect(folder / "state.sqlite") as conn:
        return {name: sorted(conn.execute(sql).fetchall()) for name, sql in queries.items()}


def store_objects(folder: Path) -> list[Any]:
    with sqlite3.connect(folder / "store" / "index.sqlite") as conn:
        return sorted(conn.execute("SELECT * FROM objects").fetchall())


def summary(result: MaintenanceResult) -> Any:
    rows = [(r.ref.idx, r.status, r.detail, r.http_status, r.consecutive_failures, r.retired)
            for r in result.rows]  # fmt: skip
    cells = [(b.occupation, b.context, b.cell, b.healthy, b.needed) for b in result.below_balance]
    return rows, result.outcome, result.exit_code, len(result.duplicates), cells


@pytest.mark.slow
def test_engine_ray_records_the_same_history_as_local(
    ray_local: Any, server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, ray = tmp_path / "local", tmp_path / "ray"
    tables(server, local), tables(server, ray)  # same rows, same URLs
    day0 = {}
    for engine in ("local", "ray"):
        hits = sum(server.hits.values())
        day0[engine] = nightly(tmp_path / engine, DAY0, engine, monkeypatch)
        assert sum(server.hits.values()) > hits  # each run fetched the URLs itself
    assert {r.status for r in day0["local"].rows} >= {"ok", "http_error", "not_an_image"}

    server.routes["/2.jpg"].status = 404  # a link breaks overnight
    day1 = {engine: nightly(tmp_path / engine, DAY0 + timedelta(days=1), engine, monkeypatch)
            for engine in ("local", "ray")}  # fmt: skip

    for results in (day0, day1):
        assert summary(results["ray"]) == summary(results["local"])
    broken = next(r for r in day1["ray"].rows if r.url.endswith("/2.jpg"))
    assert (broken.status, broken.consecutive_failures) == ("http_error", 1)
    assert database(ray) == database(local)
    assert len(database(ray)["checks"]) == 16 and len(database(ray)["runs"]) == 2
    for name in ("oo.tsv", "op.tsv"):  # the error codes written back
        assert (ray / name).read_text() == (local / name).read_text()
    assert store_objects(ray) == store_objects(local)


def test_the_engine_fields_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files, db = (tmp_path / "oo.tsv",), tmp_path / "state.sqlite"
    with pytest.raises(ConfigError, match=r"^engine: must be one of local, ray, not 'spark'"):
        MaintainConfig(files=files, db=db, engine="spark")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r'^ray_address: only used with engine "ray"'):
        MaintainConfig(files=files, db=db, ray_address="auto")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    with pytest.raises(ConfigError, match=r'^engine: .*pip install "contrastkit\[ray\]"'):
        MaintainConfig(files=files, db=db, engine="ray")
    write_visogender_tsv(files[0], [make_row("doctor", M, n=1, url="http://a.test/1.jpg")],
                         Context.OO)  # fmt: skip
    result = CliRunner().invoke(
        app, ["urls", "maintain", str(files[0]), "--db", str(db), "--engine", "ray"]
    )
    assert result.exit_code == 2 and "contrastkit[ray]" in result.output
    assert not db.exists()  # refused before anything ran
