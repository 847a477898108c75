"""The markdown report of a maintenance run (:func:`render_markdown`)."""

from __future__ import annotations

from contrastkit.curation.maintenance.results import MaintenanceResult
from contrastkit.curation.urls import Status, redact_url
from contrastkit.text import escape_cell, table_header, table_row

__all__ = ["render_markdown"]


def render_markdown(result: MaintenanceResult) -> str:
    """The run's report as markdown: outcome, counts, failures, changes, retirements,
    duplicate groups and cells below balance."""
    outcome = result.outcome
    lines = [
        "# URL maintenance report",
        "",
        f"- Run {result.run_id}: {result.started_at} to {result.finished_at}",
        f"- Files: {', '.join(f'`{f}`' for f in result.files)}",
        f"- Outcome: **{outcome}**",
        "",
        "## Status counts",
        "",
        *table_header(["status", "rows"], "lr"),
    ]
    lines += [table_row([status, n]) for status, n in sorted(result.status_counts().items())]
    if result.local:
        lines += ["", "Rows with a local image file, not URL-checked: " + ", ".join(
            f"`{name}`: {n}" for name, n in sorted(result.local.items())
        )]  # fmt: skip
    failing = [r for r in result.rows if r.status != Status.OK.value]
    if failing:
        lines += ["", f"## Failing rows ({len(failing)})", "",
                  *table_header(["row", "status", "detail", "failed checks in a row",
                                 "failing since", "url"], "lllrll")]  # fmt: skip
        lines += [
            table_row([r.ref.idx, r.status, escape_cell(r.detail), r.consecutive_failures,
                       r.failing_since or "", escape_cell(redact_url(r.url))])
            for r in failing
        ]  # fmt: skip
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
                  *table_header(["file", "occupation", "context", "cell", "healthy", "needed"],
                                "llllrr")]  # fmt: skip
        lines += [
            table_row([f"`{b.file}`", b.occupation, b.context, b.cell, b.healthy, b.needed])
            for b in result.below_balance
        ]
    if result.unwritten:
        lines += ["", f"## Files NOT written ({len(result.unwritten)})", ""]
        lines += [f"- `{u.file}`: {escape_cell(u.reason)}" for u in result.unwritten]
    if result.rewritten or result.dropped or result.merged:
        lines += ["", "## Files written", ""]
        lines += [f"- rewrote `{path}` (Error codes column)" for path in result.rewritten]
        lines += [
            f"- `{path}` was edited during the run: this run's codes were merged into it"
            for path in result.merged
        ]
        if result.kept_as_written:
            lines.append(
                "- rows added or changed during the run, kept as written: "
                + ", ".join(result.kept_as_written)
            )
        if result.dropped:
            lines.append(f"- dropped retired rows: {', '.join(result.dropped)}")
            lines += [f"- backup: `{path}`" for path in result.backups]
    if result.removed_temporaries:
        lines += ["", "## Temporary files of an interrupted run, removed", ""]
        lines += [f"- `{path}`" for path in result.removed_temporaries]
    return "\n".join(lines) + "\n"
