"""The command line as a person uses it: help, exit codes, messages, JSON output."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.data import visogender_files
from factories import console_script

ROOT = Path(__file__).parents[2]
runner = CliRunner()


def test_root_help_lists_the_command_groups() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for group in ("build", "validate", "taxonomy", "urls", "evaluate", "report"):
        assert group in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["build"],
        ["build", "visogender"],
        ["build", "gensynth"],
        ["build", "genswap"],
        ["build", "merge"],
        ["build", "stereoset"],
        ["validate"],
        ["taxonomy"],
        ["taxonomy", "show"],
        ["urls"],
        ["urls", "check"],
        ["urls", "maintain"],
        ["export"],
        ["export", "visogender"],
        ["export", "contrast"],
        ["export", "stereotype"],
        ["export", "harness"],
        ["publish"],
        ["evaluate"],
        ["report"],
        ["quickstart"],
        ["audit"],
    ],
)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "Example" in result.output
    assert f"contrastkit {' '.join(command)}" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("contrastkit ")


@pytest.mark.slow
def test_build_and_validate_through_the_console_script(tmp_path: Path) -> None:
    exe = console_script()
    out = tmp_path / "example"
    build = subprocess.run(
        [exe, "build", "visogender", "--candidates", str(ROOT / "examples" / "candidates.csv"),
         "--out", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    assert "hairdresser" in build.stdout
    validate = subprocess.run(
        [exe, "validate", str(out / "visogender_OP.tsv"), str(out / "visogender_OO.tsv")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert validate.returncode == 0, validate.stdout
    assert "OK: 0 errors" in validate.stdout


def test_validate_official_files_exits_1_with_findings(
    official_op: Path, official_oo: Path
) -> None:
    result = runner.invoke(app, ["validate", str(official_op), str(official_oo)])
    assert result.exit_code == 1
    assert "canonical_duplicate" in result.output
    assert "mixing_spoon" in result.output
    assert "FAILED: 8 errors, 1 warning in 2 files" in result.output


def test_validate_json(official_op: Path, official_oo: Path) -> None:
    result = runner.invoke(app, ["validate", "--json", str(official_op), str(official_oo)])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert data["by_check"] == {"canonical_duplicate": 7, "spelling": 1, "taxonomy": 1}
    assert next(f["rows"] for f in data["findings"] if f["check"] == "spelling")[0]["idx"] == (
        "OO_180"
    )


def test_validate_reports_malformed_lines_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text(visogender_files()[1].read_text().replace("\tfeminine\t", "\tfemale\t", 1))
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:" in result.output and "Occupation_perceived_gender" in result.output


def test_build_with_bad_pool_exits_2_naming_line_and_field(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    lines = (ROOT / "examples" / "candidates.csv").read_text().splitlines()
    lines[5] = lines[5].replace(",teacher,", ",astronaut,")
    pool.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["build", "visogender", "--candidates", str(pool),
                                 "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 2
    assert f"{pool}:6: field 'occupation'" in result.stderr.replace("\n", "")
    assert not (tmp_path / "out").exists()


def test_build_strict_exits_1_on_shortfall_and_json_report(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["build", "visogender", "--candidates", str(ROOT / "examples" / "candidates.csv"),
         "--out", str(tmp_path / "out"), "--strict", "--json"],
    )  # fmt: skip
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["shortfalls"][0]["occupation"] == "hairdresser"
    assert not (tmp_path / "out" / "visogender_OP.tsv").exists()


def test_build_options_are_checked(tmp_path: Path) -> None:
    common = ["build", "visogender", "--candidates", str(ROOT / "examples" / "candidates.csv"),
              "--out", str(tmp_path / "out")]  # fmt: skip
    result = runner.invoke(app, [*common, "--contexts", "OX"])
    assert result.exit_code == 2 and "expected OP or OO" in result.stderr
    result = runner.invoke(app, [*common, "--occupations", "doctor,astronaut"])
    assert result.exit_code == 2 and "unknown occupation 'astronaut'" in result.stderr
    result = runner.invoke(app, [*common, "--per-cell", "0"])
    assert result.exit_code == 2


def test_taxonomy_show(tmp_path: Path) -> None:
    extra = tmp_path / "extra.csv"
    extra.write_text(
        "occupation,sector,specialisation,participant,object\nnurse,medical,ward,patient,chart\n"
    )
    result = runner.invoke(app, ["taxonomy", "show", "--json", "--taxonomy", str(extra)])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert len(data["occupations"]) == 24
    assert data["occupations"][-1]["source"] == str(extra)
    table = runner.invoke(app, ["taxonomy", "show"], terminal_width=200)
    assert "hairdresser" in table.output and "arXiv:2306.12424" in table.output


def _command_paths(command: Any, prefix: tuple[str, ...] = ()) -> list[str]:
    if hasattr(command, "commands"):  # a group (typer may vendor its own click)
        return [
            path
            for name, sub in sorted(command.commands.items())
            for path in _command_paths(sub, (*prefix, name))
        ]
    return [" ".join(prefix)]


def test_the_docs_document_every_command_with_an_example() -> None:
    """Each command has a section in the documentation site (a command guide, a tutorial or
    a how-to guide; the generated CLI reference does not count) with an example of it."""
    pages = [p for p in (ROOT / "docs").rglob("*.md") if p.name != "cli.md"]
    docs = "\n".join(page.read_text(encoding="utf-8") for page in sorted(pages))
    commands = _command_paths(typer.main.get_command(app))
    assert "urls maintain" in commands
    assert "evaluate visogender" in commands and "evaluate zero-shot" in commands
    for command in commands:
        # the task commands of `contrastkit evaluate` are documented in its section
        section = "evaluate" if command.startswith("evaluate ") else command
        heading = re.search(rf"^#+ `contrastkit {re.escape(section)}`$", docs, re.M)
        assert heading is not None, f"the docs lack a section for {command}"
        assert f"contrastkit {command} " in docs[heading.end() :], command


def test_build_option_defaults_are_the_library_defaults() -> None:
    """cli/build.py spells its defaults out (so `--help` imports no job module); they must
    be the configs' own. The options a GenSynth build records default to None (the
    build's recorded value, else the library default) and say the default in their help."""
    from contrastkit.builders.gensynth.job import (
        DEFAULT_EMBEDDER,
        DEFAULTS,
        RECORDED,
        GenSynthConfig,
    )
    from contrastkit.builders.visogender import DEFAULT_PER_CELL
    from contrastkit.curation.editing import DEFAULT_EDITOR, EditSettings

    group: Any = typer.main.get_command(app).commands["build"]  # type: ignore[attr-defined]
    params = {p.name: p for p in group.commands["gensynth"].params}
    gensynth = {name: p.default for name, p in params.items()}
    visogender = {p.name: p.default for p in group.commands["visogender"].params}
    config, edit = GenSynthConfig(out=Path("o"), coco=Path("c")), EditSettings()
    assert DEFAULTS["editor"] == DEFAULT_EDITOR and DEFAULTS["embedder"] == DEFAULT_EMBEDDER
    recorded = {name: DEFAULTS[name] for name in RECORDED}
    recorded |= {"steps": edit.steps, "image_guidance": edit.image_guidance_scale,
                 "resolution": edit.resolution, "margin": edit.margin, "seed": edit.seed,
                 "scales": ",".join(f"{v:g}" for v in edit.text_guidance_scales)}  # fmt: skip
    for name, default in recorded.items():
        assert gensynth[name] is None, name
        if default is not None:
            help_text = params[name].help or ""
            shown = f"{default:g}" if isinstance(default, float) else str(default)
            # settings of the editor family say its default for ip2p, the paper's editor
            assert (
                f"what the build recorded, else {shown}" in help_text
                or f"what the build recorded, else the editor family's: {shown} for ip2p"
                in help_text
            ), (name, help_text)
    assert gensynth["batch_size"] == config.model.batch_size
    assert visogender["per_cell"] == DEFAULT_PER_CELL
