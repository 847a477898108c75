"""``contrastkit validate FILE...``: check VisoGender-style TSVs."""

from __future__ import annotations

from pathlib import Path

import typer

from contrastkit.cli.common import (
    EXIT_BAD_INPUT,
    TAXONOMY_OPTION,
    echo,
    print_json,
    taxonomy_from,
    user_errors,
)
from contrastkit.curation.validation import DEFAULT_MAX_FINDINGS


def validate(
    files: list[str] = typer.Argument(
        ...,
        help="Official-format OP and/or OO TSVs, or `visogender`: the official sets bundled "
        "with contrastkit, as `evaluate --data visogender` reads them (a local file of that "
        "name is `./visogender`).",
    ),
    per_cell: int | None = typer.Option(
        None, "--per-cell", "-n", min=1, help="Require exactly this many images per cell."
    ),
    taxonomy: list[Path] | None = TAXONOMY_OPTION,
    max_findings: int = typer.Option(
        DEFAULT_MAX_FINDINGS,
        "--max-findings",
        min=0,
        help="List at most N findings of each check (the others are counted); 0: all.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Check schema, labels, unique IDs, balance per occupation cell, duplicate and
    canonical-duplicate URLs across all files, and nouns spelled two ways.

    Exit code 0 when no error is found (warnings alone exit 0), 1 when an error is found
    in files that could be read, 2 when a file cannot be used at all (missing, a folder,
    empty, binary or not UTF-8 text); the report is printed in every case. Files are read
    line by line and at most --max-findings findings of each check are listed, so a huge
    broken file gives a short report.

    Example:

        contrastkit validate build/example/visogender_OP.tsv build/example/visogender_OO.tsv

        contrastkit validate visogender
    """
    from contrastkit.curation.validation import validate_files

    with user_errors():
        report = validate_files(
            files, taxonomy_from(taxonomy), per_cell=per_cell, max_findings=max_findings
        )
    if as_json:
        print_json(report.to_dict())
    else:
        echo(report.to_text())
    if report.unusable:
        raise typer.Exit(EXIT_BAD_INPUT)
    if not report.ok:
        raise typer.Exit(1)
