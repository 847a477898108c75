"""Helpers shared by the command modules: consoles, error reporting, option parsing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from contrastkit.schema import Context, DataFormatError
from contrastkit.taxonomy import Taxonomy, load_taxonomy

console = Console()
err_console = Console(stderr=True)

#: Exit code for input the command could not use (bad file, bad option).
EXIT_BAD_INPUT = 2

TAXONOMY_OPTION = typer.Option(
    None,
    "--taxonomy",
    help="Extra occupations (CSV/TSV/JSONL/JSON with occupation, sector, specialisation, "
    "participant, object). Repeatable.",
)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn malformed-input errors into one clear line on stderr and exit code 2."""
    try:
        yield
    except DataFormatError as error:
        err_console.print(f"[bold red]error:[/] {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except (KeyError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def taxonomy_from(paths: list[Path] | None) -> Taxonomy:
    """The built-in taxonomy extended with the files given on the command line."""
    return load_taxonomy(paths or None)


def parse_contexts(text: str) -> list[Context]:
    """``"OP,OO"`` -> [Context.OP, Context.OO]."""
    contexts = [Context.parse(part) for part in text.split(",") if part.strip()]
    if not contexts:
        raise ValueError("--contexts needs at least one of OP, OO")
    return list(dict.fromkeys(contexts))


def print_json(data: Any) -> None:
    """Write JSON to stdout, unstyled, for machines."""
    typer.echo(json.dumps(data, indent=2))
