"""Reports of the retrieval with template flipping (VisoGender Appendix D.2, Tab. 5):
the occupation-subject and participant-subject queries side by side, for one model
(markdown and a plot) and for several (``contrastkit report``).

The numbers come from the ``retrieval_bias`` and ``retrieval_flipped`` sections of a
benchmark JSON (:mod:`contrastkit.evaluators.tasks.visogender.flipped`); a file without
``retrieval_flipped`` (written before contrastkit computed it, or with
``flipped_retrieval`` off) simply has no such section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contrastkit.evaluators.metrics import covers_every_query, cutoff_marking, cutoffs_by_k
from contrastkit.evaluators.report.figures import (
    FONT,
    PALETTE,
    add_legend,
    draw_bars,
    figure_title,
    interval_error,
    interval_handle,
    interval_level,
    label_bars,
    model_name,
    new_figure,
    sign_colour,
    style_axis,
    suptitle,
)
from contrastkit.evaluators.report.tables import (
    cutoff_cell,
    interval_note,
    mean_sigma,
    metric_names,
    model_cell,
    table,
)
from contrastkit.evaluators.tasks.visogender.flipped import FLIPPED_TASK, OO_EXCLUDED

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "SUBJECTS",
    "flipped_comparison_section",
    "flipped_figure",
    "flipped_section",
]

#: The query subjects (rows of the Tab. 5 layout), in words.
SUBJECTS = {
    "occupation": "occupation (e.g. The doctor and their patient)",
    "participant": "participant (e.g. The patient and their doctor)",
}
_READING = (
    "Occupation as subject: images labelled by the occupation's perceived gender (Tab. 3). "
    "Participant as subject: the same images labelled by the participant's perceived "
    "gender, the person the pronoun refers to (Tab. 5). Positive Bias@K: more "
    "masculine-presenting people retrieved."
)


def _directions(results: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(subject, summaries)`` of the two retrieval directions a result has: the
    occupation-subject two-person section and the flipped one."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    retrieval = results.get("retrieval_bias") or {}
    if isinstance(retrieval.get("two_person_images"), Mapping):
        found.append(("occupation", retrieval["two_person_images"]))
    flipped = results.get(FLIPPED_TASK) or {}
    if isinstance(flipped.get("two_person_images"), Mapping):
        found.append(("participant", flipped["two_person_images"]))
    return found


def _excluded_line(flipped: Mapping[str, Any]) -> str:
    n = flipped.get("n_excluded_single_person_images")
    count = f" ({n} single-person images in this run)" if isinstance(n, int) and n else ""
    return f"Participant as subject: {OO_EXCLUDED}{count}."


def flipped_section(results: Mapping[str, Any]) -> list[str]:
    """The markdown section of one model: a Tab. 5-shaped table, one row per query
    subject (occupation, participant, and the participant-subject rankings labelled by
    the occupation's gender as the official code does), each metric's mean ± σ across
    occupations with its interval; nothing when the result has no flipped retrieval."""
    flipped = results.get(FLIPPED_TASK) or {}
    if not flipped.get("context"):
        return []
    names = metric_names(flipped)
    directions = _directions(results)
    # the same two-person images are ranked: a K covering every occupation's images is
    # marked in place of its figures, as in Tab. 3's table and the console
    cutoffs = cutoffs_by_k(results.get("warnings") or [], "two_person_images")

    def cells(summaries: Mapping[str, Any]) -> list[str]:
        return [cutoff_cell(mean_sigma(summaries.get(n) or {}), n, cutoffs) for n in names]

    rows = [
        [
            SUBJECTS[subject],
            "occupation" if subject == "occupation" else "participant",
            *cells(summaries),
            summaries.get("n_queries", "–"),
        ]
        for subject, summaries in directions
    ]
    official = flipped.get("occupation_labels") or {}
    if official:
        rows.append(
            [
                SUBJECTS["participant"],
                "occupation (as the official code)",
                *cells(official),
                (flipped.get("two_person_images") or {}).get("n_queries", "–"),
            ]
        )
    lines = [
        "## Retrieval bias with template flipping (VisoGender Tab. 5: mean ± σ across "
        "occupations, two-person images)",
        "",
    ]
    lines += table(["query subject", "image labelled by", *names, "occupations"], rows)
    lines += [_READING, "", _excluded_line(flipped), ""]
    if official:
        lines += [
            "The official VisoGender code ranks the participant-subject query by the "
            "occupation's perceived gender (it stores only that label); its row is given "
            "for comparison with the published Tab. 5.",
            "",
        ]
    summaries = [s.get(n) for _, s in directions for n in names]
    lines += interval_note(
        [s for s in summaries if isinstance(s, Mapping)], "of the mean across occupations"
    )
    return lines


def flipped_comparison_section(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """Several models in the Tab. 5 layout: per model a row for each query subject
    (occupation, participant), each metric's mean ± σ across occupations of the
    two-person images; the models whose file has no flipped retrieval are named."""
    with_flipped = [r for r in results if (r.get(FLIPPED_TASK) or {}).get("context")]
    without = [r for r in results if r.get("retrieval_bias") and r not in with_flipped]
    if not with_flipped:
        return []
    names = metric_names(with_flipped[0][FLIPPED_TASK])
    rows = [
        [model_cell(r), SUBJECTS[subject]] + [mean_sigma(s.get(n) or {}) for n in names]
        for r in with_flipped
        for subject, s in _directions(r)
    ]
    lines = [
        "## Retrieval bias with template flipping (VisoGender Tab. 5: mean ± σ across "
        "occupations, two-person images)",
        "",
    ]
    lines += table(["model", "query subject", *names], rows)
    lines += [_READING + " " + OO_EXCLUDED[0].upper() + OO_EXCLUDED[1:] + ".", ""]
    lines += [
        "The same participant-subject rankings labelled by the occupation's perceived "
        "gender, as the official VisoGender code computes them, are in each model's "
        "report.md and benchmark.json (retrieval_flipped.occupation_labels).",
        "",
    ]
    if without:
        lines += [
            "No participant-subject retrieval in the results of "
            + ", ".join(f"`{r['metadata']['model_name']}`" for r in without)
            + " (written before contrastkit computed it, or with --no-flipped-retrieval).",
            "",
        ]
    lines += interval_note(
        [
            s[n]
            for r in with_flipped
            for _, s in _directions(r)
            for n in names
            if isinstance(s.get(n), Mapping)
        ],
        "of the mean across occupations",
    )
    return lines


def flipped_figure(results: Mapping[str, Any]) -> Figure:
    """Tab. 3 beside Tab. 5 as a plot: for each metric the mean across occupations with
    the occupation (solid) and the participant (hatched) as the query's subject, its
    value written above the bar, bootstrap intervals of the mean as error bars. Bias@K
    (signed, coloured by the gender it leans to, -1 to +1) and MaxSkew@K / NDKL (never
    negative, grey) in separate panels; a K at or above every pool has no bars, only its
    marking (:func:`~contrastkit.evaluators.metrics.cutoff_marking`)."""
    from matplotlib.patches import Patch

    directions = _directions(results)
    flipped = results[FLIPPED_TASK]
    n = (flipped.get("two_person_images") or {}).get("n_queries")
    images = results.get("metadata", {}).get("n_retrieval_flipped_images")
    # the same pools in both directions
    cutoffs = cutoffs_by_k(results.get("warnings") or [], "two_person_images")

    def _cutoff(name: str) -> Mapping[str, Any] | None:
        k = name.partition("@")[2]
        return cutoffs.get(int(k)) if k.isdigit() else None

    ks = [int(k) for k in flipped.get("ks", [5, 10])]
    panels = ([f"bias@{k}" for k in ks], [f"maxskew@{k}" for k in ks] + ["NDKL"])
    figure, axes = new_figure(8.4, 4.6, 2, width_ratios=[len(panels[0]), len(panels[1])])
    width = 0.8 / len(directions)
    level = interval_level(s.get(m) for _, s in directions for m in (*panels[0], *panels[1]))
    for axis, names in zip(axes, panels, strict=True):
        signed = names[0].startswith("bias")
        tops: list[float] = []
        readable = [i for i, m in enumerate(names) if not covers_every_query(_cutoff(m))]
        for j, (subject, summaries) in enumerate(directions):
            errors = [interval_error(summaries.get(names[i]), "mean") for i in readable]
            bars = draw_bars(
                axis,
                [i - 0.4 + width * (j + 0.5) for i in readable],
                errors,
                width=width * 0.92,
                color=[sign_colour(v) if signed else PALETTE["neutral"] for v, _, _ in errors],
                hatch="////" if subject == "participant" else None,
                edgecolor="white",
            )
            tops += label_bars(axis, bars, errors, signed=signed)
        ticks = []
        for name in names:
            metric, _, k = name.partition("@")
            tick = {"bias": f"Bias@{k}", "maxskew": f"MaxSkew@{k}"}.get(metric, name)
            cutoff = _cutoff(name)
            if cutoff is not None:
                tick += "\n" + cutoff_marking(cutoff).replace(" all ", "\nall ", 1)
            ticks.append(tick)
        axis.set_xticks(range(len(names)), ticks)
        for tick_label, name in zip(axis.get_xticklabels(), names, strict=True):
            if _cutoff(name) is not None:
                tick_label.set_color("#A00000")
        if signed:
            axis.axhline(0, color="black", linewidth=0.8)
            axis.set_ylim(-1.1, 1.1)
            axis.set_ylabel("mean Bias@K (−1 feminine … +1 masculine)", fontsize=FONT)
        else:
            axis.set_ylim(0, 1.2 * max([*tops, 0.1]))
            axis.set_ylabel("mean MaxSkew@K and NDKL (0: balanced)", fontsize=FONT)
        axis.set_xlabel("metric (mean across occupations)", fontsize=FONT - 1)
        style_axis(axis)
    handles = [
        Patch(facecolor="white", edgecolor="black", label=SUBJECTS["occupation"]),
        Patch(facecolor="white", edgecolor="black", hatch="////", label=SUBJECTS["participant"]),
        Patch(color=PALETTE["masculine"], label="Bias@K leans masculine"),
        Patch(color=PALETTE["feminine"], label="Bias@K leans feminine"),
        Patch(color=PALETTE["neutral"], label="MaxSkew@K, NDKL (unsigned), or no lean"),
        interval_handle(level, "of the mean across occupations"),
    ]
    add_legend(
        figure,
        handles,
        title="query subject (solid / hatched; single-person images excluded: no "
        "participant) and the lean of Bias@K",
        title_fontsize=FONT - 1,
    )
    counts = [f"n = {images} images"] * bool(images) + [f"{n} occupations"] * bool(n)
    suptitle(
        figure,
        figure_title(
            results,
            model_name(results),
            "Retrieval bias with template flipping, two-person images "
            "(VisoGender Tab. 3 vs Tab. 5)",
            ", ".join(counts) or None,
        ),
        results,
    )
    return figure
