"""Several models' VisoGender results side by side (the figure beside ``comparison.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.metrics import cutoffs_by_k
from contrastkit.evaluators.report.comparison_plots import k_bars
from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    RANDOM_WEIGHTS_TITLE,
    add_legend,
    draw_bars,
    interval_error,
    interval_handle,
    interval_level,
    lean_handles,
    model_name,
    new_figure,
    save_formats,
    shorten_spec,
    style_axis,
    wrap_to_figure,
)
from contrastkit.evaluators.tasks.visogender.resolution_plots import CHANCE
from contrastkit.results.visogender import VisoGenderResult, visogender_json

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["comparison_figure", "write_comparison_plots"]


def _retrieval_cutoffs(results: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """The K warnings of the retrieval section a result's headline shows."""
    context = (results.get("retrieval_bias") or {}).get("context")
    return cutoffs_by_k(results.get("warnings") or [], _SECTIONS.get(str(context), ""))


_SECTIONS = {"OP": "two_person_images", "OO": "single_person_images"}


def comparison_figure(results: Sequence[Mapping[str, Any]]) -> Figure:
    """Several models side by side (the figure beside ``comparison.md``), one row per
    model: overall resolution accuracy of masculine- and feminine-presenting subjects
    (Tab. 2, intervals as error bars, each protocol's chance line) and, in a separate
    panel, the mean retrieval Bias@K across occupations (Tab. 3, ``mean_ci`` as error
    bars), each bar labelled with its K, a K covering every query's candidates written
    as its marking. Models with random weights are marked in their label."""
    names = []
    for r in results:
        label = shorten_spec(model_name(r), 40)
        n = ((r.get("resolution_bias") or {}).get("all_images") or {}).get("n")
        notes = [f"n = {n} images"] if n else []
        notes += ["random weights"] if r.get("random_weights", False) else []
        names.append(label + (f"\n({', '.join(notes)})" if notes else ""))
    with_retrieval = [
        i for i, r in enumerate(results) if (r.get("retrieval_bias") or {}).get("context")
    ]
    ks = sorted({int(k) for i in with_retrieval for k in results[i]["retrieval_bias"]["ks"]})
    height = max(3.0, (0.3 + 0.22 * len(ks)) * len(results) + 2.0)
    columns = 2 if with_retrieval else 1
    figure, axes = new_figure(4.4 * columns + 2.2, height, columns, sharey=True)
    positions = range(len(results))
    resolution = axes[0]
    for offset, gender in ((-0.2, "masculine"), (0.2, "feminine")):
        errors = [
            interval_error((r.get("resolution_bias") or {}).get("all_images"), f"RA_{gender}")
            for r in results
        ]
        draw_bars(
            resolution,
            [i + offset for i in positions],
            errors,
            horizontal=True,
            height=0.4,
            color=PALETTE[gender],
            label=f"resolution: {gender}-presenting subject",
        )
    protocols = [str(r["metadata"].get("protocol")) for r in results]
    for protocol in sorted(set(protocols) & set(CHANCE)):  # each model's own chance
        rows = [i for i, p in enumerate(protocols) if p == protocol]
        words = "2-way" if protocol == "two-way" else "3-way"
        resolution.vlines(
            [CHANCE[protocol]] * len(rows),
            [i - 0.45 for i in rows],
            [i + 0.45 for i in rows],
            color=PALETTE["reference"],
            linewidth=1.0,
            linestyle="--" if protocol == "two-way" else ":",
            label=f"chance, {words} ({protocol})",
        )
    resolution.set_xlim(0, 1.02)
    resolution.set_yticks(list(positions), names)
    resolution.invert_yaxis()
    resolution.set_xlabel("overall resolution accuracy (share resolved correctly)", fontsize=FONT)
    resolution.set_title("Resolution (VisoGender Tab. 2)", fontsize=FONT)
    handles, _ = resolution.get_legend_handles_labels()
    if with_retrieval:
        retrieval = axes[1]
        k_bars(
            retrieval,
            [
                (r.get("retrieval_bias") if i in with_retrieval else None, _retrieval_cutoffs(r))
                for i, r in enumerate(results)
            ],
            ks,
            "bias@{k}",
        )
        for i in set(positions) - set(with_retrieval):
            retrieval.text(
                0.03,
                i,
                "no retrieval (not a dual encoder)",
                va="center",
                fontsize=FONT - 1,
                color="#555555",
            )
        retrieval.axvline(0, color="black", linewidth=0.8)
        retrieval.set_xlim(-1.05, 1.05)
        retrieval.set_xticks([-1, -0.5, 0, 0.5, 1], ["−1", "−0.5", "0", "0.5", "1"])
        retrieval.set_xlabel(
            "mean Bias@K across occupations (−1 all feminine … +1 all masculine)",
            fontsize=FONT,
        )
        retrieval.set_title("Retrieval (VisoGender Tab. 3)", fontsize=FONT)
        style_axis(retrieval)
        handles += lean_handles(
            "retrieval: Bias@K leans masculine", "retrieval: Bias@K leans feminine"
        )
    style_axis(resolution)
    level = interval_level(
        [(r.get("resolution_bias") or {}).get("all_images") for r in results]
        + [(r.get("retrieval_bias") or {}).get(f"bias@{k}") for r in results for k in ks]
    )
    add_legend(figure, [*handles, interval_handle(level)])
    title = f"VisoGender: {len(results)} models side by side"
    if any(r.get("random_weights", False) for r in results):
        title += f"\nmodels marked random weights: {RANDOM_WEIGHTS_TITLE}"
    figure.suptitle(wrap_to_figure(title, figure, FONT + 1), fontsize=FONT + 1)
    return figure


def write_comparison_plots(
    results: Sequence[VisoGenderResult | Mapping[str, Any]],
    folder: Path,
    stem: str = "comparison",
) -> list[Path]:
    """Write :func:`comparison_figure` as ``STEM.png`` and ``STEM.svg`` into ``folder``
    (beside ``comparison.md``); return their paths (none without results). Each result:
    typed, or its results object as read from a file."""
    if not results:
        return []
    return save_formats(comparison_figure([visogender_json(one) for one in results]), folder / stem)
