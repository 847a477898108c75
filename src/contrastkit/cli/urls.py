"""``contrastkit urls ...``: URL integrity checks and the nightly maintenance job."""

from __future__ import annotations

import inspect
import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from contrastkit.cli.common import console, err_console, print_json, user_errors
from contrastkit.curation.dedup import NEAR_DUPLICATE_MAX_DISTANCE
from contrastkit.curation.images import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MIN_SIDE,
    ImageLimits,
)
from contrastkit.curation.integrity import IntegrityReport, check_tables, read_tables
from contrastkit.curation.maintenance import (
    MaintenanceError,
    MaintenanceResult,
    RetirementPolicy,
    maintain,
)
from contrastkit.curation.urls import DEFAULT_USER_AGENT, CheckConfig, URLCheck, redact_url
from contrastkit.io import atomic_write_text
from contrastkit.store import ImageStore

app = typer.Typer(
    help=(
        "Check that image URLs still serve the image, and keep datasets healthy from cron.\n\n"
        "Example: contrastkit urls check build/example/visogender_OP.tsv --store build/images"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

_NETWORK = "Network"
_IMAGES = "Image limits"


def checker_options(
    concurrency: int = typer.Option(
        64, min=1, help="Requests in flight at once.", rich_help_panel=_NETWORK
    ),
    per_host: int = typer.Option(
        16, min=1, help="Requests in flight at once to one host.", rich_help_panel=_NETWORK
    ),
    connect_timeout: float = typer.Option(
        10.0, min=0.01, help="Seconds to resolve and connect.", rich_help_panel=_NETWORK
    ),
    read_timeout: float = typer.Option(
        20.0, min=0.01, help="Seconds allowed between received bytes.", rich_help_panel=_NETWORK
    ),
    timeout: float = typer.Option(
        60.0, min=0.01, help="Seconds for a whole request.", rich_help_panel=_NETWORK
    ),
    retries: int = typer.Option(
        2,
        min=0,
        help="Retries after a transient failure (5xx, 429, timeout).",
        rich_help_panel=_NETWORK,
    ),
    max_redirects: int = typer.Option(5, min=0, rich_help_panel=_NETWORK),
    max_retry_after: float = typer.Option(
        30.0, min=0, help="Longest Retry-After honoured, in seconds.", rich_help_panel=_NETWORK
    ),
    user_agent: str = typer.Option(DEFAULT_USER_AGENT, rich_help_panel=_NETWORK),
    allow_private: bool = typer.Option(
        False,
        help="Allow loopback, private and link-local addresses (tests, intranet mirrors).",
        rich_help_panel=_NETWORK,
    ),
    allow_network: list[str] | None = typer.Option(
        None,
        metavar="CIDR",
        help="Allow one non-public network, e.g. 10.1.0.0/16. Repeatable.",
        rich_help_panel=_NETWORK,
    ),
    resolve: list[str] | None = typer.Option(
        None,
        metavar="HOST:ADDRESS",
        help="Use ADDRESS for HOST instead of DNS. Repeatable.",
        rich_help_panel=_NETWORK,
    ),
    max_bytes: int = typer.Option(DEFAULT_MAX_BYTES, min=1, rich_help_panel=_IMAGES),
    max_pixels: int = typer.Option(DEFAULT_MAX_PIXELS, min=1, rich_help_panel=_IMAGES),
    min_side: int = typer.Option(DEFAULT_MIN_SIDE, min=1, rich_help_panel=_IMAGES),
) -> CheckConfig:
    """Build a :class:`CheckConfig` from the shared command-line options."""
    pairs = []
    for item in resolve or []:
        host, sep, address = item.rpartition(":") if item.count(":") == 1 else item.partition(":")
        if not sep or not host or not address:
            raise ValueError(f"--resolve {item!r}: expected HOST:ADDRESS")
        pairs.append((host, address))
    return CheckConfig(
        concurrency=concurrency,
        per_host=per_host,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        total_timeout=timeout,
        retries=retries,
        max_redirects=max_redirects,
        max_retry_after=max_retry_after,
        user_agent=user_agent,
        allow_private=allow_private,
        allowed_networks=tuple(allow_network or ()),
        resolve=tuple(pairs),
        limits=ImageLimits(max_bytes=max_bytes, max_pixels=max_pixels, min_side=min_side),
    )


def with_checker_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give ``command`` the options of :func:`checker_options`; it receives ``config=``."""
    shared = inspect.signature(checker_options).parameters
    own = [p for p in inspect.signature(command).parameters.values() if p.name != "config"]

    def wrapper(**kwargs: Any) -> None:
        options = {name: kwargs.pop(name) for name in shared}
        with user_errors():
            config = checker_options(**options)
        command(**kwargs, config=config)

    parameters = own + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in shared.values()]
    wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapper.__name__, wrapper.__doc__ = command.__name__, command.__doc__
    annotations = dict(command.__annotations__)
    annotations.pop("config", None)
    wrapper.__annotations__ = annotations | {
        name: ann for name, ann in checker_options.__annotations__.items() if name != "return"
    }
    return wrapper


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[URLCheck], Any]]:
    """A rich progress bar on stderr (only on a terminal); yields the per-result callback."""
    if not err_console.is_terminal:
        yield lambda result: None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(label, total=total, failed=0)
        failed = 0

        def advance(result: URLCheck) -> None:
            nonlocal failed
            failed += not result.ok
            progress.update(task, advance=1, failed=failed)

        yield advance


def print_status_counts(counts: Counter[str], title: str) -> None:
    """Rows per status, ok first and in green, failures by frequency in red."""
    table = Table(title=title)
    table.add_column("status")
    table.add_column("rows", justify="right")
    for status, count in sorted(counts.items(), key=lambda item: (item[0] != "ok", -item[1])):
        table.add_row(status, str(count), style="green" if status == "ok" else "red")
    console.print(table)


def print_integrity(report: IntegrityReport, limit: int = 50) -> None:
    """Summary table, failing rows and duplicate groups, for people."""
    counts = report.status_counts()
    urls = len({r.result.url for r in report.rows})
    print_status_counts(counts, f"{len(report.rows)} rows, {urls} URLs")
    failed = report.failed
    if failed:
        table = Table(title=f"Failed rows ({len(failed)})")
        for column in ("row", "status", "detail", "url"):
            table.add_column(column, overflow="fold")
        for row in failed[:limit]:
            result = row.result
            detail = result.detail or ""
            table.add_row(row.ref.idx, result.status.value, detail, redact_url(result.url))
        console.print(table)
        if len(failed) > limit:
            console.print(f"... and {len(failed) - limit} more (use --json for all)")
    if report.duplicates:
        table = Table(title=f"Duplicate groups ({len(report.duplicates)})")
        table.add_column("kind")
        table.add_column("rows", overflow="fold")
        for group in report.duplicates:
            table.add_row(group.kind, ", ".join(group.items))
        console.print(table)
    verdict = "[green]all URLs healthy[/]" if report.ok else "[red]problems found[/]"
    console.print(verdict)


@app.command("check")
@with_checker_options
def check(
    files: list[Path] = typer.Argument(..., help="Official-format OP and/or OO TSVs."),
    store: Path | None = typer.Option(
        None, help="Keep every image that decodes in this content-addressed store."
    ),
    near_distance: int = typer.Option(
        NEAR_DUPLICATE_MAX_DISTANCE,
        help="Largest perceptual-hash distance (bits of 64) of a near-duplicate; -1: off.",
    ),
    results: Path | None = typer.Option(
        None, help="Also write one JSON line per row (status, detail, hashes) to this file."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    *,
    config: CheckConfig,
) -> None:
    """Check every URL of the given TSVs: reachable, safe, and a fully decodable image.

    Each URL ends with one status: ok, http_error, timeout, dns_error, connection_error,
    too_many_redirects, not_an_image, image_too_large, image_too_small, blocked_address,
    invalid_url or opted_out. Rows that share an image (same URL, same resource at another
    size, same bytes, or a perceptual near-duplicate) are reported as groups of row IDs.
    Exit code 0 when everything is healthy, 1 when any URL failed or duplicates exist,
    2 when a file cannot be read.

    Example:

        contrastkit urls check build/example/visogender_O?.tsv --store build/images
    """
    with user_errors():
        tables = read_tables(files)
    image_store = ImageStore(store) if store is not None else None
    distinct = len({row.url for table in tables for row in table.rows})
    with progress_bar(distinct, "checking URLs") as advance:
        report = check_tables(
            tables, config, store=image_store, on_result=advance, max_distance=near_distance
        )
    if results is not None:
        lines = "".join(json.dumps(row.to_dict()) + "\n" for row in report.rows)
        atomic_write_text(results, lines)
    if as_json:
        print_json(report.to_dict())
    else:
        print_integrity(report)
    if not report.ok:
        raise typer.Exit(1)


@app.command("maintain")
@with_checker_options
def maintain_command(
    files: list[Path] = typer.Argument(..., help="Official-format OP and/or OO TSVs."),
    db: Path = typer.Option(..., help="SQLite state database (created on the first run)."),
    store: Path | None = typer.Option(
        None, help="Keep every image that decodes in this content-addressed store."
    ),
    report: Path | None = typer.Option(
        None, help="Markdown report path [default: DB's folder, maintenance_report.md]."
    ),
    retire_after: int = typer.Option(
        3, min=1, help="Retire a row after this many consecutive failed checks ..."
    ),
    retire_days: float = typer.Option(7.0, min=0, help="... that span at least this many days."),
    per_cell: int = typer.Option(
        5, "--per-cell", "-n", min=1, help="Healthy rows each occupation cell needs."
    ),
    drop_retired: bool = typer.Option(
        False, help="Remove retired rows from the TSVs (each file is backed up first)."
    ),
    accept_changes: bool = typer.Option(
        False, help="Take the images served now as the rows' reference images."
    ),
    near_distance: int = typer.Option(
        NEAR_DUPLICATE_MAX_DISTANCE,
        help="Perceptual-hash distance (bits) up to which an image is the same picture.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the run's result as JSON."),
    *,
    config: CheckConfig,
) -> None:
    """Nightly maintenance for cron: check every URL, record the checks in SQLite, flag rows
    whose image changed, retire rows that keep failing, write the TSVs back atomically with
    the `Error codes` column filled, report cells below balance, write a markdown report.

    Exit code 0 when the dataset is healthy, 1 when degraded (failing, changed or retired
    rows, shared images, cells below balance), 2 when the job could not run.

    Example:

        contrastkit urls maintain data/visogender_OP.tsv data/visogender_OO.tsv --db state.sqlite
    """
    report_path = report or db.parent / "maintenance_report.md"
    with user_errors():
        tables = read_tables(files)
        distinct = len({row.url for table in tables for row in table.rows})
        try:
            with progress_bar(distinct, "maintaining") as advance:
                result = maintain(
                    tables,
                    db,
                    config,
                    policy=RetirementPolicy(failures=retire_after, days=retire_days),
                    per_cell=per_cell,
                    store=ImageStore(store) if store is not None else None,
                    drop_retired=drop_retired,
                    accept_changes=accept_changes,
                    report_path=report_path,
                    max_distance=near_distance,
                    on_result=advance,
                )
        except (MaintenanceError, sqlite3.Error, OSError) as exc:
            raise ValueError(str(exc)) from None
    if as_json:
        print_json(result.to_dict())
    else:
        print_maintenance(result)
    raise typer.Exit(result.exit_code)


def print_maintenance(result: MaintenanceResult) -> None:
    """Summary of a maintenance run, for people (the markdown report has the details)."""
    print_status_counts(result.status_counts(), f"Run {result.run_id}: {len(result.rows)} rows")
    facts = {
        "content changed": [r.ref.idx for r in result.rows if r.content_changed],
        "retired": [r.ref.idx for r in result.rows if r.retired],
        "dropped": result.dropped,
        "groups sharing an image": [", ".join(g.items) for g in result.duplicates],
        "cells below balance": [
            f"{b.occupation} {b.context} {b.cell} ({b.healthy}/{b.needed})"
            for b in result.below_balance
        ],
    }
    for label, items in facts.items():
        if items:
            console.print(f"[bold]{label}[/] ({len(items)}): {'; '.join(items)}")
    for path in result.rewritten:
        console.print(f"rewrote {path}")
    if result.report_path:
        console.print(f"report: {result.report_path}")
    verdict = "[green]healthy[/]" if result.healthy else "[yellow]degraded[/]"
    console.print(verdict)
