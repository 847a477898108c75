"""How the command line reports what went wrong: a user's mistake (exit 2, one line), the
machine (an environment error, before long work), and a bug (its traceback, exit 70)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import OFFICIAL_OO, OFFICIAL_OP
from contrastkit.cli import app
from factories import console_script

EXAMPLES = Path(__file__).parents[2] / "examples"

needs_unshare = pytest.mark.skipif(
    shutil.which("unshare") is None
    or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0,
    reason="needs `unshare -rm` (user and mount namespaces) to mount a read-only or full "
    "file system without root",
)


def _run(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user does; ``code`` runs first in the same process (to plant a bug)."""
    if code is None:
        command = [console_script(), *args]
    else:
        script = (
            f"import sys\n{code}\nfrom contrastkit.cli import main\n"
            "sys.argv = ['contrastkit', *sys.argv[1:]]\nmain()\n"
        )
        command = [sys.executable, "-c", script, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_a_bug_inside_a_job_is_reported_as_a_bug_not_as_bad_input() -> None:
    plant = (
        "import contrastkit.tsv as tsv\n"
        "def broken(path):\n"
        "    return [][1]  # IndexError: a bug, whatever the input\n"
        "tsv.parse_visogender_tsv = broken\n"
    )
    result = _run("validate", str(OFFICIAL_OP), code=plant)
    assert result.returncode == 70, result.stderr
    assert "bug in contrastkit" in result.stderr
    assert "Traceback" in result.stderr and "IndexError" in result.stderr
    assert not result.stderr.startswith("error:")  # not dressed up as bad input


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("not\ta\tvisogender\tfile\n")
    result = _run("urls", "check", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert str(bad) in result.stderr


@pytest.mark.slow
def test_debug_shows_the_traceback_of_a_reported_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("not\ta\tvisogender\tfile\n")
    result = _run("--debug", "urls", "check", str(bad))
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "DataFormatError" in result.stderr


@pytest.mark.slow
def test_a_missing_input_file_is_named(tmp_path: Path) -> None:
    result = _run("urls", "check", str(tmp_path / "missing[/x].tsv"))
    assert result.returncode == 2
    assert "missing[/x].tsv" in result.stderr and "Traceback" not in result.stderr


def _in_namespace(mount: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in a private mount namespace where ``mount`` (a shell snippet) has
    prepared /mnt; works as root too, where file permissions would not stop a write."""
    quoted = " ".join(f"'{part}'" for part in command)
    script = f"set -e; {mount}; exec {quoted}"
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@needs_unshare
def test_a_read_only_output_folder_is_an_environment_error_before_any_work() -> None:
    result = _in_namespace(
        "mount -t tmpfs -o ro tmpfs /mnt",
        [
            console_script(),
            *("build", "visogender", "--candidates", str(EXAMPLES / "candidates.csv")),
            *("--out", "/mnt/build"),
        ],
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("environment error: ")
    assert "read-only file system" in result.stderr and "/mnt/build" in result.stderr


@pytest.mark.slow
@needs_unshare
def test_a_full_disk_is_an_environment_error_before_any_work() -> None:
    result = _in_namespace(
        "mount -t tmpfs -o size=16k tmpfs /mnt; dd if=/dev/zero of=/mnt/fill bs=1k "
        "count=64 2>/dev/null || true",
        [
            console_script(),
            *("export", "visogender", str(OFFICIAL_OP), str(OFFICIAL_OO)),
            *("--out", "/mnt/export"),
        ],
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("environment error: ")
    assert "no space left" in result.stderr


def test_a_config_error_names_the_commands_flag_not_the_config_field(tmp_path: Path) -> None:
    """The same check, from Python and from the command line: each names what its user
    typed (issue: messages name CLI flags when they come from the CLI)."""
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import EvaluateConfig

    with pytest.raises(ConfigError, match=r"^split: must not be empty"):
        EvaluateConfig(data=("visogender",), models=("open_clip:x/y",), out=tmp_path, split=" ")
    result = CliRunner().invoke(
        app, ["evaluate", "--data", "visogender", "--model", "open_clip:x/y", "--out",
              str(tmp_path), "--split", " "],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "error: --split: must not be empty" in " ".join(result.output.split())
