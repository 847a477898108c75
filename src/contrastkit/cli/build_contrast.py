"""``contrastkit build gensynth``, ``build merge`` and ``build genswap``: the contrast
sets built from COCO people (GenSynth's edits, its sharded runs, and the GenSwap
face-swap baseline, which shares GenSynth's quality checks).

Each command maps its options onto the job's config, runs the job
(:func:`contrastkit.builders.gensynth.job.build_gensynth`,
:func:`contrastkit.builders.gensynth.shards.merge_shards`,
:func:`contrastkit.builders.genswap_job.build_genswap`) and prints the result;
:mod:`contrastkit.cli.build` adds them to the ``build`` group.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer

from contrastkit.builders.stages import DEFAULT_EMBEDDER, Stage
from contrastkit.cli.common import (
    console,
    err_console,
    plain,
    print_json,
    progress,
    user_errors,
)
from contrastkit.cli.options import EditorModelOptions, ModelOptions, with_options
from contrastkit.cli.outdir import interrupted, tidy_output
from contrastkit.text import count as counted

if TYPE_CHECKING:
    from contrastkit.builders.gensynth.context import ContextSummary
    from contrastkit.builders.gensynth.filter import FilterEntry
    from contrastkit.builders.gensynth.job import GenSynthSettings
    from contrastkit.builders.gensynth.summary import EditEntry

__all__ = ["DEFAULT_EDITOR", "PROGRESS_LINE_SECONDS", "genswap", "gensynth", "merge"]

# Spelled out here so that `contrastkit --help` imports no model library; the editing
# module holds the same value (tests/cli checks that they agree).
DEFAULT_EDITOR = "timbrooks/instruct-pix2pix"

#: Off a terminal, `build gensynth` prints a progress line at most this often (seconds).
PROGRESS_LINE_SECONDS = 30.0

#: How an option a build records spells its default in `--help`.
_RECORDED_OR = "[default: what the build recorded, else"


_OUT = typer.Option(..., "--out", help="Build folder (created; reruns resume).")
_LIMIT = typer.Option(None, "--limit", min=1, help="Use the first N sources.")
_SPLIT = typer.Option(None, "--split", help="COCO split (default: the only one).")
_MIN_BOX = typer.Option(0.0, "--min-box-side", min=0, help="Smallest box side.")
_POOL = typer.Option(None, "--pool", help="Folder of images to retrieve among (e.g. COCO val2017).")
_POOL_LIMIT = typer.Option(None, "--pool-limit", min=1, help="Use N pool images.")
_JSON = typer.Option(False, "--json", help="Print the build summary as JSON.")
_KNN_DEVICE = typer.Option(
    "auto", "--knn-device", help="KNN filter search: cpu, cuda (every GPU); auto: CUDA if any."
)
_ENGINE = typer.Option(
    "local", "--engine", metavar="local|ray",
    help="Where editing and embedding run: this process, or Ray actor pools (one GPU "
    'each; pip install "contrastkit[ray]"). Same build folder either way.',
)  # fmt: skip
_RAY_ADDRESS = typer.Option(
    None, "--ray-address", metavar="ADDR",
    help="With --engine ray: the Ray cluster (auto, ray://head:10001) "
    "[default: start a local Ray instance for the run].",
)  # fmt: skip


def _scales(text: str) -> tuple[float, ...]:
    from contrastkit.errors import ConfigError

    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise ConfigError(f"--scales must be numbers separated by commas, not {text!r}") from error


@with_options
def gensynth(
    out: Path = _OUT,
    coco: Path | None = typer.Option(None, "--coco", help="COCO folder (edit stage)."),
    editor: str | None = typer.Option(
        None,
        "--editor",
        help="Editor spec: ip2p:, sdxl-ip2p:, flux-kontext: or qwen-image-edit: followed by a "
        "folder or Hub id (the family's default model when empty), or an InstructPix2Pix "
        f"folder/Hub id {_RECORDED_OR} {DEFAULT_EDITOR}].",
    ),
    embedder: str | None = typer.Option(
        None, "--embedder", help=f"Image-text model spec {_RECORDED_OR} {DEFAULT_EMBEDDER}]."
    ),
    stage: Stage = typer.Option(Stage.ALL, "--stage", help="Run one stage, or all in turn."),
    limit: int | None = _LIMIT,
    split: str | None = _SPLIT,
    min_box_side: float | None = typer.Option(
        None, "--min-box-side", min=0, help=f"Smallest box side {_RECORDED_OR} 0]."
    ),
    steps: int | None = typer.Option(
        None,
        "--steps",
        min=1,
        help=f"Denoising steps {_RECORDED_OR} the editor family's: 500 for ip2p, the paper's].",
    ),
    scales: str | None = typer.Option(
        None,
        "--scales",
        help=f"Text guidance scales {_RECORDED_OR} the editor family's: 9.5,15 for ip2p].",
    ),
    image_guidance: float | None = typer.Option(
        None,
        "--image-guidance",
        help=f"Image guidance scale (InstructPix2Pix families) {_RECORDED_OR} 1.5].",
    ),
    instructions: Path | None = typer.Option(None, "--instructions", help="gender, instruction."),
    resolution: int | None = typer.Option(
        None,
        "--resolution",
        help="Editor input side, a multiple of 8 (16 for flux-kontext, qwen-image-edit) "
        f"{_RECORDED_OR} the editor family's: 512 for ip2p].",
    ),
    margin: float | None = typer.Option(
        None, "--margin", help=f"Context around the box, a fraction {_RECORDED_OR} 0.1]."
    ),
    seed: int | None = typer.Option(
        None, "--seed", help=f"Seed of the edits and of the selection {_RECORDED_OR} 0]."
    ),
    composite: str | None = typer.Option(
        None,
        "--composite",
        help="Where the edit is pasted: box (the paper: the whole person box is repainted) "
        "or mask (the person's COCO segmentation, dilated and feathered: every other "
        f"pixel stays the photo's own) {_RECORDED_OR} box].",
    ),
    mask_dilation: float | None = typer.Option(
        None,
        "--mask-dilation",
        help="With --composite mask: how far the person mask is grown (and the edit faded "
        f"out), a fraction of the box's shorter side {_RECORDED_OR} 0.05].",
    ),
    k: int | None = typer.Option(
        None, "--k", min=1, help=f"KNN neighbourhood size K {_RECORDED_OR} 50]."
    ),
    tau_real: float | None = typer.Option(
        None, "--tau-real", help=f"Threshold on P_R {_RECORDED_OR} 0.08]."
    ),
    tau_gender: float | None = typer.Option(
        None, "--tau-gender", help=f"Threshold on P_G {_RECORDED_OR} 0.5]."
    ),
    knn_device: Literal["auto", "cpu", "cuda"] = _KNN_DEVICE,
    quality: bool = typer.Option(True, "--quality/--no-quality", help="Sec. 4.3 checks."),
    pool: Path | None = _POOL,
    pool_limit: int | None = _POOL_LIMIT,
    quality_sample: int | None = typer.Option(
        None, "--quality-sample", min=1, help="Score at most N images per set in the checks."
    ),
    runtime: EditorModelOptions = EditorModelOptions(batch_size=8),
    shard: str | None = typer.Option(
        None, "--shard", help="K/N: edit (and embed) only shard K of N, in OUT/shards/K-of-N."
    ),
    image_format: Literal["webp", "png", "jpeg"] | None = typer.Option(
        None, "--image-format", help=f"How edits are stored {_RECORDED_OR} webp]."
    ),
    image_quality: int | None = typer.Option(
        None,
        "--image-quality",
        min=0,
        max=100,
        help=f"WebP / JPEG quality of stored edits {_RECORDED_OR} 90].",
    ),
    engine: str = _ENGINE,
    ray_address: str | None = _RAY_ADDRESS,
    as_json: bool = _JSON,
) -> None:
    """Build a GenSynth contrast set: edit COCO people with an instruction editor
    (InstructPix2Pix by default), filter the edits with the KNN test, keep one masculine
    and one feminine edit per image.

    Stages (--stage; all by default): edit (needs --coco, --editor), filter (needs
    --embedder), select (writes contrast_set.jsonl; with --quality, the zero-shot gender
    accuracy and recall@1/5/10 checks). Reruns skip finished edits. --instructions: a
    table with gender, instruction (default: the editor family's; Tab. 7 for ip2p).

    --editor picks the editor family (docs/pipeline.md, "Choosing an editor"): ip2p
    (InstructPix2Pix at the paper's settings), sdxl-ip2p, flux-kontext, qwen-image-edit;
    each brings its model card's instructions, guidance, steps, resolution and dtype.

    A rerun on a build folder, of every stage or one, uses the settings the build
    recorded (models, sources, edit settings, thresholds, checks) for every option it is
    not given; the options given win and are recorded. Off a terminal, progress is
    printed as plain lines on stderr.

    --shard K/N splits the edits over N workers (each its own process, GPU or machine
    sharing OUT): worker K edits the sources whose SHA-256 of the id modulo N is K-1 in
    OUT/shards/K-of-N and, with --stage all or filter, embeds them there. The filter
    decisions and the selection need every edit: once all shards finish, run
    `contrastkit build merge OUT`, then --stage filter and --stage select on OUT.

    --engine ray runs the editing and the embedding on a Ray cluster (--ray-address;
    default: a local Ray instance): one actor per GPU loads each model once; this process
    writes every image, manifest line and embedding shard, so the build folder is the
    same as with --engine local and either engine resumes the other's run. The workers
    read COCO and OUT by path (a shared filesystem on a multi-machine cluster).

    Example:

        contrastkit build gensynth --coco coco --out build/gensynth --limit 100

        contrastkit build gensynth --coco coco --out build/gensynth --shard 2/4

        contrastkit build gensynth --coco coco --out build/kontext --editor flux-kontext:

        contrastkit build gensynth --coco coco --out build/gensynth --engine ray --ray-address auto
    """
    from contrastkit.builders.gensynth.job import GenSynthConfig, build_gensynth
    from contrastkit.builders.gensynth.shards import Shard

    edit_given: dict[str, int | float | str | tuple[float, ...] | None] = {
        "steps": steps, "image_guidance_scale": image_guidance, "resolution": resolution,
        "margin": margin, "seed": seed, "composite": composite, "mask_dilation": mask_dilation,
    }  # fmt: skip
    with tidy_output(out), interrupted(lambda: _gensynth_kept(out)), user_errors():
        if scales is not None:
            edit_given["text_guidance_scales"] = _scales(scales)
        model = runtime.config()
        result = build_gensynth(GenSynthConfig(
            out=out, stage=stage, coco=coco, split=split, limit=limit,
            min_box_side=min_box_side, editor=editor, embedder=embedder,
            edit={key: value for key, value in edit_given.items() if value is not None},
            instructions=instructions, k=k, tau_real=tau_real, tau_gender=tau_gender,
            knn_device=knn_device, quality=quality, pool=pool, pool_limit=pool_limit,
            quality_sample=quality_sample, model=model,
            shard=None if shard is None else Shard.parse(shard),
            image_format=image_format, image_quality=image_quality,
            engine=engine, ray_address=ray_address,  # type: ignore[arg-type]
        ), progress=functools.partial(progress, every=PROGRESS_LINE_SECONDS),
            notify=_notify)  # fmt: skip
    if as_json:
        print_json(result.summary)
    elif result.shard is not None:
        _print_shard(result.summary, out, result.shard, result.settings)
    else:
        _print_gensynth(result.summary, out)
    if result.sources_kept == 0:
        raise typer.Exit(1)


def _gensynth_kept(out: Path) -> str:
    """What an interrupted `build gensynth` kept in ``out``, and how to resume."""
    manifests = [out / "manifest.jsonl", *sorted(out.glob("shards/*/manifest.jsonl"))]
    edits = 0
    for manifest in manifests:
        if manifest.is_file():
            with manifest.open("rb") as lines:
                edits += sum(1 for line in lines if line.strip())
    if not edits:
        return f"no edit was finished; rerun the same command to start again ({out})"
    return (
        f"{out} keeps {counted(edits, 'finished edit')} (manifest.jsonl); rerun the same "
        "command to resume: finished edits are not made again"
    )


def _notify(text: str) -> None:
    """A job's warning or hint, on stderr as it arises (stdout stays the result)."""
    err_console.print(plain(text), soft_wrap=True)


def _print_gensynth(summary: dict[str, Any], out: Path) -> None:
    if "edit" in summary:
        e = summary["edit"]
        console.print(
            plain(
                f"edit: {counted(e['sources'], 'source')}, "
                f"{counted(e['planned'], 'edit')} planned, "
                f"{e['edited']} made, {e['skipped_finished']} already finished."
            )
        )
        _print_empty_masks(e)
    if "filter" in summary:
        f = summary["filter"]
        console.print(
            plain(
                f"filter: {f['accepted']} of {counted(f['edits'], 'edit')} accepted "
                f"({100 * f['acceptance_rate']:.1f}%; K={f['k_effective']}, "
                f"tau_R={f['tau_real']}, tau_G={f['tau_gender']}; search: "
                f"{f.get('backend', '?')} on {f.get('device', '?')}{_gpus(f)})."
            )
        )
    if "select" in summary:
        s = summary["select"]
        console.print(
            plain(
                f"select{_stale(s, out, Stage.SELECT)}: {s['sources_kept']} of "
                f"{counted(s['sources_with_edits'], 'source')} kept, "
                f"{counted(s['images'], 'image')} in {out / 'contrast_set.jsonl'}."
            )
        )
        if s.get("left_out_empty_mask"):
            console.print(
                plain(
                    f"select: left out {counted(s['left_out_empty_mask'], 'source')} whose "
                    "person mask covers no pixel (their edits are the photo itself)."
                )
            )
    if summary.get("quality"):
        _print_quality(summary["quality"], _stale(summary["quality"], out, Stage.SELECT))
    if summary.get("context"):
        _print_context(summary["context"], _stale(summary["context"], out, Stage.SELECT))


def _print_empty_masks(edit: EditEntry) -> None:
    """The persons the edit stage left out for a segmentation that covers no pixel."""
    empty = (edit.get("selection") or {}).get("empty_mask")
    if empty:
        console.print(
            plain(
                f"edit: left out {counted(empty, 'person')} whose COCO segmentation covers "
                "no pixel (--composite mask: an edit of them would be the photo itself)."
            )
        )


def _print_context(context: ContextSummary, stale: str = "") -> None:
    """The context measure of the quality checks, in one line."""
    from contrastkit.builders.gensynth.context import context_line

    console.print(plain(context_line(context, stale)))


def _stale(entry: Mapping[str, object], out: Path, stage: Stage) -> str:
    """`` (stale: why; run `...`)`` for an entry a later stage outdated, else ``""``."""
    why = entry.get("stale")
    if not why:
        return ""
    from contrastkit.builders.gensynth.job import stage_command

    return f" (stale: {why}; run `{stage_command(out, stage)}`)"


def _print_shard(
    summary: dict[str, Any], out: Path, shard: str, settings: GenSynthSettings | None
) -> None:
    folder = out / "shards" / shard.replace("/", "-of-")
    if "edit" in summary:
        e = summary["edit"]
        console.print(
            plain(
                f"shard {shard}: {counted(e['sources'], 'source')}, "
                f"{counted(e['planned'], 'edit')} planned, "
                f"{e['edited']} made, {e['skipped_finished']} already finished, in {folder}."
            )
        )
        _print_empty_masks(e)
    if "embed" in summary:
        m = summary["embed"]
        console.print(
            plain(
                f"shard {shard}: {counted(m['real_crops'], 'person crop')} and "
                f"{counted(m['edits'], 'edit')} embedded."
            )
        )
    from contrastkit.builders.gensynth.job import stage_command

    console.print(
        plain(
            f"The filter decisions and the selection need every shard: when all are done, "
            f"run `contrastkit build merge {out}`, then "
            f"`{stage_command(out, Stage.FILTER, settings)}` and "
            f"`{stage_command(out, Stage.SELECT, settings)}`."
        )
    )


def merge(
    out: Path = typer.Argument(..., help="Build folder whose shards/K-of-N folders to merge."),
    partial: bool = typer.Option(
        False, "--partial", help="Merge the shards that exist; list the missing ones."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the merge report as JSON."),
) -> None:
    """Combine the shards of a GenSynth build (OUT/shards/K-of-N, made by `build gensynth
    --shard K/N`) into OUT's manifest.jsonl and sources.jsonl, in a single worker's order,
    and link their embedding caches into OUT/embeddings. Refuses shards still running,
    of another N, made with other settings, or missing (unless --partial). Rerunning after
    more shard work adds the new edits.

    Example:

        contrastkit build merge build/gensynth
    """
    from contrastkit.builders.gensynth.shards import MergeConfig, merge_shards

    with user_errors():
        report = merge_shards(MergeConfig(out=out, partial=partial))
    if as_json:
        print_json(report.to_json())
        return
    merged = ", ".join(str(k) for k in report.merged)
    console.print(
        plain(
            f"merge: shards {merged} of {report.shards}: {counted(report.edits, 'edit')} of "
            f"{counted(report.sources, 'source')} in {out / 'manifest.jsonl'} "
            f"({report.new_edits} new); {counted(report.embedding_files, 'embedding file')} "
            "linked."
        )
    )
    if report.missing:
        missing = ", ".join(f"{k}/{report.shards}" for k in report.missing)
        console.print(plain(f"missing shards (merged without them): {missing}"))
    if report.unfinished:
        unfinished = ", ".join(f"{k}/{report.shards}" for k in report.unfinished)
        console.print(plain(f"unfinished shards (their finished edits merged): {unfinished}"))
    from contrastkit.builders.gensynth.job import stage_command

    with user_errors():
        filter_command = stage_command(out, Stage.FILTER)
        select_command = stage_command(out, Stage.SELECT)
    console.print(plain(f"next: {filter_command}, then {select_command}"))


def _gpus(entry: FilterEntry) -> str:
    """`` x2`` when the search ran on several GPUs."""
    count = int(entry.get("gpus") or 0)
    return f" x{count}" if count > 1 else ""


def _sampled(row: dict[str, Any]) -> str:
    """``"3 of 184656"`` for a sampled set, else the number of images."""
    images, total = row["images"], row.get("sampled_from", row["images"])
    return f"{images} of {total}" if total != images else str(images)


def _print_quality(quality: dict[str, Any], stale: str = "") -> None:
    from rich.table import Table

    table = Table(title=f"Quality checks (GenSynth Sec. 4.3, Tab. 2){stale}")
    for column in ("set", "images", "ZS gender acc.", "R@1", "R@5", "R@10", "pool"):
        table.add_column(column, justify="left" if column == "set" else "right")
    for name, row in quality.items():
        if not isinstance(row, dict):
            continue  # the stale mark
        table.add_row(
            plain(name),
            plain(_sampled(row)),
            plain(f"{100 * row['zero_shot_gender_accuracy']:.1f}%"),
            *(plain(f"{100 * row[f'recall@{k}']:.1f}%") for k in (1, 5, 10)),
            plain(row["retrieval_pool_size"]),
        )
    console.print(table)


@with_options
def genswap(
    coco: Path = typer.Option(..., "--coco", help="COCO folder with annotations/ and images."),
    faces: Path = typer.Option(..., "--faces", help="Face bank table: file, gender, age."),
    out: Path = _OUT,
    limit: int | None = _LIMIT,
    split: str | None = _SPLIT,
    min_box_side: float = _MIN_BOX,
    same_sources: Path | None = typer.Option(
        None, "--same-sources", help="A GenSynth build folder: swap the same source images."
    ),
    min_age: int = typer.Option(20, "--min-age", help="Youngest bank face (paper: > 19)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the donor draw."),
    embedder: str | None = typer.Option(
        None, "--embedder", help="Image-text model spec: run the Sec. 4.3 quality checks."
    ),
    pool: Path | None = _POOL,
    pool_limit: int | None = _POOL_LIMIT,
    runtime: ModelOptions = ModelOptions(),
    as_json: bool = _JSON,
) -> None:
    """Build the GenSwap baseline: replace the face MTCNN finds in each COCO person with an
    adult face of each target gender from a labelled face bank (FairFace's label CSV
    works as is).

    Example:

        contrastkit build genswap --coco coco --faces fairface/train_labels.csv --out build/genswap
    """
    from contrastkit.builders.genswap_job import GenSwapConfig, build_genswap

    with tidy_output(out), user_errors():
        result = build_genswap(GenSwapConfig(
            coco=coco, faces=faces, out=out, split=split, limit=limit,
            min_box_side=min_box_side, same_sources=same_sources, min_age=min_age, seed=seed,
            embedder=embedder, pool=pool, pool_limit=pool_limit, model=runtime.config(),
        ), progress=progress)  # fmt: skip
    if as_json:
        print_json(result.summary)
    else:
        s = result.swap
        console.print(
            plain(
                f"genswap: {counted(s['sources'], 'source')}, {s['no_face']} without a face, "
                f"{counted(s['swapped'], 'swap')} made, {s['skipped_finished']} already "
                f"finished; {counted(s['images'], 'image')} in {result.contrast_set}."
            )
        )
        if result.quality:
            _print_quality(result.quality)
    if result.sources_kept == 0:
        raise typer.Exit(1)
