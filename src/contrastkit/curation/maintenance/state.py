"""The maintenance job's SQLite state database: runs, every check, each row's state.

One run at a time holds an exclusive lock beside the database (``DB.lock``). Each URL's
checks are committed together with the row states they change (:meth:`StateDatabase.record`),
so the database is consistent whenever the process stops, even under SIGKILL. SQLite's
errors are raised as contrastkit errors (:func:`~contrastkit.store.sqlite_errors`): a file
that is not a usable database is a :class:`~contrastkit.errors.StateError`, a locked
database or a failing disk a :class:`~contrastkit.errors.ResourceError`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from contrastkit.curation.images import phash_distance
from contrastkit.curation.maintenance.config import MaintainConfig
from contrastkit.curation.urls import Status, URLCheck, redact_url
from contrastkit.errors import StateError
from contrastkit.io import exclusive_lock
from contrastkit.store import sqlite_errors

__all__ = ["SCHEMA_VERSION", "RowState", "StateDatabase"]

SCHEMA_VERSION = 1
"""Version of the tables below; a database of a newer version is refused."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    files TEXT NOT NULL,
    outcome TEXT            -- healthy / degraded; NULL while running or if interrupted
);
CREATE TABLE IF NOT EXISTS checks (
    run_id INTEGER NOT NULL REFERENCES runs(run_id),
    row_id TEXT NOT NULL,
    url TEXT NOT NULL,
    checked_at TEXT NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    http_status INTEGER,
    sha256 TEXT,
    phash TEXT,
    PRIMARY KEY (run_id, row_id)
);
CREATE TABLE IF NOT EXISTS row_state (
    row_id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    last_status TEXT NOT NULL,
    last_detail TEXT NOT NULL,
    last_http_status INTEGER,
    last_checked_at TEXT NOT NULL,
    ref_sha256 TEXT,
    ref_phash TEXT,
    last_good_at TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    failing_since TEXT,
    content_changed_at TEXT,
    retired_at TEXT
);
"""

#: A row's state as :meth:`StateDatabase.row_states` reads it: row ID, last status,
#: detail, HTTP status, consecutive failures, failing since, content changed at, retired at.
RowState = tuple[str, str, str, int | None, int, str | None, str | None, str | None]


class StateDatabase:
    """An open, locked state database; use :meth:`open`."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    @classmethod
    @contextmanager
    def open(cls, path: Path) -> Iterator[StateDatabase]:
        """Lock, open (creating the tables on first use) and close the database at ``path``.

        Raises:
            StateError: another run holds the lock; the file is not a usable state
                database, or was written by a newer contrastkit.
            ResourceError: the database is locked by another program, or the disk fails.
        """
        with (
            _locked(path),
            sqlite_errors(path, "state database"),
            closing(sqlite3.connect(path, timeout=30, isolation_level=None)) as conn,
        ):
            _set_up(path, conn)
            yield cls(path, conn)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One immediate transaction: committed when the block ends, else rolled back."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def start_run(self, started_at: str, files: Sequence[str]) -> int:
        """Record a run's start; return its ID."""
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO runs (started_at, files) VALUES (?, ?)", (started_at, "\n".join(files))
            )
        return int(cursor.lastrowid or 0)

    def finish_run(self, run_id: int, finished_at: str, outcome: str) -> None:
        """Record a run's end and outcome (``healthy`` / ``degraded``)."""
        with self.transaction():
            self.conn.execute(
                "UPDATE runs SET finished_at = ?, outcome = ? WHERE run_id = ?",
                (finished_at, outcome, run_id),
            )

    def flags(self) -> dict[str, tuple[str | None, str | None]]:
        """Every row's (retired at, content changed at), to tell what a run changed."""
        query = "SELECT row_id, retired_at, content_changed_at FROM row_state"
        return {row_id: (retired, changed) for row_id, retired, changed in self.conn.execute(query)}

    def row_states(self) -> Iterator[RowState]:
        """Every row's state (:data:`RowState`)."""
        yield from self.conn.execute(
            "SELECT row_id, last_status, last_detail, last_http_status, consecutive_failures, "
            "failing_since, content_changed_at, retired_at FROM row_state"
        )

    def record(
        self,
        run_id: int,
        row_ids: Sequence[str],
        result: URLCheck,
        checked_at: str,
        config: MaintainConfig,
    ) -> None:
        """Insert one URL's check for each of its rows and update their states, atomically.

        An ``ok`` check ends a failing streak and un-retires; the first good image becomes
        the row's reference, and a later one further than ``config.near_distance`` pHash
        bits from it flags ``content_changed`` (``config.accept_changes`` takes it as the
        new reference). A failed check extends the streak and retires the row once
        ``config.policy`` is met.
        """
        policy, max_distance = config.policy, config.near_distance
        ok = result.status is Status.OK
        url = redact_url(result.url)  # no credentials in the database (SECURITY.md)
        with self.transaction():
            for row_id in row_ids:
                self.conn.execute(
                    "INSERT OR REPLACE INTO checks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, row_id, url, checked_at, result.status.value, result.detail,
                     result.http_status, result.sha256, result.phash),
                )  # fmt: skip
                previous = self.conn.execute(
                    "SELECT url, ref_sha256, ref_phash, consecutive_failures, failing_since, "
                    "content_changed_at, retired_at FROM row_state WHERE row_id = ?",
                    (row_id,),
                ).fetchone()
                if previous is None or redact_url(previous[0]) != url:
                    # New row, or the dataset now gives it another URL (not just other
                    # credentials for the same one): its history restarts.
                    previous = (url, None, None, 0, None, None, None)
                _, ref_sha, ref_phash, failures, failing_since, changed_at, retired_at = previous
                if ok:
                    assert result.sha256 is not None and result.phash is not None
                    failures, failing_since, retired_at = 0, None, None
                    if ref_sha is None or config.accept_changes:
                        ref_sha, ref_phash, changed_at = result.sha256, result.phash, None
                    elif result.sha256 == ref_sha or (
                        phash_distance(result.phash, ref_phash) <= max_distance
                    ):
                        changed_at = None
                    elif changed_at is None:
                        changed_at = checked_at
                else:
                    failures += 1
                    failing_since = failing_since or checked_at
                    span = _parse(checked_at) - _parse(failing_since)
                    if (
                        retired_at is None
                        and failures >= policy.failures
                        and span >= timedelta(days=policy.days)
                    ):
                        retired_at = checked_at
                self.conn.execute(
                    "INSERT OR REPLACE INTO row_state VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, "
                    " COALESCE(?, (SELECT last_good_at FROM row_state WHERE row_id = ?)), "
                    " ?, ?, ?, ?)",
                    (row_id, url, result.status.value, result.detail, result.http_status,
                     checked_at, ref_sha, ref_phash, checked_at if ok else None, row_id,
                     failures, failing_since, changed_at, retired_at),
                )  # fmt: skip


def _locked(db_path: Path) -> contextlib.AbstractContextManager[None]:
    """Hold an exclusive lock beside the database for the whole run (one run at a time)."""
    lock_path = db_path.with_name(db_path.name + ".lock")
    return exclusive_lock(lock_path, str(db_path), "contrastkit urls maintain")


def _set_up(path: Path, conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    # One transaction: a run killed while setting up leaves every table or none.
    conn.executescript(
        f"BEGIN IMMEDIATE;\n{_SCHEMA}\nINSERT OR IGNORE INTO meta VALUES "
        f"('schema_version', '{SCHEMA_VERSION}');\nCOMMIT;"
    )
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        raise StateError(f"{path}: not a usable state database (no schema version)")
    if not str(row[0]).isdigit():
        raise StateError(f"{path}: not a usable state database (schema version {row[0]!r})")
    elif int(row[0]) > SCHEMA_VERSION:
        raise StateError(f"{path}: state written by a newer contrastkit (schema {row[0]}); upgrade")
    _scrub_credentials(conn)


def _scrub_credentials(conn: sqlite3.Connection) -> None:
    """Redact the URLs an older contrastkit stored with their credentials (user info,
    tokens in the query), overwriting the old bytes on disk (``secure_delete``)."""
    conn.execute("PRAGMA secure_delete=ON")
    conn.create_function("redact_url", 1, redact_url, deterministic=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in ("checks", "row_state"):
            conn.execute(
                f"UPDATE {table} SET url = redact_url(url) "  # a fixed table name
                "WHERE (url LIKE '%@%' OR url LIKE '%?%') AND url != redact_url(url)"
            )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)
