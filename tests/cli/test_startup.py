"""`contrastkit --help` must start fast: no heavy library is imported to show help."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "datasets", "diffusers", "transformers", "open_clip", "matplotlib",
         "aiohttp", "faiss", "pandas", "scipy", "skimage")  # fmt: skip


def test_help_imports_no_heavy_library() -> None:
    code = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from contrastkit.cli import app\n"
        "for args in (['--help'], ['build', '--help'], ['urls', 'check', '--help'],\n"
        "             ['evaluate', '--help'], ['build', 'gensynth', '--help']):\n"
        "    assert CliRunner().invoke(app, args).exit_code == 0, args\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_importing_contrastkit_is_light_until_a_job_is_touched() -> None:
    code = (
        "import sys, json, contrastkit\n"
        "contrastkit.BuildVisoGenderConfig, contrastkit.ConfigError\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
