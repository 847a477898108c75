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

The writer (:func:`write_disparity_files`), ``report.md`` (:func:`disparity_markdown`) and
the plots take the typed :class:`~contrastkit.results.ZeroShotResult` (the classes of
:mod:`contrastkit.results.zero_shot` say what each key holds); :func:`write_outputs` and
:func:`disparity_markdown` also take the JSON object, read into it first.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contrastkit.evaluators.tasks.zero_shot.result import required, with_sections
from contrastkit.io import atomic_write_text
from contrastkit.results.zero_shot import (
    ConceptDisparity,
    ZeroShotCounts,
    ZeroShotResult,
)
from contrastkit.text import (
    UNDEFINED,
    escape_cell,
    format_number,
    format_p,
    table_header,
    table_row,
)

__all__ = [
    "COSINE_NOT_PROBABILITIES",
    "disparity_markdown",
    "write_disparity_files",
    "write_outputs",
]

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


_LAYOUTS = {"vg": "Visual Genome", "coco": "COCO"}


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


def _language_values(result: ZeroShotResult) -> tuple[str | None, dict[str, float]]:
    language = result.language or {}
    for source in ("file", "model"):
        if source in language:
            concepts = language[source].concepts
            return source, {c: v.bias for c, v in concepts.items() if v.bias is not None}
    return None, {}


def _counts_section(result: ZeroShotResult) -> list[str]:
    counts, paper = required(result.counts, "counts"), required(result.paper_counts, "paper_counts")
    data = result.data
    layout = _LAYOUTS[data.layout or ""]
    split = f", split {data.split}" if data.split else ""
    filtered = (
        f" (filter counted on split {counts.filter_split})"
        if counts.filter_split and counts.filter_split != data.split
        else ""
    )
    dropped = required(counts.dropped, "counts.dropped")
    images = required(counts.images, "counts.images")
    return [
        "## Groups and concepts",
        "",
        f"{layout} at `{data.path}`{split}. Images keep one perceived-gender group; "
        f"concepts need at least {counts.min_images} images in each group{filtered}.",
        "",
        *table_header(["", "this run", "the paper"], "lrr"),
        table_row(["images of men", f"{images['men']:,}", ""]),
        table_row(["images of women", f"{images['women']:,}", ""]),
        table_row(["images kept", f"{counts.images_kept:,}", f"{paper['images']:,}"]),
        table_row(
            [
                "concepts kept",
                f"{counts.concepts_kept:,} of {counts.concepts_seen:,}",
                f"{paper['concepts']:,}",
            ]
        ),
        "",
        f"Of {counts.images_read:,} images read, {dropped['both_groups']:,} show both "
        f"groups and {dropped['no_group']:,} neither; {_without_concept(counts, dropped)}",
        "",
        _LIMITATION,
        "",
    ]


def _without_concept(counts: ZeroShotCounts, dropped: Mapping[str, int]) -> str:
    """What became of the single-group images that show no kept concept (files written
    before ``without_concept`` and ``images_without_concepts`` existed: ``dropped``'s
    ``no_concept``, dropped)."""
    n = dropped["no_concept"] if "without_concept" in counts.absent else counts.without_concept
    kept = "drop" if "images_without_concepts" in counts.absent else counts.images_without_concepts
    if kept == "drop":
        return (
            f"{n:,} more show no kept concept. All were left out (`--images-without-concepts "
            "drop`; the paper keeps the last ones)."
        )
    return (
        "both were left out. "
        f"{n:,} of the images kept show no kept concept: each is a negative of every concept, "
        "as in the paper (`--images-without-concepts drop` leaves them out)."
    )


def _intervals_text(result: ZeroShotResult) -> str:
    bootstrap = required(result.bootstrap, "bootstrap")
    if not bootstrap.resamples:
        return "none (no bootstrap)."
    return (
        f"{required(bootstrap.confidence, 'bootstrap.confidence'):.0%} percentile bootstrap "
        f"({bootstrap.resamples} resamples of the images within each group)."
    )


def _ap_section(result: ZeroShotResult, top: int, plots: Mapping[str, str]) -> list[str]:
    mapped = required(result.map, "map")
    rows = result.concepts
    gaps = [r for r in rows if r.ap_diff is not None and abs(r.ap_diff) > 5.0]
    source, language = _language_values(result)
    lines = [
        "## Experiment 1: AP by group",
        "",
        f"mAP over the {len(rows)} concepts: men {_plain(mapped.men)}"
        f"{_ci(mapped.men_ci, signed=False)}, women {_plain(mapped.women)}"
        f"{_ci(mapped.women_ci, signed=False)}; difference "
        f"{_num(mapped.difference)}{_ci(mapped.difference_ci)} points. Per "
        f"concept, {len(gaps)} of {len(rows)} concepts differ by more than 5 AP points "
        "(largest first below): one number per group can hide per-concept gaps (Fig. 2).",
        "",
        "AP difference = AP_men - AP_women, in points: positive means the model finds the "
        "concept better in images of men. Intervals: " + _intervals_text(result),
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
        positives = required(r.positives, "concepts.positives")
        cells = [
            escape_cell(r.concept), f"{positives['men']} / {positives['women']}",
            _plain(r.ap["ap_men"]), _plain(r.ap["ap_women"]), _num(r.ap_diff) + _ci(r.ap_diff_ci),
        ]  # fmt: skip
        if language:
            cells.append(_num(language.get(r.concept), 3))
        lines.append(table_row(cells))
    noted = [r for r in rows if r.note]
    if noted:
        lines += ["", *(f"- {escape_cell(r.concept)}: {r.note}." for r in noted)]
    if "map_by_group" in plots:
        lines += ["", f"![mAP per group]({plots['map_by_group']})"]
    return [*lines, ""]


def _ece_section(result: ZeroShotResult, top: int, plots: Mapping[str, str]) -> list[str]:
    calibration = required(result.calibration, "calibration")
    lines = ["## Experiment 2: calibration by group", ""]
    if not calibration.computed:
        return [*lines, f"ECE was not computed: {calibration.reason}.", ""]
    rows = sorted(
        (r for r in result.concepts if r.ece_diff is not None),
        key=lambda r: (-abs(r.ece_diff or 0.0), r.concept),
    )
    lines += [
        f"Expected calibration error (Naeini et al. 2015) per concept and group, "
        f"{calibration.bins} equal-width bins of the predicted probability that the "
        "concept is present: ECE = sum over bins of (bin size / n) x |fraction present - "
        f"mean probability|, in points. Probabilities: {calibration.probabilities}. "
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
                    escape_cell(r.concept),
                    _plain(r.ece["ece_men"]),
                    _plain(r.ece["ece_women"]),
                    _num(r.ece_diff) + _ci(r.ece_diff_ci),
                ]
            )
            for r in rows[:top]
        ),
    ]
    return [*lines, ""]


def _language_section(result: ZeroShotResult, top: int) -> list[str]:
    """Experiment 3 per word source (:func:`.words.language_markdown`), with the sign
    agreement with the ECE difference when there is one."""
    from contrastkit.evaluators.tasks.zero_shot.words import (
        Agreement,
        LanguageBias,
        LanguageSection,
        language_markdown,
    )

    language = result.language
    if not language:
        return []
    names = {"file": "a word-vectors file", "model": "the model's own text encoder"}
    lines: list[str] = []
    for source, entry in language.items():
        biases = {c: LanguageBias.of(v) for c, v in entry.concepts.items()}
        agreements = {kind: Agreement.of(a) for kind, a in entry.agreement.items()}
        ap = {r.concept: r.ap_diff for r in result.concepts}
        vectors = entry.vectors
        lines.append(
            language_markdown(
                biases, agreements["ap"],
                LanguageSection(
                    disparity=ap, disparity_name="AP difference (men − women)",
                    vectors_name=f"{names.get(source, source)} ({vectors.source})", top=top,
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


def _consistency_section(result: ZeroShotResult, plots: Mapping[str, str]) -> list[str]:
    consistency = result.consistency
    if not consistency:
        return []
    counts = required(consistency.counts, "consistency.counts")
    t = consistency.threshold
    lines = ["## Consistency with a second dataset", ""]
    if result.compare_report:
        lines += [f"The second dataset's own report: [{result.compare_report}]"
                  f"({result.compare_report}).", ""]  # fmt: skip
    if not consistency.concepts:
        return [*lines, f"No concept of this analysis is in `{consistency.other}` too.", ""]
    lines += [
        f"Against `{consistency.other}` ({len(consistency.concepts)} shared concepts): "
        f"green {counts['green']} (same direction, both |difference| > {t:g}), red "
        f"{counts['red']} (opposite directions, both > {t:g}), yellow {counts['yellow']} "
        "(otherwise) (Fig. 3-4).",
        "",
    ]
    if "consistency" in plots:
        lines += [f"![consistency]({plots['consistency']})", ""]
    lines += table_header(["concept", "this dataset", "other", "colour"], "lrrl")
    order = {"green": 0, "red": 1, "yellow": 2}
    for r in sorted(consistency.concepts, key=lambda r: (order[r.colour], r.concept)):
        lines.append(table_row([
            escape_cell(r.concept), _num(r.ap_diff), _num(r.other_ap_diff), r.colour
        ]))  # fmt: skip
    return [*lines, ""]


def disparity_markdown(result: ZeroShotResult | Mapping[str, Any], *, top: int = 20) -> str:
    """The ``report.md`` of a ``disparity.json`` (its typed result, or its JSON object,
    read into one first)."""
    if not isinstance(result, ZeroShotResult):
        result = ZeroShotResult.from_json(dict(result))
    plots = dict(result.plots or {})
    lines = [f"# Zero-shot disparities by perceived gender: {result.label}", ""]
    if result.weights_note:
        lines += [f"> **{result.weights_note}**", ""]
    prompt = result.prompt
    if prompt == "{}":
        lines += ["Prompt per concept: the concept's words alone, as in the paper.", ""]
    elif prompt is not None:
        lines += [f"Prompt per concept: `{prompt}` (`{{}}`: the concept's words).", ""]
    if result.predictions_file:
        p = result.predictions_file
        lines += [
            f"Predictions: `{p.file}` ({p.kind} rows; {p.rows_used:,} of "
            f"{p.rows:,} rows used, {p.unknown_images:,} images and "
            f"{p.unknown_concepts:,} concepts outside the analysis; missing pairs count "
            "as score 0 / no hit).",
            "",
        ]
    lines += _counts_section(result)
    lines += _ap_section(result, top, plots)
    lines += _ece_section(result, top, plots)
    lines += _language_section(result, top)
    lines += _consistency_section(result, plots)
    return "\n".join(lines).rstrip() + "\n"


def _intervals(rows: Sequence[ConceptDisparity], field: str) -> dict[str, tuple[float, float]]:
    """Each concept's interval of ``field`` (``ap_diff_ci``, ``ece_diff_ci``) where both
    bounds are known."""
    found: dict[str, tuple[float, float]] = {}
    for r in rows:
        ci = getattr(r, field)
        if ci and ci[0] is not None and ci[1] is not None:
            found[r.concept] = (ci[0], ci[1])
    return found


def _plots(result: ZeroShotResult, folder: Path, top: int) -> dict[str, list[Path]]:
    from contrastkit.evaluators.tasks.zero_shot import plots

    note = result.weights_note
    label = result.label
    _, language = _language_values(result)
    rows = result.concepts
    made: dict[str, list[Path]] = {}
    # a concept in every image of a group has AP 100 there by construction: not drawn
    noted = [r.concept for r in rows if r.note]
    diffs = {r.concept: r.ap_diff for r in rows if r.ap_diff is not None and r.concept not in noted}
    intervals = _intervals(rows, "ap_diff_ci")
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
    mapped = required(result.map, "map")
    if mapped.men is not None and mapped.women is not None:
        made["map_by_group"] = plots.plot_group_map(
            folder / "plots" / "map_by_group", {"men": mapped.men, "women": mapped.women},
            plots.FigureText(f"mAP per group over {len(rows)} concepts: {label}", note),
        )  # fmt: skip
    if required(result.calibration, "calibration").computed:
        ece = {r.concept: r.ece_diff for r in rows if r.ece_diff is not None}
        ece_ci = _intervals(rows, "ece_diff_ci")
        made["ece_differences"] = plots.plot_top_differences(
            folder / "plots" / "ece_differences",
            plots.ConceptDifferences(ece, ece_ci or None, language or None),
            plots.FigureText(
                f"ECE_women - ECE_men (points): {label}", note,
                value_label="ECE difference: ECE_women − ECE_men (points)",
            ),
            top=top,
        )  # fmt: skip
    consistency = result.consistency
    if consistency and consistency.concepts:
        a = {r.concept: r.ap_diff for r in consistency.concepts}
        b = {r.concept: r.other_ap_diff for r in consistency.concepts}
        other = consistency.other_data or consistency.other
        made["consistency"] = plots.plot_consistency(
            folder / "plots" / "consistency",
            plots.ComparedDifferences(a, b, (Path(result.data.path).name, Path(str(other)).name)),
            plots.FigureText(note=note), threshold=required(consistency.threshold, "threshold"),
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


def write_disparity_files(
    result: ZeroShotResult, folder: Path, *, top: int = 20, plots: bool = True
) -> tuple[ZeroShotResult, dict[str, Path]]:
    """Write the plots (unless ``plots`` is off), ``disparity.json`` and ``report.md``
    of ``result`` into ``folder``.

    Returns:
        The result as written (its ``plots``: each PNG's path relative to ``folder``;
        NaN and infinities as ``None``, as strict JSON has them), and the files by name
        (``json``, ``report``, and ``<plot>`` / ``<plot>_svg`` per plot:
        ``ap_differences``, ``map_by_group``, ``ece_differences``, ``consistency``).
    """
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    drawn: dict[str, str] = {}
    for name, paths in (_plots(result, folder, top) if plots else {}).items():
        for path in paths:
            key = name if path.suffix == ".png" else f"{name}_{path.suffix.lstrip('.')}"
            files[key] = path
            if path.suffix == ".png":
                drawn[name] = path.relative_to(folder).as_posix()
    written = with_sections(result, plots=drawn)
    data = written.to_json()
    cleaned = _clean(data)
    if cleaned != data:  # a value strict JSON has no number for: the result as written
        written = ZeroShotResult.from_json(cleaned)
    files["json"] = folder / "disparity.json"
    files["report"] = folder / "report.md"
    atomic_write_text(files["json"], json.dumps(cleaned, indent=2, allow_nan=False) + "\n")
    atomic_write_text(files["report"], disparity_markdown(written, top=top))
    return written, files


def write_outputs(
    results: dict[str, Any], folder: Path, *, top: int = 20, plots: bool = True
) -> dict[str, Path]:
    """:func:`write_disparity_files` of a ``disparity.json`` object (read into the typed
    result first); ``results`` becomes the JSON written (with its ``plots``). Returns the
    files by name."""
    written, files = write_disparity_files(
        ZeroShotResult.from_json(results), folder, top=top, plots=plots
    )
    results.clear()
    results.update(written.to_json())
    return files
