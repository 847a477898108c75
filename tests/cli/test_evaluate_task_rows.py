"""``contrastkit evaluate contrast`` and ``evaluate decisions`` are made from the tasks
the registry holds under those names (the task folders' ``TASK``, which replace the rows
of the built-in table), so a change of a task folder's options shows in its command."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.cli.evaluate import task_command
from contrastkit.cli.helptext import App
from contrastkit.evaluators.tasks.registry import BUILT_IN, built_in_rows, tasks

FOLDER_TASKS = ("contrast", "decisions")


def _options(command: Any) -> list[tuple[str, ...]]:
    return [(*param.opts, *param.secondary_opts) for param in command.params]


def _evaluate_command(task: str) -> Any:
    group: Any = typer.main.get_command(app).commands["evaluate"]  # type: ignore[attr-defined]
    return group.get_command(click.Context(group), task)


@pytest.mark.parametrize("task", FOLDER_TASKS)
def test_the_command_offers_the_options_of_the_registrys_task(task: str) -> None:
    effective = tasks()[task]
    assert effective.protocol is not None  # a task folder's row replaced the table's
    assert next(row for row in BUILT_IN if row.name == task).protocol is None
    sub = App(rich_markup_mode="markdown", add_completion=False)
    sub.command(name=task)(task_command(effective))
    assert _options(_evaluate_command(task)) == _options(typer.main.get_command(sub))


def test_the_built_in_rows_are_the_registrys_rows_in_the_tables_order() -> None:
    rows = built_in_rows()
    assert [row.name for row in rows] == [row.name for row in BUILT_IN]
    for row in rows:
        effective = tasks()[row.name]
        assert row.protocol is effective.protocol
        assert (row.options, row.settings) == (effective.options, effective.settings)


@pytest.mark.parametrize(
    ("task", "folder", "option"),
    [
        ("contrast", "contrast_sets", "--contrast-metrics"),
        ("decisions", "decision_probes", "--decision-scoring"),
    ],
)
def test_a_change_of_the_task_folders_settings_shows_in_its_command(
    task: str, folder: str, option: str
) -> None:
    """The options are built from the task's settings class: a task folder whose class
    has no fields has no such option (and keeps the shared groups)."""
    code = (
        "import importlib\n"
        "from contrastkit.evaluators.engine import TaskSettings\n"
        f"folder = importlib.import_module('contrastkit.evaluators.tasks.{folder}')\n"
        "kind = type(folder.TASK)\n"
        "kind.settings = TaskSettings\n"
        "from typer.testing import CliRunner\n"
        "from contrastkit.cli import app\n"
        f"run = CliRunner().invoke(app, ['evaluate', {task!r}, '--help'])\n"
        "assert run.exit_code == 0, run.output\n"
        "print(run.output)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert run.returncode == 0, run.stderr
    assert "--bootstrap" in run.stdout and option not in run.stdout
    unchanged = CliRunner().invoke(app, ["evaluate", task, "--help"], env={"COLUMNS": "200"})
    assert unchanged.exit_code == 0 and option in unchanged.output
