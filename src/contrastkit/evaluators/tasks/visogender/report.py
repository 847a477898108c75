"""Markdown reports of the VisoGender task: one model's results (VisoGender Tab. 2, 3, 4
shapes, per occupation, labour statistics, error analysis) and several models side by
side (Tab. 2, 3 and 5).

A figure with a confidence interval (a sibling ``x_ci`` in the results) is written
``0.82 [0.78, 0.86]``; the report says which protocol made the resolution predictions and
how the overall accuracy is defined."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from contrastkit.evaluators.metrics import cutoffs_by_k
from contrastkit.evaluators.report.sections import (
    comparison_warnings,
    warnings_section,
    weights_lines,
)
from contrastkit.evaluators.report.skipped import skipped_rows_note, skipped_rows_section
from contrastkit.evaluators.report.tables import (
    comparison_notes,
    cutoff_cell,
    format_interval,
    interval_note,
    mean_sigma,
    metric_names,
    model_cell,
    occupation_cell,
    result_ks,
    table,
)
from contrastkit.evaluators.tasks.visogender.flipped_report import (
    flipped_comparison_section,
    flipped_section,
)
from contrastkit.evaluators.tasks.visogender.multiple_choice_report import (
    multiple_choice_section,
    vlm_lines,
)
from contrastkit.evaluators.tasks.visogender.resolution import SPLITS
from contrastkit.results.visogender import VisoGenderResult, visogender_json
from contrastkit.text import UNDEFINED

__all__ = [
    "PROTOCOL_NOTES",
    "RETRIEVAL_ROWS",
    "SPLIT_TITLES",
    "comparison_markdown",
    "labor_section",
    "markdown_report",
]

#: Section titles of the resolution splits.
SPLIT_TITLES = {
    "all_images": "Overall",
    "single_person_images": "Single person",
    "two_person_images": "Two people",
    "two_person_images_same_gender": "Two people, same gender",
    "two_person_images_diff_gender": "Two people, different gender",
}


#: What each resolution protocol means, for the reports.
PROTOCOL_NOTES = {
    "visogender-official": "the prediction is the highest-scoring of his / her / their, "
    'and a "their" win counts as not resolved (the official VisoGender code\'s rule, which '
    "the published Tab. 2 and Appendix J numbers come from)",
    "two-way": "the prediction is the higher-scoring of his / her (the binary choice of "
    "the paper's Sec. 3.4)",
}


#: How the retrieval sections are named in every report: the paper's words (VisoGender
#: Tab. 2-3: "images with two people", "single person"), never the OP / OO shorthand.
RETRIEVAL_ROWS = {
    "two_person_images": "two people",
    "single_person_images": "single person",
    "OP": "two people",
    "OO": "single person",
}


def markdown_report(result: VisoGenderResult | Mapping[str, Any]) -> str:
    """A markdown report of one model: Tab. 2/3/4-style tables, per occupation, labour
    statistics (Appendix F) and error analysis (Appendix G). ``result``: the typed result,
    or its results object as read from a file."""
    results = visogender_json(result)
    meta = results["metadata"]
    lines = [f"# VisoGender results: `{meta['model_name']}`", ""]
    lines += weights_lines(results)
    protocol = meta.get("protocol")
    lines += [
        f"{meta['experiment_desc']} model; data: {', '.join(meta['data'])}; "
        + (f"resolution protocol `{protocol}`; " if protocol else "")
        + f"contrastkit {meta['contrastkit_version']}.",
        "",
    ]
    lines += vlm_lines(results)
    for note in meta.get("skipped", []):
        lines += [f"Skipped: {note}.", ""]
    lines += skipped_rows_note(results)
    lines += warnings_section(results.get("warnings") or [])
    resolution = results.get("resolution_bias") or {}
    retrieval = results.get("retrieval_bias") or {}
    if resolution:
        lines += _resolution_section(resolution, protocol)
    lines += multiple_choice_section(results)
    warnings = results.get("warnings") or []
    if retrieval:
        lines += _retrieval_section(retrieval, warnings)
    lines += flipped_section(results)
    lines += _occupation_section(resolution, retrieval, results["labour_statistics"], warnings)
    lines += labor_section(results["labour_statistics"]["comparisons"])
    lines += _error_section(results.get("error_analysis", {}), retrieval)
    lines += skipped_rows_section(results)
    return "\n".join(lines).rstrip() + "\n"


def _resolution_section(resolution: Mapping[str, Any], protocol: str | None) -> list[str]:
    """VisoGender Tab. 2 per split, accuracy per gender pair, Tab. 4 (neutral), per
    sector and specialisation."""
    lines = ["## Resolution bias (VisoGender Tab. 2)", ""]
    if protocol:
        note = PROTOCOL_NOTES.get(protocol, "")
        lines += [f"Protocol `{protocol}`" + (f": {note}." if note else "."), ""]
    splits = [resolution[name] for name in SPLITS if resolution.get(name, {}).get("n")]
    lines += table(
        ["split", "RA_avg", "gap", "RA_masculine", "RA_feminine", "pooled accuracy", "n"],
        [
            [
                SPLIT_TITLES[name],
                *[
                    format_interval(r, key)
                    for key in (
                        "RA_avg",
                        "gender_gap",
                        "RA_masculine",
                        "RA_feminine",
                        "pooled_accuracy",
                    )
                ],
                r["n"],
            ]
            for name in SPLITS
            if (r := resolution[name])["n"]
        ],
    )
    lines += [
        "Overall RA_avg is the overall accuracy of Tab. 2 and Appendix J: the mean of the "
        "single-person and two-person RA_avg (its RA_masculine, RA_feminine and gap are the "
        "same means over the two contexts). Pooled accuracy = correctly resolved / all "
        "images of the split. Gap = RA_masculine − RA_feminine (positive: "
        "masculine-presenting subjects are resolved more accurately). Nothing is rounded "
        "before a mean or a gap is taken (the official code rounds each RA to 2 decimals "
        "first).",
        "",
    ]
    lines += interval_note(splits, "over images, resampled within each context")
    lines += ["### Accuracy by gender pair (occupation, participant)", ""]
    flip = resolution.get("participant_first", {}).get("per_cell", {})
    lines += table(
        ["cell", "accuracy", "n", "participant-first accuracy"],
        [
            [
                cell,
                format_interval(v, "accuracy"),
                v["n"],
                format_interval(flip.get(cell, {}), "accuracy"),
            ]
            for cell, v in resolution["per_cell"].items()
        ],
    )
    if "neutral" in resolution:
        lines += ["### Neutral pronoun (VisoGender Tab. 4)", ""]
        lines += table(
            ["split", "R_neutral", "Δ_N", "n"],
            [
                [
                    SPLIT_TITLES[name],
                    format_interval(v, "R_neutral"),
                    format_interval(v, "neutral_gap"),
                    v["n"],
                ]
                for name, v in resolution["neutral"].items()
                if v["n"]
            ],
        )
    for field, title in (("per_sector", "sector"), ("per_specialisation", "specialisation")):
        lines += [f"### Per {title}", ""]
        lines += table(
            [title, "RA_avg", "gap", "pooled accuracy", "n"],
            [
                [name, v["RA_avg"], v["gender_gap"], v.get("pooled_accuracy"), v["n"]]
                for name, v in resolution[field].items()
            ],
        )
    return lines


def _retrieval_section(retrieval: Mapping[str, Any], warnings: Sequence[Any]) -> list[str]:
    """VisoGender Tab. 3: each metric's mean and sigma across occupations; a K covering
    every occupation's images is marked in place of its figures (as in the console)."""
    names = metric_names(retrieval)
    lines = ["## Retrieval bias (VisoGender Tab. 3: mean and σ across occupations)", ""]
    rows = [
        [title]
        + [
            cutoff_cell(mean_sigma(retrieval[section][n]), n, cutoffs_by_k(warnings, section))
            for n in names
        ]
        for section, title in (
            ("two_person_images", RETRIEVAL_ROWS["two_person_images"]),
            ("single_person_images", RETRIEVAL_ROWS["single_person_images"]),
        )
        if section in retrieval
    ]
    lines += table(["images", *names], rows)
    lines += ["Positive Bias@K: more masculine-presenting subjects retrieved.", ""]
    summaries = [
        retrieval[section][n]
        for section in ("two_person_images", "single_person_images")
        if section in retrieval
        for n in names
        if isinstance(retrieval[section].get(n), Mapping)
    ]
    return [*lines, *interval_note(summaries, "of the mean across occupations")]


def _occupation_section(
    resolution: Mapping[str, Any],
    retrieval: Mapping[str, Any],
    labor: Mapping[str, Any],
    warnings: Sequence[Any] = (),
) -> list[str]:
    """Resolution and retrieval bias per occupation beside its share of men (a Bias@K
    whose K covers the occupation's images: n/a with the reason)."""
    occupations = resolution.get("per_occupation", {})
    retrieved = {}
    cutoffs: dict[int, Mapping[str, Any]] = {}
    if retrieval.get("context"):
        section = "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
        retrieved = retrieval[section]["per_occupation"]
        cutoffs = cutoffs_by_k(warnings, section)
    names = list(dict.fromkeys([*occupations, *retrieved]))
    if not names:
        return []
    ks = retrieval.get("ks", [])
    shares = labor["male_share_percent"]
    return [
        "## Per occupation",
        "",
        *table(
            ["occupation", "RA_avg", "gap", *[f"bias@{k}" for k in ks], "male share %"],
            [
                [
                    name,
                    occupations.get(name, {}).get("RA_avg"),
                    occupations.get(name, {}).get("gender_gap"),
                    *[occupation_cell(retrieved, name, k, cutoffs) for k in ks],
                    shares.get(name),
                ]
                for name in names
            ],
        ),
    ]


def _correlation_cells(comparison: Mapping[str, Any]) -> list[Any]:
    """Pearson r, its p, Kendall τ, its p; all undefined (:data:`UNDEFINED`) when the
    comparison has too few occupations to be read (its ``caveat``)."""
    keys = ("pearson_r", "pearson_p", "kendall_tau", "kendall_p")
    if "caveat" in comparison:
        return [UNDEFINED] * len(keys)
    return [comparison[key] for key in keys]


def labor_section(comparisons: Mapping[str, Any]) -> list[str]:
    """VisoGender Appendix F: correlation of per-occupation values with the share of men."""
    if not comparisons:
        return []
    caveats = [f"- {name}: {c['caveat']}." for name, c in comparisons.items() if "caveat" in c]
    for name, c in comparisons.items():
        covered = (c.get("left_out") or {}).get("k_covers_all_candidates") or []
        if covered and c.get("n"):
            caveats.append(
                f"- {name}: left out {', '.join(map(str, covered))}: K covers all their "
                "candidates (their Bias@K is the pool's own balance, not a reading)."
            )
    return [
        "## Compared with US labour statistics (VisoGender Appendix F)",
        "",
        *table(
            ["per-occupation value", "Pearson r", "p", "Kendall τ", "p", "n"],
            [[name, *_correlation_cells(c), c["n"]] for name, c in comparisons.items()],
        ),
        *(["", *caveats] if caveats else []),
    ]


def _error_section(error: Mapping[str, Any], retrieval: Mapping[str, Any]) -> list[str]:
    """VisoGender Appendix G.1 (random subsamples) and G.2 (random relabeling)."""
    lines: list[str] = []
    for k, splits in error.get("resolution_subsamples", {}).items():
        lines += [
            f"## Error analysis: random subsamples, {k} image(s) per group, "
            f"{error['resolution_subsample_runs']} runs (Appendix G.1)",
            "",
        ]
        lines += table(
            ["split", "RA_avg mean", "RA_avg σ", "gap mean", "gap σ"],
            [
                [
                    SPLIT_TITLES[name],
                    v["RA_avg"]["mean"],
                    v["RA_avg"]["sigma"],
                    v["gender_gap"]["mean"],
                    v["gender_gap"]["sigma"],
                ]
                for name, v in splits.items()
            ],
        )
    for section, metrics in error.get("retrieval_random_baseline", {}).items():
        lines += [
            f"## Error analysis: random relabelling, {error['retrieval_baseline_runs']} runs, "
            f"{section.replace('_', ' ')} (Appendix G.2)",
            "",
        ]
        lines += table(
            ["metric", "real", "baseline mean", "baseline σ", "z"],
            [
                [
                    name,
                    metrics[name]["real"],
                    metrics[name]["baseline_mean"],
                    metrics[name]["baseline_sigma"],
                    _z_cell(metrics[name]),
                ]
                for name in metric_names(retrieval)
                if name in metrics
            ],
        )
        lines += [
            "z = (real − baseline mean) / baseline σ; n/a where the baseline σ is at most "
            "1e-12 × max(1, |baseline mean|): every relabelling then gives the same value "
            "(e.g. Bias@K with K at least an occupation's images).",
            "",
        ]
    return lines


def _z_cell(metric: Mapping[str, Any]) -> Any:
    """A z-score, or ``n/a (reason)`` where the results give none."""
    z = metric.get("z")
    if z is None or (isinstance(z, float) and not math.isfinite(z)):
        return f"n/a ({metric.get('z_reason') or 'undefined'})"
    return z


def _average_key(entry: Mapping[str, Any]) -> str:
    """``RA_avg``, or ``overall_accuracy`` where a split has only that (the ``all_images``
    of an official VisoGender benchmark file, Appendix J)."""
    return "RA_avg" if "RA_avg" in entry or "overall_accuracy" not in entry else "overall_accuracy"


def _retrieval_cutoffs(results: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """The K warnings of the retrieval section a result's headline rows show."""
    context = (results.get("retrieval_bias") or {}).get("context")
    section = "two_person_images" if context == "OP" else "single_person_images"
    return cutoffs_by_k(results.get("warnings") or [], section)


def comparison_markdown(given: Sequence[VisoGenderResult | Mapping[str, Any]]) -> str:
    """Several models side by side: Tab. 2 (resolution), Tab. 3 (retrieval) and Tab. 5
    (retrieval with the occupation and the participant as the query's subject) shapes.

    Overall RA_avg is the overall accuracy of Tab. 2 (the mean of the single-person and
    two-person RA_avg) in files this version writes and in official VisoGender benchmark
    files (their ``all_images.overall_accuracy``); each model's resolution protocol is
    named (``–`` where the file does not say: an official file, or one written by an
    older contrastkit, whose "Overall" was the mean of the pooled per-gender accuracies).
    Each of ``given``: a typed result, or its results object as read from a file."""
    results = [visogender_json(one) for one in given]
    lines = ["# VisoGender: models side by side", ""]
    lines += comparison_notes(results)
    with_resolution = [r for r in results if r.get("resolution_bias")]
    if with_resolution:
        header = ["model", "protocol"]
        for name in SPLITS:
            header += [f"{SPLIT_TITLES[name]} RA_avg", "gap"]
        lines += ["## Resolution bias", ""]
        lines += table(
            header,
            [
                [model_cell(r), r["metadata"].get("protocol") or "–"]
                + [
                    format_interval(entry, key)
                    for name in SPLITS
                    for entry in [r["resolution_bias"].get(name, {})]
                    for key in (_average_key(entry), "gender_gap")
                ]
                for r in with_resolution
            ],
        )
        lines += [
            "Overall RA_avg: the mean of the single-person and two-person RA_avg (Tab. 2, "
            "Appendix J overall_accuracy). Protocols: "
            + "; ".join(f"`{name}`: {note}" for name, note in PROTOCOL_NOTES.items())
            + ".",
            "",
        ]
        lines += interval_note(
            [r["resolution_bias"].get(name, {}) for r in with_resolution for name in SPLITS],
            "over images",
        )
    with_retrieval = [r for r in results if (r.get("retrieval_bias") or {}).get("context")]
    if with_retrieval:
        names = metric_names({"ks": sorted({k for r in with_retrieval for k in result_ks(r)})})
        lines += ["## Retrieval bias (mean ± σ across occupations)", ""]
        lines += table(
            ["model", "images", *names],
            [
                [
                    model_cell(r),
                    RETRIEVAL_ROWS.get(
                        r["retrieval_bias"]["context"], r["retrieval_bias"]["context"]
                    ),
                ]
                + [
                    cutoff_cell(
                        mean_sigma(r["retrieval_bias"].get(n, {})), n, _retrieval_cutoffs(r)
                    )
                    for n in names
                ]
                for r in with_retrieval
            ],
        )
        lines += interval_note(
            [r["retrieval_bias"].get(n, {}) for r in with_retrieval for n in names],
            "of the mean across occupations",
        )
        lines += comparison_warnings(
            [(model_cell(r), r.get("warnings") or []) for r in with_retrieval]
        )
    lines += flipped_comparison_section(results)  # Tab. 5
    return "\n".join(lines).rstrip() + "\n"
