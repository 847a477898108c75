"""``contrastkit urls ...``: URL integrity checks and the nightly maintenance job.

Each command maps its options onto the job's config
(:class:`~contrastkit.curation.integrity.URLCheckJobConfig`,
:class:`~contrastkit.curation.maintenance.MaintainConfig`), runs the job and prints the
result. The jobs, and aiohttp with them, are imported inside the commands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from contrastkit.cli.common import (
    console,
    plain,
    print_json,
    progress,
    report_error,
    user_errors,
)
from contrastkit.cli.helptext import App
from contrastkit.cli.options import (
    ImageLimitOptions,
    NetworkOptions,
    NetworkTuning,
    with_options,
)
from contrastkit.curation.dedup import NEAR_DUPLICATE_MAX_DISTANCE
from contrastkit.text import count as counted

if TYPE_CHECKING:
    from contrastkit.curation.integrity import IntegrityReport
    from contrastkit.curation.maintenance import MaintenanceResult
    from contrastkit.curation.urls import URLCheck

app = App(
    help=(
        "Check that image URLs still serve the image, and keep datasets healthy from cron.\n\n"
        "Example: contrastkit urls check build/example/visogender_OP.tsv --store build/images"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

# -- options of both commands -------------------------------------------------------------

FILES = typer.Argument(..., help="Official-format OP and/or OO TSVs.")
STORE = typer.Option(None, help="Keep every image that decodes in this content-addressed store.")
# -- options of one command ---------------------------------------------------------------

CHECK_NEAR_DISTANCE = typer.Option(
    NEAR_DUPLICATE_MAX_DISTANCE,
    help="Largest perceptual-hash distance (bits of 64) of a near-duplicate; -1: off.",
)
RESULTS = typer.Option(
    None, help="Also write one JSON line per row (status, detail, hashes) to this file."
)
CHECK_JSON = typer.Option(False, "--json", help="Print the full report as JSON.")
ENGINE = typer.Option(
    "local", metavar="local|ray",
    help="Where the checks run: this process, or Ray tasks grouped by host "
    '(pip install "contrastkit[ray]"). Same report either way.',
)  # fmt: skip
RAY_ADDRESS = typer.Option(
    None, metavar="ADDR",
    help="With --engine ray: the Ray cluster (auto, ray://head:10001) "
    "[default: start a local Ray instance for the run].",
)  # fmt: skip
DB = typer.Option(..., help="SQLite state database (created on the first run).")
REPORT = typer.Option(
    None, help="Markdown report path [default: DB's folder, maintenance_report.md]."
)
RETIRE_AFTER = typer.Option(
    3, min=1, help="Retire a row after this many consecutive failed checks ..."
)
RETIRE_DAYS = typer.Option(7.0, min=0, help="... that span at least this many days.")
PER_CELL = typer.Option(
    5, "--per-cell", "-n", min=1, help="Healthy rows each occupation cell needs."
)
DROP_RETIRED = typer.Option(
    False, help="Remove retired rows from the TSVs (each file is backed up first)."
)
ACCEPT_CHANGES = typer.Option(
    False, help="Take the images served now as the rows' reference images."
)
MAINTAIN_NEAR_DISTANCE = typer.Option(
    NEAR_DUPLICATE_MAX_DISTANCE,
    help="Perceptual-hash distance (bits) up to which an image is the same picture.",
)
MAINTAIN_JSON = typer.Option(False, "--json", help="Print the run's result as JSON.")


class ProgressHooks:
    """A job's ``on_start`` / ``on_result`` hooks feeding one progress bar
    (:func:`~contrastkit.cli.common.progress`): the total, then a step per URL, failures
    counted."""

    def __init__(self, update: Callable[..., None]) -> None:
        self.update = update
        self.failed = 0

    def start(self, total: int) -> None:
        self.update(0, total)

    def result(self, result: URLCheck) -> None:
        self.failed += not result.ok
        self.update(advance=1, failed=self.failed)


# -- commands -------------------------------------------------------------------------------


@app.command("check")
@with_options
def check(
    files: list[Path] = FILES,
    store: Path | None = STORE,
    near_distance: int = CHECK_NEAR_DISTANCE,
    results: Path | None = RESULTS,
    as_json: bool = CHECK_JSON,
    engine: str = ENGINE,
    ray_address: str | None = RAY_ADDRESS,
    network: NetworkOptions = NetworkOptions(),
    tuning: NetworkTuning = NetworkTuning(),
    limits: ImageLimitOptions = ImageLimitOptions(),
) -> None:
    """Check every URL of the given TSVs: reachable, safe, and a fully decodable image.

    Each URL ends with one status: ok, http_error, timeout, dns_error, connection_error,
    too_many_redirects, not_an_image, image_too_large, image_too_small, blocked_address,
    invalid_url or opted_out. Rows that share an image (same URL, same resource at another
    size, same bytes, or a perceptual near-duplicate) are reported as groups of row IDs.
    Exit code 0 when everything is healthy, 1 when any URL failed or duplicates exist,
    2 when a file cannot be read or an output cannot be written.

    With --engine ray the URLs are checked by Ray tasks, one group of hosts per task (the
    per-host limits still hold); images and results are written by this process only.

    Example:

        contrastkit urls check build/example/visogender_O?.tsv --store build/images

        contrastkit urls check data/*.tsv --engine ray --ray-address auto
    """
    from contrastkit.curation.integrity import URLCheckJobConfig, check_dataset_urls

    with user_errors():
        checks = network.config(tuning, limits)
        config = URLCheckJobConfig(files=tuple(files), network=checks, store=store,
                                   near_distance=near_distance, results=results,
                                   engine=engine, ray_address=ray_address)  # type: ignore[arg-type]  # fmt: skip
        with progress("checking URLs") as update:
            hooks = ProgressHooks(update)
            report = check_dataset_urls(config, on_start=hooks.start, on_result=hooks.result)
    print_integrity(report, as_json)
    if not report.ok:
        raise typer.Exit(1)


@app.command("maintain")
@with_options
def maintain_command(
    files: list[Path] = FILES,
    db: Path = DB,
    store: Path | None = STORE,
    report: Path | None = REPORT,
    retire_after: int = RETIRE_AFTER,
    retire_days: float = RETIRE_DAYS,
    per_cell: int = PER_CELL,
    drop_retired: bool = DROP_RETIRED,
    accept_changes: bool = ACCEPT_CHANGES,
    near_distance: int = MAINTAIN_NEAR_DISTANCE,
    as_json: bool = MAINTAIN_JSON,
    engine: str = ENGINE,
    ray_address: str | None = RAY_ADDRESS,
    network: NetworkOptions = NetworkOptions(),
    tuning: NetworkTuning = NetworkTuning(),
    limits: ImageLimitOptions = ImageLimitOptions(),
) -> None:
    """Nightly maintenance for cron: check every URL, record the checks in SQLite, flag
    changed images, retire rows that keep failing, fill the TSVs' `Error codes` (edits made
    meanwhile are kept), report cells below balance, write a markdown report.

    Exit code 0 when healthy, 1 when degraded (failing, changed or retired rows, shared
    images, cells below balance), 2 when the job could not run or a TSV was not written
    back (the summary and the report are still written).

    With --engine ray the URLs are checked by Ray tasks, one group of hosts per task (the
    per-host limits still hold); the database, store, TSVs and report are written by this
    process only.

    Example:

        contrastkit urls maintain data/visogender_OP.tsv data/visogender_OO.tsv --db state.sqlite

        contrastkit urls maintain data/*.tsv --db state.sqlite --engine ray --ray-address auto
    """
    from contrastkit.curation.maintenance import MaintainConfig, RetirementPolicy, maintain

    with user_errors():
        checks = network.config(tuning, limits)
        config = MaintainConfig(
            files=tuple(files), db=db, network=checks, store=store, report=report,
            policy=RetirementPolicy(failures=retire_after, days=retire_days),
            per_cell=per_cell, drop_retired=drop_retired, accept_changes=accept_changes,
            near_distance=near_distance, engine=engine,  # type: ignore[arg-type]
            ray_address=ray_address)  # fmt: skip
        with progress("maintaining") as update:
            hooks = ProgressHooks(update)
            result = maintain(config, on_start=hooks.start, on_result=hooks.result)
    print_maintenance(result, as_json)
    raise typer.Exit(result.exit_code)


# -- printing -------------------------------------------------------------------------------


def print_status_counts(counts: Counter[str], title: str) -> None:
    """Rows per status, ok first and in green, failures by frequency in red."""
    table = Table(title=plain(title))
    table.add_column("status")
    table.add_column("rows", justify="right")
    for status, count in sorted(counts.items(), key=lambda item: (item[0] != "ok", -item[1])):
        table.add_row(plain(status), plain(count), style="green" if status == "ok" else "red")
    console.print(table)


def print_integrity(report: IntegrityReport, as_json: bool = False, limit: int = 50) -> None:
    """Summary table, failing rows and duplicate groups, for people; or all of it as JSON."""
    from contrastkit.curation.urls import redact_url

    if as_json:
        print_json(report.to_dict())
        return

    urls = len({r.result.url for r in report.rows})
    if report.rows or not report.local_rows:
        print_status_counts(
            report.status_counts(), f"{counted(len(report.rows), 'row')}, {counted(urls, 'URL')}"
        )
    failed = report.failed
    if failed:
        table = Table(title=f"Failed rows ({len(failed)})")
        for column in ("row", "status", "detail", "url"):
            table.add_column(column, overflow="fold")
        for row in failed[:limit]:
            result = row.result
            table.add_row(plain(row.ref.idx), plain(result.status.value), plain(result.detail),
                          plain(redact_url(result.url)))  # fmt: skip
        console.print(table)
        if len(failed) > limit:
            console.print(plain(f"... and {len(failed) - limit} more (use --json for all)"))
    if report.duplicates:
        table = Table(title=f"Duplicate groups ({len(report.duplicates)})")
        table.add_column("kind")
        table.add_column("rows", overflow="fold")
        for group in report.duplicates:
            table.add_row(plain(group.kind), plain(", ".join(group.items)))
        console.print(table)
    _print_local_rows(report.local)
    console.print(
        Text("problems found", style="red")
        if not report.ok
        else Text(
            "no URLs to check: nothing to check for local files (every row names a local "
            "image file; urls check checks http(s) image URLs)",
            style="green",
        )
        if not report.rows and report.local_rows
        else Text("no URLs to check", style="green")
        if not report.rows
        else Text("all URLs healthy", style="green")
    )


def _print_local_rows(local: dict[str, int]) -> None:
    """How many rows of each probe file have a local image and were not URL-checked."""
    if local:
        files = "; ".join(f"{Path(name).name}: {n}" for name, n in local.items())
        console.print(plain(
            f"{counted(sum(local.values()), 'row')} with a local image file, not URL-checked "
            f"({files})"
        ))  # fmt: skip


def print_maintenance(result: MaintenanceResult, as_json: bool = False) -> None:
    """Summary of a maintenance run, for people (the markdown report has the details); or
    the run's result as JSON. The TSVs left unwritten are also named on stderr."""
    if as_json:
        print_json(result.to_dict())
    else:
        _print_maintenance_summary(result)
    for unwritten in result.unwritten:
        report_error("state error", f"{unwritten.file}: not written back: {unwritten.reason}")


def _print_maintenance_summary(result: MaintenanceResult) -> None:
    print_status_counts(
        result.status_counts(), f"Run {result.run_id}: {counted(len(result.rows), 'row')}"
    )
    _print_local_rows(result.local)
    facts = {
        "content changed": [r.ref.idx for r in result.rows if r.content_changed],
        "retired": [r.ref.idx for r in result.rows if r.retired],
        "dropped": result.dropped,
        "groups sharing an image": [", ".join(g.items) for g in result.duplicates],
        "cells below balance": [
            f"{b.occupation} {b.context} {b.cell} ({b.healthy}/{b.needed})"
            for b in result.below_balance
        ],
        "edited during the run, codes merged": result.merged,
        "rows added or changed during the run, kept as written": result.kept_as_written,
        "temporary files of an interrupted run removed": result.removed_temporaries,
    }
    for label, items in facts.items():
        if items:
            line = f" ({len(items)}): {'; '.join(items)}"
            console.print(Text.assemble((label, "bold"), plain(line)))
    for path in result.rewritten:
        console.print(plain(f"rewrote {path}"))
    if result.report_path:
        console.print(plain(f"report: {result.report_path}"))
    styles = {"healthy": "green", "degraded": "yellow"}
    console.print(Text(result.outcome, style=styles.get(result.outcome, "bold red")))
