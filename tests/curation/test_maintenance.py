"""The cron maintenance job against a real loopback server and a real SQLite database."""

from __future__ import annotations

import fcntl
import io
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.curation.maintenance import (
    MaintainConfig,
    MaintenanceResult,
    RetirementPolicy,
    maintain,
)
from contrastkit.curation.urls import CheckConfig
from contrastkit.errors import StateError
from contrastkit.schema import Context, Gender
from contrastkit.tsv import TSVStyle, read_visogender_tsv, write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, Switchable, jpeg_bytes, noise_jpeg, redirect, static

M, F = Gender.MASCULINE, Gender.FEMININE
DAY0 = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)
CONFIG = CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0, total_timeout=5, read_timeout=2)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    routes = {f"/img/{n}.jpg": Switchable(noise_jpeg(n)) for n in range(1, 9)}
    with LoopbackServer(routes) as running:  # type: ignore[arg-type]
        yield running


def route(server: LoopbackServer, n: int) -> Switchable:
    handler = server.routes[f"/img/{n}.jpg"]
    assert isinstance(handler, Switchable)
    return handler


def oo_table(server: LoopbackServer, path: Path, codes: dict[int, str] | None = None) -> Path:
    """doctor OO: rows 1-2 masculine, 3-4 feminine; CRLF and no final newline, as official."""
    rows = [
        make_row("doctor", gender, n=n, url=server.url(f"/img/{n}.jpg"),
                 error_codes=(codes or {}).get(n, ""))
        for n, gender in ((1, M), (2, M), (3, F), (4, F))
    ]  # fmt: skip
    write_visogender_tsv(path, rows, Context.OO, style=TSVStyle("\r\n", final_newline=False))
    return path


def run(tsv: Path, db: Path, when: datetime = DAY0, **options: Any) -> MaintenanceResult:
    options.setdefault("per_cell", 2)
    config = MaintainConfig(
        files=(tsv,), db=db, network=CONFIG, report=db.parent / "report.md", **options
    )
    return maintain(config, now=when)


def codes(tsv: Path) -> dict[str, str]:
    return {row.idx: row.error_codes for row in read_visogender_tsv(tsv).rows}


def test_a_healthy_run_records_every_check_and_leaves_the_tsv_alone(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = oo_table(server, tmp_path / "oo.tsv")
    before = tsv.read_bytes()
    result = run(tsv, tmp_path / "state.sqlite")
    assert result.healthy and result.exit_code == 0
    assert tsv.read_bytes() == before and result.rewritten == []
    with sqlite3.connect(tmp_path / "state.sqlite") as conn:
        checks = conn.execute("SELECT row_id, status, sha256, phash FROM checks").fetchall()
        runs = conn.execute("SELECT outcome, finished_at FROM runs").fetchall()
    assert sorted(c[0] for c in checks) == ["OO_1", "OO_2", "OO_3", "OO_4"]
    assert all(status == "ok" and len(sha) == 64 and len(ph) == 16 for _, status, sha, ph in checks)
    assert runs == [("healthy", DAY0.isoformat())]
    assert "Outcome: **healthy**" in (tmp_path / "report.md").read_text()


def test_a_failing_row_gets_its_error_code_and_its_cell_falls_below_balance(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = oo_table(server, tmp_path / "oo.tsv", codes={2: "blurry"})
    route(server, 2).status = 404
    result = run(tsv, tmp_path / "state.sqlite")
    assert result.exit_code == 1
    assert codes(tsv) == {"OO_1": "", "OO_2": "blurry; http_error:404", "OO_3": "", "OO_4": ""}
    table = read_visogender_tsv(tsv)
    assert (table.newline, table.final_newline) == ("\r\n", False)  # line style kept
    [cell] = result.below_balance
    assert (cell.occupation, cell.cell, cell.healthy, cell.needed) == ("doctor", "M", 1, 2)
    report = (tmp_path / "report.md").read_text()
    assert "| OO_2 | http_error | HTTP 404 |" in report and "| doctor | OO | M | 1 | 2 |" in report

    route(server, 2).status = 200  # back again: the code goes, the person's code stays
    assert run(tsv, tmp_path / "state.sqlite", DAY0 + timedelta(days=1)).healthy
    assert codes(tsv)["OO_2"] == "blurry"


def test_rows_retire_after_n_failures_spanning_d_days_and_come_back(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv, db = oo_table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    route(server, 3).status = 500
    policy = RetirementPolicy(failures=3, days=7)
    for day in (0, 1, 2):  # three failures, but only two days apart
        result = run(tsv, db, DAY0 + timedelta(days=day), policy=policy)
        assert not any(r.retired for r in result.rows)
    assert codes(tsv)["OO_3"] == "http_error:500"
    result = run(tsv, db, DAY0 + timedelta(days=8), policy=policy)
    [retired] = [r for r in result.rows if r.retired]
    assert retired.ref.idx == "OO_3" and retired.newly_retired
    assert retired.consecutive_failures == 4 and retired.failing_since == DAY0.isoformat()
    assert codes(tsv)["OO_3"] == "http_error:500; retired"
    assert len(read_visogender_tsv(tsv).rows) == 4  # never silently deleted

    route(server, 3).status = 200
    result = run(tsv, db, DAY0 + timedelta(days=9), policy=policy)
    assert result.healthy and codes(tsv)["OO_3"] == ""


def test_drop_retired_removes_rows_and_keeps_a_backup(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv, db = oo_table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    route(server, 4).status = 404
    policy = RetirementPolicy(failures=2, days=1)
    run(tsv, db, DAY0, policy=policy)
    before = tsv.read_bytes()
    result = run(tsv, db, DAY0 + timedelta(days=1), policy=policy, drop_retired=True)
    assert result.dropped == ["OO_4"]
    assert [r.idx for r in read_visogender_tsv(tsv).rows] == ["OO_1", "OO_2", "OO_3"]
    [backup] = result.backups
    assert Path(backup).name == "oo.tsv.bak-20260102T030000Z"
    assert Path(backup).read_bytes() == before
    with sqlite3.connect(db) as conn:  # the history of the dropped row is kept
        assert conn.execute("SELECT COUNT(*) FROM checks WHERE row_id = 'OO_4'").fetchone() == (2,)


def test_a_link_that_serves_another_picture_is_flagged(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv, db = oo_table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    original = Image.open(io.BytesIO(route(server, 1).body))
    run(tsv, db)
    route(server, 1).body = noise_jpeg(999)  # another picture
    result = run(tsv, db, DAY0 + timedelta(days=1))
    [changed] = [r for r in result.rows if r.content_changed]
    assert changed.ref.idx == "OO_1" and changed.newly_changed and result.exit_code == 1
    assert codes(tsv)["OO_1"] == "content_changed"

    route(server, 1).body = jpeg_bytes(original.resize((80, 80)), quality=70)  # re-encoded
    result = run(tsv, db, DAY0 + timedelta(days=2))
    assert not any(r.content_changed for r in result.rows) and codes(tsv)["OO_1"] == ""

    route(server, 1).body = noise_jpeg(999)
    result = run(tsv, db, DAY0 + timedelta(days=3), accept_changes=True)
    assert result.healthy  # the maintainer accepted the new picture as the reference
    assert run(tsv, db, DAY0 + timedelta(days=4)).healthy


def test_shared_images_are_reported(server: LoopbackServer, tmp_path: Path) -> None:
    tsv, db = oo_table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    route(server, 4).body = route(server, 1).body
    result = run(tsv, db)
    assert [(g.kind, g.items) for g in result.duplicates] == [("same_bytes", ("OO_1", "OO_4"))]
    assert not result.healthy


def test_one_run_at_a_time(server: LoopbackServer, tmp_path: Path) -> None:
    tsv, db = oo_table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    with (tmp_path / "state.sqlite.lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        with pytest.raises(StateError, match="another `contrastkit urls maintain` run"):
            run(tsv, db)
    assert run(tsv, db).healthy


runner = CliRunner()


def test_cli_exit_codes(server: LoopbackServer, tmp_path: Path) -> None:
    tsv, db = oo_table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    args = ["urls", "maintain", str(tsv), "--db", str(db), "--allow-private", "-n", "2"]
    healthy = runner.invoke(app, args)
    assert healthy.exit_code == 0, healthy.output
    assert "healthy" in healthy.output and (tmp_path / "maintenance_report.md").exists()

    route(server, 1).status = 404
    degraded = runner.invoke(app, [*args, "--json"])
    assert degraded.exit_code == 1
    assert '"outcome": "degraded"' in degraded.output

    db.write_bytes(b"this is not a database" * 100)
    broken = runner.invoke(app, args)
    assert broken.exit_code == 2 and "not a usable state database" in broken.output

    bad = tmp_path / "bad.tsv"
    bad.write_text("IDX\tSector\n")
    unreadable = runner.invoke(app, ["urls", "maintain", str(bad), "--db", str(tmp_path / "x.db")])
    assert unreadable.exit_code == 2 and "bad.tsv" in unreadable.output
    assert not (tmp_path / "x.db").exists()


def _consistent(db: Path) -> None:
    """SQLite is intact, every check belongs to a run, and each row's failure streak equals
    its trailing failed checks: checks and row states were committed together."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        if not tables:
            return  # killed before its set-up committed: an empty database, set up next run
        assert {"meta", "runs", "checks", "row_state"} <= tables  # set up in one transaction
        orphans = "SELECT COUNT(*) FROM checks WHERE run_id NOT IN (SELECT run_id FROM runs)"
        assert conn.execute(orphans).fetchone() == (0,)
        states = conn.execute("SELECT row_id, consecutive_failures FROM row_state").fetchall()
        history = "SELECT status FROM checks WHERE row_id = ? ORDER BY run_id"
        for row_id, streak in states:
            statuses = [status for (status,) in conn.execute(history, (row_id,))]
            trailing = 0
            while trailing < len(statuses) and statuses[-1 - trailing] != "ok":
                trailing += 1
            assert streak == trailing, (row_id, statuses)


@pytest.mark.slow
def test_sigkill_at_any_point_leaves_the_tsv_old_or_new_and_the_db_consistent(
    tmp_path: Path,
) -> None:
    routes = {f"/img/{n}.jpg": static(noise_jpeg(n)) for n in range(0, 24, 2)}
    with LoopbackServer(routes, latency=0.05) as slow:  # odd numbers are 404s
        rows = [
            make_row("doctor", M if n < 12 else F, n=n, url=slow.url(f"/img/{n}.jpg"))
            for n in range(24)
        ]
        original = tmp_path / "original.tsv"
        write_visogender_tsv(original, rows, Context.OO)
        old = original.read_bytes()
        tsv, db = tmp_path / "oo.tsv", tmp_path / "state.sqlite"
        options = ["--allow-private", "--concurrency", "2", "--retries", "0"]
        command = [sys.executable, "-m", "contrastkit", "urls", "maintain", str(tsv),
                   "--db", str(db), *options]  # fmt: skip

        # The finished result, from a run nobody interrupts (on a copy, with its own state).
        reference = tmp_path / "ref"
        reference.mkdir()
        shutil.copy(original, reference / "oo.tsv")
        done = subprocess.run(
            [*command[:5], str(reference / "oo.tsv"), "--db", str(reference / "s.sqlite"),
             *command[8:]], capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        new = (reference / "oo.tsv").read_bytes()
        assert new != old and b"http_error:404" in new

        for delay in (0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0, 1.2):
            shutil.copy(original, tsv)
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            time.sleep(delay)
            process.send_signal(signal.SIGKILL)
            process.wait()
            assert tsv.read_bytes() in (old, new), f"partial TSV after a kill at {delay}s"
            if db.exists():
                _consistent(db)

        shutil.copy(original, tsv)
        final = subprocess.run(command, capture_output=True, text=True, check=False)
        assert final.returncode == 1, final.stderr
        assert tsv.read_bytes() == new
        _consistent(db)


# -- a URL the HTTP client cannot send ends as its own row's status (issue 30) -------------


@pytest.mark.parametrize("userinfo", ["ⓛ", "me:p€ss", "%E2%82%AC:x"])
def test_a_url_whose_user_info_cannot_be_sent_is_invalid_and_the_run_goes_on(
    server: LoopbackServer, tmp_path: Path, userinfo: str
) -> None:
    """Given in the file or redirected to by a host on the list, a URL whose user name or
    password is not Latin-1 (what Basic auth can carry) is ``invalid_url`` on its own
    row; every other row is checked, the outcome recorded and the TSV written."""
    bad = f"http://{userinfo}@127.0.0.1:{server.port}/img/1.jpg"
    server.routes["/img/2.jpg"] = redirect(bad)
    tsv = oo_table(server, tmp_path / "oo.tsv")
    text = tsv.read_text(encoding="utf-8")
    tsv.write_text(text.replace(server.url("/img/1.jpg"), bad), encoding="utf-8")
    result = run(tsv, tmp_path / "state.sqlite")
    assert len(result.rows) == 4
    got = codes(tsv)
    assert got["OO_1"] == got["OO_2"] == "invalid_url"
    assert got["OO_3"] == got["OO_4"] == ""
    assert (tmp_path / "report.md").is_file()
