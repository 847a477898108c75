"""Writing the maintained TSVs back: the ``Error codes`` column, dropped rows, backups,
edits made while the job ran, and temporary files left by a killed run.

Every file is written atomically (a temporary file beside it, fsynced, renamed into place)
and only when a row's ``Error codes`` changes or a row is dropped. Only the lines of those
rows change: every other byte (a UTF-8 byte-order mark, each line's ending, the final
newline or its absence, blank lines) stays as it was, and so do the file's permissions.
Rows are dropped only on request, and then the file is first copied, atomically too, to
``FILE.bak-<UTC time>``.

A person may edit a TSV while the job runs (a nightly job takes minutes). The file is
compared with what was read at the start (size, modification time in nanoseconds and the
sha256 of its bytes) before the job merges, and again at the replace itself: on Linux the
new file is swapped in atomically (``renameat2(RENAME_EXCHANGE)``) and what it replaced is
compared, so an edit that lands at any instant before the swap is swapped back and merged
(elsewhere the comparison runs just before the rename, after the fsync). If it changed,
the current file is read again and the job's codes are merged into it, matching rows by
``IDX``:

* a row that is as the job read it gets the job's codes (or is dropped, when retired and
  ``drop_retired``);
* a row the person added, or changed in any way, is kept exactly as written;
* a row the person removed stays removed.

While it writes a file back (re-read, merge, swap) the job holds an advisory lock on
``NAME.lock`` beside it (:func:`edit_lock_path`; ``flock``, created if missing, never
removed), waiting up to :data:`LOCK_WAIT_S` for it. A person's edit made under that lock
(``flock data/visogender_OO.tsv.lock -c '...'``, docs/how-to/url-maintenance.md) never
meets the job's swap: no read of the file in the instant the job's version is in place,
no save on top of it. An edit that does not take the lock is still merged as below; the
instant in which a reader could see the job's version without it is one ``stat`` long (the
swap back needs no read of the file unless its size and time are unchanged).

If the current file can no longer be read as an official TSV (malformed, another context,
an ``IDX`` used twice), or it keeps changing, it is not replaced: the outcome is an
:class:`UnwrittenFile` naming the reason, the run's exit code is 2, and the database
keeps every check (the next run writes the codes). A row a person wrote is never dropped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contrastkit.curation.maintenance.results import RowHealth
from contrastkit.curation.urls import Status
from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_path, atomic_write_bytes, exchange_paths, resource_error
from contrastkit.schema import columns_for
from contrastkit.tsv import FileFingerprint, TSVDocument, read_tsv_document

__all__ = [
    "CONTENT_CHANGED",
    "LOCK_WAIT_S",
    "RETIRED",
    "FileWrite",
    "clean_temporaries",
    "edit_lock_path",
    "error_codes_for",
    "temporary_pattern",
    "write_back",
]

CONTENT_CHANGED = "content_changed"
"""Error code of a row whose URL serves another picture."""
RETIRED = "retired"
"""Error code of a retired row."""
_MANAGED = {status.value for status in Status} | {CONTENT_CHANGED, RETIRED}

#: Times the current file is re-read and merged when it keeps changing under the job.
MERGE_ATTEMPTS = 3
#: Seconds the job waits for a TSV's edit lock (:func:`edit_lock_path`) before it leaves
#: the file unwritten (the next run writes the codes).
LOCK_WAIT_S = 60.0


def edit_lock_path(path: Path) -> Path:
    """The advisory lock of a maintained TSV: ``NAME.lock`` beside it. The job holds it
    (``flock``, exclusive) while it writes the file back; hold it while you edit the file
    during a run and the edit can never cross the job's swap."""
    return path.with_name(f"{path.name}.lock")


@contextlib.contextmanager
def _edit_lock(path: Path, wait_s: float) -> Iterator[bool]:
    """Hold ``path``'s edit lock for the block; yields False when another program held
    it for ``wait_s`` seconds (nothing is then held)."""
    lock = edit_lock_path(path)
    try:
        handle = lock.open("a+")
    except OSError as error:
        raise resource_error(lock, "the edit lock of the maintained TSV", error) from error
    with handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.005)
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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


@dataclass
class FileWrite:
    """What writing one TSV back did.

    Attributes:
        path: The TSV.
        written: The file was replaced (a row's codes changed, or a row was dropped).
        dropped: IDs of the retired rows removed.
        backup: The copy taken before rows were dropped.
        merged: The file changed while the job ran and the job's codes were merged into
            the current file.
        kept_as_written: IDs of rows a person added or changed during the run, left as
            they were written (no codes from this run).
        unwritten: Why the file was left as it is, or None.
    """

    path: str
    written: bool = False
    dropped: list[str] = field(default_factory=list)
    backup: str | None = None
    merged: bool = False
    kept_as_written: list[str] = field(default_factory=list)
    unwritten: str | None = None


class _ChangedAgainError(Exception):
    """The file changed between its re-read and the replace: merge again."""


class _UnmergedError(Exception):
    """Edits landed on the file twice during one replace; the later one is kept aside."""

    def __init__(self, kept: Path) -> None:
        super().__init__(str(kept))
        self.kept = kept


def write_back(
    read: TSVDocument,
    health: Mapping[str, RowHealth],
    drop_retired: bool,
    stamp: str,
    *,
    attempts: int = MERGE_ATTEMPTS,
) -> FileWrite:
    """Write ``read`` (the TSV as the job read it) back with the job's error codes.

    Args:
        read: The file as read at the start of the run.
        health: Each row's state, by row ID.
        drop_retired: Leave retired rows out (after a backup of the file).
        stamp: UTC time for the backup's name (``20260102T030000Z``).
        attempts: Times to re-read and merge a file that keeps changing.

    Returns:
        What was done; ``unwritten`` says why a file was left alone (it changed during the
        run and the change cannot be merged, or it kept changing).

    Raises:
        ResourceError: the file or its backup cannot be written.
    """
    path = read.path
    outcome = FileWrite(str(path))
    with _edit_lock(path, LOCK_WAIT_S) as held:
        if not held:
            outcome.unwritten = (
                f"another program held {edit_lock_path(path).name} for {LOCK_WAIT_S:.0f} s "
                "(an edit in progress); the next run writes the codes"
            )
            return outcome
        return _write_back(read, health, drop_retired, stamp, attempts)


def _write_back(
    read: TSVDocument,
    health: Mapping[str, RowHealth],
    drop_retired: bool,
    stamp: str,
    attempts: int,
) -> FileWrite:
    """:func:`write_back`'s work, the edit lock held."""
    path = read.path
    outcome = FileWrite(str(path))
    for _ in range(attempts):
        try:
            now = FileFingerprint.of(path)
        except FileNotFoundError:
            outcome.unwritten = "the file was removed or renamed while the job ran"
            return outcome
        except OSError as error:
            raise resource_error(path, "the maintained TSV", error) from error
        current = read
        if now != read.fingerprint:
            try:
                current = read_tsv_document(path)
            except DataFormatError as error:
                outcome.unwritten = (
                    f"the file changed while the job ran and is no longer an official TSV "
                    f"({error}); fix it, the next run writes the codes"
                )
                return outcome
            except FileNotFoundError:
                outcome.unwritten = "the file was removed or renamed while the job ran"
                return outcome
            outcome.merged = current.fingerprint.sha256 != read.fingerprint.sha256
            refusal = _unmergeable(read, current)
            if refusal is not None:
                outcome.unwritten = refusal
                return outcome
        edits, dropped, kept = _edits(read, current, health, drop_retired)
        outcome.kept_as_written = kept
        try:
            written, backup = _replace(current, edits, bool(dropped), stamp)
        except _ChangedAgainError:
            continue
        except _UnmergedError as unmerged:
            outcome.unwritten = (
                f"the file was edited twice while the job wrote it; the first edit is in "
                f"place, the second is kept in {unmerged.kept.name}: merge it by hand, the "
                "next run writes the codes"
            )
            return outcome
        outcome.written, outcome.dropped, outcome.backup = written, dropped, backup
        return outcome
    outcome.unwritten = (
        f"the file kept changing while the job tried to write it ({attempts} attempts); "
        "the next run writes the codes"
    )
    return outcome


def _unmergeable(read: TSVDocument, current: TSVDocument) -> str | None:
    """Why the job's codes cannot be merged into ``current``, or None."""
    if current.table.context is not read.table.context:
        return (
            f"the file changed while the job ran and is now an "
            f"{current.table.context.value} file, not {read.table.context.value}"
        )
    seen: dict[str, int | None] = {}
    for row in current.table.rows:
        if row.idx in seen:
            return (
                f"the file changed while the job ran and row ID {row.idx!r} is now on lines "
                f"{seen[row.idx]} and {row.line}; make the IDs unique, the next run writes "
                "the codes"
            )
        seen[row.idx] = row.line
    return None


def _edits(
    read: TSVDocument,
    current: TSVDocument,
    health: Mapping[str, RowHealth],
    drop_retired: bool,
) -> tuple[dict[int, tuple[str, ...] | None], list[str], list[str]]:
    """The line edits that apply the job's codes to ``current``; the IDs of the rows
    dropped; the IDs of the rows kept as a person wrote them (added or changed since
    ``read``)."""
    as_read = {row.idx: read.fields(row.line) for row in read.table.rows if row.line}
    column = columns_for(current.table.context).index("Error codes")
    edits: dict[int, tuple[str, ...] | None] = {}
    dropped: list[str] = []
    kept: list[str] = []
    for row in current.table.rows:
        assert row.line is not None
        fields = current.fields(row.line)
        state = health.get(row.idx)
        if state is None or as_read.get(row.idx) != fields:
            kept.append(row.idx)  # added or changed by a person during the run
            continue
        if drop_retired and state.retired:
            edits[row.line] = None
            dropped.append(row.idx)
            continue
        codes = error_codes_for(row.error_codes, state)
        if codes != fields[column]:
            edits[row.line] = (*fields[:column], codes, *fields[column + 1 :])
    return edits, dropped, kept


def _replace(
    current: TSVDocument,
    edits: Mapping[int, tuple[str, ...] | None],
    drop: bool,
    stamp: str,
) -> tuple[bool, str | None]:
    """Replace the file with ``current`` edited, unless it changed since ``current`` was
    read (:class:`_ChangedAgainError`); with a backup first when rows are dropped."""
    if not edits:
        return False, None
    path = current.path
    data = current.render(edits)
    backup = path.with_name(f"{path.name}.bak-{stamp}") if drop else None
    try:
        if backup is not None:
            atomic_write_bytes(backup, current.to_bytes())
        commit = _swap_unless_changed(current.fingerprint, data, stamp)
        with atomic_path(path, commit=commit) as tmp:
            tmp.write_bytes(data)
    except (_ChangedAgainError, _UnmergedError):
        if backup is not None:
            backup.unlink(missing_ok=True)
        raise
    except OSError as error:
        raise resource_error(path, "the maintained TSV or its backup", error) from error
    return True, None if backup is None else str(backup)


def _exchange(first: Path, second: Path) -> bool:
    """:func:`~contrastkit.io.exchange_paths` (a seam the tests wrap to land an edit at
    the last instant before the swap)."""
    return exchange_paths(first, second)


def _swap_unless_changed(
    expected: FileFingerprint, ours: bytes, stamp: str
) -> Callable[[Path, Path], None]:
    """The last step of a write-back: put the fsynced temporary file in place only if the
    file is still what the job merged into (``expected``).

    Where the system can swap two paths atomically, the swap is done first and what it
    replaced is compared afterwards: an edit that landed at any instant before the swap is
    found, swapped back into place and merged again (:class:`_ChangedAgainError`). If yet
    another edit landed on the job's file in between, that file is kept beside the TSV as
    ``NAME.unmerged-<time>`` and the outcome says so. Elsewhere the file is compared just
    before a plain rename, after the fsync (a window of one system call).
    """

    def commit(tmp: Path, path: Path) -> None:
        if _stat_changed(path, expected):
            raise _ChangedAgainError  # an edit already landed: nothing swapped
        if not _exchange(tmp, path):
            if FileFingerprint.of(path) != expected:
                raise _ChangedAgainError
            tmp.replace(path)
            return
        # what the swap replaced: a changed size or time is swapped back at once, before
        # any read (the instant a reader could see the job's file without the edit is
        # one stat long); only an unchanged size and time need the hash
        if not _stat_changed(tmp, expected) and FileFingerprint.of(tmp) == expected:
            return  # what the job merged into: replaced (atomic_path removes it)
        _exchange(tmp, path)  # the person's file back in place, the job's at tmp
        if tmp.read_bytes() != ours:  # and another edit landed on the job's file
            kept = path.with_name(f"{path.name}.unmerged-{stamp}")
            tmp.replace(kept)
            raise _UnmergedError(kept)
        raise _ChangedAgainError

    return commit


def _stat_changed(path: Path, expected: FileFingerprint) -> bool:
    """Whether ``path``'s size or modification time differs from ``expected``'s."""
    status = path.stat()
    return (status.st_size, status.st_mtime_ns) != (expected.size, expected.mtime_ns)


def temporary_pattern(path: Path) -> re.Pattern[str]:
    """The names of the temporary files :func:`contrastkit.io.atomic_path` makes beside
    ``path`` while writing it or its backups (``.NAME.xxxxxxxx.tmp.tsv``,
    ``.NAME.bak-<time>.xxxxxxxx.tmp.bak-<time>``)."""
    name, suffix = re.escape(path.name), re.escape(path.suffix)
    return re.compile(
        rf"\.{name}\.[a-z0-9_]{{8}}\.tmp{suffix}"
        rf"|\.{name}\.bak-(\d{{8}}T\d{{6}}Z)\.[a-z0-9_]{{8}}\.tmp\.bak-\1"
    )


def clean_temporaries(paths: Sequence[Path]) -> list[str]:
    """Remove the temporary files a killed run left beside ``paths`` (only regular files
    whose names match :func:`temporary_pattern`); return their paths.

    Call it only while holding the state database's lock: a run in progress has its own
    temporary files there. A file that cannot be removed is left (the folder's
    writability is checked separately).
    """
    removed: list[str] = []
    for path in paths:
        pattern = temporary_pattern(path)
        try:
            entries = list(os.scandir(path.parent))
        except OSError:
            continue
        for entry in entries:
            if not pattern.fullmatch(entry.name):
                continue
            with contextlib.suppress(OSError):
                if stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                    Path(entry.path).unlink()
                    removed.append(entry.path)
    return removed
