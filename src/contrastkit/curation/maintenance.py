"""The maintenance job: check a dataset's URLs on a schedule and keep its TSVs honest.

``contrastkit urls maintain FILE... --db state.sqlite`` (meant for cron) does, per run:

1. Checks every row's URL (:mod:`contrastkit.curation.urls`) and records every check in
   SQLite: row ID, URL, time, status, detail, HTTP status, sha256 and perceptual hash.
   Each URL's checks are committed together with the row states they change, so the
   database is consistent whenever the process stops, even under SIGKILL.
2. Flags rows whose content changed: an ``ok`` image whose bytes differ from the row's
   reference image (its first good check) and whose perceptual hash is further than
   :data:`~contrastkit.curation.dedup.NEAR_DUPLICATE_MAX_DISTANCE` bits from it: the
   link now serves another picture. A re-encoded copy of the same picture is not a change.
   ``accept_changes`` makes the current images the new references.
3. Retires rows that failed in at least ``policy.failures`` consecutive checks spanning at
   least ``policy.days`` days (so one bad night never retires anything). A retired row that
   serves its image again is un-retired.
4. Writes each TSV back atomically (temporary file + rename) with its ``Error codes``
   column filled: the failing status (``http_error:404``, ``timeout`` ...),
   ``content_changed`` and ``retired``; codes not written by contrastkit are kept. Rows
   are never deleted unless ``drop_retired`` is set, and then the original file is first
   copied to ``FILE.bak-<UTC time>``.
5. Reports which occupation cells (OO: M, F; OP: MM, MF, FM, FF) have fewer than
   ``per_cell`` healthy rows, and writes a markdown report.

The run is *healthy* when every row is ok, unchanged and not retired, no rows share an
image and every cell is at balance; otherwise *degraded*.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from contrastkit.curation.dedup import NEAR_DUPLICATE_MAX_DISTANCE, DuplicateGroup
from contrastkit.curation.images import phash_distance
from contrastkit.curation.integrity import check_tables
from contrastkit.curation.urls import CheckConfig, Status, URLCheck, redact_url
from contrastkit.curation.validation import RowRef
from contrastkit.io import atomic_write_text
from contrastkit.schema import VisoGenderRow, VisoGenderTable, render_visogender_tsv
from contrastkit.store import ImageStore

__all__ = [
    "SCHEMA_VERSION",
    "BelowBalance",
    "MaintenanceError",
    "MaintenanceResult",
    "RetirementPolicy",
    "RowHealth",
    "error_codes_for",
    "maintain",
    "render_markdown",
]

SCHEMA_VERSION = 1
CONTENT_CHANGED = "content_changed"
RETIRED = "retired"
_MANAGED = {status.value for status in Status} | {CONTENT_CHANGED, RETIRED}

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


class MaintenanceError(RuntimeError):
    """The job could not run (state database unusable or locked)."""


@dataclass(frozen=True)
class RetirementPolicy:
    """When a failing row is retired.

    Attributes:
        failures: Consecutive failed checks needed.
        days: Days the failing streak must span (first to latest failure).
    """

    failures: int = 3
    days: float = 7.0

    def __post_init__(self) -> None:
        if self.failures < 1 or self.days < 0:
            raise ValueError("retirement needs failures >= 1 and days >= 0")


@dataclass(frozen=True)
class RowHealth:
    """A row's state after the run."""

    ref: RowRef
    url: str
    status: str
    detail: str
    http_status: int | None
    consecutive_failures: int
    failing_since: str | None
    content_changed: bool
    retired: bool
    newly_retired: bool = False
    newly_changed: bool = False

    @property
    def healthy(self) -> bool:
        return self.status == Status.OK.value and not self.content_changed and not self.retired


@dataclass(frozen=True)
class BelowBalance:
    """An occupation cell with fewer healthy rows than the balance asks for."""

    file: str
    occupation: str
    context: str
    cell: str
    healthy: int
    needed: int


@dataclass
class MaintenanceResult:
    """Everything one run found and did."""

    run_id: int
    files: list[str]
    started_at: str
    finished_at: str
    rows: list[RowHealth]
    duplicates: list[DuplicateGroup[str]]
    below_balance: list[BelowBalance]
    rewritten: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    report_path: str | None = None

    @property
    def healthy(self) -> bool:
        return (
            all(row.healthy for row in self.rows) and not self.duplicates and not self.below_balance
        )

    @property
    def exit_code(self) -> int:
        """0 healthy, 1 degraded."""
        return 0 if self.healthy else 1

    def status_counts(self) -> Counter[str]:
        return Counter(row.status for row in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "files": self.files,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "outcome": "healthy" if self.healthy else "degraded",
            "status_counts": dict(sorted(self.status_counts().items())),
            "failing": [_row_dict(r) for r in self.rows if r.status != Status.OK.value],
            "content_changed": [r.ref.idx for r in self.rows if r.content_changed],
            "retired": [r.ref.idx for r in self.rows if r.retired],
            "newly_retired": [r.ref.idx for r in self.rows if r.newly_retired],
            "duplicates": [{"kind": g.kind, "rows": list(g.items)} for g in self.duplicates],
            "below_balance": [vars(b) for b in self.below_balance],
            "rewritten": self.rewritten,
            "dropped": self.dropped,
            "backups": self.backups,
            "report": self.report_path,
        }


def _row_dict(row: RowHealth) -> dict[str, Any]:
    return {
        "idx": row.ref.idx,
        "file": row.ref.path,
        "status": row.status,
        "detail": row.detail,
        "http_status": row.http_status,
        "consecutive_failures": row.consecutive_failures,
        "failing_since": row.failing_since,
    }


# -- state database ----------------------------------------------------------------------


@contextmanager
def _locked(db_path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the database for the whole run (one run at a time)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = db_path.with_name(db_path.name + ".lock")
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise MaintenanceError(
                f"{db_path}: another `contrastkit urls maintain` run holds {lock_path}"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _open_db(db_path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(_SCHEMA)
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            conn.close()
            raise MaintenanceError(
                f"{db_path}: state written by a newer contrastkit (schema {row[0]}); upgrade"
            )
    except sqlite3.DatabaseError as exc:
        raise MaintenanceError(f"{db_path}: not a usable state database ({exc})") from None
    return conn


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _record(
    conn: sqlite3.Connection,
    run_id: int,
    row_ids: Sequence[str],
    result: URLCheck,
    checked_at: str,
    policy: RetirementPolicy,
    max_distance: int,
    accept_changes: bool,
) -> None:
    """Insert one URL's check for each of its rows and update their states, atomically."""
    ok = result.status is Status.OK
    with _transaction(conn):
        for row_id in row_ids:
            conn.execute(
                "INSERT OR REPLACE INTO checks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, row_id, result.url, checked_at, result.status.value, result.detail,
                 result.http_status, result.sha256, result.phash),
            )  # fmt: skip
            previous = conn.execute(
                "SELECT url, ref_sha256, ref_phash, consecutive_failures, failing_since, "
                "content_changed_at, retired_at FROM row_state WHERE row_id = ?",
                (row_id,),
            ).fetchone()
            if previous is None or previous[0] != result.url:
                # New row, or the dataset now gives it another URL: its history restarts.
                previous = (result.url, None, None, 0, None, None, None)
            _, ref_sha, ref_phash, failures, failing_since, changed_at, retired_at = previous
            if ok:
                assert result.sha256 is not None and result.phash is not None
                failures, failing_since, retired_at = 0, None, None
                if ref_sha is None or accept_changes:
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
            conn.execute(
                "INSERT OR REPLACE INTO row_state VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, "
                " COALESCE(?, (SELECT last_good_at FROM row_state WHERE row_id = ?)), "
                " ?, ?, ?, ?)",
                (row_id, result.url, result.status.value, result.detail, result.http_status,
                 checked_at, ref_sha, ref_phash, checked_at if ok else None, row_id,
                 failures, failing_since, changed_at, retired_at),
            )  # fmt: skip


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


# -- TSV rewriting -----------------------------------------------------------------------


def error_codes_for(existing: str, health: RowHealth) -> str:
    """The ``Error codes`` value for a row: contrastkit's codes for its current state,
    after any codes a person wrote (kept as they were). Codes are joined with ``"; "``."""
    kept = [
        code
        for code in (part.strip() for part in existing.replace(",", ";").split(";"))
        if code and code.split(":", 1)[0] not in _MANAGED
    ]
    ours: list[str] = []
    if health.status != Status.OK.value:
        code = health.status
        if health.status == Status.HTTP_ERROR.value and health.http_status:
            code += f":{health.http_status}"
        ours.append(code)
    if health.content_changed:
        ours.append(CONTENT_CHANGED)
    if health.retired:
        ours.append(RETIRED)
    return "; ".join(kept + ours)


def _rewrite(
    table: VisoGenderTable,
    health: dict[str, RowHealth],
    drop_retired: bool,
    stamp: str,
) -> tuple[bool, list[str], str | None]:
    """Write ``table`` back with its error codes; return (rewritten, dropped ids, backup)."""
    rows: list[VisoGenderRow] = []
    dropped: list[str] = []
    for row in table.rows:
        state = health[row.idx]
        if drop_retired and state.retired:
            dropped.append(row.idx)
            continue
        rows.append(replace(row, error_codes=error_codes_for(row.error_codes, state)))
    text = render_visogender_tsv(
        rows, table.context, newline=table.newline, final_newline=table.final_newline
    )
    path = Path(table.path)
    if path.read_bytes() == text.encode("utf-8"):
        return False, [], None
    backup = None
    if dropped:
        backup_path = path.with_name(f"{path.name}.bak-{stamp}")
        tmp = backup_path.with_name(backup_path.name + ".tmp")
        shutil.copyfile(path, tmp)
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        tmp.replace(backup_path)
        backup = str(backup_path)
    atomic_write_text(path, text)
    return True, dropped, backup


def _balance(
    tables: Sequence[VisoGenderTable], health: dict[str, RowHealth], per_cell: int
) -> list[BelowBalance]:
    below: list[BelowBalance] = []
    for table in tables:
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for row in table.rows:
            counts[row.occupation][row.cell] += health[row.idx].healthy
        for occupation, cells in counts.items():
            for cell in table.context.cells:
                if cells[cell] < per_cell:
                    below.append(
                        BelowBalance(
                            str(table.path),
                            occupation,
                            table.context.value,
                            cell,
                            cells[cell],
                            per_cell,
                        )
                    )
    return below


# -- the job -----------------------------------------------------------------------------


def maintain(
    tables: Sequence[VisoGenderTable],
    db_path: Path,
    config: CheckConfig | None = None,
    *,
    policy: RetirementPolicy | None = None,
    per_cell: int = 5,
    store: ImageStore | None = None,
    drop_retired: bool = False,
    accept_changes: bool = False,
    report_path: Path | None = None,
    max_distance: int = NEAR_DUPLICATE_MAX_DISTANCE,
    now: datetime | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
) -> MaintenanceResult:
    """Run the maintenance job once (see the module docstring for what it does).

    Args:
        tables: Official-format TSVs to maintain, parsed
            (:func:`~contrastkit.curation.integrity.read_tables`); their files are
            rewritten in place, atomically.
        db_path: SQLite state database (created on first run).
        config: URL checker settings.
        policy: When failing rows are retired.
        per_cell: Healthy rows each occupation cell needs (VisoGender: 5).
        store: Keep every good image in this content-addressed store.
        drop_retired: Remove retired rows from the TSVs (after a backup of each file).
        accept_changes: Take the images served now as the rows' new reference images.
        report_path: Write the markdown report here.
        max_distance: pHash distance up to which an image counts as unchanged, and as a
            near-duplicate.
        now: Time to record for this run's checks (tests use it to span days); the real
            time of each check when None.
        on_result: Called once per distinct URL as its check finishes.

    Raises:
        MaintenanceError: the database is unusable, another run holds its lock, or two
            files share a row ID.
    """
    policy = policy or RetirementPolicy()
    files = [str(table.path) for table in tables]
    refs: dict[str, list[str]] = defaultdict(list)
    url_of: dict[str, str] = {}
    where: dict[str, RowRef] = {}
    for table in tables:
        for row in table.rows:
            if row.idx in where:
                raise MaintenanceError(
                    f"row ID {row.idx} appears in {where[row.idx].path} and {table.path}; "
                    "the state database keys rows by ID"
                )
            where[row.idx] = RowRef(str(table.path), row.line, row.idx)
            refs[row.url].append(row.idx)
            url_of[row.idx] = row.url

    with _locked(db_path), closing(_open_db(db_path)) as conn:
        started = _stamp(now)
        with _transaction(conn):
            cursor = conn.execute(
                "INSERT INTO runs (started_at, files) VALUES (?, ?)",
                (started, "\n".join(files)),
            )
        run_id = int(cursor.lastrowid or 0)
        before = {
            row_id: (retired, changed)
            for row_id, retired, changed in conn.execute(
                "SELECT row_id, retired_at, content_changed_at FROM row_state"
            )
        }

        def record(result: URLCheck) -> None:
            stamp = _stamp(now) if now is not None else result.checked_at
            _record(conn, run_id, refs[result.url], result, stamp, policy, max_distance,
                    accept_changes)  # fmt: skip
            if on_result is not None:
                on_result(result)

        checked = check_tables(
            tables, config, store=store, on_result=record, max_distance=max_distance
        )

        health: dict[str, RowHealth] = {}
        states = conn.execute(
            "SELECT row_id, last_status, last_detail, last_http_status, consecutive_failures, "
            "failing_since, content_changed_at, retired_at FROM row_state"
        )
        for row_id, status, detail, http, failures, since, changed, retired in states:
            if row_id not in where:
                continue
            was_retired, was_changed = before.get(row_id, (None, None))
            health[row_id] = RowHealth(
                ref=where[row_id], url=url_of[row_id], status=status,
                detail=detail, http_status=http, consecutive_failures=failures,
                failing_since=since, content_changed=changed is not None,
                retired=retired is not None,
                newly_retired=retired is not None and was_retired is None,
                newly_changed=changed is not None and was_changed is None,
            )  # fmt: skip
        result = MaintenanceResult(
            run_id=run_id,
            files=files,
            started_at=started,
            finished_at="",
            rows=[health[idx] for idx in where],
            duplicates=checked.duplicates,
            below_balance=_balance(tables, health, per_cell),
        )
        file_stamp = _stamp(now).replace(":", "").replace("-", "").replace("+0000", "Z")
        for table in tables:
            rewritten, dropped, backup = _rewrite(table, health, drop_retired, file_stamp)
            if rewritten:
                result.rewritten.append(str(table.path))
            result.dropped += dropped
            if backup:
                result.backups.append(backup)
        result.finished_at = _stamp(now)
        if report_path is not None:
            atomic_write_text(report_path, render_markdown(result))
            result.report_path = str(report_path)
        with _transaction(conn):
            conn.execute(
                "UPDATE runs SET finished_at = ?, outcome = ? WHERE run_id = ?",
                (result.finished_at, "healthy" if result.healthy else "degraded", run_id),
            )
    return result


def _stamp(now: datetime | None) -> str:
    moment = now or datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


# -- report ------------------------------------------------------------------------------


def render_markdown(result: MaintenanceResult) -> str:
    """The run's report as markdown: outcome, counts, failures, changes, retirements,
    duplicate groups and cells below balance."""
    outcome = "healthy" if result.healthy else "degraded"
    lines = [
        "# URL maintenance report",
        "",
        f"- Run {result.run_id}: {result.started_at} to {result.finished_at}",
        f"- Files: {', '.join(f'`{f}`' for f in result.files)}",
        f"- Outcome: **{outcome}**",
        "",
        "## Status counts",
        "",
        "| status | rows |",
        "|---|---:|",
    ]
    lines += [f"| {status} | {n} |" for status, n in sorted(result.status_counts().items())]
    failing = [r for r in result.rows if r.status != Status.OK.value]
    if failing:
        lines += ["", f"## Failing rows ({len(failing)})", "",
                  "| row | status | detail | failed checks in a row | failing since | url |",
                  "|---|---|---|---:|---|---|"]  # fmt: skip
        lines += [
            f"| {r.ref.idx} | {r.status} | {_cell(r.detail)} | {r.consecutive_failures} | "
            f"{r.failing_since or ''} | {_cell(redact_url(r.url))} |"
            for r in failing
        ]
    for title, rows in (
        ("Content changed (the link serves another picture)",
         [r for r in result.rows if r.content_changed]),
        ("Retired", [r for r in result.rows if r.retired]),
    ):  # fmt: skip
        if rows:
            lines += ["", f"## {title} ({len(rows)})", ""]
            lines += [
                f"- {r.ref.idx}{' (new this run)' if r.newly_retired or r.newly_changed else ''}"
                for r in rows
            ]
    if result.duplicates:
        lines += ["", f"## Rows sharing an image ({len(result.duplicates)} groups)", ""]
        lines += [f"- {g.kind}: {', '.join(g.items)}" for g in result.duplicates]
    if result.below_balance:
        lines += ["", "## Cells below balance", "",
                  "| file | occupation | context | cell | healthy | needed |",
                  "|---|---|---|---|---:|---:|"]  # fmt: skip
        lines += [
            f"| `{b.file}` | {b.occupation} | {b.context} | {b.cell} | {b.healthy} | {b.needed} |"
            for b in result.below_balance
        ]
    if result.rewritten or result.dropped:
        lines += ["", "## Files written", ""]
        lines += [f"- rewrote `{path}` (Error codes column)" for path in result.rewritten]
        if result.dropped:
            lines.append(f"- dropped retired rows: {', '.join(result.dropped)}")
            lines += [f"- backup: `{path}`" for path in result.backups]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
