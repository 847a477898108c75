"""The maintenance job itself: :func:`maintain` (see :mod:`contrastkit.curation.maintenance`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contrastkit.curation.integrity import (
    Table,
    TableCheckSettings,
    check_tables,
    distinct_urls,
)
from contrastkit.curation.maintenance.config import MaintainConfig
from contrastkit.curation.maintenance.report import render_markdown
from contrastkit.curation.maintenance.results import (
    BelowBalance,
    MaintenanceResult,
    RowHealth,
    UnwrittenFile,
)
from contrastkit.curation.maintenance.rewrite import clean_temporaries, write_back
from contrastkit.curation.maintenance.state import RowState, StateDatabase
from contrastkit.curation.urls import URLCheck
from contrastkit.curation.validation import RowRef
from contrastkit.errors import DataFormatError, ResourceError
from contrastkit.io import atomic_write_text, check_writable, resource_error
from contrastkit.schema import VisoGenderTable
from contrastkit.store import ImageStore
from contrastkit.tsv import TSVDocument, read_tsv_document

__all__ = ["maintain"]


def maintain(
    config: MaintainConfig,
    *,
    on_start: Callable[[int], Any] | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
    now: datetime | None = None,
) -> MaintenanceResult:
    """Run the maintenance job once: check, record, flag, retire, rewrite, report.

    Before any URL is fetched, every file is read (a malformed one stops the run) and
    every output is checked for writability: the store, the state database, the report
    and the folders of the TSVs. Once the database's lock is held, temporary files a
    killed run left beside the TSVs are removed. A TSV changed by a person while the run
    went on gets the run's codes merged into its current text, or is left alone (see
    :mod:`~contrastkit.curation.maintenance.rewrite`); a TSV that cannot be written back is
    listed in ``result.unwritten`` and the report is still written.

    Args:
        config: The files, the database and what the run does.
        on_start: Called once with the number of distinct URLs, before the first request.
        on_result: Called once per distinct URL as its check finishes (progress bars).
        now: Record this time for every check of the run instead of the time of each
            check (tests use it to span days; backfills).

    Returns:
        The run's outcome; ``result.exit_code`` is 0 when healthy, 1 when degraded, 2 when
        a TSV could not be written back (``result.unwritten``).

    Raises:
        DataFormatError: a file is not an official-format TSV, or two files share a row ID.
        ResourceError: an output cannot be written (before any request), the database is
            locked by another program, or the disk fails. (A TSV or the report that cannot
            be written at the end is listed in ``result.unwritten`` instead, so the run's
            summary is never lost.)
        StateError: another run holds the database's lock, or the file is not a usable
            state database.

    Example:
        >>> from contrastkit.curation.maintenance import MaintainConfig, maintain
        >>> config = MaintainConfig(files=("data/oo.tsv",), db="state.sqlite")  # doctest: +SKIP
        >>> maintain(config).exit_code  # doctest: +SKIP
        0
    """
    documents, tables = _read_files(config.files)
    where, rows_of_url = _index_rows(tables)
    _check_outputs(config)
    store = ImageStore(config.store) if config.store is not None else None
    files = [str(table.path) for table in tables]
    with StateDatabase.open(config.db) as db:
        removed = clean_temporaries(config.files)
        started = _stamp(now)
        run_id = db.start_run(started, files)
        before = db.flags()

        def record(result: URLCheck) -> None:
            stamp = _stamp(now) if now is not None else result.checked_at
            db.record(run_id, rows_of_url[result.url], result, stamp, config)
            if on_result is not None:
                on_result(result)

        if on_start is not None:
            on_start(distinct_urls(tables))
        how = TableCheckSettings(config.network, config.near_distance, config.engine,
                                 config.ray_address)  # fmt: skip
        checked = check_tables(tables, how, store=store, on_result=record)
        health = _health(db.row_states(), before, where)
        result = MaintenanceResult(
            run_id=run_id,
            files=files,
            started_at=started,
            finished_at="",
            rows=[health[idx] for idx in where],
            duplicates=checked.duplicates,
            below_balance=_below_balance(tables, health, config.per_cell),
            removed_temporaries=removed,
            local=dict(checked.local),
        )
        file_stamp = _stamp(now).replace(":", "").replace("-", "").replace("+0000", "Z")
        for document in documents:
            try:
                done = write_back(document, health, config.drop_retired, file_stamp)
            except ResourceError as error:
                result.unwritten.append(UnwrittenFile(str(document.path), str(error)))
                continue
            if done.unwritten is not None:
                result.unwritten.append(UnwrittenFile(done.path, done.unwritten))
            if done.written:
                result.rewritten.append(done.path)
            if done.merged:
                result.merged.append(done.path)
            result.kept_as_written += done.kept_as_written
            result.dropped += done.dropped
            if done.backup:
                result.backups.append(done.backup)
        result.finished_at = _stamp(now)
        try:
            _write_report(config, result)
        except ResourceError as error:  # checked up front: a disk that filled up meanwhile
            result.unwritten.append(UnwrittenFile(str(config.report_path), str(error)))
        db.finish_run(run_id, result.finished_at, result.outcome)
    return result


def _read_files(paths: Sequence[Path]) -> tuple[list[TSVDocument], list[Table]]:
    """The VisoGender TSVs as byte-exact documents (they are rewritten) and every file as
    a table; a stereotype probe set (:mod:`contrastkit.probes`) is a table only: its
    rows are checked, recorded, flagged and retired in the database and the report, and
    the file itself is never rewritten (it has no ``Error codes`` column)."""
    from contrastkit.kinds import detect_kind

    documents: list[TSVDocument] = []
    tables: list[Table] = []
    for path in paths:
        kind = detect_kind(path)
        if not kind.rewrites_urls:
            tables.append(kind.read_url_table(path))
        else:
            document = read_tsv_document(path)
            documents.append(document)
            tables.append(document.table)
    return documents, tables


def _index_rows(
    tables: Sequence[Table],
) -> tuple[dict[str, tuple[RowRef, str]], dict[str, list[str]]]:
    """Each row ID's place and URL, and the row IDs of each URL.

    Raises:
        DataFormatError: two rows share an ID (the state database keys rows by ID).
    """
    where: dict[str, tuple[RowRef, str]] = {}
    rows_of_url: dict[str, list[str]] = defaultdict(list)
    for table in tables:
        for row in table.rows:
            if row.idx in where:
                first = where[row.idx][0]
                raise DataFormatError(
                    table.path, row.line, "IDX",
                    f"row ID {row.idx} is also on {first.path}:{first.line}; "
                    "the state database keys rows by ID",
                )  # fmt: skip
            where[row.idx] = (RowRef(str(table.path), row.line, row.idx), row.url)
            rows_of_url[row.url].append(row.idx)
    return where, rows_of_url


def _check_outputs(config: MaintainConfig) -> None:
    """Raise :class:`~contrastkit.errors.ResourceError` now for an output that cannot be
    written, rather than after every URL was fetched."""
    if config.store is not None:
        check_writable(config.store, "the image store")
    check_writable(config.db, "the state database", folder=False)
    check_writable(config.report_path, "the maintenance report", folder=False)
    for path in config.files:
        check_writable(path, "the maintained TSV (rewritten in place)", folder=False)


def _health(
    states: Iterable[RowState],
    before: Mapping[str, tuple[str | None, str | None]],
    where: Mapping[str, tuple[RowRef, str]],
) -> dict[str, RowHealth]:
    """Each row's :class:`RowHealth` from its state now and its flags before the run."""
    health: dict[str, RowHealth] = {}
    for row_id, status, detail, http, failures, since, changed, retired in states:
        if row_id not in where:
            continue  # a row the files no longer have: its history stays in the database
        was_retired, was_changed = before.get(row_id, (None, None))
        ref, url = where[row_id]
        health[row_id] = RowHealth(
            ref=ref, url=url, status=status, detail=detail, http_status=http,
            consecutive_failures=failures, failing_since=since,
            content_changed=changed is not None, retired=retired is not None,
            newly_retired=retired is not None and was_retired is None,
            newly_changed=changed is not None and was_changed is None,
        )  # fmt: skip
    return health


def _below_balance(
    tables: Sequence[Table], health: Mapping[str, RowHealth], per_cell: int
) -> list[BelowBalance]:
    """Occupation cells (OO: M, F; OP: MM, MF, FM, FF) with fewer than ``per_cell``
    healthy rows (VisoGender tables; a probe set has no such cells)."""
    below: list[BelowBalance] = []
    for table in tables:
        if not isinstance(table, VisoGenderTable):
            continue
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for row in table.rows:
            counts[row.occupation][row.cell] += health[row.idx].healthy
        for occupation, cells in counts.items():
            below += [
                BelowBalance(str(table.path), occupation, table.context.value, cell,
                             cells[cell], per_cell)
                for cell in table.context.cells
                if cells[cell] < per_cell
            ]  # fmt: skip
    return below


def _write_report(config: MaintainConfig, result: MaintenanceResult) -> None:
    path = config.report_path
    try:
        atomic_write_text(path, render_markdown(result))
    except OSError as error:
        raise resource_error(path, "the maintenance report", error) from error
    result.report_path = str(path)


def _stamp(now: datetime | None) -> str:
    moment = now or datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")
