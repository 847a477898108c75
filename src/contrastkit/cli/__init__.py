"""The ``contrastkit`` command line: one typer app, one module per command group.

Commands only parse options, call library functions and print; the work itself lives in
``contrastkit.builders``, ``contrastkit.curation`` and ``contrastkit.evaluators``.
"""

from __future__ import annotations

import sys
import traceback

import typer

from contrastkit import __version__
from contrastkit.cli import audit, build, evaluate, export, quickstart, taxonomy, urls, validate
from contrastkit.cli import models as models_cli
from contrastkit.cli.common import DEBUG, EXIT_BUG, err_console, shown
from contrastkit.cli.helptext import App
from contrastkit.records import follow_links

app = App(
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
    pretty_exceptions_enable=False,
)
app.add_typer(build.app, name="build")
app.command(name="validate")(validate.validate)
app.add_typer(taxonomy.app, name="taxonomy")
app.add_typer(urls.app, name="urls")
app.add_typer(export.app, name="export")
app.add_typer(models_cli.app, name="models")
app.command(name="publish")(export.publish_command)
evaluate.register(app)
app.command(name="quickstart")(quickstart.quickstart)
app.command(name="audit")(audit.audit_command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"contrastkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", help="Print tracebacks (with their causes) of reported errors too."
    ),
    follow_symlinks: bool = typer.Option(
        False,
        "--follow-symlinks",
        help=(
            "Let links inside a data folder lead out of it: read, evaluate and export the "
            "files they point to (a folder of links to a dataset on other storage). "
            "Without it such a link is refused (SECURITY.md). Only for data you trust."
        ),
    ),
) -> None:
    """contrastkit: datasets for measuring gender bias in vision-language models."""
    DEBUG["enabled"] = debug
    follow_links(follow_symlinks)
    ctx.call_on_close(lambda: follow_links(False))  # for this one command only


def main() -> None:
    """Console-script entry point.

    Errors a user can fix are reported by each command (exit 2), and so are bad options
    and unknown commands (typer's usage errors, exit 2). Anything else is a bug in
    contrastkit: its traceback is printed under a line that says so, exit code 70.
    """
    try:
        # Standalone mode: typer reports usage errors itself (whatever click it bundles)
        # and ends with SystemExit; only a bug gets past it as another exception.
        app()
    except Exception:
        err_console.print(
            "internal error: this is a bug in contrastkit, not a problem with your input; "
            "please report it with the traceback below",
            style="bold red",
            markup=False,
        )
        err_console.print(
            shown(traceback.format_exc(), multiline=True), markup=False, highlight=False
        )
        sys.exit(EXIT_BUG)
