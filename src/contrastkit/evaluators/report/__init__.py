"""Reports of evaluation results, by responsibility:

* :mod:`.results` — the benchmark JSON (VisoGender Appendix J structure): building it
  from a scored run, reading it back, its headline numbers, folder names of models;
* :mod:`.markdown` — markdown reports of one model and of several side by side;
* :mod:`.plots` — plots as PNG and SVG (matplotlib's object-oriented API, no pyplot);
* :mod:`.outputs` — writing one model's files;
* the toolkit every report and plot is built from: :mod:`.figures` (palette, figure,
  title, legend, bars with bootstrap error bars, labels, saving) and :mod:`.tables`
  (numbers, intervals, cells, tables).

The VisoGender task's own sections and plots (resolution, retrieval, labour statistics,
flipped retrieval, multiple choice) live in its folder,
:mod:`contrastkit.evaluators.tasks.visogender`.

The names below keep ``from contrastkit.evaluators.report import ...`` working.
"""

from contrastkit.evaluators.report.markdown import comparison_markdown, markdown_report
from contrastkit.evaluators.report.outputs import write_outputs
from contrastkit.evaluators.report.plots import PLOTS, save_figure, write_plots
from contrastkit.evaluators.report.results import (
    benchmark,
    headline,
    jsonable,
    load_benchmark,
    model_slug,
)

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
