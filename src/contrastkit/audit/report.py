"""The audit's markdown report and plots (PNG and SVG), written from the report's data.

Every figure in ``audit.md`` is printed from ``audit.json``'s values; the plots are:
``composition.png`` (images per label), ``baselines.png`` (Tab. 1: Bias@K and
MaxSkew@K per model, data as is and balanced), ``clusters_factor.png`` (ΔM per cluster
with its salient words, Tab. 6) and ``clusters_map.png`` (the 2-D map of Fig. 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.audit.data import LABELS
from contrastkit.text import escape_cell, format_number, table_header, table_row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["audit_markdown", "write_plots"]

#: The evaluators' palette (masculine blue, feminine vermillion), so every plot agrees.
_COLOURS = {"masculine": "#0072B2", "feminine": "#D55E00", "undefined": "#BBBBBB"}


def _number(value: Any, sign: bool = False) -> str:
    """A figure of the audit: 3 places (an integer too), ``n/a`` when undefined."""
    number = None if value is None else float(value)
    return format_number(number, 3, sign=sign, missing="n/a")


def _metric_title(name: str) -> str:
    kind, k = name.split("@")
    return f"{'Bias' if kind == 'bias' else 'MaxSkew'}@{k}"


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
        shown = "n/a" if share is None else f"{100 * share:.1f}%"
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
    lines += ["", f"Captions: {section['captions']:,}. Masculine share of the labelled images: "
              f"{_number(section['masculine_share_of_labelled'])}; masculine per feminine image: "
              f"{_number(section['masculine_to_feminine'])}."]  # fmt: skip
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
    header = ["model"] + [_metric_title(n) for n in names]
    if balanced:
        header += [f"{_metric_title(n)} (balanced)" for n in names]
    lines += table_header(header, "l" + "r" * (len(header) - 1))
    for model, entry in section["models"].items():
        cells = [escape_cell(model)] + [_number(entry["original"][n]["mean"], True) for n in names]
        if balanced:
            for n in names:
                stats = entry.get("balanced", {}).get(n)
                cells.append(
                    "n/a" if stats is None
                    else f"{_number(stats['mean'], True)} ± {_number(stats['std'])}"
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
        f"**{_number(section['auc'])}** ({level}% bootstrap interval "
        f"{_number(low)} to {_number(high)}, {section['resamples']} resamples)"
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
        return f"**{_number(entry['auc'])}** ({level}% interval {_number(low)} to {_number(high)})"

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
        lines.append(
            f"| {row['cluster']} | {row['size']} | {row['masculine']} | {row['feminine']} | "
            f"{row['factor_pp']:+.1f} | {escape_cell(', '.join(row['words']))} |"
        )
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
    """The context measure of a build (``--build``)."""

    def stat(name: str, scale: float, unit: str) -> str:
        value = context.get(name)
        if not value:
            return "n/a"
        return (f"{format_number(scale * value['mean'], 2)}{unit} mean, "
                f"{format_number(scale * value['max'], 2)}{unit} max")  # fmt: skip

    composites = ", ".join(f"{n} {name}" for name, n in context.get("composite", {}).items())
    lines = [
        f"## Context changed by the edits (build `{escape_cell(context.get('build', ''))}`)",
        "",
        f"{context['images']} contrast-set images ({composites}); the person mask is the "
        f"source's COCO segmentation grown by {context['mask_dilation']:g} of the box's "
        "shorter side. With `--composite mask` both figures are 0 by construction; with "
        "`--composite box` (the paper's method) they measure the context the editor "
        "repainted (and, outside the box, what lossy storage changed).",
        "",
        *table_header(["measure", "value"]),
        table_row(["pixels changed outside the person mask",
                   stat("changed_outside_mask", 100, "%")]),
        table_row(["mean change inside the box, outside the person (0-255)",
                   stat("box_context_change", 1, "")]),
    ]  # fmt: skip
    if context.get("without_mask"):
        lines += ["", f"{context['without_mask']} images had no person segmentation: not measured."]
    lines += ["", f"Per image: `{escape_cell(context.get('file', ''))}`."]
    return lines


#: The colour of a random-weights title, as in the evaluators' plots.
_RANDOM_COLOUR = "#A00000"


def _figure(
    width: float, height: float, columns: int = 1, mark: str | None = None
) -> tuple[Figure, list[Any]]:
    """A constrained-layout figure and its axes; ``mark`` (:func:`_random_weights_mark`)
    becomes its title, in dark red, before anything is laid out."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=150, layout="constrained")
    axes = figure.subplots(1, columns, squeeze=False)[0]
    if mark:
        figure.suptitle(mark, fontsize=8, color=_RANDOM_COLOUR)
    return figure, list(axes)


def _composition_plot(section: Mapping[str, Any], mark: str | None = None) -> Figure:
    figure, (axis,) = _figure(4.5, 3, mark=mark)
    counts = [section["counts"][label] for label in LABELS]
    bars = axis.bar(LABELS, counts, color=[_COLOURS[label] for label in LABELS])
    for bar, label in zip(bars, LABELS, strict=True):
        share = section["shares"][label] or 0.0
        axis.annotate(f"{100 * share:.1f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      ha="center", va="bottom", fontsize=8)  # fmt: skip
    axis.set_ylabel("images")
    axis.set_title("Images per caption gender label (GenSynth Sec. 3.2)", fontsize=9)
    axis.margins(y=0.15)
    return figure


def _baselines_plot(section: Mapping[str, Any], mark: str | None = None) -> Figure:
    """Bias@K (-1 to +1) and MaxSkew@K (a log ratio, >= 0) in separate panels (their
    scales differ), the data as is and, with ``--balanced``, the balanced subsamples.
    Whiskers: the standard error of the mean over the queries (as is) and the standard
    deviation over the seeded subsamples (balanced), as the caption says."""
    models = list(section["models"])
    balanced = any("balanced" in entry for entry in section["models"].values())
    groups = [("bias", section["ks_bias"]), ("maxskew", section["ks_skew"])]
    panels = [("original", "data as is")] + (
        [("balanced", "balanced subsamples")] if balanced else []
    )
    figure, axes = _figure(3.2 * len(panels) * 2, 3.6, 2 * len(panels), mark)
    width = 0.8 / max(1, len(models))
    colours = ["#7F7F7F", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442"]
    column = 0
    for key, title in panels:
        for metric, ks in groups:
            axis = axes[column]
            column += 1
            names = [f"{metric}@{k}" for k in ks]
            for j, model in enumerate(models):
                entry = section["models"][model].get(key, {})
                means, errors = [], []
                for name in names:
                    figure_of = entry.get(name, {})
                    means.append(figure_of.get("mean") or 0.0)
                    if key == "balanced":
                        errors.append(figure_of.get("std") or 0.0)
                    else:
                        n = figure_of.get("n") or 0
                        sigma = figure_of.get("sigma") or 0.0
                        errors.append(sigma / np.sqrt(n) if n else 0.0)
                x = np.arange(len(names)) + (j - (len(models) - 1) / 2) * width
                label = model if len(model) <= 40 else model[:18] + "…" + model[-18:]
                if model in section.get("weights_notes", {}):
                    label += "\n(random weights)"
                axis.bar(x, means, width, yerr=errors, capsize=2, label=label,
                         color=colours[j % len(colours)])  # fmt: skip
            axis.set_xticks(range(len(names)), [_metric_title(n) for n in names])
            axis.axhline(0, color="#4D4D4D", linewidth=0.8)
            if metric == "bias":
                axis.set_ylim(-1, 1)
                axis.set_ylabel("mean Bias@K (−1 all feminine … +1 all masculine)", fontsize=8)
            else:
                axis.set_ylabel("mean MaxSkew@K (ln ratio; 0 mirrors the data)", fontsize=8)
            axis.set_title(f"{'Bias' if metric == 'bias' else 'MaxSkew'}, {title}", fontsize=9)
    axes[0].legend(fontsize=7, loc="upper left")
    queries = section.get("queries")
    title = (
        f"Retrieval bias beside gender-agnostic baselines (GenSynth Tab. 1; {queries} "
        "neutral-caption queries)"
    )
    if mark:
        figure.suptitle(f"{title}\n{mark}", fontsize=9, color=_RANDOM_COLOUR)
    else:
        figure.suptitle(title, fontsize=9)
    whiskers = "standard error over the queries" + (
        "; balanced: standard deviation over the seeded subsamples" if balanced else ""
    )
    figure.supxlabel(f"whiskers: {whiskers}", fontsize=7)
    return figure


def _factor_plot(section: Mapping[str, Any], mark: str | None = None) -> Figure:
    rows = sorted(section["clusters"], key=lambda r: r["factor_pp"])
    figure, (axis,) = _figure(6.5, 0.8 + 0.28 * len(rows), mark=mark)
    values = [r["factor_pp"] for r in rows]
    axis.barh(range(len(rows)), values,
              color=["#4477aa" if v >= 0 else "#cc6677" for v in values])  # fmt: skip
    labels = [f"{r['cluster']}: {', '.join(r['words'][:3])} (n={r['size']})" for r in rows]
    axis.set_yticks(range(len(rows)), labels, fontsize=7)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("male over-representation ΔM (percentage points)")
    axis.set_title("Context clusters of neutral captions (GenSynth Tab. 6)", fontsize=9)
    return figure


def _map_plot(
    section: Mapping[str, Any], points: Mapping[str, Sequence[Any]], mark: str | None = None
) -> Figure:
    """The images on the first two principal components of their caption embeddings,
    coloured by their cluster's ΔM; each cluster's centre marked and labelled with its
    top word, labels placed so that none overlaps another or a centre
    (:func:`contrastkit.evaluators.report.plots.place_labels`)."""
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    from contrastkit.evaluators.report.figures import label_panels

    factors = {r["cluster"]: r["factor_pp"] for r in section["clusters"]}
    x = np.asarray(points["x"], dtype=np.float64)
    y = np.asarray(points["y"], dtype=np.float64)
    cluster = np.asarray(points["cluster"], dtype=np.int64)
    colour = np.array([factors[c] for c in cluster])
    bound = max(1e-6, float(np.max(np.abs(colour))) if colour.size else 1.0)
    figure, (axis,) = _figure(6.5, 5, mark=mark)
    norm = TwoSlopeNorm(0.0, -bound, bound)
    scatter = axis.scatter(
        x, y, c=colour, s=14 if x.size < 2000 else 2, cmap=colormaps["RdBu"], norm=norm,
        alpha=0.8, linewidths=0,
    )  # fmt: skip
    centres: list[tuple[float, float, str]] = []
    for row in section["clusters"]:
        members = cluster == row["cluster"]
        if members.any():
            cx, cy = float(x[members].mean()), float(y[members].mean())
            word = row["words"][0] if row["words"] else ""
            centres.append((cx, cy, f"{row['cluster']}: {word} ({row['factor_pp']:+.0f})"))
    axis.scatter([c[0] for c in centres], [c[1] for c in centres], marker="x", s=30,
                 color="black", linewidths=1)  # fmt: skip
    axis.set_facecolor("#e8e8e8")  # a cluster near parity is white: keep it visible
    axis.margins(0.15)
    figure.colorbar(scatter, ax=axis, label="ΔM of the cluster (pp; blue: more men)")
    axis.set_xlabel("principal component 1")
    axis.set_ylabel("principal component 2")
    embedding = "LSA (bag of words)" if section["embedding"] == "lsa" else "text encoder"
    axis.set_title(
        f"Neutral-caption clusters of {x.size} images, PCA map\n({embedding}; GenSynth "
        "Fig. 1; x: cluster centre, label: cluster, top word, ΔM)",
        fontsize=9,
    )
    (left_out,) = label_panels(figure, [axis], [centres])
    if left_out:
        figure.text(0.01, 0.01, f"{left_out} cluster labels left out for room", fontsize=7)
    return figure


def _random_weights_mark(report: Mapping[str, Any]) -> str | None:
    """The lines every plot's title carries when the audit used a model with random
    weights (``random_weights``): the evaluators' warning and the models (wrapped at 70
    characters, at most 3 lines); ``None`` otherwise."""
    import textwrap

    from contrastkit.evaluators.report.figures import RANDOM_WEIGHTS_TITLE

    if not report.get("random_weights"):
        return None
    models = textwrap.wrap(
        "models: " + ", ".join(report.get("weights_notes", {})), 70,
        break_on_hyphens=False, max_lines=3, placeholder=" …",
    )  # fmt: skip
    return "\n".join([RANDOM_WEIGHTS_TITLE, *models])


def write_plots(
    report: Mapping[str, Any], points: Mapping[str, Sequence[Any]], folder: Path
) -> list[Path]:
    """Write the plots of the sections ``report`` has into ``folder``; return them. When
    ``report`` says the audit used a model with random weights (``random_weights``),
    every plot's title says so, in dark red (:func:`_random_weights_mark`)."""
    from contrastkit.evaluators.report.figures import save_formats

    folder.mkdir(parents=True, exist_ok=True)
    mark = _random_weights_mark(report)
    figures: list[tuple[str, Figure]] = []
    if "composition" in report:
        figures.append(("composition", _composition_plot(report["composition"], mark)))
    if "baselines" in report and "skipped" not in report["baselines"]:
        figures.append(("baselines", _baselines_plot(report["baselines"], mark)))
    clusters = report.get("clusters", {})
    if clusters and "skipped" not in clusters:
        figures.append(("clusters_factor", _factor_plot(clusters, mark)))
        if points:
            figures.append(("clusters_map", _map_plot(clusters, points, mark)))
    # PNG and SVG of each, as the evaluators' plots
    return [path for name, figure in figures for path in save_formats(figure, folder / name)]
