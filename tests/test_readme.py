"""The README is read in five minutes: short, what to have before installing comes before
the install, its set-up commands are the ones CI runs, its command table covers every
command and links to the generated reference, and every link leads somewhere. (The
Python tour it used to hold is a tutorial now, run by tests/test_docs.py.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 200


def test_what_you_need_comes_before_the_first_install_command() -> None:
    before = _section("Before you start")
    for need in ("Python 3.10", "virtual environment", "5 GB", "GPU is optional",
                 "hf download", "Network access"):  # fmt: skip
        assert need in before, need
    assert README.index("## Before you start") < README.index("pip install")


def test_the_setup_commands_are_the_ones_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = re.findall(r"```bash\n(.*?)\n```", _section("Set up"), re.S)
    assert commands == [
        "pip install -e . && contrastkit quickstart --out build/quickstart",
        'pip install -e ".[dev]" && pytest -q',
    ]
    for command in commands:
        assert command in ci, command


def test_the_command_table_covers_every_command_and_links_to_its_reference() -> None:
    from contrastkit.cli.reference import render

    reference = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## contrastkit (.+)$", reference, re.M)
    groups = {name.split()[0] for name in sections if " " in name}
    commands = [name for name in sections if name not in groups]
    table = _section("Commands")
    for command in commands:
        anchor = "contrastkit-" + command.replace(" ", "-")
        assert f"[`{command}`](docs/reference/cli.md#{anchor})" in table, command
    assert render() == reference  # the anchors exist in the page as generated


def test_every_relative_link_of_the_readme_leads_to_a_file() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
