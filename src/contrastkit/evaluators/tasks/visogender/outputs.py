"""The files of one VisoGender model's evaluation: ``benchmark.json``, ``report.md``,
``plots/`` (each plot as PNG and SVG)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.evaluators.tasks.visogender.plots import plots_markdown, write_plots
from contrastkit.evaluators.tasks.visogender.report import markdown_report
from contrastkit.io import atomic_write_text
from contrastkit.results.visogender import VisoGenderResult

__all__ = ["write_outputs"]


def write_outputs(result: VisoGenderResult | Mapping[str, Any], folder: Path) -> dict[str, Path]:
    """Write ``benchmark.json``, ``plots/*.png`` and ``plots/*.svg`` and ``report.md``
    (which shows the plots) into ``folder``, each file atomically.

    Args:
        result: the typed result, or its file's JSON, ``{"visogender_<model>_results":
            results}`` (:func:`benchmark`); the file is its JSON.
        folder: the model's output folder.

    Returns:
        The files written, by name: ``benchmark``, ``report``, each plot's stem (its
        PNG) and the stem with ``_svg`` (its SVG).
    """
    results_json = result.to_json() if isinstance(result, VisoGenderResult) else result
    _, results = next(iter(results_json.items()))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "benchmark.json", json.dumps(results_json, indent=2) + "\n")
    plots = write_plots(results, folder / "plots")
    report = markdown_report(results).rstrip("\n").split("\n")
    text = "\n".join([*report, "", *plots_markdown(plots, folder)]).rstrip() + "\n"
    atomic_write_text(folder / "report.md", text)
    files = {"benchmark": folder / "benchmark.json", "report": folder / "report.md"}
    files.update({path.stem + ("" if path.suffix == ".png" else "_svg"): path for path in plots})
    return files
