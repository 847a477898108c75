"""The audit's markdown report, written from the report's data.

Every figure in ``audit.md`` is printed from ``audit.json``'s values; the plots are drawn
by :mod:`contrastkit.audit.plots` (:func:`write_plots`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.audit.data import LABELS
from contrastkit.audit.plots import metric_title, write_plots
from contrastkit.text import UNDEFINED, escape_cell, format_number, table_header, table_row

__all__ = ["audit_markdown", "audit_number", "write_plots"]


def audit_number(value: Any, sign: bool = False) -> str:
    """A figure of the audit (report and console): 3 places (an integer too), with ``+``
    before a positive one when ``sign``, ``n/a`` when undefined."""
    number = None if value is None else float(value)
    return format_number(number, 3, sign=sign, missing=UNDEFINED)


def _composition_lines(section: Mapping[str, Any], label_source: str) -> list[str]:
    if label_source == "captions":
        rule = (
            "Each image is labelled from all its captions joined: only masculine Tab. 4 "
            "words -> masculine, only feminine -> feminine, both or neither -> undefined."
        )
    elif label_source == "occupation_gender":
        rule = (
            "Each image's label is the perceived gender of its occupation's person "
            "(`occupation_gender`, VisoGender Sec. 3.1)."
        )
    else:
        rule = (
            f"Each image's label is the set's {label_source} (a contrast set: the gender "
            "each version was edited to); the queries are the source's neutral captions."
        )
    lines = [
        "## Composition (GenSynth Sec. 3.2)",
        "",
        rule,
        "",
        *table_header(["label", "images", "share"], "lrr"),
    ]
    for label in LABELS:
        share = section["shares"][label]
        shown = UNDEFINED if share is None else f"{100 * share:.1f}%"
        lines.append(table_row([label, f"{section['counts'][label]:,}", shown]))
    lines.append(table_row(["all", f"{section['images']:,}", "100%"]))
    cells = section.get("cells")
    if cells:
        unbalanced = [c for c in cells if not c["balanced"]]
        lines += [
            "",
            f"Cells (context, occupation, participant gender or object): {len(cells)}, "
            f"{len(cells) - len(unbalanced)} balanced between the occupation genders.",
            "",
            *table_header(
                ["context", "occupation", "participant / object", "masculine", "feminine"],
                "lllrr",
            ),
        ]
        for cell in unbalanced or cells[:0]:
            lines.append(table_row([
                *(escape_cell(cell[key]) for key in ("context", "occupation", "other")),
                cell["masculine"], cell["feminine"],
            ]))  # fmt: skip
        if not unbalanced:
            lines[-2:] = ["Every cell is balanced."]
        return lines
    share = audit_number(section["masculine_share_of_labelled"])
    ratio = audit_number(section["masculine_to_feminine"])
    lines += ["", f"Captions: {section['captions']:,}. Masculine share of the labelled images: "
              f"{share}; masculine per feminine image: {ratio}."]  # fmt: skip
    paper = section.get("paper_counts")
    if paper:
        lines += [
            "",
            "The paper's counts for this split (same rule): "
            + ", ".join(f"{paper[label]:,} {label}" for label in LABELS)
            + ".",
        ]
    return lines


def _baseline_lines(section: Mapping[str, Any], notes: Mapping[str, str]) -> list[str]:
    if "skipped" in section:
        return [
            "## Retrieval bias (GenSynth Sec. 3.4, Tab. 1)",
            "",
            f"Not run: {section['skipped']}.",
        ]
    names = [f"bias@{k}" for k in section["ks_bias"]] + [f"maxskew@{k}" for k in section["ks_skew"]]
    balanced = any("balanced" in entry for entry in section["models"].values())
    lines = [
        "## Retrieval bias beside gender-agnostic baselines (GenSynth Sec. 3.4, Tab. 1)",
        "",
        f"Every gender-neutral caption ({section['queries']:,} queries) retrieves images. "
        "Bias@K = mean of (N_m - N_f) / (N_m + N_f) over each query's top K (positive: "
        "masculine images dominate); MaxSkew@K = mean of the largest ln(share in the top K "
        "/ share in the data) over the genders, undefined images ignored (0: the top K "
        "mirrors the data). The random model and TF-IDF on neutral captions cannot see "
        "gender: whatever they score is the data's own skew and context correlation, and "
        "a real model's figure (the other rows, if any) should be read against them.",
        "",
    ]
    header = ["model"] + [metric_title(n) for n in names]
    if balanced:
        header += [f"{metric_title(n)} (balanced)" for n in names]
    lines += table_header(header, "l" + "r" * (len(header) - 1))
    for model, entry in section["models"].items():
        cells = [escape_cell(model)] + [
            audit_number(entry["original"][n]["mean"], True) for n in names
        ]
        if balanced:
            for n in names:
                stats = entry.get("balanced", {}).get(n)
                cells.append(
                    UNDEFINED if stats is None
                    else f"{audit_number(stats['mean'], True)} ± {audit_number(stats['std'])}"
                )  # fmt: skip
        lines.append(table_row(cells))
    if balanced:
        runs = section.get("balanced_sets", [])
        sizes = "; ".join(
            f"run {s['run']}: {s['masculine']} masculine, {s['feminine']} feminine, "
            f"{s['undefined']} undefined"
            for s in runs
        )
        lines += [
            "",
            f"Balanced: mean ± standard deviation over {len(runs)} seeded subsamples with "
            f"equal gender counts and the original undefined share ({sizes}).",
        ]
    # a query ranks every image (undefined ones take ranks too; TF-IDF leaves out the
    # query's own): from K = images - 1 on, the top K is (nearly) the whole data
    ranked = int(section.get("ranked_images", section["labelled_images"]))
    whole = [k for k in section["ks_bias"] if k >= ranked - 1]
    if whole:
        lines += [
            "",
            f"Bias@{', '.join(map(str, whole))}: K reaches the {ranked} images a query "
            "ranks (one fewer for TF-IDF, which leaves out the query's own), so the top K "
            "is the whole data and Bias@K is the data's own skew whatever the model.",
        ]
    saturated = [k for k in section["ks_skew"] if k >= ranked - 1]
    if saturated:
        lines += [
            "",
            f"MaxSkew@{', '.join(map(str, saturated))}: K reaches the {ranked} images a "
            "query ranks, so the top K is the data itself and MaxSkew is 0 by construction.",
        ]
    for spec, name in section.get("clip_clip_files", {}).items():
        lines += [
            "",
            f"{escape_cell(spec)}: CLIP-clip (Wang et al. 2021), the dimensions with the highest "
            "mutual information with the gender label dropped; the choice is in "
            f"`{escape_cell(name)}`.",
        ]
    for spec, note in notes.items():
        lines += ["", f"> **{escape_cell(spec)}: random weights.** {escape_cell(note)}"]
    return lines


def _auc_line(section: Mapping[str, Any]) -> str:
    """``**AUC** (level% bootstrap interval low to high, N resamples)``, or what stands
    instead when the held-out set is too small to read."""
    if section.get("too_small"):
        return "**not reported** (too few held-out images; see below)"
    low, high = section["interval"]
    level = round(100 * section["level"])
    return (
        f"**{audit_number(section['auc'])}** ({level}% bootstrap interval "
        f"{audit_number(low)} to {audit_number(high)}, {section['resamples']} resamples)"
    )


def _split_line(section: Mapping[str, Any]) -> list[str]:
    """How the images were split, when whole groups (source photos) were kept together."""
    split = section.get("split") or {}
    if not split.get("grouped"):
        return []
    return [
        f"- split by source photo: the versions of each source are all on one side "
        f"({split['train_groups']} sources trained on, {split['test_groups']} held out)"
    ]


def _classifier_lines(section: Mapping[str, Any]) -> list[str]:
    lines = ["## Spurious-correlation classifier on neutral captions (GenSynth Sec. 3.3)", ""]
    if "skipped" in section:
        return [*lines, f"Not run: {section['skipped']}."]
    return [
        *lines,
        (
            "A transformer fine-tuned from "
            f"`{escape_cell(str(section['classifier']).split(':', 1)[-1])}` on each image's "
            "gender-neutral captions "
            if str(section.get("classifier", "")).startswith("fine-tuned")
            else "A logistic regression on TF-IDF of each image's gender-neutral captions "
        )
        + "predicts its label. Held-out AUC 0.5 is chance; well above it, the captions' "
        "context alone gives gender away (the paper: 78.0% on COCO with BERT).",
        "",
        f"- held-out AUC: {_auc_line(section)}",
        f"- trained on {section['train']['masculine']} masculine and "
        f"{section['train']['feminine']} feminine images, tested on "
        f"{section['test']['masculine']} and {section['test']['feminine']}",
        *_split_line(section),
        *(
            [
                f"- words pointing to masculine: "
                f"{', '.join(section['words']['masculine']) or 'none'}",
                f"- words pointing to feminine: "
                f"{', '.join(section['words']['feminine']) or 'none'}",
            ]
            if "fine_tuning" not in section
            else [
                "- fine-tuning: " + ", ".join(f"{k} {v}" for k, v in section["fine_tuning"].items())
            ]
        ),
        *_small_test(section),
    ]


#: Held-out images per label below which a reported AUC carries a caveat (below
#: ``min_test_per_label``, 10, none is reported at all).
SMALL_TEST = 30


def _small_test(section: Mapping[str, Any]) -> list[str]:
    """What the report says of a small held-out set: with fewer than
    ``min_test_per_label`` images of a label (no AUC), that it is too small to read; with
    fewer than :data:`SMALL_TEST`, that the AUC and its interval swing from split to split."""
    smallest = min(section["test"]["masculine"], section["test"]["feminine"])
    if section.get("too_small"):
        least = section.get("min_test_per_label", "enough")
        return [
            "",
            f"> **Too few held-out images to read this AUC**: {smallest} of the rarer label, "
            f"fewer than {least} of each; at that size a classifier at chance scores "
            "anywhere from well below to well above 0.5 (1 or 2 per label give 0, 0.5 or 1 "
            "whatever the data), so no AUC is reported. Audit a larger set or raise "
            "`--test-fraction`.",
        ]
    if smallest >= SMALL_TEST:
        return []
    return [
        "",
        f"> **Few held-out images**: {smallest} of the rarer label (under {SMALL_TEST}); "
        "with so few the AUC and its interval swing from one split to the next: read the "
        "interval, not the point.",
    ]


def _probe_lines(section: Mapping[str, Any]) -> list[str]:
    lines = ["## Spurious-correlation probe on person-masked images (GenSynth Sec. 3.3)", ""]
    if "skipped" in section:
        return [*lines, f"Not run: {section['skipped']}."]
    level = round(100 * section["level"])

    def auc_text(entry: Mapping[str, Any] | None) -> str:
        if entry is None:
            return "**not reported** (too few held-out images; see below)"
        low, high = entry["interval"]
        low_text, high_text = audit_number(low), audit_number(high)
        return f"**{audit_number(entry['auc'])}** ({level}% interval {low_text} to {high_text})"

    return [
        *lines,
        f"A linear probe on frozen `{escape_cell(section['model'])}` image embeddings predicts the "
        "label of images whose person boxes are blacked out, and of the same images "
        "unmasked (the paper, ResNet-50: 63.4% masked, 71.9% unmasked). Masked AUC well "
        "above 0.5 means the scene alone gives gender away.",
        "",
        f"- person-masked images: held-out AUC {auc_text(section['masked'])}",
        f"- unmasked images: held-out AUC {auc_text(section['unmasked'])}",
        f"- trained on {section['train']['masculine']} masculine and "
        f"{section['train']['feminine']} feminine images, tested on "
        f"{section['test']['masculine']} and {section['test']['feminine']}",
        *_small_test(section),
        *(
            ["", f"> **Random weights.** {escape_cell(section['weights_note'])}"]
            if section.get("weights_note")
            else []
        ),
    ]


def _cluster_lines(section: Mapping[str, Any]) -> list[str]:
    lines = ["## Context clusters (GenSynth Sec. 3.3, Fig. 1, Tab. 6)", ""]
    if "skipped" in section:
        return [*lines, f"Not run: {section['skipped']}."]
    embedding = section["embedding"]
    if embedding == "lsa":
        how = (
            "**Embedding: LSA (TF-IDF + truncated SVD), a bag-of-words stand-in**: no text "
            "encoder was given (`--text-encoder`); the paper uses RoBERTa sentence embeddings."
        )
    else:
        how = f"Embedding: mean-pooled `{escape_cell(embedding)}` caption embeddings."
    lines += [
        f"{section['images']:,} labelled images in {section['M']} K-means clusters. {how} "
        "ΔM is the cluster's percentage of masculine images minus the overall "
        f"{100 * section['masculine_share']:.1f}% (positive: men over-represented); "
        "salient words are those whose mean TF-IDF in the cluster most exceeds their "
        "mean over all clustered images.",
        "",
        *table_header(
            ["cluster", "images", "masculine", "feminine", "ΔM (pp)", "salient words"], "rrrrrl"
        ),
    ]
    for row in sorted(section["clusters"], key=lambda r: -r["factor_pp"]):
        words = escape_cell(", ".join(row["words"]))
        cells = [row["cluster"], row["size"], row["masculine"], row["feminine"]]
        lines.append(table_row([*cells, f"{row['factor_pp']:+.1f}", words]))
    return lines


def audit_markdown(report: Mapping[str, Any]) -> str:
    """``audit.md``: every section of ``report`` that was run, then the plots."""
    split = f" ({report['split']})" if report.get("split") else ""
    lines = [
        f"# Dataset-bias audit: `{escape_cell(report['data'])}`{split}",
        "",
        "Is the benchmark itself biased? (GenSynth, Smith et al., Sec. 3.) contrastkit "
        f"{report['contrastkit_version']}, seed {report['config']['seed']}.",
    ]
    if report.get("random_weights"):
        models = ", ".join(f"`{escape_cell(spec)}`" for spec in report.get("weights_notes", {}))
        lines += [
            "",
            f"> **Random weights.** This audit used models with random weights ({models}): "
            "the figures computed with them are a pipeline check, not a measurement.",
        ]
    if "composition" in report:
        source = report.get("label_source", "captions")
        lines += ["", *_composition_lines(report["composition"], source)]
    if "baselines" in report:
        notes = report["baselines"].get("weights_notes", {})
        lines += ["", *_baseline_lines(report["baselines"], notes)]
    if "caption_classifier" in report:
        lines += ["", *_classifier_lines(report["caption_classifier"])]
    if "image_probe" in report:
        lines += ["", *_probe_lines(report["image_probe"])]
    if "clusters" in report:
        lines += ["", *_cluster_lines(report["clusters"])]
    if "context" in report:
        lines += ["", *_context_lines(report["context"])]
    if report.get("plots"):
        lines += ["", "## Plots", ""]
        for plot in report["plots"]:
            if plot.endswith(".png"):
                svg = str(Path(plot).with_suffix(".svg"))
                link = f" ([SVG]({svg}))" if svg in report["plots"] else ""
                lines += [f"![{Path(plot).stem}]({plot}){link}", ""]
    return "\n".join(lines) + "\n"


def _context_lines(context: Mapping[str, Any]) -> list[str]:
    """The context measure of ``--build``: on the export audited, or the build's files."""

    def stat(name: str, scale: float, unit: str) -> str:
        value = context.get(name)
        if not value:
            return UNDEFINED
        return (f"{format_number(scale * value['mean'], 2)}{unit} mean, "
                f"{format_number(scale * value['max'], 2)}{unit} max")  # fmt: skip

    composites = ", ".join(f"{n} {name}" for name, n in context.get("composite", {}).items())
    build = escape_cell(context.get("build", ""))
    where = (
        f"the images of the export `{escape_cell(context.get('data', ''))}`, against the "
        f"sources of build `{build}` (checked to be the export of that build)"
        if context.get("measured_on") == "export" else f"the files of build `{build}`"
    )  # fmt: skip
    noise = context.get("noise") or {}
    kept = context.get("changed_kept_pixels")
    kept_cell = (
        f"{kept['pixels']} pixels in {kept['images']} images" if kept
        else f"{UNDEFINED}: no codec noise measured"
    )  # fmt: skip
    codecs = ", ".join(f"{n} {name}" for name, n in (noise.get("codecs") or {}).items())
    lines = [
        f"## Context changed by the edits (build `{build}`)",
        "",
        f"Measured on {where}: {context['images']} contrast-set images ({composites}); the "
        f"person mask is the source's COCO segmentation grown by "
        f"{context['mask_dilation']:g} of the box's shorter side. With `--composite mask` "
        "every figure is 0 by construction; with `--composite box` (the paper's method) "
        "the share beyond the codec's noise is the context the editor repainted inside "
        "the box, and the pixels kept from the source (outside the box) should not change.",
        "",
        *table_header(["measure", "value"]),
        table_row(["pixels outside the person mask changed beyond the codec's noise",
                   stat("changed_beyond_noise", 100, "%")]),
        table_row(["pixels the composite keeps from the source that changed beyond the "
                   "codec's noise (0 expected)", kept_cell]),
        table_row(["pixels outside the person mask that differ at all (codec noise "
                   "included: not a measure of the edit on lossy images)",
                   stat("changed_outside_mask", 100, "%")]),
        table_row(["mean change inside the box, outside the person (0-255)",
                   stat("box_context_change", 1, "")]),
    ]  # fmt: skip
    if noise:
        lines += [
            "",
            f"Codec noise: {noise.get('measure', '')}. Images: {codecs or 'none measured'}; "
            f"largest threshold {noise.get('threshold_max')} (0-255). With a lossy codec "
            f"the pixels kept from the source are checked from {noise.get('block')} pixels "
            "beyond the edited region (how far the codec carries the edit's content).",
        ]
        if noise.get("without_threshold"):
            lines += [
                "",
                f"{noise['without_threshold']} images are in a lossy format whose noise "
                f"cannot be measured here: their figures beyond the noise are {UNDEFINED}.",
            ]
    if context.get("without_mask"):
        lines += ["", f"{context['without_mask']} images had no person segmentation: not measured."]
    lines += ["", f"Per image: `{escape_cell(context.get('file', ''))}`."]
    return lines
