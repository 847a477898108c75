"""The maintenance job under a person's feet: edits made while it runs, encoding details
kept byte for byte, temporary files of a killed run, data that looks like markup, a
read-only TSV folder. Real files, a real SQLite database and a loopback server."""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.curation.maintenance import (
    MaintainConfig,
    MaintenanceResult,
    RetirementPolicy,
    maintain,
)
from contrastkit.curation.urls import CheckConfig, URLCheck
from contrastkit.errors import StateError
from contrastkit.io import atomic_path
from contrastkit.schema import OO_COLUMNS, Context, Gender
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, noise_jpeg, static

M, F = Gender.MASCULINE, Gender.FEMININE
DAY0 = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)
CONFIG = CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0, total_timeout=5, read_timeout=2)
runner = CliRunner()


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    routes = {f"/img/{n}.jpg": static(noise_jpeg(n)) for n in range(1, 9)}
    routes["/gone.jpg"] = static(b"", "text/plain", 404)
    routes["/[/b]gone.jpg"] = static(b"", "text/plain", 404)
    with LoopbackServer(routes) as running:  # type: ignore[arg-type]
        yield running


def oo_line(server: LoopbackServer, n: int, gender: Gender, path: str = "", codes: str = "") -> str:
    """One OO row as a line of text (no line ending)."""
    url = server.url(path or f"/img/{n}.jpg")
    fields = [f"OO_{n}", "medical", "hospital_worker", "doctor", "clipboard", url, "Yes",
              gender.value, codes, "tester"]  # fmt: skip
    return "\t".join(fields)


def write_oo(
    path: Path, lines: list[str], *, newline: str = "\r\n", bom: bool = False, final: bool = True
) -> Path:
    text = newline.join(["\t".join(OO_COLUMNS), *lines]) + (newline if final else "")
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
    return path


def base_lines(server: LoopbackServer, failing: int | None = 2) -> list[str]:
    """doctor OO, rows 1-2 masculine, 3-4 feminine; row ``failing`` answers 404."""
    return [
        oo_line(server, n, gender, "/gone.jpg" if n == failing else "")
        for n, gender in ((1, M), (2, M), (3, F), (4, F))
    ]


def run(
    tsv: Path,
    db: Path,
    when: datetime = DAY0,
    on_result: Callable[[URLCheck], Any] | None = None,
    **options: Any,
) -> MaintenanceResult:
    options.setdefault("per_cell", 2)
    config = MaintainConfig(
        files=(tsv,), db=db, network=CONFIG, report=db.parent / "report.md", **options
    )
    return maintain(config, now=when, on_result=on_result)


def codes(tsv: Path) -> dict[str, str]:
    return {row.idx: row.error_codes for row in read_visogender_tsv(tsv).rows}


def once(action: Callable[[], None]) -> Callable[[URLCheck], None]:
    """An ``on_result`` hook that runs ``action`` at the first finished URL: a person
    editing the file while the job runs."""
    done: list[bool] = []

    def hook(result: URLCheck) -> None:
        if not done:
            done.append(True)
            action()

    return hook


def runs(db: Path) -> list[tuple[str | None, str | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT outcome, finished_at FROM runs ORDER BY run_id").fetchall()


# -- edits made while the job runs ------------------------------------------------------------


def test_a_row_appended_during_the_run_is_kept_and_the_codes_are_merged(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = write_oo(tmp_path / "oo.tsv", base_lines(server))
    added = oo_line(server, 9, F, "/img/8.jpg", codes="blurry")

    def append() -> None:
        with tsv.open("ab") as handle:
            handle.write(added.encode() + b"\r\n")

    result = run(tsv, tmp_path / "state.sqlite", on_result=once(append))
    assert codes(tsv) == {
        "OO_1": "", "OO_2": "http_error:404", "OO_3": "", "OO_4": "", "OO_9": "blurry",
    }  # fmt: skip
    assert tsv.read_bytes().endswith(added.encode() + b"\r\n")  # exactly as the person wrote it
    assert result.merged == [str(tsv)] and result.rewritten == [str(tsv)]
    assert result.kept_as_written == ["OO_9"]
    assert result.exit_code == 1 and result.unwritten == []
    assert "kept as written: OO_9" in (tmp_path / "report.md").read_text()


def test_a_row_changed_during_the_run_is_kept_exactly_as_written(
    server: LoopbackServer, tmp_path: Path
) -> None:
    lines = base_lines(server)
    tsv = write_oo(tmp_path / "oo.tsv", lines)
    fixed = oo_line(server, 2, M, "/img/5.jpg", codes="new photo")  # the curator fixes OO_2

    def edit() -> None:
        write_oo(tsv, [lines[0], fixed, *lines[2:]])

    result = run(tsv, tmp_path / "state.sqlite", on_result=once(edit))
    assert tsv.read_text().splitlines()[2] == fixed  # no stale http_error:404 on it
    assert codes(tsv)["OO_2"] == "new photo"
    assert result.kept_as_written == ["OO_2"] and result.merged == [str(tsv)]
    assert result.unwritten == []


def test_a_row_removed_during_the_run_stays_removed(server: LoopbackServer, tmp_path: Path) -> None:
    lines = base_lines(server)
    tsv = write_oo(tmp_path / "oo.tsv", lines)
    result = run(tsv, tmp_path / "state.sqlite",
                 on_result=once(lambda: write_oo(tsv, [lines[0], *lines[2:]])))  # fmt: skip
    assert list(codes(tsv)) == ["OO_1", "OO_3", "OO_4"]
    assert result.unwritten == []


def test_a_duplicated_idx_during_the_run_refuses_the_write_and_keeps_the_db_consistent(
    server: LoopbackServer, tmp_path: Path
) -> None:
    lines = base_lines(server)
    tsv, db = write_oo(tmp_path / "oo.tsv", lines), tmp_path / "state.sqlite"
    clash = oo_line(server, 1, F, "/img/7.jpg")  # a second OO_1

    def duplicate() -> None:
        write_oo(tsv, [*lines, clash])

    result = run(tsv, db, on_result=once(duplicate))
    edited = tsv.read_bytes()
    assert edited.decode().endswith(clash + "\r\n")  # the person's file is left alone
    assert "http_error" not in edited.decode()
    [unwritten] = result.unwritten
    assert unwritten.file == str(tsv) and "'OO_1' is now on lines 2 and 6" in unwritten.reason
    assert result.exit_code == 2 and result.outcome == "incomplete"
    assert runs(db) == [("incomplete", DAY0.isoformat())]
    with sqlite3.connect(db) as conn:  # every check was recorded
        assert conn.execute("SELECT COUNT(*) FROM checks").fetchone() == (4,)
    assert "Files NOT written" in (tmp_path / "report.md").read_text()

    write_oo(tsv, lines)  # the curator fixes the file: the next run writes the codes
    again = run(tsv, db, DAY0 + timedelta(days=1))
    assert again.exit_code == 1 and codes(tsv)["OO_2"] == "http_error:404"


def test_a_file_made_malformed_during_the_run_is_not_replaced(
    server: LoopbackServer, tmp_path: Path
) -> None:
    lines = base_lines(server)
    tsv = write_oo(tmp_path / "oo.tsv", lines)
    broken = lines[3].rsplit("\t", 2)[0]  # a half-typed row

    def half_typed() -> None:
        write_oo(tsv, [*lines[:3], broken])

    result = run(tsv, tmp_path / "state.sqlite", on_result=once(half_typed))
    assert tsv.read_text().splitlines()[-1] == broken
    [unwritten] = result.unwritten
    assert "no longer an official TSV" in unwritten.reason and ":5:" in unwritten.reason
    assert result.exit_code == 2


def test_a_retired_row_is_dropped_only_if_nobody_changed_it(
    server: LoopbackServer, tmp_path: Path
) -> None:
    lines = base_lines(server, failing=None)
    lines[1] = oo_line(server, 2, M, "/gone.jpg")
    lines[3] = oo_line(server, 4, F, "/gone.jpg")
    tsv, db = write_oo(tmp_path / "oo.tsv", lines), tmp_path / "state.sqlite"
    policy = RetirementPolicy(failures=1, days=0)
    run(tsv, db, policy=policy)  # OO_2 and OO_4 retire
    current = tsv.read_text().splitlines()[1:]
    touched = current[3].replace("tester", "curator")  # someone works on OO_4 meanwhile

    def touch() -> None:
        write_oo(tsv, [*current[:3], touched])

    result = run(tsv, db, DAY0 + timedelta(days=1), on_result=once(touch), policy=policy,
                 drop_retired=True)  # fmt: skip
    assert result.dropped == ["OO_2"]
    assert list(codes(tsv)) == ["OO_1", "OO_3", "OO_4"]
    assert tsv.read_text().splitlines()[-1] == touched
    [backup] = result.backups
    assert Path(backup).read_text().splitlines()[1:] == [*current[:3], touched]


def test_the_command_line_prints_the_summary_and_exits_2_when_a_file_is_left_unwritten(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = base_lines(server)
    tsv = write_oo(tmp_path / "oo.tsv", lines)
    from contrastkit.cli import urls as urls_cli

    hooks = urls_cli.ProgressHooks.result
    edit = once(lambda: write_oo(tsv, [*lines, oo_line(server, 1, F, "/img/6.jpg")]))

    def person_edits(self: urls_cli.ProgressHooks, result: URLCheck) -> None:
        edit(result)
        hooks(self, result)

    monkeypatch.setattr(urls_cli.ProgressHooks, "result", person_edits)
    args = ["urls", "maintain", str(tsv), "--db", str(tmp_path / "s.db"), "--allow-private",
            "-n", "2"]  # fmt: skip
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "Run 1: 4 rows" in result.output and "incomplete" in result.output
    assert f"state error: {tsv}: not written back:" in result.output
    assert "'OO_1' is now on lines" in result.output


# -- encoding details -----------------------------------------------------------------------


def test_a_healthy_bom_crlf_file_is_never_rewritten(server: LoopbackServer, tmp_path: Path) -> None:
    tsv = write_oo(tmp_path / "oo.tsv", base_lines(server, failing=None), bom=True, final=False)
    old = 1_000_000_000_000_000_000
    os.utime(tsv, ns=(old, old))
    before = tsv.read_bytes()
    db = tmp_path / "state.sqlite"
    for day in range(2):
        result = run(tsv, db, DAY0 + timedelta(days=day))
        assert result.healthy and result.rewritten == []
    assert tsv.read_bytes() == before and tsv.stat().st_mtime_ns == old


def test_a_rewrite_keeps_bom_line_endings_and_every_untouched_byte(
    server: LoopbackServer, tmp_path: Path
) -> None:
    lines = base_lines(server)
    lines[2] = lines[2] + " "  # trailing space in the annotator: kept as is
    tsv = write_oo(tmp_path / "oo.tsv", lines, bom=True, final=False)
    with tsv.open("ab") as handle:
        handle.write(b"\r\n\r\n" + oo_line(server, 5, F, "/img/5.jpg").encode())  # blank lines
    before = tsv.read_bytes()
    result = run(tsv, tmp_path / "state.sqlite")
    after = tsv.read_bytes()
    assert result.rewritten == [str(tsv)]
    assert after.startswith(b"\xef\xbb\xbf") and not after.endswith(b"\n")
    assert after.count(b"\r\n") == before.count(b"\r\n")
    old_lines, new_lines = before.split(b"\r\n"), after.split(b"\r\n")
    changed = [n for n, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [2]  # only OO_2's line
    assert new_lines[2].decode().split("\t")[8] == "http_error:404"


# -- temporary files of a killed run ---------------------------------------------------------


def leftovers(folder: Path) -> dict[str, Path]:
    """What a run killed mid-write leaves beside oo.tsv, and files that only look alike."""
    names = {
        "tsv": ".oo.tsv.k3j9_x0a.tmp.tsv",
        "backup": ".oo.tsv.bak-20260101T030000Z.ab12cd34.tmp.bak-20260101T030000Z",
        "other_tsv": ".op.tsv.k3j9_x0a.tmp.tsv",  # not a file this run maintains
        "notes": ".oo.tsv.notes",
        "near": ".oo.tsv.TOOLONG99.tmp.tsv",
    }
    paths = {key: folder / name for key, name in names.items()}
    for path in paths.values():
        path.write_text("partial")
    return paths


def test_temporary_files_of_a_killed_run_are_removed_at_the_next_run(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = write_oo(tmp_path / "oo.tsv", base_lines(server, failing=None))
    with atomic_path(tsv) as tmp:  # the name atomic_path really gives matches the pattern
        tmp.write_bytes(tsv.read_bytes())
        made = tmp.name
        paths = leftovers(tmp_path)
        shutil.copy(tmp, tmp_path / "kept-copy")
        result = run(tsv, tmp_path / "state.sqlite")
        assert not tmp.exists()
        tmp.write_bytes((tmp_path / "kept-copy").read_bytes())  # let atomic_path finish
    assert made in {Path(p).name for p in result.removed_temporaries}
    assert not paths["tsv"].exists() and not paths["backup"].exists()
    assert paths["other_tsv"].exists() and paths["notes"].exists() and paths["near"].exists()
    assert sorted(Path(p).name for p in result.removed_temporaries) == sorted(
        [made, paths["tsv"].name, paths["backup"].name]
    )
    assert "Temporary files of an interrupted run" in (tmp_path / "report.md").read_text()


def test_temporary_files_stay_while_another_run_holds_the_lock(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv, db = write_oo(tmp_path / "oo.tsv", base_lines(server)), tmp_path / "state.sqlite"
    paths = leftovers(tmp_path)
    with (tmp_path / "state.sqlite.lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        with pytest.raises(StateError, match="another `contrastkit urls maintain` run"):
            run(tsv, db)
        assert paths["tsv"].exists() and paths["backup"].exists()
    run(tsv, db)
    assert not paths["tsv"].exists()


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _namespaces_work(), reason="needs `unshare -rm` for a read-only mount")
def test_a_read_only_tsv_folder_is_reported_up_front_naming_the_tsv(
    server: LoopbackServer, tmp_path: Path
) -> None:
    seed = write_oo(tmp_path / "oo.tsv", base_lines(server))
    folder = tmp_path / "ro"
    folder.mkdir()
    tsv = folder / "oo.tsv"
    hits = sum(server.hits.values())
    setup = (f"mount -t tmpfs tmpfs {folder} && cp {shlex.quote(str(seed))} {folder}/ && "
             f"mount -o remount,ro {folder}")  # fmt: skip
    command = [sys.executable, "-m", "contrastkit", "urls", "maintain", str(tsv), "--db",
               str(tmp_path / "s.db"), "--allow-private"]  # fmt: skip
    done = subprocess.run(["unshare", "-rm", "sh", "-c", f"{setup} && exec {shlex.join(command)}"],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    first = done.stderr.splitlines()[0]
    assert first == (
        f"environment error: {tsv}: cannot write the maintained TSV (rewritten in place): "
        "read-only file system"
    )
    assert ".tmp" not in done.stderr and "probe" not in done.stderr
    assert sum(server.hits.values()) == hits  # before any request


# -- data that looks like markup ---------------------------------------------------------------


def test_markup_in_ids_urls_labels_and_paths_is_printed_as_text(
    server: LoopbackServer, tmp_path: Path
) -> None:
    folder = tmp_path / "w[b]"
    folder.mkdir()
    rows = [
        make_row("doct[/i]or", gender, n=n, idx=f"OO_[/b]{n}", annotator="[bold",
                 url=server.url("/[/b]gone.jpg" if n == 4 else f"/img/{n}.jpg"))
        for n, gender in ((1, M), (2, M), (3, F), (4, F))
    ]  # fmt: skip
    tsv = folder / "oo[x].tsv"
    write_visogender_tsv(tsv, rows, Context.OO)
    db = folder / "s[i].db"
    args = ["urls", "maintain", str(tsv), "--db", str(db), "--allow-private", "-n", "2",
            "--retire-after", "1", "--retire-days", "0"]  # fmt: skip
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "retired (1): OO_[/b]4" in result.output
    assert "doct[/i]or OO F (1/2)" in result.output
    assert f"rewrote {tsv}" in result.output and "degraded" in result.output
    checked = runner.invoke(app, ["urls", "check", str(tsv), "--allow-private"],
                            env={"COLUMNS": "300"})  # fmt: skip
    assert checked.exit_code == 1 and "OO_[/b]4" in checked.output
    assert "/[/b]gone.jpg" in checked.output or "%5B/b%5Dgone.jpg" in checked.output


def test_control_characters_in_data_never_reach_the_terminal(
    server: LoopbackServer, tmp_path: Path
) -> None:
    rows = [
        make_row("doctor", gender, n=n, idx=f"OO_\x1b[31m{n}\u202e",
                 url=server.url("/gone.jpg" if n == 2 else f"/img/{n}.jpg"))
        for n, gender in ((1, M), (2, F))
    ]  # fmt: skip
    tsv = write_visogender_tsv(tmp_path / "oo.tsv", rows, Context.OO)
    args = ["urls", "check", str(tsv), "--allow-private"]
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "OO_\\x1b[31m2\\u202e" in result.output


# -- an edit that lands in the last instant before the replace (issue 30) ------------------


def _land_before_swap(
    monkeypatch: pytest.MonkeyPatch, edits: list[Callable[[Path], None]]
) -> list[bool]:
    """Fault injection: the write-back's swap runs ``edits[k]`` on the TSV at the k-th
    swap, after every check the job makes before it (the worst moment for an edit).
    Returns, per swap, whether the system swapped atomically."""
    import contrastkit.curation.maintenance.rewrite as rewrite

    real = rewrite._exchange
    swapped: list[bool] = []

    def exchange(first: Path, second: Path) -> bool:
        if len(swapped) < len(edits):
            edits[len(swapped)](second)
        swapped.append(real(first, second))
        return swapped[-1]

    monkeypatch.setattr(rewrite, "_exchange", exchange)
    return swapped


def test_an_edit_landing_just_before_the_replace_is_merged_not_lost(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the fsync, after every comparison, at the instant before the new file goes
    in place, a person appends a row: it is in the file afterwards, exactly as written,
    and the job's codes are merged around it."""
    tsv = write_oo(tmp_path / "oo.tsv", base_lines(server))
    added = oo_line(server, 9, F, "/img/8.jpg", codes="blurry")

    def append(path: Path) -> None:
        with path.open("ab") as handle:
            handle.write(added.encode() + b"\r\n")

    swapped = _land_before_swap(monkeypatch, [append])
    result = run(tsv, tmp_path / "state.sqlite")
    if not all(swapped):
        pytest.skip("this file system cannot swap two paths atomically (RENAME_EXCHANGE)")
    assert codes(tsv) == {
        "OO_1": "", "OO_2": "http_error:404", "OO_3": "", "OO_4": "", "OO_9": "blurry",
    }  # fmt: skip
    assert tsv.read_bytes().endswith(added.encode() + b"\r\n")
    assert result.merged == [str(tsv)] and result.rewritten == [str(tsv)]
    assert result.kept_as_written == ["OO_9"] and result.unwritten == []
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_two_edits_in_one_replace_keep_both_and_say_the_file_is_unwritten(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit before the swap, and another on the job's file before it is swapped back
    out: the first is in place, the second kept beside the TSV, the file reported as
    unwritten (exit 2); nothing a person wrote is lost."""
    tsv = write_oo(tmp_path / "oo.tsv", base_lines(server))
    first = oo_line(server, 9, F, "/img/8.jpg", codes="first")
    second = oo_line(server, 10, M, "/img/7.jpg", codes="second")

    def append(line: str) -> Callable[[Path], None]:
        def edit(path: Path) -> None:
            with path.open("ab") as handle:
                handle.write(line.encode() + b"\r\n")

        return edit

    swapped = _land_before_swap(monkeypatch, [append(first), append(second)])
    result = run(tsv, tmp_path / "state.sqlite")
    if not all(swapped):
        pytest.skip("this file system cannot swap two paths atomically (RENAME_EXCHANGE)")
    assert tsv.read_bytes().endswith(first.encode() + b"\r\n")
    assert codes(tsv)["OO_9"] == "first" and "OO_10" not in codes(tsv)
    [kept] = tmp_path.glob("oo.tsv.unmerged-*")
    assert kept.read_bytes().endswith(second.encode() + b"\r\n")
    [unwritten] = result.unwritten
    assert unwritten.file == str(tsv) and kept.name in unwritten.reason
    assert result.exit_code == 2
