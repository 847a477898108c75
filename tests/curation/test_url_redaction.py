"""Credentials never written (issue 44.7; SECURITY.md, "URLs and redirects"): user info
and credential-like query values of a dataset's URLs are redacted in the ``urls check
--results`` JSON lines, in ``urls check --json`` and in the ``urls maintain`` state
database, which also scrubs what an older contrastkit stored there; the checks
themselves still use the full URL (the server sees the credentials)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.curation.urls import Status, URLCheck, redact_url
from contrastkit.schema import Context, Gender
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, noise_jpeg, static

runner = CliRunner()

SECRETS = ("hunter2pass", "tok3n-value", "s1gnature-value", "AKIAEXAMPLEKEY")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    routes = {f"/img/{n}.jpg": static(noise_jpeg(n)) for n in range(1, 5)}
    with LoopbackServer(routes) as running:
        yield running


def _secret_url(server: LoopbackServer, n: int) -> str:
    url = server.url(f"/img/{n}.jpg")
    with_user = url.replace("http://", "http://alice:hunter2pass@", 1)
    return (
        f"{with_user}?size=large&token=tok3n-value&sig=s1gnature-value"
        "&X-Amz-Credential=AKIAEXAMPLEKEY"
    )


def _table(server: LoopbackServer, path: Path) -> Path:
    rows = [
        make_row("doctor", gender, n=n, url=_secret_url(server, n))
        for n, gender in ((1, Gender.MASCULINE), (2, Gender.MASCULINE),
                          (3, Gender.FEMININE), (4, Gender.FEMININE))
    ]  # fmt: skip
    write_visogender_tsv(path, rows, Context.OO)
    return path


def _holds_no_secret(data: bytes | str, where: str) -> None:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    for secret in SECRETS:
        assert secret not in text, f"{where} holds {secret!r}"


def test_urls_check_results_and_json_hold_no_credentials(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = _table(server, tmp_path / "oo.tsv")
    results = tmp_path / "results.jsonl"
    out = runner.invoke(app, ["urls", "check", str(tsv), "--allow-private", "--json",
                              "--results", str(results)])  # fmt: skip
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["status_counts"] == {"ok": 4}  # checked with the full URLs
    _holds_no_secret(out.output, "urls check --json")
    _holds_no_secret(results.read_bytes(), "the --results file")
    first = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    # the row is still recognisable: host, path and the harmless query values stay
    assert first["url"] == redact_url(_secret_url(server, 1))
    assert first["url"].startswith(server.url("/img/1.jpg")) and "size=large" in first["url"]
    assert "token=%2A%2A%2A" in first["url"] and "alice" not in first["url"]


def _database_bytes(db: Path) -> bytes:
    """The state database with its write-ahead log and shared memory: every byte on disk."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file())


def test_the_maintenance_state_database_holds_no_credentials(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv, db = _table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    args = ["urls", "maintain", str(tsv), "--db", str(db), "--allow-private", "-n", "2"]
    for _ in range(2):  # the second run compares against the first one's state
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, result.output
        _holds_no_secret(result.output, "urls maintain --json")
    _holds_no_secret(_database_bytes(db), "state.sqlite")
    _holds_no_secret((tmp_path / "maintenance_report.md").read_bytes(), "the report")
    with sqlite3.connect(db) as conn:
        urls = {url for (url,) in conn.execute("SELECT url FROM row_state")}
        # the row kept its history across runs: the same (redacted) URL both times
        failures = {n for (n,) in conn.execute("SELECT consecutive_failures FROM row_state")}
    assert urls == {redact_url(_secret_url(server, n)) for n in range(1, 5)}
    assert failures == {0}


def test_an_older_state_database_is_scrubbed_when_opened(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Credentials an older contrastkit stored are redacted at the next run, and the old
    bytes are overwritten on disk."""
    tsv, db = _table(server, tmp_path / "oo.tsv"), tmp_path / "state.sqlite"
    args = ["urls", "maintain", str(tsv), "--db", str(db), "--allow-private", "-n", "2"]
    assert runner.invoke(app, args).exit_code == 0
    with sqlite3.connect(db) as conn:  # what an older version wrote: the full URLs
        for n in range(1, 5):
            for table in ("row_state", "checks"):
                conn.execute(
                    f"UPDATE {table} SET url = ? WHERE url = ?",
                    (_secret_url(server, n), redact_url(_secret_url(server, n))),
                )
    assert b"hunter2pass" in _database_bytes(db)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _holds_no_secret(_database_bytes(db), "state.sqlite")


def test_a_url_without_credentials_is_written_exactly_as_given() -> None:
    for url in ("http://example.org/a.jpg?", "http://example.org/a.jpg#", "https://x.org/@me"):
        assert redact_url(url) == url
        assert URLCheck(url, Status.OK).to_dict()["url"] == url


def test_evaluate_lists_skipped_rows_without_credentials(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    """A row left out (its URL not in the store) is listed in the results by its URL,
    redacted: evaluate's results files are results files too."""
    from eval_data import write_small_dataset

    secret = "https://alice:hunter2pass@img.example.org/a.jpg?token=tok3n-value"
    tsvs = write_small_dataset(tmp_path / "data", lambda n, p: secret if n == 0 else p.name)
    tsv = next(p for p in tsvs.values() if secret in p.read_text(encoding="utf-8"))
    out = tmp_path / "out"
    result = runner.invoke(app, ["evaluate", "visogender", "--data", str(tsv), "--model",
                                 tiny_clip_spec, "--out", str(out), "--skip-missing",
                                 "--bootstrap", "0", "--device", "cpu"])  # fmt: skip
    assert result.exit_code == 0, result.output
    _holds_no_secret(result.output, "evaluate's console")
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any("img.example.org/a.jpg" in p.read_text("utf-8", "replace") for p in written)
    for path in written:
        _holds_no_secret(path.read_bytes(), str(path))
