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
:mod:`contrastkit.evaluators.tasks.visogender`; its names that this package gave
(``benchmark``, ``markdown_report``, ``write_outputs`` ...) still work here, with a
:class:`DeprecationWarning`.

The names below are imported when first asked for, so that importing one module of this
package (the toolkit, as the task folders do) imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from contrastkit.moved import moved_names

_R = "contrastkit.evaluators.report"
_V = "contrastkit.evaluators.tasks.visogender"

#: Each shared name of this package and the module it comes from.
_NAMES = {
    "jsonable": f"{_R}.results",
    "model_slug": f"{_R}.results",
    "save_figure": f"{_R}.plots",
}

#: VisoGender's names, which moved to its task folder: their old names here.
_MOVED = moved_names(
    __name__,
    {
        "PLOTS": f"{_V}.plots",
        "benchmark": f"{_V}.benchmark",
        "comparison_markdown": f"{_V}.report",
        "headline": f"{_V}.benchmark",
        "load_benchmark": f"{_V}.benchmark",
        "markdown_report": f"{_V}.report",
        "write_outputs": f"{_V}.outputs",
        "write_plots": f"{_V}.plots",
    },
)

__all__ = ["jsonable", "model_slug", "save_figure"]


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        return _MOVED(name)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers: the same names
    from contrastkit.evaluators.report.plots import save_figure
    from contrastkit.evaluators.report.results import jsonable, model_slug
