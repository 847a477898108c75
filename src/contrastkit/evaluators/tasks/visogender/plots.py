"""VisoGender's figures of one model's results, drawn as the paper shows them (the
:data:`PLOTS` whose data exist), each saved as PNG and SVG, and the ``## Plots`` section
of its report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.report.figures import model_name, save_formats
from contrastkit.evaluators.tasks.visogender.flipped_report import flipped_figure
from contrastkit.evaluators.tasks.visogender.labour_plots import labour_panels, labour_plot
from contrastkit.evaluators.tasks.visogender.resolution_plots import (
    gap_plot,
    gender_pair_plot,
    resolution_accuracy_plot,
)
from contrastkit.evaluators.tasks.visogender.retrieval_plots import bias_at_k_plot
from contrastkit.results.visogender import VisoGenderResult, visogender_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PLOTS", "figures", "plots_markdown", "write_plots"]


#: The plots :func:`write_plots` draws (when their data exist), by stem, with a caption.
PLOTS = {
    "resolution_accuracy": "Resolution accuracy of masculine- and feminine-presenting "
    "subjects per split (VisoGender Tab. 2), with the chance line of the protocol.",
    "accuracy_by_gender_pair": "Resolution accuracy per (occupation | participant) gender "
    "pair, coloured by the gender of the person the pronoun refers to; hatched: the "
    "participant as the template's subject (VisoGender Fig. 8, template flipping).",
    "gap_per_occupation": "Resolution gap RA_masculine − RA_feminine per occupation.",
    "bias_at_k_per_occupation": "Retrieval Bias@K per occupation and its mean across "
    "occupations (VisoGender Tab. 3, Appendix C).",
    "labour_statistics": "Per-occupation bias against the share of men in US labour "
    "statistics (VisoGender Appendix F), with Pearson's r and Kendall's τ.",
    "retrieval_template_flipping": "Retrieval bias with the occupation and with the "
    "participant as the query's subject (VisoGender Tab. 3 and Tab. 5): mean across "
    "occupations of the two-person images.",
}


def figures(result: VisoGenderResult | Mapping[str, Any]) -> dict[str, Figure]:
    """The figures of one model's results (the :data:`PLOTS` whose data exist), by stem:
    of the typed result, or of its results object as read from a file."""
    results = visogender_json(result)
    model = model_name(results)
    drawn: dict[str, Figure] = {}
    resolution = results.get("resolution_bias")
    if resolution:
        if any((resolution.get(n) or {}).get("n") for n in resolution):
            drawn["resolution_accuracy"] = resolution_accuracy_plot(results)
        if resolution.get("per_cell"):
            drawn["accuracy_by_gender_pair"] = gender_pair_plot(resolution, model, results)
        if resolution.get("per_occupation"):
            drawn["gap_per_occupation"] = gap_plot(resolution, model, results)
    retrieval = results.get("retrieval_bias")
    if retrieval and retrieval.get("context"):
        drawn["bias_at_k_per_occupation"] = bias_at_k_plot(retrieval, model, results)
    if (results.get("retrieval_flipped") or {}).get("context"):
        drawn["retrieval_template_flipping"] = flipped_figure(results)
    panels = labour_panels(results)
    if panels:
        comparisons = results["labour_statistics"]["comparisons"]
        drawn["labour_statistics"] = labour_plot(comparisons, panels, model, results)
    return drawn


def write_plots(results: VisoGenderResult | Mapping[str, Any], folder: Path) -> list[Path]:
    """Draw the plots (:data:`PLOTS`) whose data exist into ``folder``, each as PNG and
    SVG (:data:`FORMATS`); return their paths, PNG before SVG."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for stem, figure in figures(results).items():
        paths += save_formats(figure, folder / stem)
    return paths


def plots_markdown(paths: Sequence[Path], folder: Path) -> list[str]:
    """A ``## Plots`` section for a report in ``folder``: each PNG embedded with its
    caption, and its SVG linked."""
    pngs = [path for path in paths if path.suffix == ".png"]
    if not pngs:
        return []
    lines = ["## Plots", ""]
    for png in pngs:
        relative = png.relative_to(folder).as_posix() if png.is_relative_to(folder) else png.name
        svg = png.with_suffix(".svg")
        caption = PLOTS.get(png.stem, png.stem.replace("_", " "))
        lines += [f"![{png.stem}]({relative})", ""]
        link = f" ([SVG]({Path(relative).with_suffix('.svg').as_posix()}))" if svg in paths else ""
        lines += [f"*{caption}*{link}", ""]
    return lines
