"""The files of one model's evaluation: ``benchmark.json``, ``report.md``, ``plots/``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.evaluators.report.markdown import markdown_report
from contrastkit.evaluators.report.plots import write_plots
from contrastkit.io import atomic_write_text

__all__ = ["write_outputs"]


def write_outputs(results_json: Mapping[str, Any], folder: Path) -> dict[str, Path]:
    """Write ``benchmark.json``, ``report.md`` and ``plots/*.png`` into ``folder``, each
    file atomically.

    Args:
        results_json: ``{"visogender_<model>_results": results}`` (:func:`benchmark`).
        folder: the model's output folder.

    Returns:
        The files written, by name: ``benchmark``, ``report`` and each plot's stem.
    """
    _, results = next(iter(results_json.items()))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "benchmark.json", json.dumps(results_json, indent=2) + "\n")
    atomic_write_text(folder / "report.md", markdown_report(results))
    plots = write_plots(results, folder / "plots")
    files = {"benchmark": folder / "benchmark.json", "report": folder / "report.md"}
    files.update({path.stem: path for path in plots})
    return files
