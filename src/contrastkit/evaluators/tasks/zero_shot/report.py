"""The zero-shot disparity reports: ``disparity.json``, ``report.md`` and the plots.

``disparity.json`` keys: ``task`` (``zero-shot-disparity``), ``model`` / ``predictions``
/ ``label``, ``random_weights`` and ``weights_note``, ``data`` (``path``, ``layout``,
``split``, ``concept_map``), ``groups``, ``counts`` (``images_read``, ``images`` per group,
``images_kept``, ``dropped``, ``concepts_seen``, ``concepts_kept``, ``min_images``,
``filter_split``), ``paper_counts``, ``prompt``, ``units`` (points, x 100),
``bootstrap``, ``map`` (``men``, ``women``, ``difference`` and their ``_ci``),
``calibration`` (``computed``, ``mode``, ``bins``, ``probabilities``, ``reason``),
``concepts`` (one entry per kept concept, largest ``|ap_diff|`` first: ``concept``,
``positives`` per group, ``ap_men``, ``ap_women``, ``ap_diff``, ``ap_diff_ci``, and with
calibration ``ece_men``, ``ece_women``, ``ece_diff``, ``ece_diff_ci``), optionally
``predictions_file``, ``cache`` (with a model: ``folder``, and ``images`` / ``prompts``
embeddings ``reused`` from an earlier run and ``computed``; :mod:`.cache`), ``language``
(per word source: ``vectors``, ``concepts``, ``agreement`` with ``ap`` / ``ece``),
``consistency`` (``other``, ``threshold``, ``concepts`` with their ``colour``,
``counts``) and ``plots``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contrastkit.io import atomic_write_text
from contrastkit.text import (
    UNDEFINED,
    escape_cell,
    format_number,
    format_p,
    table_header,
    table_row,
)

__all__ = ["COSINE_NOT_PROBABILITIES", "disparity_markdown", "write_outputs"]

#: Why ECE is refused for a dual encoder's multi-label scores (Appendix A.2).
COSINE_NOT_PROBABILITIES = (
    "a dual encoder's multi-label scores are cosine similarities in [-1, 1] between one "
    "image and one prompt, not probabilities: nothing scales them into the chance that the "
    "concept is present, and several concepts can be present in one image, so a softmax "
    "over the concepts does not apply either (Appendix A.2). Choose the single-label "
    "softmax setting (--calibration softmax) to calibrate the model's softmax over the "
    "concepts, or bring predictions with probabilities"
)

_LIMITATION = (
    "Groups are perceived gender as annotators labelled it (Visual Genome synsets, COCO "
    "caption words): binary, reductive, and nobody's self-described identity (the paper's "
    "Limitations). Read the gaps as the model's behaviour on these labels."
)


def _num(value: float | None, digits: int = 1) -> str:
    """A signed difference, rounded first so that a tiny negative one reads ``+0.0``."""
    rounded = None if value is None else round(float(value), digits) + 0.0
    return format_number(rounded, digits, sign=True, missing=UNDEFINED)


def _plain(value: float | None, digits: int = 1) -> str:
    return format_number(None if value is None else float(value), digits, missing=UNDEFINED)


def _ci(ci: Sequence[float | None] | None, digits: int = 1, *, signed: bool = True) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    sign = "+" if signed else ""
    low, high = (round(v, digits) + 0.0 for v in (ci[0], ci[1]))
    return f" [{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"


def _language_values(results: Mapping[str, Any]) -> tuple[str | None, dict[str, float]]:
    language = results.get("language") or {}
    for source in ("file", "model"):
        if source in language:
            concepts = language[source]["concepts"]
            return source, {c: v["bias"] for c, v in concepts.items() if v["bias"] is not None}
    return None, {}


def _counts_section(results: Mapping[str, Any]) -> list[str]:
    counts, paper = results["counts"], results["paper_counts"]
    data = results["data"]
    layout = {"vg": "Visual Genome", "coco": "COCO"}[data["layout"]]
    split = f", split {data['split']}" if data.get("split") else ""
    filtered = (
        f" (filter counted on split {counts['filter_split']})"
        if counts.get("filter_split") and counts["filter_split"] != data.get("split")
        else ""
    )
    dropped = counts["dropped"]
    return [
        "## Groups and concepts",
        "",
        f"{layout} at `{data['path']}`{split}. Images keep one perceived-gender group; "
        f"concepts need at least {counts['min_images']} images in each group{filtered}.",
        "",
        *table_header(["", "this run", "the paper"], "lrr"),
        table_row(["images of men", f"{counts['images']['men']:,}", ""]),
        table_row(["images of women", f"{counts['images']['women']:,}", ""]),
        table_row(["images kept", f"{counts['images_kept']:,}", f"{paper['images']:,}"]),
        table_row(
            [
                "concepts kept",
                f"{counts['concepts_kept']:,} of {counts['concepts_seen']:,}",
                f"{paper['concepts']:,}",
            ]
        ),
        "",
        f"Of {counts['images_read']:,} images read, {dropped['both_groups']:,} show both "
        f"groups and {dropped['no_group']:,} neither; {_without_concept(counts)}",
        "",
        _LIMITATION,
        "",
    ]


def _without_concept(counts: Mapping[str, Any]) -> str:
    """What became of the single-group images that show no kept concept."""
    n = counts.get("without_concept", counts["dropped"]["no_concept"])
    if counts.get("images_without_concepts", "drop") == "drop":
        return (
            f"{n:,} more show no kept concept. All were left out (`--images-without-concepts "
            "drop`; the paper keeps the last ones)."
        )
    return (
        "both were left out. "
        f"{n:,} of the images kept show no kept concept: each is a negative of every concept, "
        "as in the paper (`--images-without-concepts drop` leaves them out)."
    )


def _ap_section(results: Mapping[str, Any], top: int, plots: Mapping[str, str]) -> list[str]:
    mapped = results["map"]
    rows = results["concepts"]
    gaps = [r for r in rows if r["ap_diff"] is not None and abs(r["ap_diff"]) > 5.0]
    source, language = _language_values(results)
    lines = [
        "## Experiment 1: AP by group",
        "",
        f"mAP over the {len(rows)} concepts: men {_plain(mapped['men'])}"
        f"{_ci(mapped.get('men_ci'), signed=False)}, women {_plain(mapped['women'])}"
        f"{_ci(mapped.get('women_ci'), signed=False)}; difference "
        f"{_num(mapped['difference'])}{_ci(mapped.get('difference_ci'))} points. Per "
        f"concept, {len(gaps)} of {len(rows)} concepts differ by more than 5 AP points "
        "(largest first below): one number per group can hide per-concept gaps (Fig. 2).",
        "",
        "AP difference = AP_men - AP_women, in points: positive means the model finds the "
        "concept better in images of men. Intervals: "
        + (
            f"{results['bootstrap']['confidence']:.0%} percentile bootstrap "
            f"({results['bootstrap']['resamples']} resamples of the images within each group)."
            if results["bootstrap"]["resamples"]
            else "none (no bootstrap)."
        ),
        "",
    ]
    if "ap_differences" in plots:
        lines += [f"![top AP differences]({plots['ap_differences']})", ""]
    header = ["concept", "images (men / women)", "AP men", "AP women", "difference"]
    if language:
        header.append(f"language bias ({source})")
    lines += [f"Top {min(top, len(rows))} concepts by |difference|:", ""]
    lines += table_header(header, "l" + "r" * (len(header) - 1))
    for r in rows[:top]:
        cells = [
            escape_cell(r["concept"]), f"{r['positives']['men']} / {r['positives']['women']}",
            _plain(r["ap_men"]), _plain(r["ap_women"]), _num(r["ap_diff"]) + _ci(r["ap_diff_ci"]),
        ]  # fmt: skip
        if language:
            cells.append(_num(language.get(r["concept"]), 3))
        lines.append(table_row(cells))
    noted = [r for r in rows if r.get("note")]
    if noted:
        lines += ["", *(f"- {escape_cell(r['concept'])}: {r['note']}." for r in noted)]
    if "map_by_group" in plots:
        lines += ["", f"![mAP per group]({plots['map_by_group']})"]
    return [*lines, ""]


def _ece_section(results: Mapping[str, Any], top: int, plots: Mapping[str, str]) -> list[str]:
    calibration = results["calibration"]
    lines = ["## Experiment 2: calibration by group", ""]
    if not calibration["computed"]:
        return [*lines, f"ECE was not computed: {calibration['reason']}.", ""]
    rows = sorted(
        (r for r in results["concepts"] if r.get("ece_diff") is not None),
        key=lambda r: (-abs(r["ece_diff"]), r["concept"]),
    )
    lines += [
        f"Expected calibration error (Naeini et al. 2015) per concept and group, "
        f"{calibration['bins']} equal-width bins of the predicted probability that the "
        "concept is present: ECE = sum over bins of (bin size / n) x |fraction present - "
        f"mean probability|, in points. Probabilities: {calibration['probabilities']}. "
        "ECE difference = ECE_women - ECE_men: positive means better calibrated for images "
        "of men.",
        "",
    ]
    if "ece_differences" in plots:
        lines += [f"![top ECE differences]({plots['ece_differences']})", ""]
    lines += [
        *table_header(["concept", "ECE men", "ECE women", "difference"], "lrrr"),
        *(
            table_row(
                [
                    escape_cell(r["concept"]),
                    _plain(r["ece_men"]),
                    _plain(r["ece_women"]),
                    _num(r["ece_diff"]) + _ci(r["ece_diff_ci"]),
                ]
            )
            for r in rows[:top]
        ),
    ]
    return [*lines, ""]


def _language_section(results: Mapping[str, Any], top: int) -> list[str]:
    """Experiment 3 per word source (:func:`.words.language_markdown`), with the sign
    agreement with the ECE difference when there is one."""
    from contrastkit.evaluators.tasks.zero_shot.words import (
        Agreement,
        LanguageBias,
        LanguageSection,
        language_markdown,
    )

    language = results.get("language")
    if not language:
        return []
    names = {"file": "a word-vectors file", "model": "the model's own text encoder"}
    lines: list[str] = []
    for source, entry in language.items():
        biases = {
            c: LanguageBias(**{**v, "words": tuple(v["words"]), "missing": tuple(v["missing"])})
            for c, v in entry["concepts"].items()
        }
        agreements = {
            kind: Agreement(**{**a, "concepts": tuple(a["concepts"]),
                               "agreeing": tuple(a["agreeing"])})
            for kind, a in entry["agreement"].items()
        }  # fmt: skip
        ap = {r["concept"]: r["ap_diff"] for r in results["concepts"]}
        vectors = entry["vectors"]
        lines.append(
            language_markdown(
                biases, agreements["ap"],
                LanguageSection(
                    disparity=ap, disparity_name="AP difference (men − women)",
                    vectors_name=f"{names.get(source, source)} ({vectors['source']})", top=top,
                    heading=f"## Experiment 3: language bias ({names.get(source, source)})",
                ),
            ).rstrip()
        )  # fmt: skip
        if "ece" in agreements:
            e = agreements["ece"]
            text = (
                f"Sign agreement with the ECE difference (women − men): {e.agree} of {e.n} concepts"
            )
            if e.pearson_r is not None and e.spearman_rho is not None:
                p_pearson = format_p(e.pearson_p, missing=UNDEFINED)
                p_spearman = format_p(e.spearman_p, missing=UNDEFINED)
                text += (
                    f"; Pearson r = {e.pearson_r:.3f} (p {p_pearson}), "
                    f"Spearman ρ = {e.spearman_rho:.3f} (p {p_spearman})"
                )
            elif e.reason:
                text += f" ({e.reason})"
            lines += ["", text + "."]
        lines.append("")
    return lines


def _consistency_section(results: Mapping[str, Any], plots: Mapping[str, str]) -> list[str]:
    consistency = results.get("consistency")
    if not consistency:
        return []
    counts = consistency["counts"]
    t = consistency["threshold"]
    lines = ["## Consistency with a second dataset", ""]
    if results.get("compare_report"):
        lines += [f"The second dataset's own report: [{results['compare_report']}]"
                  f"({results['compare_report']}).", ""]  # fmt: skip
    if not consistency["concepts"]:
        return [*lines, f"No concept of this analysis is in `{consistency['other']}` too.", ""]
    lines += [
        f"Against `{consistency['other']}` ({len(consistency['concepts'])} shared concepts): "
        f"green {counts['green']} (same direction, both |difference| > {t:g}), red "
        f"{counts['red']} (opposite directions, both > {t:g}), yellow {counts['yellow']} "
        "(otherwise) (Fig. 3-4).",
        "",
    ]
    if "consistency" in plots:
        lines += [f"![consistency]({plots['consistency']})", ""]
    lines += table_header(["concept", "this dataset", "other", "colour"], "lrrl")
    order = {"green": 0, "red": 1, "yellow": 2}
    for r in sorted(consistency["concepts"], key=lambda r: (order[r["colour"]], r["concept"])):
        lines.append(table_row([
            escape_cell(r["concept"]), _num(r["ap_diff"]), _num(r["other_ap_diff"]), r["colour"]
        ]))  # fmt: skip
    return [*lines, ""]


def disparity_markdown(results: Mapping[str, Any], *, top: int = 20) -> str:
    """The ``report.md`` of a ``disparity.json`` content."""
    plots = dict(results.get("plots") or {})
    lines = [f"# Zero-shot disparities by perceived gender: {results['label']}", ""]
    if results.get("weights_note"):
        lines += [f"> **{results['weights_note']}**", ""]
    prompt = results.get("prompt")
    if prompt == "{}":
        lines += ["Prompt per concept: the concept's words alone, as in the paper.", ""]
    elif prompt is not None:
        lines += [f"Prompt per concept: `{prompt}` (`{{}}`: the concept's words).", ""]
    if results.get("predictions_file"):
        p = results["predictions_file"]
        lines += [
            f"Predictions: `{p['file']}` ({p['kind']} rows; {p['rows_used']:,} of "
            f"{p['rows']:,} rows used, {p['unknown_images']:,} images and "
            f"{p['unknown_concepts']:,} concepts outside the analysis; missing pairs count "
            "as score 0 / no hit).",
            "",
        ]
    lines += _counts_section(results)
    lines += _ap_section(results, top, plots)
    lines += _ece_section(results, top, plots)
    lines += _language_section(results, top)
    lines += _consistency_section(results, plots)
    return "\n".join(lines).rstrip() + "\n"


def _plots(results: dict[str, Any], folder: Path, top: int) -> dict[str, list[Path]]:
    from contrastkit.evaluators.tasks.zero_shot import plots

    note = results.get("weights_note")
    label = results["label"]
    _, language = _language_values(results)
    rows = results["concepts"]
    made: dict[str, list[Path]] = {}
    # a concept in every image of a group has AP 100 there by construction: not drawn
    noted = [r["concept"] for r in rows if r.get("note")]
    diffs = {
        r["concept"]: r["ap_diff"]
        for r in rows
        if r["ap_diff"] is not None and r["concept"] not in noted
    }
    intervals = {
        r["concept"]: (r["ap_diff_ci"][0], r["ap_diff_ci"][1])
        for r in rows
        if r["ap_diff_ci"] and None not in r["ap_diff_ci"]
    }
    title = f"AP_men - AP_women (points): {label}"
    if noted:
        title += (
            f"; left out, in every image of a group (AP 100 there by construction): "
            f"{', '.join(noted[:3])}{' ...' if len(noted) > 3 else ''}"
        )
    made["ap_differences"] = plots.plot_top_differences(
        folder / "plots" / "ap_differences",
        plots.ConceptDifferences(diffs, intervals or None, language or None),
        plots.FigureText(title, note), top=top,
    )  # fmt: skip
    mapped = results["map"]
    if mapped["men"] is not None and mapped["women"] is not None:
        made["map_by_group"] = plots.plot_group_map(
            folder / "plots" / "map_by_group", {"men": mapped["men"], "women": mapped["women"]},
            plots.FigureText(f"mAP per group over {len(rows)} concepts: {label}", note),
        )  # fmt: skip
    if results["calibration"]["computed"]:
        ece = {r["concept"]: r["ece_diff"] for r in rows if r.get("ece_diff") is not None}
        ece_ci = {
            r["concept"]: (r["ece_diff_ci"][0], r["ece_diff_ci"][1])
            for r in rows
            if r.get("ece_diff_ci") and None not in r["ece_diff_ci"]
        }
        made["ece_differences"] = plots.plot_top_differences(
            folder / "plots" / "ece_differences",
            plots.ConceptDifferences(ece, ece_ci or None, language or None),
            plots.FigureText(
                f"ECE_women - ECE_men (points): {label}", note,
                value_label="ECE difference: ECE_women − ECE_men (points)",
            ),
            top=top,
        )  # fmt: skip
    consistency = results.get("consistency")
    if consistency and consistency["concepts"]:
        a = {r["concept"]: r["ap_diff"] for r in consistency["concepts"]}
        b = {r["concept"]: r["other_ap_diff"] for r in consistency["concepts"]}
        other = consistency.get("other_data") or consistency["other"]
        made["consistency"] = plots.plot_consistency(
            folder / "plots" / "consistency",
            plots.ComparedDifferences(
                a, b, (Path(results["data"]["path"]).name, Path(str(other)).name)
            ),
            plots.FigureText(note=note), threshold=consistency["threshold"],
        )  # fmt: skip
    return made


def _clean(value: Any) -> Any:
    """``value`` with NaN and infinities as ``None`` and tuples as lists (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    return value


def write_outputs(
    results: dict[str, Any], folder: Path, *, top: int = 20, plots: bool = True
) -> dict[str, Path]:
    """Write the plots (unless ``plots`` is off), ``disparity.json`` and ``report.md``
    into ``folder``; return the files by name (``json``, ``report``, and ``<plot>`` /
    ``<plot>_svg`` per plot: ``ap_differences``, ``map_by_group``, ``ece_differences``,
    ``consistency``)."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    made = _plots(results, folder, top) if plots else {}
    results["plots"] = {}
    for name, paths in made.items():
        for path in paths:
            key = name if path.suffix == ".png" else f"{name}_{path.suffix.lstrip('.')}"
            files[key] = path
            if path.suffix == ".png":
                results["plots"][name] = path.relative_to(folder).as_posix()
    files["json"] = folder / "disparity.json"
    files["report"] = folder / "report.md"
    cleaned = _clean(results)
    results.clear()
    results.update(cleaned)
    atomic_write_text(files["json"], json.dumps(results, indent=2, allow_nan=False) + "\n")
    atomic_write_text(files["report"], disparity_markdown(results, top=top))
    return files
