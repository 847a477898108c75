"""The documentation site is tested: docs/differences.md backs every line with a test,
the generated command-line reference matches the commands, the Python reference and the
schema page cover everything, and every shell and Python block of the tutorials that can
run offline runs as written (a block that cannot says why, in a `<!-- not run: ... -->`
line right above it).

A shell block's `contrastkit` commands run in the test's process (the command-line app,
as the console script runs it, its words split and its globs expanded as bash would):
each console-script process would spend seconds importing torch and the model libraries
the test process has imported already. The console script itself is run by
tests/apps/test_quickstart.py and tests/cli/. A plain ``python -c CODE`` runs CODE in the
test's process too, for the same reason. Any other command, or one with pipes,
redirections or variables, runs in bash.

The tiny quickstart, ``contrastkit quickstart --out build/quickstart --tiny``, which two
pages run first in their empty folder, runs once for the session (the ``tiny_quickstart``
fixture, in an empty folder, in this process too), and each page gets a copy of the
folder it made."""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
TUTORIALS = DOCS / "tutorials"

_FENCE = re.compile(r"^( *)```(\w+)[^\n]*\n(.*?)^\1```", re.M | re.S)
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    language: str
    code: str
    not_run: str | None


def blocks(page: Path) -> list[Block]:
    """The bash and python blocks of ``page``, each with the reason it is not run, if any."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        language = match.group(2)
        if language not in {"bash", "python"}:
            continue
        before = text[: match.start()].rstrip("\n").splitlines()
        reason = _NOT_RUN.search(before[-1]) if before else None
        indent = len(match.group(1))
        code = "\n".join(line[indent:] for line in match.group(3).splitlines())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page.name, line, language, code, reason.group(1) if reason else None))
    return found


def test_every_test_named_on_the_differences_page_exists() -> None:
    page = (DOCS / "differences.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(test_\w+)`", page))
    assert len(named) > 20
    defined = {
        match
        for path in (ROOT / "tests").rglob("test_*.py")
        for match in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M)
    }
    assert sorted(named - defined) == []
    for filename in set(re.findall(r"`(test_\w+\.py)`", page)):
        assert list((ROOT / "tests").rglob(filename)), filename


def test_the_committed_cli_reference_is_the_one_the_commands_generate() -> None:
    """docs/reference/cli.md is regenerated from the typer app (CI runs this test);
    after changing a command run `python -m contrastkit.cli.reference`."""
    from contrastkit.cli.reference import render

    committed = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert render() == committed, "run `python -m contrastkit.cli.reference` and commit"


def test_the_schema_page_lists_every_task_folder_as_generated() -> None:
    """The task folders' rows of docs/reference/schemas.md are generated: a new task
    folder is listed by running `python -m contrastkit.cli.reference`, no hand edit."""
    from contrastkit.cli.reference import schemas_page

    committed = (DOCS / "reference" / "schemas.md").read_text(encoding="utf-8")
    assert schemas_page(committed) == committed, "run `python -m contrastkit.cli.reference`"
    assert "| [gendered-words.schema.json](../schemas/gendered-words.schema.json) |" in committed


def test_the_cli_reference_has_a_section_with_the_help_of_every_command() -> None:
    from contrastkit.cli.reference import render

    page = render()
    for path in ("contrastkit build gensynth", "contrastkit urls maintain", "contrastkit audit"):
        section = page[page.index(f"\n## {path}\n") :]
        assert f"Usage: {path} [OPTIONS]" in section.split("\n## ")[1]
    assert "\x1b[" not in page and not re.search(r"[ \t]$", page, re.M)


def test_the_python_reference_documents_every_public_name() -> None:
    import contrastkit

    page = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: contrastkit\.[\w.]+\.(\w+)$", page, re.M))
    public = set(contrastkit.__all__) - {"__version__"}
    assert sorted(public - documented) == []


def test_the_schema_page_links_every_result_schema() -> None:
    page = (DOCS / "reference" / "schemas.md").read_text(encoding="utf-8")
    for schema in (DOCS / "schemas").glob("*.schema.json"):
        assert f"](../schemas/{schema.name})" in page, schema.name


def test_tutorial_blocks_run_or_say_why_not() -> None:
    """Each tutorial with runnable blocks is run below; a page whose blocks are all marked
    `not run` must be one that needs data or weights that the tests do not have."""
    runnable = {
        page.name
        for page in TUTORIALS.glob("*.md")
        if any(block.not_run is None for block in blocks(page))
    }
    assert runnable == {
        "quickstart.md",
        "gensynth.md",
        "python-api.md",
        "stereotypes.md",
        "visogender-tables.md",
        "zero-shot.md",
    }
    for page in TUTORIALS.glob("*.md"):
        for block in blocks(page):
            assert block.not_run is None or len(block.not_run) > 10, (page.name, block.line)


#: A command holding any of these needs a shell.
_SHELL = frozenset("|&;<>$`(){}")


def commands(code: str) -> list[str]:
    """The commands of a shell block: its lines with backslash continuations joined,
    blank and comment lines left out."""
    lines = code.replace("\\\n", " ").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def in_process(command: str) -> list[str] | None:
    """The arguments of ``command`` when it is a plain ``contrastkit`` command (its words
    split and each glob expanded in the current folder, sorted, as bash does; a glob that
    matches nothing stays as written), else ``None``."""
    words = shlex.split(command, comments=True)
    if not words or words[0] != "contrastkit" or _SHELL & set(command.split("#")[0]):
        return None
    args: list[str] = []
    for word in words[1:]:
        matches = sorted(glob.glob(word)) if glob.has_magic(word) else []  # noqa: PTH207 (bash: str paths)
        args += matches or [word]
    return args


def python_code(command: str) -> str | None:
    """The code of ``command`` when it is a plain ``python -c CODE`` (no pipe, redirection,
    list or variable outside or inside the quotes), else ``None``."""
    if "$" in command or "`" in command:
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    return words[2] if len(words) == 3 and words[:2] == ["python", "-c"] else None


#: The docs' tiny quickstart (see the module docstring).
TINY_QUICKSTART = ["quickstart", "--out", "build/quickstart", "--tiny"]


def _run_command(
    command: str, where: str, cwd: Path, env: dict[str, str], made: Path | None = None
) -> None:
    """Run ``command`` in ``cwd``; ``made``: a folder in which the tiny quickstart ran,
    copied into ``cwd`` instead of running it again when ``cwd`` is as that folder was
    (empty but for the ``examples`` link)."""
    from typer.testing import CliRunner

    from contrastkit.cli import app

    args = in_process(command)
    code = python_code(command)
    if code is not None:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, f"{where}: python -c", "exec"), {"__name__": "__main__"})
        except SystemExit as stop:
            assert stop.code in (None, 0), f"{where}: {command}: exit {stop.code}"
        except Exception as error:
            raise AssertionError(f"{where}: {command}") from error
        return
    if (args == TINY_QUICKSTART and made is not None
            and [p.name for p in cwd.iterdir()] == ["examples"]):  # fmt: skip
        shutil.copytree(made, cwd, symlinks=True, dirs_exist_ok=True)
        return
    if args is None:
        run = subprocess.run(["bash", "-e", "-c", command], cwd=cwd, env=env,
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert run.returncode == 0, (
            f"{where}: {command}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        )
        return
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{where}: {command}") from result.exception
    assert result.exit_code == 0, f"{where}: {command}\n{result.output[-3000:]}"


def _run_page(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    folder: Path = TUTORIALS,
    made: Path | None = None,
) -> list[Block]:
    """Run the runnable blocks of the page ``folder/name`` in order in ``tmp_path`` (python
    blocks share one namespace, as in a notebook; shell blocks command by command, each
    stopping the page when it fails, as `bash -e` would). ``made``: the
    ``tiny_quickstart`` fixture's folder (see :func:`_run_command`)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_DATASETS_CACHE": str(tmp_path / "hf-cache"),
        "HF_HUB_OFFLINE": "1",
    }
    monkeypatch.setenv("HF_DATASETS_CACHE", env["HF_DATASETS_CACHE"])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    namespace: dict[str, object] = {"__name__": "tutorial"}
    ran = [block for block in blocks(folder / name) if block.not_run is None]
    for block in ran:
        where = f"{(folder / name).relative_to(ROOT)}, line {block.line}"
        if block.language == "python":
            exec(compile(block.code, where, "exec"), namespace)
        else:
            for command in commands(block.code):
                _run_command(command, where, tmp_path, env, made)
    return ran


def test_shell_blocks_split_into_the_commands_bash_would_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = (
        "contrastkit evaluate --data a \\\n    --model b  # a note\n\n# a comment\ncat x | head\n"
    )
    assert commands(code) == [
        "contrastkit evaluate --data a      --model b  # a note",
        "cat x | head",
    ]
    monkeypatch.chdir(tmp_path)
    for name in ("r/m2/original", "r/m1/original", "r/m1/gensynth"):
        (tmp_path / name).mkdir(parents=True)
    assert in_process("contrastkit report r/*/original --out 'a b'  # two") == [
        "report",
        "r/m1/original",
        "r/m2/original",
        "--out",
        "a b",
    ]
    assert in_process("contrastkit report none/*/x") == ["report", "none/*/x"]
    assert in_process("contrastkit report x > y") is None
    assert in_process("pip install -e . && contrastkit quickstart") is None
    assert in_process("python -c 'print(1)'") is None
    assert python_code("python -c 'print(1)'  # c") == "print(1)"
    assert python_code("python -c \"import a; print(a.b('c'))\"") == "import a; print(a.b('c'))"
    for command in ("python -c 'print(1)' > y", "python -c x;echo", "python -c \"$X\"",
                    "python -c x | head", "python -m x", "python3 -c x"):  # fmt: skip
        assert python_code(command) is None, command


def test_the_python_api_tutorial_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ran = _run_page("python-api.md", tmp_path, monkeypatch)
    assert len(ran) == 1
    assert "per_cell: must be at least 1, not 0" in out.getvalue()
    assert (tmp_path / "build" / "export-hub" / "README.md").is_file()
    assert any((tmp_path / "build" / "example").iterdir())


@pytest.mark.slow
@pytest.mark.xdist_group("tiny_quickstart")
def test_the_quickstart_tutorial_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_quickstart: Path
) -> None:
    ran = _run_page("quickstart.md", tmp_path, monkeypatch, made=tiny_quickstart)
    assert [block.language for block in ran] == ["bash", "bash", "python"]
    report = tmp_path / "build" / "quickstart" / "QUICKSTART.md"
    assert "pipeline check, not a measurement" in report.read_text()
    figure = DOCS / "assets" / "quickstart-contrast-bias.png"
    assert figure.read_bytes()[:4] == b"\x89PNG" and figure.stat().st_size < 100_000
    assert "random weights" in (TUTORIALS / "quickstart.md").read_text()


@pytest.mark.slow
def test_the_gensynth_tutorial_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _run_page("gensynth.md", tmp_path, monkeypatch)
    assert len(ran) == 6
    assert (tmp_path / "sets" / "gensynth" / "README.md").is_file()
    assert (tmp_path / "audit" / "gensynth" / "audit.json").is_file()
    assert "n/a: K covers all" in (tmp_path / "results" / "tab3.md").read_text()


@pytest.mark.slow
def test_the_stereotype_tutorial_offline_walk_through_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        ran = _run_page("stereotypes.md", tmp_path, monkeypatch)
    assert [block.language for block in ran] == ["python", "bash"]
    assert (tmp_path / "build" / "vlss-tiny" / "probes.tsv").is_file()
    reports = sorted((tmp_path / "results-tiny").glob("*/report.md"))
    assert len(reports) == 2
    for report in reports:
        assert "pipeline check, not a measurement" in report.read_text()
    tables = (tmp_path / "results-tiny" / "tables.md").read_text()
    assert "ivlas" in tables and "(random weights)" in tables
    assert "pipeline check" in (TUTORIALS / "stereotypes.md").read_text()


@pytest.mark.slow
def test_the_visogender_tables_tutorial_offline_walk_through_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        ran = _run_page("visogender-tables.md", tmp_path, monkeypatch)
    assert [block.language for block in ran] == ["python", "bash"]
    tables = (tmp_path / "results-tiny" / "visogender-tables.md").read_text()
    for table in ("Resolution", "Retrieval bias (mean", "template flipping"):
        assert table in tables, table
    assert "tiny-open-clip (random weights)" in tables
    assert "pipeline check" in (TUTORIALS / "visogender-tables.md").read_text()


@pytest.mark.slow
def test_the_zero_shot_tutorial_offline_walk_through_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        ran = _run_page("zero-shot.md", tmp_path, monkeypatch)
    assert [block.language for block in ran] == ["python", "bash"]
    (folder,) = (tmp_path / "results-tiny").glob("*/zero_shot")
    disparity = json.loads((folder / "disparity.json").read_text())
    assert len(disparity["concepts"]) == 3 and disparity["random_weights"] is True
    assert "pipeline check, not a measurement" in (folder / "report.md").read_text()
    assert (folder / "plots" / "ap_differences.png").is_file()
    assert "pipeline check" in (TUTORIALS / "zero-shot.md").read_text()


@pytest.mark.slow
@pytest.mark.xdist_group("tiny_quickstart")
def test_the_decision_probes_offline_recipe_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_quickstart: Path
) -> None:
    """docs/decisions.md's offline recipe: the quickstart's tiny contrast set and a tiny
    LLaVA; its other blocks need weights and say so."""
    ran = _run_page("decisions.md", tmp_path, monkeypatch, folder=DOCS, made=tiny_quickstart)
    assert [block.language for block in ran] == ["bash"]
    assert len(ran[0].code.strip().splitlines()) == 3
    (path,) = (tmp_path / "results-tiny").glob("*/benchmark.json")
    benchmark = json.loads(path.read_text())
    assert benchmark["task"] == "decisions"
    assert "pipeline check, not a measurement" in (path.parent / "report.md").read_text()
    assert all(block.not_run for block in blocks(DOCS / "decisions.md") if block not in ran)
