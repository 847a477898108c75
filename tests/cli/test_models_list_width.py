"""``contrastkit models list`` on a terminal as narrow as 80 or 100 columns (issue 47.4):
every example spec is printed whole on a line of its own, so it can be pasted, and the
editor families ``build gensynth --editor`` takes are listed too."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

import contrastkit.cli.models as models_cli
from contrastkit.cli import app
from contrastkit.curation.editor_families import editor_families
from contrastkit.models.registry import FAMILY_DOCS

runner = CliRunner()


@pytest.mark.parametrize("width", [80, 100])
def test_every_example_spec_is_whole_on_its_own_line(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, width=width, force_terminal=True, color_system=None)
    monkeypatch.setattr(models_cli, "console", terminal)
    models_cli.list_command(paper=None, as_json=False)
    lines = [line.strip() for line in screen.getvalue().splitlines()]
    examples = [example for _, example in FAMILY_DOCS.values()]
    examples += [f"{prefix}:{f.default_model}" for prefix, f in editor_families().items()]
    for example in examples:
        assert example in lines, (example, screen.getvalue())
    assert all(len(line) <= width for line in screen.getvalue().splitlines())
    for prefix in editor_families():
        assert any(line.startswith(f"│ {prefix} ") for line in lines), prefix


def test_the_json_lists_the_editor_families() -> None:
    result = runner.invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    editors = {row["prefix"]: row for row in json.loads(result.stdout)["editors"]}
    assert set(editors) == set(editor_families())
    assert editors["ip2p"]["example"] == "ip2p:timbrooks/instruct-pix2pix"
