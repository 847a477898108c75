"""The rows an evaluation left out because their image was not available
(``EvaluateConfig.skip_missing``), as the markdown report shows them.

The results JSON holds them as ``skipped_rows`` = ``{"count": n, "rows": [{"idx",
"context", "source", "line", "url", "reason"}, ...]}``; results without the key (written
before rows could be skipped, or with nothing skipped) show nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contrastkit.evaluators.report.tables import escape_cell, table_header

__all__ = ["skipped_rows_note", "skipped_rows_section"]


def _skipped(results: Mapping[str, Any]) -> tuple[int, list[Mapping[str, Any]]]:
    entry = results.get("skipped_rows") or {}
    rows = list(entry.get("rows") or [])
    return int(entry.get("count", len(rows))), rows


def skipped_rows_note(results: Mapping[str, Any]) -> list[str]:
    """One paragraph near the top of the report: how many rows were left out and where
    they are listed; nothing when no row was."""
    count, _ = _skipped(results)
    if not count:
        return []
    rows = "row was" if count == 1 else "rows were"
    return [
        f"**{count} {rows} left out** because the image was not available "
        "(listed under *Rows left out* below); every figure is computed without them.",
        "",
    ]


def skipped_rows_section(results: Mapping[str, Any]) -> list[str]:
    """The table of rows left out (row ID, context, file, URL, reason); nothing when no
    row was."""
    count, rows = _skipped(results)
    if not count:
        return []
    lines = [
        f"## Rows left out ({count})",
        "",
        "Their image was not available: not in the image store, failed when fetched, or "
        "flagged by `contrastkit urls maintain`.",
        "",
        *table_header(["row", "context", "file", "URL", "reason"]),
    ]
    for row in rows:
        lines.append(
            "| "
            + " | ".join(
                escape_cell(row.get(key, ""))
                for key in ("idx", "context", "source", "url", "reason")
            )
            + " |"
        )
    return [*lines, ""]
