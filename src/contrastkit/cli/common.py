"""Helpers shared by the command modules: consoles, error reporting, option parsing."""

from __future__ import annotations

import json
import re
import sqlite3
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypedDict

import typer
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.text import Text

from contrastkit.errors import ConfigError, ContrastkitError, ResourceError
from contrastkit.schema import Context
from contrastkit.taxonomy import Taxonomy, load_taxonomy

#: The width of output that goes to a pipe, a file or a test runner rather than a
#: terminal: wide enough that no table is cut and no line or URL is split; a terminal
#: gets its own width, where tables wrap their cells.
PIPED_WIDTH = 100_000


class WideWhenPiped(Console):
    """A rich :class:`~rich.console.Console` that is :data:`PIPED_WIDTH` wide whenever
    its file is not a terminal (checked at each print, so a file swapped in later, as
    ``typer.testing.CliRunner`` does, counts), instead of rich's 80 columns; on a
    terminal it is the terminal's width."""

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size, or :data:`PIPED_WIDTH` columns off a terminal."""
        dimensions = super().size
        if self.is_terminal:
            return dimensions
        return ConsoleDimensions(PIPED_WIDTH, dimensions.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        width, height = new_size
        self._width = width
        self._height = height


console = WideWhenPiped()
err_console = WideWhenPiped(stderr=True)

#: Exit code for input the command could not use (bad file, bad option).
EXIT_BAD_INPUT = 2

TAXONOMY_OPTION = typer.Option(
    None,
    "--taxonomy",
    help="Extra occupations (CSV/TSV/JSONL/JSON with occupation, sector, specialisation, "
    "participant, object). Repeatable.",
)


#: Exit code of a command that hit a bug in contrastkit (BSD ``EX_SOFTWARE``).
EXIT_BUG = 70

#: Set by ``contrastkit --debug``: print tracebacks of reported errors too.
DEBUG = {"enabled": False}


# C0 and C1 controls (but tab and newline), DEL, the bidirectional marks, embeddings,
# overrides and isolates, the line and paragraph separators, and lone surrogates (the
# undecodable bytes of a file name): shown as escapes, never sent to the terminal.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
    "\u2066-\u2069\ud800-\udfff]"
)


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(value: object, *, multiline: bool = False) -> str:
    """``value`` as a string safe to print: control characters (an ANSI escape, a carriage
    return, a NUL), bidirectional overrides, U+2028 and lone surrogates are written as
    escapes (``\\x1b``, ``\\u202e``); a line break too unless ``multiline``.

    Every string that comes from data (IDs, URLs, labels, file names, error messages) goes
    through this, and is then printed as text, never as rich markup (:func:`plain`).
    """
    text = _UNSAFE.sub(_escape_char, str(value))
    return text if multiline else text.replace("\n", "\\n")


#: Longest text :func:`plain` prints (a table cell, a line); the rest is counted.
MAX_SHOWN = 1000


def plain(value: object, style: str = "", *, limit: int = MAX_SHOWN) -> Text:
    """``value`` as a rich :class:`~rich.text.Text`: printed as is (never parsed as markup),
    made safe by :func:`shown`, cut after ``limit`` characters (a field of 100,000
    characters gives one short cell, not pages). Use it for every table cell, title and
    line that holds data."""
    text = shown(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return Text(text, style=style)


def echo(text: str) -> None:
    """Print multi-line plain text (a report) to stdout, made safe by :func:`shown`."""
    typer.echo(shown(text, multiline=True))


def report_error(label: str, message: str) -> None:
    """``label: message`` on stderr; the message is printed as text, never as markup."""
    err_console.print(Text.assemble((f"{label}: ", "bold red"), shown(message)), soft_wrap=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Report the errors a user can fix as one line on stderr and exit 2.

    :class:`~contrastkit.errors.ContrastkitError` (bad data, bad options, a missing
    model, an unusable state, an unwritable folder) and the operating system's errors
    (a missing input file; a full disk or a permission, named as an environment error).
    Anything else is a bug: it propagates, and :func:`contrastkit.cli.main` prints its
    traceback. ``--debug`` prints tracebacks of reported errors too, causes included.
    """
    try:
        yield
    except typer.Exit:
        raise
    except ContrastkitError as error:
        _report(error, error.label, cli_wording(str(error)))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as error:
        _report(error, "error", f"{error.filename}: {error.strerror}")
    except (OSError, sqlite3.OperationalError) as error:
        _report(error, "environment error", str(error))


#: A Python argument with its flag beside it, as the library's messages name both:
#: ``download=True (`--allow-download`)``.
_ARGUMENT_WITH_FLAG = re.compile(r"\b[a-z_][a-z0-9_]*=[\w.'\"-]+ \(`(--[a-z0-9-]+)`\)")
#: A Python argument alone: ``dry_run=True``.
_ARGUMENT = re.compile(r"(?<![\w-])([a-z_][a-z0-9_]*)=(True|False)\b")


def _command_params() -> dict[str, Any]:
    """The parameters of the running command by name (none outside a command)."""
    import importlib

    # typer's own click (recent typer bundles one; older ones use click itself)
    package = typer.Context.__mro__[1].__module__.rsplit(".", 1)[0]
    context = importlib.import_module(f"{package}.globals").get_current_context(silent=True)
    if context is None:
        return {}
    return {param.name: param for param in context.command.params if param.name}


def cli_wording(message: str) -> str:
    """A library message in the words of the command line: its leading field name
    (``split: must not be empty``) as the running command's option that sets it
    (``--split: ...``), and the Python arguments it names (``pass download=True
    (`--allow-download`)``, ``dry_run=True``) as the flags (``pass `--allow-download```):
    messages a command prints name its flags, not the config's fields."""
    params = _command_params()
    field, sep, rest = message.partition(":")
    if sep and field.isidentifier() and field in params:
        flags = [opt for opt in params[field].opts if opt.startswith("--")]
        if flags:
            message = f"{flags[0]}{sep}{rest}"
    message = _ARGUMENT_WITH_FLAG.sub(lambda match: f"`{match.group(1)}`", message)

    def flag(match: re.Match[str]) -> str:
        param = params.get(match.group(1))
        if param is None:
            return match.group(0)
        opts = param.opts if match.group(2) == "True" else param.secondary_opts
        named = [opt for opt in opts if opt.startswith("--")]
        return f"`{named[0]}`" if named else match.group(0)

    return _ARGUMENT.sub(flag, message)


def _report(error: BaseException, label: str, message: str) -> NoReturn:
    if DEBUG["enabled"]:
        trace = "".join(traceback.format_exception(error))
        err_console.print(Text(shown(trace, multiline=True)), highlight=False)
    report_error(label, message)
    cause = error.__cause__
    if isinstance(error, ResourceError) and isinstance(cause, OSError):
        cause = None  # the message has the system's reason; the cause may name a probe file
    if cause is not None and str(cause) and str(cause) not in message:
        err_console.print(plain(f"  caused by {type(cause).__name__}: {cause}"), soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT) from error


@contextmanager
def progress(
    label: str, total: int | None = None, *, every: float | None = None
) -> Iterator[Callable[..., None]]:
    """One progress bar on stderr, on a terminal; off a terminal (a log file, a pipe),
    with ``every``, plain lines instead (:func:`progress_lines`), else nothing.

    Yields ``update(done=None, total=None, advance=0, failed=None)``: jobs report either
    absolute counts (``update(done, total)``) or steps (``update(advance=1)``).
    """
    if not err_console.is_terminal:
        if every is None:
            yield lambda *args, **kwargs: None
        else:
            with progress_lines(label, total, every=every) as update:
                yield update
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[note]}"), TimeRemainingColumn()]  # fmt: skip
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(escape(shown(label)), total=total, note="")

        def update(
            done: int | None = None,
            total: int | None = None,
            *,
            advance: int = 0,
            failed: int | None = None,
        ) -> None:
            bar.update(task, completed=done, total=total, advance=advance,
                       note="" if failed is None else f"{failed} failed")  # fmt: skip

        yield update


class _LineState(TypedDict):
    """Where :func:`progress_lines` stands: items done, of ``total``, failed; when a
    line was last shown and the counts it showed."""

    done: int
    total: int | None
    failed: int | None
    at: float | None
    shown: tuple[int, int | None] | None


@contextmanager
def progress_lines(
    label: str, total: int | None = None, *, every: float = 30.0
) -> Iterator[Callable[..., None]]:
    """Progress as plain lines on stderr (``editing: 16 of 64 (25%), 3m 05s``): the
    first update, then at most one every ``every`` seconds, and the last one when the
    stage ends, so that a log file shows a long run's progress without a bar's redraws.
    Yields the same ``update`` as :func:`progress`."""
    started = time.monotonic()
    state: _LineState = {"done": 0, "total": total, "failed": None, "at": None, "shown": None}

    def show() -> None:
        done, whole = state["done"], state["total"]
        count = f"{done} of {whole}" if whole else str(done)
        if whole:
            count += f" ({100 * done / whole:.0f}%)"
        if state["failed"]:
            count += f", {state['failed']} failed"
        elapsed = int(time.monotonic() - started)
        err_console.print(
            plain(f"{label}: {count}, {elapsed // 60}m {elapsed % 60:02d}s"), soft_wrap=True
        )
        state["at"], state["shown"] = time.monotonic(), (done, whole)

    def update(
        done: int | None = None,
        total: int | None = None,
        *,
        advance: int = 0,
        failed: int | None = None,
    ) -> None:
        state["done"] = (state["done"] if done is None else done) + advance
        state["total"] = state["total"] if total is None else total
        state["failed"] = state["failed"] if failed is None else failed
        if state["at"] is None or time.monotonic() - state["at"] >= every:
            show()

    try:
        yield update
    finally:
        if state["shown"] is not None and state["shown"] != (state["done"], state["total"]):
            show()


def taxonomy_from(paths: list[Path] | None) -> Taxonomy:
    """The built-in taxonomy extended with the files given on the command line."""
    return load_taxonomy(paths or None)


def parse_contexts(text: str) -> list[Context]:
    """``"OP,OO"`` -> [Context.OP, Context.OO]."""
    try:
        contexts = [Context.parse(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise ConfigError(f"--contexts: {error}") from error
    if not contexts:
        raise ConfigError("--contexts needs at least one of OP, OO")
    return list(dict.fromkeys(contexts))


def print_json(data: Any) -> None:
    """Write JSON to stdout, unstyled, for machines."""
    typer.echo(json.dumps(data, indent=2))


def int_list(text: str, option: str) -> tuple[int, ...]:
    """``"5,10"`` -> ``(5, 10)``; a :class:`ConfigError` naming ``option`` otherwise."""
    return split_values(text, option, int)


def split_values(
    text: str,
    option: str,
    kind: Callable[[str], Any] = str,
    separator: str = ",",
    *,
    empty: bool = False,
) -> tuple[Any, ...]:
    """``text`` split at ``separator``, blank parts dropped, each part made ``kind``
    (``int``, ``float``, ``Path`` or ``str``).

    Raises:
        ConfigError: a part ``kind`` refuses, or no part at all unless ``empty`` (naming
            ``option``).
    """
    try:
        values = tuple(kind(part.strip()) for part in text.split(separator) if part.strip())
    except ValueError as error:
        joined = "comma-separated" if separator == "," else f"{separator!r}-separated"
        noun = "integers" if kind is int else "numbers" if kind is float else "values"
        raise ConfigError(f"{option} takes {joined} {noun}, not {text!r}") from error
    if not values and not empty:
        raise ConfigError(f"{option} needs at least one value")
    return values
