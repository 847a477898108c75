"""``contrastkit validate FILE...``: check VisoGender-style TSVs."""

from __future__ import annotations

from pathlib import Path

import typer

from contrastkit.cli.common import TAXONOMY_OPTION, print_json, taxonomy_from, user_errors


def validate(
    files: list[Path] = typer.Argument(..., help="Official-format OP and/or OO TSVs."),
    per_cell: int | None = typer.Option(
        None, "--per-cell", "-n", min=1, help="Require exactly this many images per cell."
    ),
    taxonomy: list[Path] | None = TAXONOMY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check schema, labels, unique IDs, balance per occupation cell, duplicate and
    canonical-duplicate URLs across all files, and nouns spelled two ways.

    Exit code 1 when an error is found (warnings alone exit 0), 2 when a file cannot be
    used at all.

    Example:

        contrastkit validate build/example/visogender_OP.tsv build/example/visogender_OO.tsv
    """
    from contrastkit.curation.validation import validate_files

    with user_errors():
        report = validate_files(files, taxonomy_from(taxonomy), per_cell=per_cell)
    if as_json:
        print_json(report.to_dict())
    else:
        typer.echo(report.to_text())
    if not report.ok:
        raise typer.Exit(1)
