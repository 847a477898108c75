"""The retrieval plot of one model's VisoGender results: Bias@K per occupation and its
mean across occupations (Tab. 3, Appendix C).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking, cutoffs_by_k
from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    add_legend,
    draw_bars,
    figure_title,
    finite,
    interval_error,
    interval_handle,
    interval_level,
    lean_handles,
    new_figure,
    sign_colour,
    style_axis,
    suptitle,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["bias_at_k_plot"]


def _headline_section(retrieval: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    name = "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
    return name, retrieval.get(name) or retrieval


def _no_reading(axis: Axes, text: str, *, x: float = 0.5, y: float = 0.5, **options: Any) -> None:
    """Write ``text`` (a K's marking) where its bars would be, in axes coordinates."""
    axis.text(
        x, y, text, transform=axis.transAxes, ha="center", va="center",
        fontsize=FONT - 1, color="#A00000", **options,
    )  # fmt: skip


def bias_at_k_plot(
    retrieval: Mapping[str, Any], model: str, results: Mapping[str, Any] | None = None
) -> Figure:
    """Bias@K of each occupation, one panel per K (sorted by the first K), under the mean
    across occupations with its bootstrap interval (``mean_ci``) as an error bar. A K at
    or above some occupations' number of images is marked in its title; one at or above
    every occupation's has no bars, only its marking: its Bias@K does not depend on the
    model."""
    results = results or {"metadata": {}}
    section_name, section = _headline_section(retrieval)
    per = section["per_occupation"]
    ks = list(retrieval["ks"])
    ordered = sorted(per, key=lambda n: finite(per[n].get(f"bias@{ks[0]}")) or 0)
    labels = [*ordered, "mean (all occupations)"]
    figure, axes = new_figure(
        2.9 * len(ks) + 1.4, max(3.2, 0.19 * len(labels) + 1.9), len(ks), sharey=True
    )
    cutoffs = cutoffs_by_k(results.get("warnings") or [], section_name)
    for axis, k in zip(axes, ks, strict=True):
        cutoff = cutoffs.get(int(k))
        if not covers_every_query(cutoff):
            errors = [(finite(per[n].get(f"bias@{k}")) or 0.0, math.nan, math.nan) for n in ordered]
            errors.append(interval_error(section.get(f"bias@{k}"), "mean"))
            bars = draw_bars(
                axis,
                range(len(labels)),
                errors,
                horizontal=True,
                height=0.7,
                color=[sign_colour(v) for v, _, _ in errors],
            )
            bars.patches[-1].set_edgecolor("black")
        else:
            _no_reading(
                axis, "no bars:\nnot a reading", y=0.3,
                bbox={"facecolor": "white", "edgecolor": "none"},
            )  # fmt: skip
        axis.axhline(len(ordered) - 0.5, color=PALETTE["neutral"], linewidth=0.6)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_xlim(-1.05, 1.05)
        axis.set_xticks([-1, -0.5, 0, 0.5, 1], ["−1", "−0.5", "0", "0.5", "1"])
        title = f"Bias@{k}"
        if cutoff is not None:
            title += "\n" + cutoff_marking(cutoff)
        axis.set_title(title, fontsize=FONT, color="#A00000" if cutoff else "black")
        axis.set_xlabel("Bias@K (−1 all feminine … +1 all masculine)", fontsize=FONT)
        style_axis(axis)
    level = interval_level(section.get(f"bias@{k}") for k in ks)
    add_legend(
        figure,
        [
            *lean_handles(),
            interval_handle(level, "of the mean across occupations (one query each: none)"),
        ],
        ncols=3 if len(ks) > 1 else 1,
    )
    axes[0].set_yticks(range(len(labels)), labels)
    axes[0].get_yticklabels()[-1].set_fontweight("bold")
    axes[0].set_ylim(-0.6, len(labels) - 0.4)
    axes[0].set_ylabel("occupation (query)", fontsize=FONT)
    context = (
        "two-person images (OP)" if retrieval["context"] == "OP" else ("single-person images (OO)")
    )
    n = sum(1 for _ in per)
    suptitle(
        figure,
        figure_title(
            results,
            model,
            f"Retrieval Bias@K per occupation, {context}",
            f"{n} queries",
        ),
        results,
    )
    return figure
