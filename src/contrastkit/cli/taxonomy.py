"""``contrastkit taxonomy ...``: inspect the occupational taxonomy."""

from __future__ import annotations

from pathlib import Path

import typer

from contrastkit.cli.common import (
    TAXONOMY_OPTION,
    console,
    plain,
    print_json,
    taxonomy_from,
    user_errors,
)
from contrastkit.cli.helptext import App
from contrastkit.taxonomy import builtin_source

app = App(
    help="Inspect the occupational taxonomy.\n\nExample:\n\n    contrastkit taxonomy show",
    no_args_is_help=True,
)


@app.command("show")
def show(
    taxonomy: list[Path] | None = TAXONOMY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List occupations with their sector, specialisation, participant and object.

    Example:

        contrastkit taxonomy show --taxonomy my_occupations.csv
    """
    with user_errors():
        loaded = taxonomy_from(taxonomy)
    if as_json:
        print_json(
            {
                "sources": loaded.sources,
                "occupations": [
                    {
                        "occupation": o.name,
                        "sector": o.sector,
                        "specialisation": o.specialisation,
                        "participant": o.participant,
                        "object": o.object,
                        "source": o.source,
                    }
                    for o in loaded
                ],
            }
        )
        return
    from rich.table import Table

    table = Table(title=f"{len(loaded)} occupations")
    for column in ("sector", "specialisation", "occupation", "participant", "object", "source"):
        table.add_column(column, overflow="fold")
    for o in loaded:
        table.add_row(*(plain(value) for value in (
            o.sector, o.specialisation, o.name, o.participant, o.object, o.source)))  # fmt: skip
    console.print(table)
    console.print(plain(f"Built-in source: {builtin_source()}"), highlight=False)
