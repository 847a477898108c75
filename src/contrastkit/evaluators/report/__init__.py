"""Reports of evaluation results, by responsibility:

* :mod:`.files` — folder names of models, JSON values, reading a ``benchmark.json`` back;
* :mod:`.results` — the names of :mod:`.files` and of the VisoGender benchmark, for
  their callers;
* :mod:`.markdown` — the contrast-set comparison, and the VisoGender reports for their
  callers; :mod:`.sections` — the pieces every report shares (random-weights note,
  warnings);
* :mod:`.plots` — plots as PNG and SVG (matplotlib's object-oriented API, no pyplot);
* the toolkit every report and plot is built from: :mod:`.figures` (palette, figure,
  title, legend, bars with bootstrap error bars, labels, saving) and :mod:`.tables`
  (numbers, intervals, cells, tables).

The VisoGender task's own sections, plots and file writer (resolution, retrieval, labour
statistics, flipped retrieval, multiple choice; ``outputs``) live in its folder,
:mod:`contrastkit.evaluators.tasks.visogender`.

The names below keep ``from contrastkit.evaluators.report import ...`` working. They are
imported when first asked for, so that importing one module of this package (the
toolkit, as the VisoGender task folder does) does not import the reports that import
that folder back.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_R = "contrastkit.evaluators.report"
_V = "contrastkit.evaluators.tasks.visogender"

#: Each name of this package and the module it comes from.
_NAMES = {
    "PLOTS": f"{_V}.plots",
    "benchmark": f"{_V}.benchmark",
    "comparison_markdown": f"{_V}.report",
    "headline": f"{_V}.benchmark",
    "jsonable": f"{_R}.results",
    "load_benchmark": f"{_V}.benchmark",
    "markdown_report": f"{_V}.report",
    "model_slug": f"{_R}.results",
    "save_figure": f"{_R}.plots",
    "write_outputs": f"{_V}.outputs",
    "write_plots": f"{_V}.plots",
}

__all__ = [
    "PLOTS",
    "benchmark",
    "comparison_markdown",
    "headline",
    "jsonable",
    "load_benchmark",
    "markdown_report",
    "model_slug",
    "save_figure",
    "write_outputs",
    "write_plots",
]


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers: the same names
    from contrastkit.evaluators.report.plots import save_figure
    from contrastkit.evaluators.report.results import jsonable, model_slug
    from contrastkit.evaluators.tasks.visogender.benchmark import (
        benchmark,
        headline,
        load_benchmark,
    )
    from contrastkit.evaluators.tasks.visogender.outputs import write_outputs
    from contrastkit.evaluators.tasks.visogender.plots import PLOTS, write_plots
    from contrastkit.evaluators.tasks.visogender.report import (
        comparison_markdown,
        markdown_report,
    )
