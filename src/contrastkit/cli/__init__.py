"""The ``contrastkit`` command line: one typer app, one module per command group.

Commands only parse options, call library functions and print; the work itself lives in
``contrastkit.builders``, ``contrastkit.curation`` and ``contrastkit.evaluators``.
"""

from __future__ import annotations

import typer

from contrastkit import __version__
from contrastkit.cli import build, evaluate, export, quickstart, taxonomy, urls, validate

app = typer.Typer(
    name="contrastkit",
    help=(
        "Build, maintain, publish and score datasets that measure gender bias in "
        "vision-language models.\n\n"
        "Example: contrastkit build visogender --candidates examples/candidates.csv "
        "--out build/example"
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="markdown",
)
app.add_typer(build.app, name="build")
app.command(name="validate")(validate.validate)
app.add_typer(taxonomy.app, name="taxonomy")
app.add_typer(urls.app, name="urls")
app.add_typer(export.app, name="export")
app.command(name="publish")(export.publish_command)
evaluate.register(app)
app.command(name="quickstart")(quickstart.quickstart)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"contrastkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """contrastkit: datasets for measuring gender bias in vision-language models."""


def main() -> None:
    """Console-script entry point."""
    app()
