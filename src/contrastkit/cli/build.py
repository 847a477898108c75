"""``contrastkit build ...``: assemble datasets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from contrastkit.builders.visogender import DEFAULT_PER_CELL, build_visogender
from contrastkit.cli.common import (
    TAXONOMY_OPTION,
    console,
    err_console,
    parse_contexts,
    print_json,
    taxonomy_from,
    user_errors,
)
from contrastkit.curation.editing import (
    DEFAULT_EDITOR,
    DEFAULT_IMAGE_GUIDANCE_SCALE,
    DEFAULT_INSTRUCTIONS,
    DEFAULT_STEPS,
    EditSettings,
)
from contrastkit.curation.knn_filter import DEFAULT_K, DEFAULT_TAU_GENDER, DEFAULT_TAU_REAL
from contrastkit.schema import Gender

app = typer.Typer(
    help="Assemble datasets.\n\nExample:\n\n    contrastkit build visogender "
    "--candidates examples/candidates.csv --out build/example\n\n"
    "    contrastkit build gensynth --coco coco --out build/gensynth --limit 100",
    no_args_is_help=True,
)

#: CLIP by default (GenSynth Sec. 4.2 embeds with CLIP ViT-B/32).
DEFAULT_EMBEDDER = "open_clip:ViT-B-32/openai"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp")


@app.command("visogender")
def visogender(
    candidates: Path = typer.Option(
        ..., "--candidates", help="Candidate pool: CSV, TSV, JSONL or JSON (fields in README)."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder."),
    per_cell: int = typer.Option(
        DEFAULT_PER_CELL, "--per-cell", "-n", min=1, help="Images per gender cell (paper: 5)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the per-cell sampling."),
    contexts: str = typer.Option("OP,OO", "--contexts", help="Scene types to build: OP, OO."),
    occupations: str | None = typer.Option(
        None,
        "--occupations",
        help="Comma-separated occupations, or 'all' for the whole taxonomy "
        "(default: those in the pool).",
    ),
    keep_incomplete: bool = typer.Option(
        False, "--keep-incomplete", help="Also write occupations whose cells fall short."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 1 on any shortfall (and leave earlier TSVs in place)."
    ),
    taxonomy: list[Path] | None = TAXONOMY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the build report as JSON."),
) -> None:
    """Select balanced OP and OO sets from a candidate pool and write official-format TSVs.

    Per occupation: OO n masculine + n feminine, OP n of each of MM, MF, FM, FF
    (VisoGender's balance). Unlicensed and duplicate candidates are skipped; occupations
    that fall short are reported and left out unless --keep-incomplete.

    Example:

        contrastkit build visogender --candidates examples/candidates.csv --out build/example
    """
    with user_errors():
        chosen: list[str] | str | None = None
        if occupations is not None:
            chosen = (
                "all"
                if occupations.strip() == "all"
                else [name.strip() for name in occupations.split(",") if name.strip()]
            )
        result = build_visogender(
            candidates,
            out,
            taxonomy_from(taxonomy),
            per_cell=per_cell,
            seed=seed,
            contexts=parse_contexts(contexts),
            occupations=chosen,
            keep_incomplete=keep_incomplete,
            strict=strict,
        )
    if as_json:
        print_json(result.report())
    else:
        counts = ", ".join(f"{c.value}: {len(rows)} rows" for c, rows in result.rows.items())
        console.print(f"Selected {counts} for {len(result.included)} occupations.")
        console.print(
            f"Skipped {len(result.skipped_unlicensed)} unlicensed and "
            f"{len(result.skipped_duplicates)} duplicate candidates."
        )
        if result.shortfalls:
            table = Table(title="Cells that fall short")
            for column in ("occupation", "context", "cell", "available", "needed", "short by"):
                table.add_column(column, justify="right" if column[0] in "ans" else "left")
            for s in result.shortfalls:
                table.add_row(
                    s.occupation,
                    s.context,
                    s.cell,
                    str(s.available),
                    str(s.needed),
                    str(s.short_by),
                )
            console.print(table)
            if result.excluded:
                console.print(f"Left out (incomplete): {', '.join(result.excluded)}")
        for path in result.written:
            console.print(f"wrote {path}")
    if strict and result.shortfalls:
        raise typer.Exit(1)


@contextmanager
def stage_progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr (on a terminal only); yields a (done, total) callback."""
    if not err_console.is_terminal:
        yield lambda done, total: None
        return
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


class Stage(str, Enum):
    """GenSynth build stages."""

    ALL = "all"
    EDIT = "edit"
    FILTER = "filter"
    SELECT = "select"


def _scales(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--scales must be numbers separated by commas, not {text!r}") from None
    if not values:
        raise ValueError("--scales needs at least one text guidance scale")
    return values


def _instructions(path: Path | None) -> dict[Gender, tuple[str, ...]]:
    if path is None:
        return dict(DEFAULT_INSTRUCTIONS)
    from contrastkit.records import read_records

    found: dict[Gender, list[str]] = {g: [] for g in Gender.binary()}
    for record in read_records(path):
        try:
            gender = Gender.parse_label(record.get("gender"))
        except ValueError as error:
            raise record.error("gender", str(error)) from None
        if not record.get("instruction"):
            raise record.error("instruction", "empty instruction")
        found[gender].append(record.get("instruction"))
    return {g: tuple(v) for g, v in found.items()}


def _pool(folder: Path | None, limit: int | None) -> list[Path] | None:
    if folder is None:
        return None
    if not folder.is_dir():
        raise ValueError(f"--pool {folder}: no such folder")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(f"--pool {folder}: no images (.jpg, .png ...) in it")
    return files[:limit] if limit else files


def _print_quality(quality: dict[str, Any]) -> None:
    table = Table(title="Quality checks (GenSynth Sec. 4.3, Tab. 2)")
    for column in ("set", "images", "ZS gender acc.", "R@1", "R@5", "R@10", "pool"):
        table.add_column(column, justify="left" if column == "set" else "right")
    for name, row in quality.items():
        table.add_row(
            name,
            str(row["images"]),
            f"{100 * row['zero_shot_gender_accuracy']:.1f}%",
            *(f"{100 * row[f'recall@{k}']:.1f}%" for k in (1, 5, 10)),
            str(row["retrieval_pool_size"]),
        )
    console.print(table)


@app.command("gensynth")
def gensynth(
    out: Path = typer.Option(..., "--out", help="Build folder (created; reruns resume)."),
    coco: Path | None = typer.Option(
        None, "--coco", help="COCO folder with annotations/ and images (edit stage)."
    ),
    editor: str = typer.Option(
        DEFAULT_EDITOR, "--editor", help="InstructPix2Pix: a saved pipeline folder or Hub id."
    ),
    embedder: str = typer.Option(
        DEFAULT_EMBEDDER, "--embedder", help="Image-text model spec for the filter and checks."
    ),
    stage: Stage = typer.Option(Stage.ALL, "--stage", help="Run one stage, or all in turn."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Edit the first N sources."),
    split: str | None = typer.Option(None, "--split", help="COCO split (default: the only one)."),
    min_box_side: float = typer.Option(0.0, "--min-box-side", min=0, help="Smallest box side."),
    steps: int = typer.Option(
        DEFAULT_STEPS, "--steps", min=1, help="Denoising steps (paper: 500)."
    ),
    scales: str = typer.Option("9.5,15", "--scales", help="Text guidance scales."),
    image_guidance: float = typer.Option(
        DEFAULT_IMAGE_GUIDANCE_SCALE, "--image-guidance", help="Image guidance scale."
    ),
    instructions: Path | None = typer.Option(
        None, "--instructions", help="Table with gender, instruction (default: Tab. 7)."
    ),
    resolution: int = typer.Option(512, "--resolution", help="Editor input side (multiple of 8)."),
    margin: float = typer.Option(0.1, "--margin", help="Context around the box (fraction)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the edits and of the selection."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Edits per forward pass."),
    k: int = typer.Option(DEFAULT_K, "--k", min=1, help="KNN neighbourhood size K."),
    tau_real: float = typer.Option(DEFAULT_TAU_REAL, "--tau-real", help="Threshold on P_R."),
    tau_gender: float = typer.Option(DEFAULT_TAU_GENDER, "--tau-gender", help="Threshold on P_G."),
    quality: bool = typer.Option(True, "--quality/--no-quality", help="Sec. 4.3 checks."),
    pool: Path | None = typer.Option(
        None, "--pool", help="Folder of images to retrieve among (e.g. COCO val2017)."
    ),
    pool_limit: int | None = typer.Option(None, "--pool-limit", min=1, help="Use N pool images."),
    device: str | None = typer.Option(None, "--device", help="cpu / cuda (default: CUDA if any)."),
    allow_download: bool = typer.Option(
        False, "--allow-download", help="Fetch models missing from the local cache."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the build summary as JSON."),
) -> None:
    """Build a GenSynth contrast set: edit COCO people with InstructPix2Pix, filter the
    edits with the KNN test, keep one masculine and one feminine edit per image.

    Stages (--stage; all by default): edit (needs --coco, --editor), filter (needs
    --embedder), select (writes contrast_set.jsonl; with --quality, the zero-shot gender
    accuracy and recall@1/5/10 checks). Reruns skip finished edits.

    Example:

        contrastkit build gensynth --coco coco --out build/gensynth --limit 100
    """
    from contrastkit.builders import gensynth as pipeline
    from contrastkit.curation.editing import load_editor
    from contrastkit.evaluators.models import load_scorer

    with user_errors():
        scorer = None
        if stage in (Stage.ALL, Stage.EDIT):
            if coco is None:
                raise ValueError("the edit stage needs --coco DIR")
            settings = EditSettings(
                instructions=_instructions(instructions),
                text_guidance_scales=_scales(scales),
                image_guidance_scale=image_guidance,
                steps=steps,
                resolution=resolution,
                margin=margin,
                seed=seed,
            )
            pix2pix = load_editor(editor, device=device, batch_size=batch_size,
                                  allow_download=allow_download)  # fmt: skip
            with stage_progress("editing") as progress:
                pipeline.run_edit_stage(
                    coco, out, pix2pix, settings, split=split, limit=limit,
                    min_box_side=min_box_side, progress=progress,
                    edits_per_call=batch_size * len(settings.text_guidance_scales),
                )  # fmt: skip
        if stage in (Stage.ALL, Stage.FILTER) or (stage is Stage.SELECT and quality):
            scorer = load_scorer(embedder, device=device, download=allow_download)
        if stage in (Stage.ALL, Stage.FILTER):
            assert scorer is not None
            with stage_progress("embedding") as progress:
                pipeline.run_filter_stage(
                    out, scorer, k=k, tau_real=tau_real, tau_gender=tau_gender, progress=progress
                )
        if stage in (Stage.ALL, Stage.SELECT):
            pipeline.run_select_stage(
                out, seed=seed, model=scorer if quality else None, pool=_pool(pool, pool_limit)
            )
        summary = pipeline.read_summary(out)
    if as_json:
        print_json(summary)
    else:
        _print_gensynth(summary, out)
    if stage in (Stage.ALL, Stage.SELECT) and summary["select"]["sources_kept"] == 0:
        raise typer.Exit(1)


def _print_gensynth(summary: dict[str, Any], out: Path) -> None:
    if "edit" in summary:
        e = summary["edit"]
        console.print(
            f"edit: {e['sources']} sources, {e['planned']} edits planned, {e['edited']} made, "
            f"{e['skipped_finished']} already finished."
        )
    if "filter" in summary:
        f = summary["filter"]
        console.print(
            f"filter: {f['accepted']} of {f['edits']} edits accepted "
            f"({100 * f['acceptance_rate']:.1f}%; K={f['k_effective']}, "
            f"tau_R={f['tau_real']}, tau_G={f['tau_gender']})."
        )
    if "select" in summary:
        s = summary["select"]
        console.print(
            f"select: {s['sources_kept']} of {s['sources_with_edits']} sources kept, "
            f"{s['images']} images in {out / 'contrast_set.jsonl'}."
        )
        if s.get("quality"):
            _print_quality(s["quality"])


@app.command("genswap")
def genswap(
    coco: Path = typer.Option(..., "--coco", help="COCO folder with annotations/ and images."),
    faces: Path = typer.Option(..., "--faces", help="Face bank table: file, gender, age."),
    out: Path = typer.Option(..., "--out", help="Build folder (created; reruns resume)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use the first N sources."),
    split: str | None = typer.Option(None, "--split", help="COCO split (default: the only one)."),
    min_box_side: float = typer.Option(0.0, "--min-box-side", min=0, help="Smallest box side."),
    same_sources: Path | None = typer.Option(
        None, "--same-sources", help="A GenSynth build folder: swap the same source images."
    ),
    min_age: int = typer.Option(20, "--min-age", help="Youngest bank face (paper: > 19)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the donor draw."),
    embedder: str | None = typer.Option(
        None, "--embedder", help="Image-text model spec: run the Sec. 4.3 quality checks."
    ),
    pool: Path | None = typer.Option(None, "--pool", help="Folder of images to retrieve among."),
    pool_limit: int | None = typer.Option(None, "--pool-limit", min=1, help="Use N pool images."),
    device: str | None = typer.Option(None, "--device", help="cpu / cuda (default: CUDA if any)."),
    as_json: bool = typer.Option(False, "--json", help="Print the build summary as JSON."),
) -> None:
    """Build the GenSwap baseline: replace the face MTCNN finds in each COCO person with an
    adult face of each target gender from a labelled face bank (FairFace's label CSV
    works as is).

    Example:

        contrastkit build genswap --coco coco --faces fairface/train_labels.csv --out build/genswap
    """
    from contrastkit.builders.genswap import build_genswap
    from contrastkit.builders.gensynth import quality_report, read_summary, update_summary
    from contrastkit.curation.faces import FaceDetector
    from contrastkit.evaluators.models import load_scorer

    with user_errors():
        with stage_progress("swapping faces") as progress:
            result = build_genswap(
                coco, faces, out, split=split, limit=limit, min_box_side=min_box_side,
                seed=seed, same_sources=same_sources, min_age=min_age,
                detector=FaceDetector(device), progress=progress,
            )  # fmt: skip
        if embedder:
            scorer = load_scorer(embedder, device=device)
            update_summary(
                out, "quality", quality_report(out, scorer, pool=_pool(pool, pool_limit))
            )
        summary = read_summary(out)
    if as_json:
        print_json(summary)
    else:
        console.print(
            f"genswap: {result['sources']} sources, {result['no_face']} without a face, "
            f"{result['swapped']} swaps made, {result['skipped_finished']} already finished; "
            f"{result['images']} images in {out / 'contrast_set.jsonl'}."
        )
        if summary.get("quality"):
            _print_quality(summary["quality"])
    if result["sources_kept"] == 0:
        raise typer.Exit(1)
