"""What a command leaves behind when it stops early: no empty output folder it made
itself, and after Ctrl-C a line saying what was kept and how to go on."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import typer

from contrastkit.cli.common import err_console, plain

__all__ = ["EXIT_INTERRUPTED", "interrupted", "tidy_output"]

#: The exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

#: Files a job leaves in its folder that are not results: its lock.
_NOT_RESULTS = frozenset({".build.lock"})


def _first_missing(folder: Path) -> Path:
    """The outermost folder of ``folder``'s path that does not exist yet."""
    missing = folder
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    return missing


def _remove_if_empty(folder: Path, top: Path) -> None:
    """Remove ``folder`` and its parents up to ``top`` while each holds nothing but
    :data:`_NOT_RESULTS`."""
    current = folder
    while True:
        try:
            entries = list(current.iterdir())
        except OSError:
            return
        if any(entry.name not in _NOT_RESULTS or entry.is_dir() for entry in entries):
            return
        with contextlib.suppress(OSError):
            for entry in entries:
                entry.unlink()
            current.rmdir()
        if current == top or current.exists():
            return
        current = current.parent


def _failed(error: BaseException) -> bool:
    """Whether ``error`` ends the command unsuccessfully (an exit code of 0 does not)."""
    code = getattr(error, "exit_code", getattr(error, "code", 1))
    return not isinstance(error, typer.Exit | SystemExit) or code not in (0, None)


@contextlib.contextmanager
def tidy_output(*folders: Path | None) -> Iterator[None]:
    """When the command fails (an error, Ctrl-C), remove each of ``folders`` that did
    not exist before it ran and that it left empty (its lock file aside), with the
    parents it made for it; a folder that existed, or that holds anything, is left
    alone."""
    made = [(f, _first_missing(f)) for f in folders if f is not None and not f.exists()]
    try:
        yield
    except BaseException as error:
        if _failed(error):
            for folder, top in made:
                _remove_if_empty(folder, top)
        raise


@contextlib.contextmanager
def interrupted(kept: Callable[[], str]) -> Iterator[None]:
    """Ctrl-C ends the command with :data:`EXIT_INTERRUPTED` and a line on stderr:
    ``interrupted:`` and what ``kept()`` says (what the run kept, how to resume)."""
    try:
        yield
    except KeyboardInterrupt:
        err_console.print(plain(f"interrupted: {kept()}", style="yellow"), soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
