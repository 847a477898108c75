"""The VisoGender task folder (evaluators/tasks/visogender/): each of its modules, and each
module of the report package it imports, imports first in a fresh interpreter (no import
cycle through a package's ``__init__``), and its old module paths give the moved modules."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

from contrastkit.evaluators import report
from contrastkit.evaluators.tasks import visogender

FOLDER = sorted(
    f"{visogender.__name__}.{m.name}" for m in pkgutil.iter_modules(visogender.__path__)
)
REPORT = sorted(f"{report.__name__}.{m.name}" for m in pkgutil.iter_modules(report.__path__))


@pytest.mark.parametrize("module", FOLDER + REPORT)
def test_each_module_imports_first(module: str) -> None:
    run = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", f"import {module}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


def test_the_old_paths_are_the_moved_modules() -> None:
    moved = {
        "contrastkit.evaluators.visogender": "evaluate",
        "contrastkit.evaluators.tasks.resolution": "resolution",
        "contrastkit.evaluators.tasks.retrieval": "retrieval",
        "contrastkit.evaluators.tasks.flipped": "flipped",
        "contrastkit.evaluators.tasks.multiple_choice": "multiple_choice",
        "contrastkit.evaluators.report.resolution_plots": "resolution_plots",
        "contrastkit.evaluators.report.retrieval_plots": "retrieval_plots",
        "contrastkit.evaluators.report.labour_plots": "labour_plots",
        "contrastkit.evaluators.report.flipped": "flipped_report",
        "contrastkit.evaluators.report.multiple_choice": "multiple_choice_report",
    }
    code = "import importlib\n" + "".join(
        f"assert importlib.import_module({old!r}) is importlib.import_module("
        f"'contrastkit.evaluators.tasks.visogender.{new}'), {old!r}\n"
        for old, new in moved.items()
    )
    code += (
        "from contrastkit.evaluators.runner import EvalConfig, ScoredRun, ImageBatches, "
        "RAW_FILES, score_dataset, answers_only, retrieval_needs_dual, read_raw\n"
        "from contrastkit.evaluators.tasks.visogender import scoring\n"
        "assert score_dataset is scoring.score_dataset and ScoredRun is scoring.ScoredRun\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", code],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "contrastkit.evaluators.report.flipped moved to " in run.stderr
