"""``--help`` of every command as a person reads it, on a narrow and on a wide terminal."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from contrastkit.cli import app

runner = CliRunner()


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command and command group under ``command``, with its words on the command
    line (hidden ones too: their options are no less cut)."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = [
    pytest.param(path, command, id=" ".join(path) or "contrastkit")
    for path, command in _commands(typer.main.get_command(app))
]


def _option_names(command: Any) -> list[str]:
    """Every spelling of every shown option, ``--no-...`` forms included."""
    return [
        name
        for param in command.params
        if param.param_type_name == "option" and not param.hidden
        for name in (*param.opts, *param.secondary_opts)
    ]


def test_the_walk_reaches_every_command() -> None:
    paths = {" ".join(param.values[0]) for param in COMMANDS}
    assert {"", "build gensynth", "urls check", "export harness", "publish", "evaluate"} <= paths
    assert len(paths) >= 25


@pytest.mark.parametrize("width", [60, 80, 200])
@pytest.mark.parametrize(("path", "command"), COMMANDS)
def test_help_names_every_option_in_full_at_any_width(
    path: tuple[str, ...], command: Any, width: int
) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    shown = result.output
    for name in _option_names(command):
        # whole: not followed by more of a name, nor by the ellipsis of a cut cell
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w…-])", shown), (name, shown)
    assert "…" not in shown
    assert max(len(line) for line in shown.splitlines()) <= width
    assert "seed paper" not in shown.lower()


def test_the_refusal_names_the_flag_publish_help_shows_whole_on_a_narrow_terminal() -> None:
    shown = runner.invoke(app, ["publish", "--help"], env={"COLUMNS": "60"}).output
    assert "--i-know-these-are-random-weights\n" in shown.replace(" ", "").replace("│", "")
