"""``contrastkit audit DATA --out DIR``: is the benchmark itself biased?

The work is :func:`contrastkit.audit.audit`; this command maps options onto its
:class:`~contrastkit.audit.AuditConfig` and prints what it found.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from contrastkit.audit.report import audit_number
from contrastkit.cli.common import (
    console,
    err_console,
    int_list,
    plain,
    print_json,
    shown,
    user_errors,
)
from contrastkit.cli.options import ModelOptions, with_options


def _auc_text(entry: dict[str, Any] | None, low_high: bool = True) -> str:
    """An AUC (with its interval), or ``not reported`` when there is none to read."""
    if entry is None or entry.get("auc") is None:
        return "not reported"
    if not low_high:
        return audit_number(entry["auc"])
    low, high = entry["interval"]
    return f"{audit_number(entry['auc'])} [{audit_number(low)}, {audit_number(high)}]"


def _print_summary(report: dict[str, Any]) -> None:
    """The audit's findings, one section after another (each only when it ran)."""
    notes = report.get("weights_notes") or {}
    for note in notes.values():
        console.print(plain(f"random weights: {note}", style="yellow"), highlight=False)
    composition = report.get("composition")
    if composition:
        counts = composition["counts"]
        console.print(
            plain(
                f"{composition['images']} images: {counts['masculine']} masculine, "
                f"{counts['feminine']} feminine, {counts['undefined']} undefined"
            )
        )
    if report.get("baselines"):
        _print_baselines(report["baselines"], notes)
    if report.get("caption_classifier"):
        _print_classifier(report["caption_classifier"])
    if report.get("image_probe"):
        _print_probe(report["image_probe"])
    context = report.get("context")
    if context:
        from contrastkit.builders.gensynth.context import context_line

        console.print(plain(context_line(context)))
    if report.get("clusters"):
        _print_clusters(report["clusters"])


def _print_baselines(baselines: dict[str, Any], notes: dict[str, Any]) -> None:
    """The retrieval bias of the gender-agnostic baselines, as a table."""
    if "skipped" in baselines:
        console.print(plain(f"baselines: not run ({baselines['skipped']})"))
        return
    names = [f"bias@{k}" for k in baselines["ks_bias"]]
    names += [f"maxskew@{k}" for k in baselines["ks_skew"]]
    table = Table(title="Retrieval bias of gender-agnostic baselines (GenSynth Tab. 1)")
    table.add_column("model")
    table.add_column("set")
    for name in names:
        table.add_column(name.replace("bias", "Bias").replace("maxskew", "MaxSkew"))
    for model, entry in baselines["models"].items():
        name = f"{model} (random weights)" if model in notes else model
        table.add_row(
            plain(name),
            "as is",
            *[audit_number(entry["original"][n]["mean"], sign=True) for n in names],
        )
        if "balanced" in entry:
            table.add_row(
                "",
                "balanced",
                *[
                    f"{audit_number(entry['balanced'][n]['mean'], sign=True)} ± "
                    f"{audit_number(entry['balanced'][n]['std'])}"
                    for n in names
                ],
            )
    console.print(table)


def _print_classifier(classifier: dict[str, Any]) -> None:
    """The caption classifier's held-out AUC in one line."""
    if "skipped" in classifier:
        console.print(plain(f"caption classifier: not run ({classifier['skipped']})"))
        return
    split = " (split by source photo)" if classifier.get("split", {}).get("grouped") else ""
    found = (
        f"not reported{split}: {classifier['too_small']}"
        if classifier.get("too_small")
        else f"{_auc_text(classifier)} (0.5 is chance){split}"
    )
    console.print(plain(f"caption classifier on neutral captions: held-out AUC {found}"))


def _print_probe(probe: dict[str, Any]) -> None:
    """The image probe's held-out AUCs (person-masked and unmasked) in one line."""
    if "skipped" in probe:
        console.print(plain(f"image probe: not run ({probe['skipped']})"))
    elif probe.get("too_small"):
        console.print(plain(f"image probe: held-out AUC not reported: {probe['too_small']}"))
    else:
        console.print(
            plain(
                f"image probe: held-out AUC {_auc_text(probe['masked'], False)} "
                f"person-masked, {_auc_text(probe['unmasked'], False)} unmasked"
            )
        )


def _print_clusters(clusters: dict[str, Any]) -> None:
    """The context clusters: how many, and the most and least male."""
    if "skipped" in clusters:
        console.print(plain(f"context clusters: not run ({clusters['skipped']})"))
        return
    rows = sorted(clusters["clusters"], key=lambda r: -r["factor_pp"])
    embedding = "LSA, no text encoder" if clusters["embedding"] == "lsa" else "text encoder"
    extremes = [rows[0], rows[-1]] if len(rows) > 1 else rows
    described = "; ".join(f"{', '.join(r['words'][:3])} {r['factor_pp']:+.1f} pp" for r in extremes)
    console.print(
        plain(f"{clusters['M']} context clusters ({embedding}); most and least male: {described}")
    )


@with_options
def audit_command(
    data: Path = typer.Argument(
        ...,
        help="A COCO folder (annotations/captions_SPLIT.json; instances_SPLIT.json and the "
        "images in SPLIT/ only for --model and --image-probe), a contrast-set export "
        "(`contrastkit export contrast`), or a VisoGender-style set (TSVs, a folder of them, "
        "an export; composition only: it has no captions).",
    ),
    out: Path = typer.Option(..., "--out", help="Output folder: audit.json, audit.md, plots/."),
    split: str | None = typer.Option(
        None, "--split", help="COCO split, e.g. val2017 [default: the only one present]."
    ),
    only: str = typer.Option(
        "composition,baselines,classifier,image_probe,clusters",
        "--only",
        help="Analyses to run, comma-separated: composition, baselines, classifier, "
        "image_probe (with --image-probe), clusters.",
    ),
    balanced: bool = typer.Option(
        False, "--balanced", help="Also score gender-balanced subsamples (Tab. 1, right)."
    ),
    runs: int = typer.Option(5, "--runs", min=1, help="Balanced subsamples to average."),
    model: list[str] | None = typer.Option(
        None,
        "--model",
        help="A dual-encoder spec added to the baselines table (repeatable): "
        "open_clip:ARCH/TAG, hf-clip:ID, open_clip:FOLDER.",
    ),
    image_probe: str | None = typer.Option(
        None,
        "--image-probe",
        help="A dual-encoder spec: a linear probe on its frozen embeddings of person-masked "
        "and unmasked images (needs the images and instances_SPLIT.json).",
    ),
    caption_model: Path | None = typer.Option(
        None,
        "--caption-model",
        help="Local transformers model folder fine-tuned as the caption classifier (the "
        "paper: BERT-base) [default: logistic regression on TF-IDF].",
    ),
    epochs: int = typer.Option(3, "--epochs", min=1, help="Fine-tuning epochs of --caption-model."),
    text_encoder: Path | None = typer.Option(
        None,
        "--text-encoder",
        help="Local transformers model folder embedding the captions for the clusters "
        "(RoBERTa in the paper) [default: LSA of TF-IDF, no model].",
    ),
    clusters: int = typer.Option(20, "--clusters", min=1, help="K-means clusters M."),
    bias_k: str = typer.Option("5,10", "--bias-k", help="Bias@K cut-offs, comma-separated."),
    skew_k: str = typer.Option("25,100", "--skew-k", help="MaxSkew@K cut-offs, comma-separated."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random choice."),
    test_fraction: float = typer.Option(
        0.3, "--test-fraction", help="Held-out share of the caption classifier's images."
    ),
    resamples: int = typer.Option(
        1000, "--resamples", min=1, help="Bootstrap resamples of the classifier's AUC."
    ),
    runtime: ModelOptions = ModelOptions(),
    build: Path | None = typer.Option(
        None,
        "--build",
        help="The GenSynth / GenSwap build folder the exported contrast set came from "
        "(checked: another build's is refused): also measure, on the export's images, the "
        "share of pixels outside the person mask changed beyond the codec's noise, the "
        "pixels the composite keeps that changed, and the mean change inside the box but "
        "outside the person (context_change.jsonl per image).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print audit.json instead of a summary."),
    html: Path | None = typer.Option(
        None,
        "--html",
        metavar="DIR",
        help="Also write the offline HTML report of the audit into DIR: its page and a "
        "gallery of each context cluster's images; opens from file://.",
    ),
) -> None:
    """Audit a data set for gender skew and spurious context before trusting a model's
    bias figure on it (GenSynth Sec. 3): label composition, a random and a TF-IDF model
    that know nothing about gender (Bias@K, MaxSkew@K), a classifier predicting gender
    from neutral captions (AUC), and context clusters with their male over-representation.

    Example:

        contrastkit audit coco --split val2017 --out audit/val2017 --balanced

        contrastkit audit export/gensynth --build build/gensynth --out audit/gensynth

    With --html DIR, also writes the offline HTML report (docs/how-to/html-report.md).
    """
    from contrastkit.audit import AuditConfig, audit

    with user_errors():
        config = AuditConfig(
            data=data,
            out=out,
            split=split,
            analyses=tuple(dict.fromkeys(a.strip() for a in only.split(",") if a.strip())),
            ks_bias=int_list(bias_k, "--bias-k"),
            ks_skew=int_list(skew_k, "--skew-k"),
            balanced=balanced,
            runs=runs,
            seed=seed,
            models=tuple(model or ()),
            image_probe=image_probe,
            clusters=clusters,
            text_encoder=text_encoder,
            caption_model=caption_model,
            epochs=epochs,
            test_fraction=test_fraction,
            resamples=resamples,
            model=runtime.config(),
            build=build,
        )
        result = audit(config, say=lambda line: err_console.print(plain(line), style="dim"))
        site = _html_report(out, html) if html is not None else None
    if as_json:
        print_json(result.report)
        return
    _print_summary(result.report)
    console.print(plain(f"wrote {shown(result.json_path)}, {shown(result.markdown_path)}"))
    for path in result.plots:
        console.print(plain(f"wrote {shown(path)}"))
    if site is not None:
        console.print(plain(f"HTML report: {shown(site)} (open it in a browser)"))


def _html_report(out: Path, html: Path) -> Path:
    """``--html``: the HTML report of the audit in ``out``, written into ``html``;
    returns its index page."""
    from contrastkit.evaluators.html import HtmlReportConfig, write_html_report

    return write_html_report(HtmlReportConfig(results=(out,), out=html)).index
