"""``contrastkit evaluate`` and ``contrastkit report``: score models, compare results.

The work is :func:`contrastkit.evaluators.job.evaluate` and
:func:`contrastkit.evaluators.job.compare_results`; these commands map options onto their
configs and print the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from contrastkit.cli import zero_shot as zs
from contrastkit.cli.common import (
    ALLOW_DOWNLOAD,
    DOWNLOAD_ALIAS,
    console,
    int_list,
    plain,
    print_json,
    shown,
    user_errors,
)
from contrastkit.text import count as counted

if TYPE_CHECKING:
    from contrastkit.evaluators.job import EvaluateResult

# Panels of `contrastkit evaluate --help`; each option's details are in
# docs/reference/commands/evaluate.md and docs/zero_shot.md, its help here is one line.
_IMAGES = "Images"
_RUNNING = "Running the model"
_VISOGENDER = "Resolution and retrieval"
_STATISTICS = "Statistics"

DATA = typer.Option(
    ...,
    "--data",
    help="Official-format TSV(s) or a folder of them, an export, a saved or Hub dataset "
    "(hf:USER/NAME), or `visogender` (the bundled official sets). Repeatable.",
)
MODEL = typer.Option(
    None,
    "--model",
    help="Model spec, e.g. open_clip:ViT-B-32/openai (all families: `contrastkit models "
    "list`). Repeatable; required unless --predictions.",
)
OUT = typer.Option(Path("results"), "--out", help="Output folder; one subfolder per model.")
TASK = typer.Option(
    "resolution,retrieval",
    "--task",
    help="resolution,retrieval; stereotype (alone; a probe set); decisions (alone; "
    "generative VLMs on a contrast set); zero-shot-disparity (alone; see its panel).",
)
DECISION_SCORING = typer.Option(
    "both",
    "--decision-scoring",
    help="--task decisions: score each option's letter log-probability (logprob), "
    "parse generated answers (generate), or both.",
)
QUESTIONS = typer.Option(
    None,
    "--questions",
    help="--task decisions: question templates (YAML) [default: the bundled ones].",
)
STORE = typer.Option(
    None,
    "--store",
    help="Image store the URLs are read from [default for --data visogender or with "
    "--fetch: ~/.cache/contrastkit/images].",
    rich_help_panel=_IMAGES,
)
FETCH = typer.Option(
    None,
    "--fetch/--no-fetch",
    help="First fetch the URLs the store lacks (Network options) [default: on for "
    "--data visogender].",
    show_default=False,
    rich_help_panel=_IMAGES,
)
SKIP_MISSING = typer.Option(
    None,
    "--skip-missing/--no-skip-missing",
    help="Leave out (and list) rows without an image instead of stopping [default: on for "
    "--data visogender].",
    show_default=False,
    rich_help_panel=_IMAGES,
)
SPLIT = typer.Option(None, "--split", help="Split of a saved dataset dict.")
NEUTRAL = typer.Option(
    False,
    "--neutral",
    help="Add 'their' to the candidates (neutral rate, VisoGender Appendix D).",
    rich_help_panel=_VISOGENDER,
)
KS = typer.Option(
    "5,10", "--k", help="Retrieval cut-offs K, comma-separated.", rich_help_panel=_VISOGENDER
)
NDKL_K = typer.Option(
    None,
    "--ndkl-k",
    min=1,
    help="NDKL depth [default: every image of the occupation].",
    rich_help_panel=_VISOGENDER,
)
FLIPPED = typer.Option(
    True,
    "--flipped-retrieval/--no-flipped-retrieval",
    help="Also retrieve with the participant as subject ('The patient and their doctor', "
    "VisoGender Tab. 5).",
    rich_help_panel=_VISOGENDER,
)
DEVICE = typer.Option(
    None, "--device", help="cpu, cuda, cuda:1 [default: auto].", rich_help_panel=_RUNNING
)
DTYPE = typer.Option(
    "auto",
    "--dtype",
    help="auto (float16 on CUDA, else float32), float32, bfloat16 or float16.",
    rich_help_panel=_RUNNING,
)
WORKERS = typer.Option(
    None,
    "--workers",
    min=0,
    help="Image-decoding processes [default: suits the device].",
    rich_help_panel=_RUNNING,
)
DECODE = typer.Option(
    "auto",
    "--decode",
    help="Who decodes and preprocesses images: pil, worker, tensor or auto (docs/pipeline.md).",
    rich_help_panel=_RUNNING,
)
BATCH_SIZE = typer.Option(
    32, "--batch-size", min=1, help="Images per forward pass.", rich_help_panel=_RUNNING
)
SUBSAMPLE_K = typer.Option(
    "1",
    "--subsample-k",
    help="Images kept per group in the random subsamples (VisoGender Appendix G.1).",
    rich_help_panel=_STATISTICS,
)
SUBSAMPLE_RUNS = typer.Option(
    500,
    "--subsample-runs",
    min=1,
    help="Repetitions of the random subsamples (Appendix G.1).",
    rich_help_panel=_STATISTICS,
)
BASELINE_RUNS = typer.Option(
    3000,
    "--baseline-runs",
    min=2,
    help="Repetitions of the random baseline (Appendix G.2).",
    rich_help_panel=_STATISTICS,
)
SEED = typer.Option(
    0,
    "--seed",
    help="Seed of the random analyses and the bootstrap.",
    rich_help_panel=_STATISTICS,
)
PROTOCOL = typer.Option(
    "visogender-official",
    "--protocol",
    help="visogender-official (argmax over his/her/their, as the published tables) or "
    "two-way (his/her).",
    rich_help_panel=_VISOGENDER,
)
BOOTSTRAP = typer.Option(
    1000,
    "--bootstrap",
    min=0,
    help="Bootstrap resamples of the images for the intervals (0: none).",
    rich_help_panel=_STATISTICS,
)
CONFIDENCE = typer.Option(
    0.95,
    "--confidence",
    help="Level of the bootstrap intervals, in (0, 1).",
    rich_help_panel=_STATISTICS,
)
CONTRAST_METRICS = typer.Option(
    "auto",
    "--contrast-metrics",
    help="On a contrast set: all, pairs (pair preference only) or auto (all for dual encoders).",
)
AS_JSON = typer.Option(
    False, "--json", help="Print each model's output paths and headline figures as JSON."
)
# Network options of --fetch: the same as `contrastkit urls check` has.
FETCH_CONCURRENCY = typer.Option(
    64, "--concurrency", min=1, help="Requests in flight at once.", rich_help_panel="Network"
)
FETCH_TIMEOUT = typer.Option(
    60.0, "--timeout", min=0.01, help="Seconds for a whole request.", rich_help_panel="Network"
)
FETCH_RETRIES = typer.Option(
    2, "--retries", min=0, help="Retries after a transient failure (5xx, 429, timeout).",
    rich_help_panel="Network",
)  # fmt: skip
FETCH_ALLOW_PRIVATE = typer.Option(
    False, "--allow-private",
    help="Allow loopback, private and link-local addresses (tests, intranet mirrors).",
    rich_help_panel="Network",
)  # fmt: skip
FETCH_ALLOW_NETWORK = typer.Option(
    None, "--allow-network", metavar="CIDR",
    help="Allow one non-public network, e.g. 10.1.0.0/16. Repeatable.", rich_help_panel="Network",
)  # fmt: skip
FETCH_RESOLVE = typer.Option(
    None, "--resolve", metavar="HOST:ADDRESS",
    help="Use ADDRESS for HOST instead of DNS. Repeatable.", rich_help_panel="Network",
)  # fmt: skip


def evaluate(
    data: list[str] = DATA,
    model: list[str] = MODEL,
    out: Path = OUT,
    task: str = TASK,
    store: Path | None = STORE,
    split: str | None = SPLIT,
    neutral: bool = NEUTRAL,
    ks: str = KS,
    ndkl_k: int | None = NDKL_K,
    flipped_retrieval: bool = FLIPPED,
    device: str | None = DEVICE,
    dtype: str = DTYPE,
    batch_size: int = BATCH_SIZE,
    workers: int | None = WORKERS,
    decode: str = DECODE,
    download: bool = ALLOW_DOWNLOAD,
    download_alias: bool = DOWNLOAD_ALIAS,
    subsample_k: str = SUBSAMPLE_K,
    subsample_runs: int = SUBSAMPLE_RUNS,
    baseline_runs: int = BASELINE_RUNS,
    seed: int = SEED,
    protocol: str = PROTOCOL,
    bootstrap: int = BOOTSTRAP,
    confidence: float = CONFIDENCE,
    contrast_metrics: str = CONTRAST_METRICS,
    decision_scoring: str = DECISION_SCORING,
    questions: Path | None = QUESTIONS,
    as_json: bool = AS_JSON,
    fetch: bool | None = FETCH,
    skip_missing: bool | None = SKIP_MISSING,
    concurrency: int = FETCH_CONCURRENCY,
    timeout: float = FETCH_TIMEOUT,
    retries: int = FETCH_RETRIES,
    allow_private: bool = FETCH_ALLOW_PRIVATE,
    allow_network: list[str] | None = FETCH_ALLOW_NETWORK,
    resolve: list[str] | None = FETCH_RESOLVE,
    predictions: Path | None = zs.PREDICTIONS,
    prompt: str = zs.PROMPT,
    layout: str = zs.LAYOUT,
    min_images: int | None = zs.MIN_IMAGES,
    images_without_concepts: str = zs.WITHOUT_CONCEPTS,
    filter_split: str | None = zs.FILTER_SPLIT,
    concept_map: Path | None = zs.CONCEPT_MAP,
    bins: int = zs.BINS,
    calibration: str = zs.CALIBRATION,
    temperature: float = zs.TEMPERATURE,
    words: Path | None = zs.WORDS,
    word_source: str | None = zs.WORD_SOURCE,
    compare: Path | None = zs.COMPARE,
    threshold: float = zs.THRESHOLD,
    top: int = zs.TOP,
) -> None:
    """Score models for gender bias on a VisoGender-style set, a contrast set, a stereotype
    probe set, or (--task zero-shot-disparity) a Visual Genome or COCO folder.

    The data picks the analysis: a VisoGender-style set gets resolution and retrieval
    bias (VisoGender Tab. 2, 3, 5), a contrast-set export retrieval bias and pair
    preference (GenSynth Sec. 5), a probe set VLStereoSet's scores, and
    --task zero-shot-disparity the zero-shot disparities paper's per-concept AP and ECE
    gaps; --task decisions asks generative VLMs (vlm:) the same questions about both
    versions of each contrast-set source (docs/decisions.md). Each model writes
    OUT/MODEL/ (benchmark.json, report.md, plots/); a rerun reuses the scores already
    there (not for --task decisions). Every option in detail:
    docs/reference/commands/evaluate.md and docs/zero_shot.md.

    Example:

        contrastkit evaluate --data visogender --model open_clip:ViT-B-32/openai

        contrastkit evaluate --task zero-shot-disparity --data vg/ --model open_clip:ViT-B-32/openai
    """
    from contrastkit.cli.common import progress
    from contrastkit.cli.urls import parse_resolve
    from contrastkit.config import ModelConfig
    from contrastkit.curation.urls import CheckConfig
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import EvaluateConfig
    from contrastkit.evaluators.job import evaluate as run_evaluation
    from contrastkit.evaluators.runner import EvalConfig

    with user_errors():
        tasks = tuple(dict.fromkeys(t.strip() for t in task.split(",") if t.strip()))
        if zs.TASK in tasks:  # per-concept zero-shot disparities
            if len(tasks) > 1:
                raise ConfigError(f"--task: {zs.TASK} runs alone")
            zs.run_zero_shot(
                data=data, models=list(model or ()), out=out, as_json=as_json,
                model_config=ModelConfig(device=device, dtype=dtype, batch_size=batch_size,
                                         download=download or download_alias,
                                         workers=workers, decode=decode),
                options=dict(predictions=predictions, prompt=prompt, layout=layout,
                             min_images=min_images, split=split, filter_split=filter_split,
                             images_without_concepts=images_without_concepts.strip(),
                             concept_map=concept_map, bins=bins, bootstrap=bootstrap,
                             confidence=confidence, seed=seed, calibration=calibration,
                             temperature=temperature, words=words, word_source=word_source,
                             compare=compare, threshold=threshold, top=top),
            )  # fmt: skip
            return
        alone = next((t for t in ("stereotype", "decisions") if t in tasks), None)
        if alone and len(tasks) > 1:
            raise ConfigError(f"--task: {alone} runs alone, not with " + ", ".join(
                t for t in tasks if t != alone))  # fmt: skip
        settings = EvalConfig(
            tasks=EvalConfig.tasks if alone else tasks,
            neutral=neutral, ks=int_list(ks, "--k"), ndkl_k=ndkl_k,
            subsample_ks=int_list(subsample_k, "--subsample-k"), subsample_runs=subsample_runs,
            baseline_runs=baseline_runs, seed=seed, protocol=protocol.strip(),
            bootstrap=bootstrap, confidence=confidence, flipped_retrieval=flipped_retrieval,
        )  # fmt: skip
        config = EvaluateConfig(
            data=tuple(data), models=tuple(model or ()), out=out, store=store, split=split,
            model=ModelConfig(device=device, dtype=dtype, batch_size=batch_size,
                              download=download or download_alias, workers=workers,
                              decode=decode),
            settings=settings, fetch=fetch, skip_missing=skip_missing,
            task=alone,
            contrast_metrics=contrast_metrics.strip(),
            decision_scoring=decision_scoring.strip(), questions=questions,
            network=CheckConfig(
                concurrency=concurrency, total_timeout=timeout, retries=retries,
                allow_private=allow_private, allowed_networks=tuple(allow_network or ()),
                resolve=tuple(parse_resolve(item) for item in resolve or ()),
            ),
        )  # fmt: skip
        result = run_evaluation(config, progress=progress)
    _print_evaluation(result, as_json)


def _print_evaluation(result: EvaluateResult, as_json: bool) -> None:
    """One line per model (and data folder), the skipped tasks, the comparison file."""
    from contrastkit.evaluators.report.headlines import headline_figures, headline_lines

    headlines = [
        headline_figures(entry.model, entry.summary, result.kind) for entry in result.evaluations
    ]
    if as_json:
        print_json([
            {**entry.to_dict(), "headlines": figures}
            for entry, figures in zip(result.evaluations, headlines, strict=True)
        ])  # fmt: skip
        return
    _print_skipped_rows(result)
    for entry, figures in zip(result.evaluations, headlines, strict=True):
        line = Text.assemble((shown(entry.model), "bold"))
        if result.kind == "contrast":
            pairs = entry.summary["pairs"]
            preference = (
                f"masculine preferred in {pairs['masculine_preferred']:.2f} of pairs"
                if pairs.get("applicable", True)
                else "pair preference not applicable (one version per photo)"
            )
            if entry.summary.get("retrieval_note"):
                preference += " (retrieval metrics not computed: --contrast-metrics all)"
            scoring = entry.summary.get("scoring") or {}
            if scoring.get("unit") == "image-query pair":
                preference += (
                    f", {counted(int(scoring['computed']), 'image-query pair')} scored, "
                    f"{int(scoring['reused'])} reused"
                )
            line.append(shown(
                f" on {entry.data}: {counted(entry.summary['queries'], 'neutral query')}, "
                f"{preference} -> {entry.folder}"
            ))  # fmt: skip
        else:
            line.append(shown(
                f": {counted(entry.scored_images, 'image')} scored, "
                f"{counted(entry.reused_records, 'record')} reused -> {entry.folder}"
            ))  # fmt: skip
        console.print(line, highlight=False)
        for text in headline_lines(figures):
            style = "yellow" if text.startswith("random weights:") else ""
            console.print(plain(f"  {text}", style=style), highlight=False)
        for note in entry.skipped:
            console.print(plain(f"  skipped: {note}"), highlight=False)
    if result.comparison is not None:
        console.print(plain(f"comparison: {result.comparison}"), highlight=False)


def _print_skipped_rows(result: EvaluateResult, shown_rows: int = 3) -> None:
    """One line on the rows left out for want of an image (and the URLs fetched)."""
    if result.checked:
        urls = "URL" if result.checked == 1 else "URLs"
        console.print(
            plain(f"fetched {result.fetched} of the {result.checked} image {urls} missing "
                  f"from {result.store}"),
            highlight=False,
        )  # fmt: skip
    count = len(result.skipped_rows)
    if not count:
        return
    rows = "row" if count == 1 else "rows"
    first = ", ".join(row.idx for row in result.skipped_rows[:shown_rows])
    more = ", ..." if count > shown_rows else ""
    console.print(
        plain(f"left out {count} {rows} without an image ({first}{more}); every report.md "
              "lists them with the reason"),
        highlight=False,
    )  # fmt: skip


def report(
    results: list[Path] = typer.Argument(
        None, help="benchmark.json files, or the model folders `contrastkit evaluate` wrote."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Also write the markdown here (with --harness-predictions: the output folder).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the headline numbers as JSON."),
    harness_predictions: list[Path] = typer.Option(
        None,
        "--harness-predictions",
        help="Predictions of a harness on a `contrastkit export harness` set (repeatable): "
        "VLMEvalKit's MODEL_DATASET.xlsx/.tsv/.csv or lmms-eval's --log_samples .jsonl.",
    ),
    harness_set: Path | None = typer.Option(
        None, "--harness-set", help="The folder `contrastkit export harness` wrote."
    ),
    model: str | None = typer.Option(
        None, "--model", help="With --harness-predictions: the model's name in the reports."
    ),
) -> None:
    """Put several models' results side by side (resolution: Tab. 2; retrieval: Tab. 3;
    retrieval with the occupation and the participant as the query's subject: Tab. 5).

    Example:

        contrastkit report results/open_clip-ViT-B-32-openai results/git-microsoft-git-large

    With --harness-predictions (a harness's answers on a `contrastkit export harness` set)
    and --harness-set, writes the bias metrics into --out (a VisoGender set's
    benchmark.json, report.md) and compares them with any RESULTS given:

        contrastkit report --harness-predictions llava_x.tsv --harness-set vlm --out res/llava
    """
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import ReportConfig, compare_results

    if harness_predictions or harness_set is not None:
        with user_errors():
            stray = [p for p in results or [] if p.suffix in (".xlsx", ".tsv", ".csv", ".jsonl")]
            if stray:
                raise ConfigError(
                    f"results: {stray[0]} is not a benchmark; give each prediction file its "
                    "own --harness-predictions"
                )
        produced = _harness_report(harness_predictions, harness_set, out, model, as_json)
        if not results:
            return
        results, out = [*produced, *results], None
    with user_errors():
        if not results:
            raise ConfigError("results: give benchmark files or folders, or --harness-predictions")
        comparison = compare_results(ReportConfig(results=tuple(results), out=out))
    if as_json:
        print_json(list(comparison.headlines))
    else:
        typer.echo(shown(comparison.markdown, multiline=True), nl=False)


def _harness_report(
    predictions: list[Path] | None,
    export: Path | None,
    out: Path | None,
    model: str | None,
    as_json: bool,
) -> list[Path]:
    """``report --harness-predictions``: write the harness's results, print what was
    found; returns the results folder to compare with the other RESULTS given."""
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.harness import HarnessReportConfig, harness_report

    with user_errors():
        for value, name in ((predictions, "--harness-predictions"), (export, "--harness-set"),
                            (out, "--out")):  # fmt: skip
            if not value:
                raise ConfigError(f"{name}: needed to read a harness's predictions")
        assert export is not None and out is not None and predictions
        found = harness_report(HarnessReportConfig(
            predictions=tuple(predictions), export=export, out=out, model=model,
        ))  # fmt: skip
    if as_json:
        print_json({"model": found.model, "set_kind": found.set_kind,
                    "results": str(found.results_file), "counts": found.counts,
                    "harness": found.harness})  # fmt: skip
    else:
        for split, counts in found.counts.items():
            console.print(plain(
                f"{split}: {counted(counts['items'], 'item')}, {counts['answered']} answered, "
                f"{counts['unparseable']} unparseable, {counts['missing']} missing"
            ))  # fmt: skip
        console.print(plain(f"wrote {found.results_file} and {found.out_dir / 'report.md'}"))
    return [found.out_dir]


def register(app: typer.Typer) -> None:
    """Add ``evaluate`` and ``report`` to the root app."""
    app.command(name="evaluate")(evaluate)
    app.command(name="report")(report)
