"""``contrastkit build ...``: assemble datasets."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from contrastkit.builders.visogender import DEFAULT_PER_CELL, build_visogender
from contrastkit.cli.common import (
    TAXONOMY_OPTION,
    console,
    parse_contexts,
    print_json,
    taxonomy_from,
    user_errors,
)

app = typer.Typer(
    help="Assemble datasets.\n\nExample:\n\n    contrastkit build visogender "
    "--candidates examples/candidates.csv --out build/example",
    no_args_is_help=True,
)


@app.command("visogender")
def visogender(
    candidates: Path = typer.Option(
        ..., "--candidates", help="Candidate pool: CSV, TSV, JSONL or JSON (fields in README)."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder."),
    per_cell: int = typer.Option(
        DEFAULT_PER_CELL, "--per-cell", "-n", min=1, help="Images per gender cell (paper: 5)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the per-cell sampling."),
    contexts: str = typer.Option("OP,OO", "--contexts", help="Scene types to build: OP, OO."),
    occupations: str | None = typer.Option(
        None,
        "--occupations",
        help="Comma-separated occupations, or 'all' for the whole taxonomy "
        "(default: those in the pool).",
    ),
    keep_incomplete: bool = typer.Option(
        False, "--keep-incomplete", help="Also write occupations whose cells fall short."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 1 on any shortfall (and leave earlier TSVs in place)."
    ),
    taxonomy: list[Path] | None = TAXONOMY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the build report as JSON."),
) -> None:
    """Select balanced OP and OO sets from a candidate pool and write official-format TSVs.

    Per occupation: OO n masculine + n feminine, OP n of each of MM, MF, FM, FF
    (VisoGender's balance). Unlicensed and duplicate candidates are skipped; occupations
    that fall short are reported and left out unless --keep-incomplete.

    Example:

        contrastkit build visogender --candidates examples/candidates.csv --out build/example
    """
    with user_errors():
        chosen: list[str] | str | None = None
        if occupations is not None:
            chosen = (
                "all"
                if occupations.strip() == "all"
                else [name.strip() for name in occupations.split(",") if name.strip()]
            )
        result = build_visogender(
            candidates,
            out,
            taxonomy_from(taxonomy),
            per_cell=per_cell,
            seed=seed,
            contexts=parse_contexts(contexts),
            occupations=chosen,
            keep_incomplete=keep_incomplete,
            strict=strict,
        )
    if as_json:
        print_json(result.report())
    else:
        counts = ", ".join(f"{c.value}: {len(rows)} rows" for c, rows in result.rows.items())
        console.print(f"Selected {counts} for {len(result.included)} occupations.")
        console.print(
            f"Skipped {len(result.skipped_unlicensed)} unlicensed and "
            f"{len(result.skipped_duplicates)} duplicate candidates."
        )
        if result.shortfalls:
            table = Table(title="Cells that fall short")
            for column in ("occupation", "context", "cell", "available", "needed", "short by"):
                table.add_column(column, justify="right" if column[0] in "ans" else "left")
            for s in result.shortfalls:
                table.add_row(
                    s.occupation,
                    s.context,
                    s.cell,
                    str(s.available),
                    str(s.needed),
                    str(s.short_by),
                )
            console.print(table)
            if result.excluded:
                console.print(f"Left out (incomplete): {', '.join(result.excluded)}")
        for path in result.written:
            console.print(f"wrote {path}")
    if strict and result.shortfalls:
        raise typer.Exit(1)
