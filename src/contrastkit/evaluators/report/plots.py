"""Plots of one model's results, drawn as a paper would show them, with matplotlib's
object-oriented API.

Figures are :class:`matplotlib.figure.Figure` objects saved straight to files: no pyplot,
no global figure registry, no backend switch, so a notebook's own backend is left alone.
Every plot is written twice, as PNG (150 dpi) and as SVG (text kept as text), each file
through :func:`contrastkit.io.atomic_path`.

The conventions every figure shares, and the helpers that draw them, are in
:mod:`contrastkit.evaluators.report.figures`; the names it defines stay importable
from here.

The contrast-set plots (:mod:`~contrastkit.evaluators.report.contrast_plots`) are
re-exported here. VisoGender's plots live in its task folder:
:mod:`~contrastkit.evaluators.tasks.visogender.resolution_plots`,
:mod:`~contrastkit.evaluators.tasks.visogender.retrieval_plots`,
:mod:`~contrastkit.evaluators.tasks.visogender.labour_plots` and
:mod:`~contrastkit.evaluators.tasks.visogender.comparison_plots` (several models side by
side), and its figure set and file writer in
:mod:`~contrastkit.evaluators.tasks.visogender.plots`. Their old names here still work,
with a :class:`DeprecationWarning`, and importing this module does not import that folder.
"""

from __future__ import annotations

from contrastkit.evaluators.report.contrast_plots import (
    contrast_comparison_figure,
    contrast_figure,
    write_contrast_comparison_plots,
)
from contrastkit.evaluators.report.figures import (
    FORMATS,
    NO_INTERVALS,
    PALETTE,
    RANDOM_WEIGHTS_TITLE,
    PlotLabels,
    figure_title,
    interval_handle,
    label_panels,
    place_labels,
    save_figure,
    save_formats,
    shorten_spec,
)
from contrastkit.moved import moved_names

__all__ = [
    "FORMATS",
    "NO_INTERVALS",
    "PALETTE",
    "RANDOM_WEIGHTS_TITLE",
    "PlotLabels",
    "contrast_comparison_figure",
    "contrast_figure",
    "figure_title",
    "interval_handle",
    "label_panels",
    "place_labels",
    "save_figure",
    "save_formats",
    "shorten_spec",
    "write_contrast_comparison_plots",
]

_VISOGENDER = "contrastkit.evaluators.tasks.visogender"

#: VisoGender's plots, which moved to its task folder: their old names here.
__getattr__ = moved_names(
    __name__,
    {
        "CHANCE": f"{_VISOGENDER}.resolution_plots",
        "PLOTS": f"{_VISOGENDER}.plots",
        "figures": f"{_VISOGENDER}.plots",
        "plots_markdown": f"{_VISOGENDER}.plots",
        "write_plots": f"{_VISOGENDER}.plots",
        "bias_at_k_plot": f"{_VISOGENDER}.retrieval_plots",
        "comparison_figure": f"{_VISOGENDER}.comparison_plots",
        "flipped_figure": f"{_VISOGENDER}.flipped_report",
        "gap_plot": f"{_VISOGENDER}.resolution_plots",
        "gender_pair_plot": f"{_VISOGENDER}.resolution_plots",
        "labour_panels": f"{_VISOGENDER}.labour_plots",
        "labour_plot": f"{_VISOGENDER}.labour_plots",
        "resolution_accuracy_plot": f"{_VISOGENDER}.resolution_plots",
        "write_comparison_plots": f"{_VISOGENDER}.comparison_plots",
    },
)
