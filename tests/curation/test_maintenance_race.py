"""The maintenance job's swap against a person editing the TSV (issue 44 item 10).

When the job swaps its rewritten TSV in and finds that a row was appended a moment before,
it swaps the person's file back and merges again; until then the job's version, without
the row, is in place. An editor that read the file in that instant and saved right after
dropped the row. The job now holds the TSV's edit lock (``NAME.lock``,
``rewrite.edit_lock_path``) while it writes the file back, and an editor that takes the
lock (docs/how-to/url-maintenance.md) can no longer read or save inside the swap.

The targeted pattern, run many times against real runs of the job (a loopback server, a
real SQLite database): at every run's swap a row is appended at the last instant (through
the ``_exchange`` seam, not taking the lock: ``echo >> FILE``), the swap is slowed down
(a slow disk), and an editor process reads and saves the file in a tight loop under the
lock. Every appended row and every save of the editor must be in the file at the end.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import contrastkit.curation.maintenance.rewrite as rewrite
from contrastkit.curation.maintenance import MaintainConfig, MaintenanceResult, maintain
from contrastkit.curation.urls import CheckConfig
from contrastkit.io import exchange_paths
from contrastkit.schema import OO_COLUMNS, Gender
from contrastkit.tsv import read_visogender_tsv
from loopback import LoopbackServer, noise_jpeg, static

M, F = Gender.MASCULINE, Gender.FEMININE
DAY0 = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)
CONFIG = CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0, total_timeout=5, read_timeout=2)
RUNS = 12

#: An editor honouring the lock: read the file, set OO_1's annotator to ``editor-N``,
#: save (a new file renamed over it), N = 0, 1, 2 ... until the stop file appears; then
#: write the last N.
EDITOR = r"""
import fcntl, os, sys, time
tsv, lock, stop, out = sys.argv[1:5]
n, last = 0, -1
while not os.path.exists(stop):
    with open(lock, "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        with open(tsv, "rb") as handle:
            lines = handle.read().split(b"\r\n")
        for i, line in enumerate(lines):
            if line.startswith(b"OO_1\t"):
                fields = line.split(b"\t")
                fields[-1] = b"editor-%d" % n
                lines[i] = b"\t".join(fields)
        with open(tsv + ".editing", "wb") as handle:
            handle.write(b"\r\n".join(lines))
        os.replace(tsv + ".editing", tsv)
        last, n = n, n + 1
    time.sleep(0.002)
with open(out, "w") as handle:
    handle.write(str(last))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    routes = {f"/img/{n}.jpg": static(noise_jpeg(n)) for n in range(1, 9)}
    routes["/gone.jpg"] = static(b"", "text/plain", 404)
    with LoopbackServer(routes) as running:  # type: ignore[arg-type]
        yield running


def line(server: LoopbackServer, idx: str, gender: Gender, path: str, codes: str = "") -> str:
    url = server.url(path)
    fields = [idx, "medical", "hospital_worker", "doctor", "clipboard", url, "Yes",
              gender.value, codes, "tester"]  # fmt: skip
    return "\t".join(fields)


def run(tsv: Path, db: Path, when: datetime) -> MaintenanceResult:
    config = MaintainConfig(
        files=(tsv,), db=db, network=CONFIG, report=db.parent / "report.md", per_cell=2
    )
    return maintain(config, now=when)


def with_lock(tsv: Path, edit: bytes) -> None:
    """A person's edit under the lock: OO_2's codes emptied (so that every run has codes
    to write and swaps the file)."""
    with rewrite.edit_lock_path(tsv).open("a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        data = tsv.read_bytes().replace(edit, b"\t\ttester")
        tsv.write_bytes(data)


def test_no_edit_is_lost_when_rows_are_appended_at_every_swap_under_an_editor(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").touch()
    (tmp_path / "b").touch()
    if not exchange_paths(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this file system cannot swap two paths atomically (RENAME_EXCHANGE)")
    tsv = tmp_path / "oo.tsv"
    rows = [
        line(server, "OO_1", M, "/img/1.jpg"), line(server, "OO_2", M, "/gone.jpg"),
        line(server, "OO_3", F, "/img/3.jpg"), line(server, "OO_4", F, "/img/4.jpg"),
    ]  # fmt: skip
    tsv.write_bytes("\r\n".join(["\t".join(OO_COLUMNS), *rows]).encode() + b"\r\n")

    real = rewrite._exchange
    pending: list[str] = []

    def exchange(first: Path, second: Path) -> bool:
        if pending:  # the run's first swap: a row lands at the last instant
            with second.open("ab") as handle:
                handle.write(pending.pop().encode() + b"\r\n")
        swapped = real(first, second)
        time.sleep(0.005)  # a slow disk: the job's file stays in place a while
        return swapped

    monkeypatch.setattr(rewrite, "_exchange", exchange)
    stop, out = tmp_path / "stop", tmp_path / "last"
    editor = subprocess.Popen([sys.executable, "-c", EDITOR, str(tsv),
                               str(rewrite.edit_lock_path(tsv)), str(stop), str(out)])  # fmt: skip
    appended, unwritten = [], []
    try:
        for k in range(RUNS):
            with_lock(tsv, b"\thttp_error:404\ttester")
            appended.append(f"OO_{100 + k}")
            pending.append(line(server, appended[-1], F, "/img/8.jpg", codes=f"added-{k}"))
            result = run(tsv, tmp_path / "state.sqlite", DAY0 + timedelta(hours=k))
            assert not pending  # the row did land at the swap
            unwritten += [u.reason for u in result.unwritten]
    finally:
        stop.touch()
        editor.wait(timeout=60)
    final = {row.idx: row for row in read_visogender_tsv(tsv).rows}
    lost = [idx for idx in appended if idx not in final]
    assert lost == [], f"{len(lost)} of {RUNS} appended rows lost: {lost}"
    assert unwritten == [], f"{len(unwritten)} of {RUNS} runs left the file: {unwritten[:1]}"
    assert [final[idx].error_codes for idx in appended] == [f"added-{k}" for k in range(RUNS)]
    last = int(out.read_text())
    assert last >= 0 and final["OO_1"].annotator == f"editor-{last}"  # the last save is in
    assert final["OO_2"].error_codes == "http_error:404"  # and the job's codes
    assert not list(tmp_path.glob("oo.tsv.unmerged-*"))


def test_a_lock_held_too_long_leaves_the_file_for_the_next_run(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tsv = tmp_path / "oo.tsv"
    rows = [line(server, "OO_1", M, "/gone.jpg"), line(server, "OO_2", F, "/img/2.jpg")]
    tsv.write_bytes("\r\n".join(["\t".join(OO_COLUMNS), *rows]).encode() + b"\r\n")
    before = tsv.read_bytes()
    monkeypatch.setattr(rewrite, "LOCK_WAIT_S", 0.2)
    with rewrite.edit_lock_path(tsv).open("a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # an editor session in progress
        result = run(tsv, tmp_path / "state.sqlite", DAY0)
    [unwritten] = result.unwritten
    assert "oo.tsv.lock" in unwritten.reason and result.exit_code == 2
    assert tsv.read_bytes() == before
    again = run(tsv, tmp_path / "state.sqlite", DAY0 + timedelta(hours=1))
    assert again.unwritten == [] and again.rewritten == [str(tsv)]
    assert "http_error:404" in tsv.read_text()
