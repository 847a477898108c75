"""URL integrity of whole datasets: check every row's URL, group duplicates across files.

This is what ``contrastkit urls check`` runs. Each distinct URL is fetched once
(:mod:`contrastkit.curation.urls`); every row gets its URL's result; duplicates are
reported as groups of row IDs across all files, by URL (``exact``, ``canonical``) and by
content (``same_bytes``, ``near_duplicate``), because the same photo under two occupations
or two gender cells breaks the benchmark.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contrastkit.curation.dedup import (
    NEAR_DUPLICATE_MAX_DISTANCE,
    DuplicateGroup,
    find_content_duplicates,
    find_duplicates,
)
from contrastkit.curation.urls import CheckConfig, URLCheck, check_urls, redact_url
from contrastkit.curation.validation import RowRef
from contrastkit.schema import VisoGenderTable, read_visogender_tsv
from contrastkit.store import ImageStore

__all__ = ["CheckedRow", "IntegrityReport", "check_tables", "duplicate_groups", "read_tables"]


@dataclass(frozen=True)
class CheckedRow:
    """One dataset row and the check of its URL."""

    ref: RowRef
    result: URLCheck

    def to_dict(self) -> dict[str, Any]:
        return {"idx": self.ref.idx, "file": self.ref.path, "line": self.ref.line} | (
            self.result.to_dict()
        )


@dataclass
class IntegrityReport:
    """Results of ``urls check`` over one or more files.

    Attributes:
        files: The files checked.
        rows: Every row with its URL's result, in file order.
        duplicates: Groups of row IDs that share an image (see :func:`duplicate_groups`).
        started_at, finished_at: ISO 8601 UTC times of the run.
    """

    files: list[str]
    rows: list[CheckedRow]
    duplicates: list[DuplicateGroup[str]] = field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""

    def status_counts(self) -> Counter[str]:
        """Rows per status (a URL used by two rows counts twice)."""
        return Counter(row.result.status.value for row in self.rows)

    @property
    def failed(self) -> list[CheckedRow]:
        return [row for row in self.rows if not row.result.ok]

    @property
    def ok(self) -> bool:
        """Every URL is a usable image and no two rows share an image."""
        return not self.failed and not self.duplicates

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: counts, every row's result, duplicate groups."""
        return {
            "files": self.files,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "rows": len(self.rows),
            "urls": len({row.result.url for row in self.rows}),
            "status_counts": dict(sorted(self.status_counts().items())),
            "ok": self.ok,
            "duplicates": [
                {"kind": g.kind, "key": _shown_key(g), "rows": list(g.items)}
                for g in self.duplicates
            ],
            "results": [row.to_dict() for row in self.rows],
        }


def _shown_key(group: DuplicateGroup[str]) -> str:
    return redact_url(group.key) if group.kind in ("exact", "canonical") else group.key


def duplicate_groups(
    rows: Sequence[CheckedRow], *, max_distance: int = NEAR_DUPLICATE_MAX_DISTANCE
) -> list[DuplicateGroup[str]]:
    """Groups of row IDs that point at one image.

    ``exact`` (same URL) and ``canonical`` (same resource at another size or through a
    proxy; :func:`~contrastkit.curation.dedup.canonical_url`) come from the URLs;
    ``same_bytes`` (different URLs, identical files) and ``near_duplicate`` (perceptual
    hashes within ``max_distance`` bits) from the fetched images of ``ok`` rows.
    """
    groups = find_duplicates((row.ref.idx, row.result.url) for row in rows)
    by_url: dict[str, list[str]] = {}
    fingerprints: list[tuple[str, str, str]] = []
    for row in rows:
        result = row.result
        if result.ok and result.sha256 and result.phash:
            if result.url not in by_url:
                fingerprints.append((result.url, result.sha256, result.phash))
            by_url.setdefault(result.url, []).append(row.ref.idx)
    for group in find_content_duplicates(fingerprints, max_distance=max_distance):
        ids = tuple(idx for url in group.items for idx in by_url[url])
        groups.append(DuplicateGroup(group.kind, group.key, ids))
    return groups


def check_tables(
    tables: Sequence[VisoGenderTable],
    config: CheckConfig | None = None,
    *,
    store: ImageStore | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
    max_distance: int = NEAR_DUPLICATE_MAX_DISTANCE,
) -> IntegrityReport:
    """Check the URL of every row of ``tables`` and group duplicates.

    Args:
        tables: Parsed official-format TSVs (:func:`contrastkit.schema.read_visogender_tsv`).
        config: Checker settings (:class:`~contrastkit.curation.urls.CheckConfig`).
        store: Keep every ``ok`` image in this content-addressed store.
        on_result: Called once per distinct URL as its check finishes.
        max_distance: Near-duplicate pHash threshold.
    """
    started = _now()
    refs = [
        (RowRef(str(table.path), row.line, row.idx), row.url)
        for table in tables
        for row in table.rows
    ]
    results = {
        r.url: r
        for r in check_urls((url for _, url in refs), config, store=store, on_result=on_result)
    }
    rows = [CheckedRow(ref, results[url]) for ref, url in refs]
    return IntegrityReport(
        files=[str(table.path) for table in tables],
        rows=rows,
        duplicates=duplicate_groups(rows, max_distance=max_distance),
        started_at=started,
        finished_at=_now(),
    )


def read_tables(paths: Sequence[Path]) -> list[VisoGenderTable]:
    """Parse every file first, so a malformed one stops the run before any request."""
    return [read_visogender_tsv(path) for path in paths]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
