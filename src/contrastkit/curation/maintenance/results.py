"""What one maintenance run found and did: :class:`MaintenanceResult`, with a
:class:`RowHealth` per row and the cells :class:`BelowBalance`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TypedDict

from contrastkit.curation.dedup import DuplicateGroup
from contrastkit.curation.urls import Status
from contrastkit.curation.validation import RowRef

__all__ = [
    "BelowBalance",
    "BelowBalanceRecord",
    "FailingRow",
    "MaintenanceRecord",
    "MaintenanceResult",
    "RowHealth",
    "UnwrittenFile",
    "UnwrittenRecord",
]


@dataclass(frozen=True)
class RowHealth:
    """A row's state after the run.

    Attributes:
        ref: The row (file, line, ID).
        url: Its URL.
        status, detail, http_status: Its latest check.
        consecutive_failures: Failed checks in a row, up to this one.
        failing_since: Time of the first failure of the streak, or None.
        content_changed: The URL serves another picture than the reference image.
        retired: The row is retired
            (:class:`~contrastkit.curation.maintenance.RetirementPolicy`).
        newly_retired, newly_changed: The flag was raised by this run.
    """

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
        """The row's image is served, unchanged, and the row is not retired."""
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


@dataclass(frozen=True)
class UnwrittenFile:
    """A TSV the run left as it was, and why (it changed during the run and the change
    could not be merged, or it could not be written)."""

    file: str
    reason: str


class FailingRow(TypedDict):
    """A row whose URL failed its check, in the JSON of a run."""

    idx: str
    file: str
    status: str
    detail: str
    http_status: int | None
    consecutive_failures: int
    failing_since: str | None


class SharedImage(TypedDict):
    """Rows that share an image, in the JSON of a run: how it was found, their IDs."""

    kind: str
    rows: list[str]


class BelowBalanceRecord(TypedDict):
    """A :class:`BelowBalance` as JSON."""

    file: str
    occupation: str
    context: str
    cell: str
    healthy: int
    needed: int


class UnwrittenRecord(TypedDict):
    """An :class:`UnwrittenFile` as JSON."""

    file: str
    reason: str


class MaintenanceRecord(TypedDict):
    """A :class:`MaintenanceResult` as JSON (:meth:`MaintenanceResult.to_dict`)."""

    run_id: int
    files: list[str]
    started_at: str
    finished_at: str
    outcome: str
    healthy: bool
    status_counts: dict[str, int]
    failing: list[FailingRow]
    content_changed: list[str]
    retired: list[str]
    newly_retired: list[str]
    duplicates: list[SharedImage]
    below_balance: list[BelowBalanceRecord]
    rewritten: list[str]
    dropped: list[str]
    backups: list[str]
    merged: list[str]
    kept_as_written: list[str]
    unwritten: list[UnwrittenRecord]
    removed_temporaries: list[str]
    report: str | None
    local_rows: int
    local_rows_by_file: dict[str, int]


@dataclass
class MaintenanceResult:
    """Everything one run found and did.

    Attributes:
        run_id: The run's number in the state database.
        files: The TSVs maintained.
        started_at, finished_at: ISO 8601 UTC times of the run.
        rows: Every row's :class:`RowHealth`, in file order.
        duplicates: Groups of row IDs that share an image.
        below_balance: Occupation cells short of healthy rows.
        rewritten: TSVs written back (their ``Error codes`` changed).
        dropped: IDs of retired rows removed (``drop_retired``).
        backups: Copies of the files taken before rows were dropped.
        merged: TSVs a person changed while the run went on, into which the run's codes
            were merged (rows added or changed by the person kept as written).
        kept_as_written: IDs of rows a person added or changed during the run, left
            without this run's codes.
        unwritten: TSVs the run could not write back, with the reason; the exit code is
            then 2.
        removed_temporaries: Temporary files of a killed earlier run, removed.
        report_path: Where the markdown report was written.
        local: Rows whose image is a local file, per stereotype probe file that has any
            (they are not URLs: not checked, not in ``rows``).
    """

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
    merged: list[str] = field(default_factory=list)
    kept_as_written: list[str] = field(default_factory=list)
    unwritten: list[UnwrittenFile] = field(default_factory=list)
    removed_temporaries: list[str] = field(default_factory=list)
    report_path: str | None = None
    local: dict[str, int] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        """Every row healthy, no shared images, every cell at balance."""
        return (
            all(row.healthy for row in self.rows) and not self.duplicates and not self.below_balance
        )

    @property
    def outcome(self) -> str:
        """``healthy``, ``degraded``, or ``incomplete`` (a TSV could not be written back)."""
        if self.unwritten:
            return "incomplete"
        return "healthy" if self.healthy else "degraded"

    @property
    def exit_code(self) -> int:
        """0 healthy, 1 degraded, 2 incomplete (a TSV was left unwritten)."""
        return {"healthy": 0, "degraded": 1}.get(self.outcome, 2)

    def status_counts(self) -> Counter[str]:
        """Rows per status."""
        return Counter(row.status for row in self.rows)

    def to_dict(self) -> MaintenanceRecord:
        """JSON-ready: outcome, counts, failing rows, flags, groups, files written."""
        return {
            "run_id": self.run_id,
            "files": self.files,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "outcome": self.outcome,
            "healthy": self.healthy,
            "status_counts": dict(sorted(self.status_counts().items())),
            "failing": [_row_dict(r) for r in self.rows if r.status != Status.OK.value],
            "content_changed": [r.ref.idx for r in self.rows if r.content_changed],
            "retired": [r.ref.idx for r in self.rows if r.retired],
            "newly_retired": [r.ref.idx for r in self.rows if r.newly_retired],
            "duplicates": [{"kind": g.kind, "rows": list(g.items)} for g in self.duplicates],
            "below_balance": [
                {
                    "file": b.file,
                    "occupation": b.occupation,
                    "context": b.context,
                    "cell": b.cell,
                    "healthy": b.healthy,
                    "needed": b.needed,
                }
                for b in self.below_balance
            ],
            "rewritten": self.rewritten,
            "dropped": self.dropped,
            "backups": self.backups,
            "merged": self.merged,
            "kept_as_written": self.kept_as_written,
            "unwritten": [{"file": u.file, "reason": u.reason} for u in self.unwritten],
            "removed_temporaries": self.removed_temporaries,
            "report": self.report_path,
            "local_rows": sum(self.local.values()),
            "local_rows_by_file": dict(self.local),
        }


def _row_dict(row: RowHealth) -> FailingRow:
    return {
        "idx": row.ref.idx,
        "file": row.ref.path,
        "status": row.status,
        "detail": row.detail,
        "http_status": row.http_status,
        "consecutive_failures": row.consecutive_failures,
        "failing_since": row.failing_since,
    }
