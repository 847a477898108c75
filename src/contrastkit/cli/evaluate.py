"""``contrastkit evaluate`` and ``contrastkit report``: score models, compare results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from contrastkit.cli.common import console, err_console, print_json, user_errors


def _ints(text: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"{option} takes comma-separated integers, not {text!r}") from None
    if not values:
        raise ValueError(f"{option} needs at least one value")
    return values


def evaluate(
    data: list[str] = typer.Option(
        ...,
        "--data",
        help="Official-format TSV(s), a folder of them, a saved HF dataset, an export folder "
        "(`contrastkit export`), or a Hub id (hf:USER/NAME).",
    ),
    model: list[str] = typer.Option(
        ..., "--model", help="Model spec (repeatable): open_clip:ARCH/TAG, hf-clip:ID, blip:ID..."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder; one subfolder per model."),
    task: str = typer.Option("resolution,retrieval", "--task", help="resolution, retrieval."),
    store: Path | None = typer.Option(
        None, "--store", help="Image store of `contrastkit urls check --store` (for URLs)."
    ),
    split: str | None = typer.Option(None, "--split", help="Split of a saved dataset dict."),
    neutral: bool = typer.Option(
        False, "--neutral", help="Add 'their' to the candidates (neutral rate, Appendix D)."
    ),
    ks: str = typer.Option("5,10", "--k", help="Retrieval cut-offs K, comma-separated."),
    ndkl_k: int | None = typer.Option(
        None, "--ndkl-k", min=1, help="NDKL depth (default: every image of the occupation)."
    ),
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, cuda:1 (default: auto)."),
    dtype: str | None = typer.Option(None, "--dtype", help="float32 (default), bfloat16, float16."),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="Images per forward pass."),
    download: bool = typer.Option(
        False, "--download", help="Allow downloading model weights missing from the cache."
    ),
    subsample_k: str = typer.Option(
        "1", "--subsample-k", help="Images kept per group in the Appendix G.1 subsamples."
    ),
    subsample_runs: int = typer.Option(500, "--subsample-runs", min=1, help="G.1 repetitions."),
    baseline_runs: int = typer.Option(3000, "--baseline-runs", min=2, help="G.2 repetitions."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random analyses."),
    as_json: bool = typer.Option(False, "--json", help="Print the output paths and headlines."),
) -> None:
    """Score models on a VisoGender-style dataset: resolution and retrieval bias, error
    analysis, labour-statistics comparison. On a contrast-set export (`contrastkit export
    contrast`): retrieval bias of gender-neutral queries and masculine-vs-feminine pair
    preference (GenSynth Sec. 5).

    Writes, per model, into OUT/MODEL/ (a folder named after the spec):
    raw_resolution.jsonl and raw_retrieval.jsonl (per-image scores), benchmark.json
    (VisoGender Appendix J structure), report.md and plots/*.png; with several models
    also OUT/comparison.md. Rerunning reuses the scores already in OUT. Image URLs are
    read from the image store (--store), never downloaded.

    Example:

        contrastkit evaluate --data data/OP.tsv --model open_clip:ViT-B-32/openai --out res
    """
    from contrastkit.evaluators.contrast import is_contrast_dataset
    from contrastkit.evaluators.data import ImageLoader, load_items
    from contrastkit.evaluators.hub import hub_name, materialize_hub_dataset
    from contrastkit.evaluators.models import load_model
    from contrastkit.evaluators.report import (
        benchmark,
        comparison_markdown,
        model_slug,
        write_outputs,
    )
    from contrastkit.evaluators.runner import EvalConfig, score_dataset
    from contrastkit.io import atomic_write_text

    summary: list[dict[str, Any]] = []
    with user_errors():
        paths: list[Path] = []
        for given in data:
            name = hub_name(given)
            if name is None:
                paths.append(Path(given))
            else:
                dest = out / "_data" / model_slug(name)
                paths.append(materialize_hub_dataset(name, dest))
        contrast = [is_contrast_dataset(p) for p in paths]
        if any(contrast):
            if not all(contrast):
                raise ValueError("--data mixes contrast sets with VisoGender-style data")
            _evaluate_contrast(paths, model, out, _ints(ks, "--k"), device, dtype,
                               batch_size, download, as_json)  # fmt: skip
            return
        config = EvalConfig(
            tasks=tuple(dict.fromkeys(t.strip() for t in task.split(",") if t.strip())),
            neutral=neutral,
            ks=_ints(ks, "--k"),
            ndkl_k=ndkl_k,
            subsample_ks=_ints(subsample_k, "--subsample-k"),
            subsample_runs=subsample_runs,
            baseline_runs=baseline_runs,
            seed=seed,
        )
        items = load_items(paths, split=split)
        if not items:
            raise ValueError("the dataset has no rows")
        loader = ImageLoader(store)
        loader.check(items)
        all_results = []
        for spec in model:
            adapter = load_model(
                spec, device=device, dtype=dtype, batch_size=batch_size, download=download
            )
            folder = out / model_slug(spec)
            with Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=err_console,
                transient=True,
            ) as bar:
                job = bar.add_task(f"scoring {spec}", total=None)

                def advance(done: int, total: int, job: Any = job, bar: Progress = bar) -> None:
                    bar.update(job, completed=done, total=total)

                run = score_dataset(
                    items, adapter, folder, loader, config, batch_size=batch_size, progress=advance
                )
            results_json = benchmark(run, config, paths)
            files = write_outputs(results_json, folder)
            results = next(iter(results_json.values()))
            all_results.append(results)
            summary.append(
                {
                    "model": spec,
                    "folder": str(folder),
                    "files": {name: str(path) for name, path in files.items()},
                    "scored_images": run.scored_images,
                    "reused_records": run.reused,
                    "skipped": run.skipped,
                }
            )
        if len(all_results) > 1:
            atomic_write_text(out / "comparison.md", comparison_markdown(all_results))
    if as_json:
        print_json(summary)
        return
    for entry in summary:
        console.print(
            f"[bold]{entry['model']}[/]: {entry['scored_images']} images scored, "
            f"{entry['reused_records']} records reused -> {entry['folder']}",
            highlight=False,
        )
        for note in entry["skipped"]:
            console.print(f"  skipped: {note}", highlight=False)
    if len(summary) > 1:
        console.print(f"comparison: {out / 'comparison.md'}", highlight=False)


def report(
    results: list[Path] = typer.Argument(
        ..., help="benchmark.json files, or the model folders `contrastkit evaluate` wrote."
    ),
    out: Path | None = typer.Option(None, "--out", help="Also write the markdown here."),
    as_json: bool = typer.Option(False, "--json", help="Print the headline numbers as JSON."),
) -> None:
    """Put several models' results side by side (resolution: Tab. 2; retrieval: Tab. 3).

    Example:

        contrastkit report results/open_clip-ViT-B-32-openai results/git-microsoft-git-large
    """
    from contrastkit.evaluators.report import comparison_markdown, load_benchmark
    from contrastkit.io import atomic_write_text

    with user_errors():
        loaded = [load_benchmark(path)[1] for path in results]
    text = comparison_markdown(loaded)
    if out is not None:
        atomic_write_text(out, text)
    if as_json:
        print_json(
            [
                {
                    "model": r["metadata"]["model_name"],
                    "resolution_bias": {
                        name: value
                        for name, value in (r.get("resolution_bias") or {}).items()
                        if not name.startswith("per_")
                    },
                    "retrieval_bias": {
                        name: value
                        for name, value in (r.get("retrieval_bias") or {}).items()
                        if isinstance(value, dict) and "mean" in value
                    },
                }
                for r in loaded
            ]
        )
    else:
        typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    """Add ``evaluate`` and ``report`` to the root app."""
    app.command(name="evaluate")(evaluate)
    app.command(name="report")(report)


def _evaluate_contrast(
    paths: list[Path],
    models: list[str],
    out: Path,
    ks: tuple[int, ...],
    device: str | None,
    dtype: str | None,
    batch_size: int,
    download: bool,
    as_json: bool,
) -> None:
    """``evaluate`` on contrast-set exports: one report per model and data folder."""
    from contrastkit.evaluators.contrast import (
        evaluate_contrast,
        load_contrast,
        write_contrast_outputs,
    )
    from contrastkit.evaluators.models import load_scorer
    from contrastkit.evaluators.report import model_slug

    summary: list[dict[str, Any]] = []
    for spec in models:
        scorer = load_scorer(spec, device=device, dtype=dtype, batch_size=batch_size,
                             download=download)  # fmt: skip
        for path in paths:
            dataset = load_contrast(path)
            folder = out / model_slug(spec) if len(paths) == 1 else (
                out / model_slug(spec) / path.name
            )  # fmt: skip
            columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn())
            with Progress(*columns, console=err_console, transient=True) as bar:
                job = bar.add_task(f"scoring {spec}", total=len(dataset))

                def advance(done: int, total: int, job: Any = job, bar: Progress = bar) -> None:
                    bar.update(job, completed=done, total=total)

                result = evaluate_contrast(
                    dataset, scorer, ks=ks, batch_size=batch_size, progress=advance
                )
            files = write_contrast_outputs(result, folder, model=spec, data=str(path))
            summary.append({"model": spec, "data": str(path), "folder": str(folder),
                            "files": {k: str(v) for k, v in files.items()},
                            "summary": result["summary"]})  # fmt: skip
    if as_json:
        print_json(summary)
        return
    for entry in summary:
        pairs = entry["summary"]["pairs"]
        console.print(
            f"[bold]{entry['model']}[/] on {entry['data']}: "
            f"{entry['summary']['queries']} neutral queries, masculine preferred in "
            f"{pairs['masculine_preferred']:.2f} of pairs -> {entry['folder']}",
            highlight=False,
        )
