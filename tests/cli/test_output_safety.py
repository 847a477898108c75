"""Text from the data is printed as text: never parsed as rich markup, never sent to the
terminal as a control sequence; usage mistakes and unusable input exit 2, not 70."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from contrastkit.cli import app
from contrastkit.cli.common import shown
from contrastkit.schema import OO_COLUMNS, Context, Gender
from contrastkit.tsv import write_visogender_tsv
from factories import console_script, make_row

M, F = Gender.MASCULINE, Gender.FEMININE
runner = CliRunner()
WIDE = {"COLUMNS": "300"}


def clean(result: Result) -> None:
    """No traceback, no exception but the exit itself."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output


def markup_taxonomy(folder: Path) -> Path:
    path = folder / "t[/x]" / "tax.csv"  # the path holds a closing tag
    path.parent.mkdir(parents=True)
    path.write_text(
        "occupation,sector,specialisation,participant,object\n"
        "doct[/i]or,med[/b],spec[bold,pat[/y],obj[link=x]\n"
    )
    return path


def test_taxonomy_show_prints_markup_as_text(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["taxonomy", "show", "--taxonomy", str(markup_taxonomy(tmp_path))], env=WIDE
    )
    clean(result)
    assert result.exit_code == 0
    for text in ("doct[/i]or", "med[/b]", "spec[bold", "pat[/y]", "obj[link=x]"):
        assert text in result.output


def test_build_visogender_prints_markup_as_text(tmp_path: Path) -> None:
    pool = tmp_path / "pool.csv"
    pool.write_text(
        "url,occupation,context,occupation_gender,participant_gender,licence_ok,annotator\n"
        "https://x.example/[/b]1.jpg,doct[/i]or,OO,masculine,,yes,[bold\n"
    )
    out = tmp_path / "o[/x]"
    args = ["build", "visogender", "--candidates", str(pool), "--out", str(out),
            "--taxonomy", str(markup_taxonomy(tmp_path)), "--per-cell", "1"]  # fmt: skip
    result = runner.invoke(app, [*args, "--keep-incomplete"], env=WIDE)
    clean(result)
    assert result.exit_code == 0
    assert "doct[/i]or" in result.output and f"wrote {out}/visogender_OO.tsv" in result.output
    strict = runner.invoke(app, [*args, "--strict"], env=WIDE)
    clean(strict)
    assert strict.exit_code == 1 and "Left out (incomplete): doct[/i]or" in strict.output


def test_validate_and_export_print_markup_in_ids_and_paths_as_text(tmp_path: Path) -> None:
    folder = tmp_path / "d[b]"
    folder.mkdir()
    rows = [make_row("doctor", g, n=n, idx=f"OO_[/b]{n}", annotator="[/]")
            for n, g in ((1, M), (2, F), (3, F))]  # fmt: skip
    (folder / "o[").mkdir()
    tsv = write_visogender_tsv(folder / "o[" / "x].tsv", rows, Context.OO)  # .../o[/x].tsv
    result = runner.invoke(app, ["validate", str(tsv)], env=WIDE)
    clean(result)
    assert result.exit_code == 1 and "occupation 'doctor' (OO) is unbalanced" in result.output
    assert f"{tsv}:" in result.output
    exported = runner.invoke(
        app, ["export", "visogender", str(tsv), "--out", str(folder / "e[/i]")], env=WIDE
    )
    clean(exported)
    assert exported.exit_code == 0 and f"wrote {folder / 'e[/i]'}" in exported.output


def test_a_missing_file_with_markup_in_its_name_exits_2(tmp_path: Path) -> None:
    for command in (["urls", "check"], ["validate"], ["export", "visogender"]):
        extra = ["--out", str(tmp_path / "out")] if command[0] == "export" else []
        result = runner.invoke(app, [*command, "missing[/x].tsv", *extra])
        clean(result)
        assert result.exit_code == 2 and "missing[/x].tsv" in result.output


def test_shown_escapes_what_a_terminal_would_act_on() -> None:
    assert shown("a\x1b[31mb\x07\r") == "a\\x1b[31mb\\x07\\x0d"
    assert shown("rtl\u202eevil\u2066 \u2028x") == "rtl\\u202eevil\\u2066 \\u2028x"
    assert shown("bad\udcff name") == "bad\\udcff name"
    assert shown("two\nlines") == "two\\nlines"
    assert shown("two\nlines\tok", multiline=True) == "two\nlines\tok"
    assert shown("é 漢字 [/b] e\u0301") == "é 漢字 [/b] e\u0301"


# -- validate's exit codes ------------------------------------------------------------------


def _unusable(kind: str, folder: Path) -> Path:
    path = folder / f"{kind}.tsv"
    if kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "latin1":
        path.write_bytes("\t".join(OO_COLUMNS).encode() + "\nJosé\n".encode("latin-1"))
    return path


@pytest.mark.parametrize("kind", ["missing", "folder", "empty", "binary", "latin1"])
def test_validate_exits_2_for_a_file_it_cannot_use(tmp_path: Path, kind: str) -> None:
    path = _unusable(kind, tmp_path)
    fine = write_visogender_tsv(
        tmp_path / "fine.tsv", [make_row("doctor", M, n=1), make_row("doctor", F, n=2)],
        Context.OO,
    )  # fmt: skip
    result = runner.invoke(app, ["validate", str(path), str(fine)])
    clean(result)
    assert result.exit_code == 2, result.output
    assert f"{path}: unusable" in result.output and "[unusable]" in result.output
    as_json = runner.invoke(app, ["validate", str(path), "--json"])
    assert as_json.exit_code == 2 and json.loads(as_json.stdout)["unusable"] == [str(path)]


def test_validate_exits_1_for_findings_and_0_for_warnings(tmp_path: Path) -> None:
    balanced = [make_row("doctor", M, n=1, licence="No"), make_row("doctor", F, n=2)]
    warned = write_visogender_tsv(tmp_path / "w.tsv", balanced, Context.OO)
    assert runner.invoke(app, ["validate", str(warned)]).exit_code == 0
    unbalanced = write_visogender_tsv(tmp_path / "u.tsv", balanced[:1], Context.OO)
    assert runner.invoke(app, ["validate", str(unbalanced)]).exit_code == 1


def test_validate_max_findings_option(tmp_path: Path) -> None:
    lines = ["\t".join(OO_COLUMNS)] + [f"OO_{n}\tbroken" for n in range(30)]
    path = tmp_path / "bad.tsv"
    path.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["validate", str(path), "--max-findings", "5"])
    assert result.exit_code == 1
    assert result.output.count("[schema] ") == 6  # 5 listed + the "... and 25 more" line
    assert "... and 25 more schema findings" in result.output
    everything = runner.invoke(app, ["validate", str(path), "--max-findings", "0"])
    assert everything.output.count("[schema] ") == 30
    negative = runner.invoke(app, ["validate", str(path), "--max-findings", "-1"])
    assert negative.exit_code == 2


# -- usage mistakes through the console script --------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--per-cell", "abc", "x.tsv"],
        ["validate", "--no-such-option"],
        ["taxonomy", "[/b]nope"],
        ["urls", "check", "--concurrency", "[/b]", "x.tsv"],
        [],
    ],
)
def test_usage_mistakes_exit_2_without_a_traceback(args: list[str]) -> None:
    done = subprocess.run([console_script(), *args], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "bug in contrastkit" not in done.stderr
