"""Moved modules keep their old import paths for one release: the old path gives the very
same module object (so registries, isinstance checks and monkeypatches agree), with a
DeprecationWarning naming the new path."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", code],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_old_models_package_path_is_the_new_package() -> None:
    run = _run(
        "import contrastkit.models.registry as new\n"
        "import contrastkit.evaluators.models.registry as old\n"
        "from contrastkit.evaluators.models import load_model, parse_spec\n"
        "from contrastkit.evaluators.models.openclip import OpenCLIPScorer\n"
        "import contrastkit.models.openclip as openclip\n"
        "import contrastkit.evaluators.models as package, contrastkit.models as real\n"
        "assert old is new and load_model is new.load_model and package is real\n"
        "assert OpenCLIPScorer is openclip.OpenCLIPScorer\n"
        "print(parse_spec('open_clip:ViT-B-32/openai').kind)\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "dual"
    assert "contrastkit.evaluators.models moved to contrastkit.models" in run.stderr


def test_the_new_path_does_not_warn() -> None:
    run = _run("import contrastkit.models.registry, contrastkit.models.families")
    assert run.returncode == 0 and "DeprecationWarning" not in run.stderr, run.stderr
