"""``contrastkit export ...`` and ``contrastkit publish``: Hugging Face datasets and the Hub.

The commands map their options onto :class:`~contrastkit.builders.export.ExportConfig`
(``contrastkit export PATH``, the kind detected), the per-kind configs
(:class:`~contrastkit.builders.export.ExportVisoGenderConfig` and the others of the
``visogender`` / ``contrast`` / ``stereotype`` subcommands) and
:class:`~contrastkit.builders.publish.PublishConfig`, run the job and print the result.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from contrastkit.cli.common import console, plain, print_json, user_errors
from contrastkit.cli.helptext import App, HelpGroup
from contrastkit.text import count as counted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contrastkit.builders.export import ExportResult
    from contrastkit.evaluators.engine.harness import HarnessQuestion
    from contrastkit.evaluators.engine.protocol import Item

DETECT_COMMAND = "auto"
"""The command ``contrastkit export PATH ...`` runs: a first argument that names no
subcommand is its ``PATH``."""


class DetectingGroup(HelpGroup):
    """The ``export`` group: ``contrastkit export PATH ...`` is ``contrastkit export auto
    PATH ...`` (the kind of ``PATH`` detected), the subcommands are as they were."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """:meth:`click.Group.resolve_command`, with :data:`DETECT_COMMAND` put first
        when the first argument is no subcommand's name and not an option."""
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = [DETECT_COMMAND, *args]
        return super().resolve_command(ctx, args)


app = App(
    cls=DetectingGroup,
    help=(
        "Export datasets as Hugging Face datasets (save_to_disk + parquet) with a dataset "
        "card.\n\n"
        "`contrastkit export PATH --out OUT` detects what PATH holds (VisoGender-style "
        "TSVs or a folder of them, a GenSynth / GenSwap build folder, a stereotype probe "
        "set) and exports it; `contrastkit export PATH --help` lists its options. The "
        "subcommands name the kind instead.\n\n"
        "Example: contrastkit export build/gensynth --out build/gensynth-export"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

_OUT = typer.Option(..., help="Export folder (replaced atomically if it exists).")
_JSON = typer.Option(False, "--json", help="Print the build metadata as JSON.")
_CHECKS = typer.Option(
    None, help="A `urls check --results` file: its dates and status counts go in the card."
)


def print_export(result: ExportResult, as_json: bool = False) -> None:
    """Where the export went and what it holds (or its metadata as JSON)."""
    if as_json:
        print_json(result.metadata)
        return
    for name, splits in result.configs.items():
        for split, dataset in splits.items():
            console.print(
                plain(
                    f"{name}/{split}: {counted(dataset.num_rows, 'row')}, "
                    f"columns {dataset.column_names}"
                )
            )
    console.print(
        plain(f"wrote {result.out_dir} (README.md card, build_metadata.json, data/, saved/)")
    )


@app.command(DETECT_COMMAND)
def export_any_command(
    source: list[Path] = typer.Argument(
        ...,
        help="What to export: OP/OO TSVs or a folder of them, a `build gensynth` / `build "
        "genswap` folder, or a probe TSV / JSONL or `build stereoset` folder.",
    ),
    out: Path = _OUT,
    kind: str | None = typer.Option(
        None, help="The dataset kind (visogender, contrast, stereotype) [default: detected]."
    ),
    store: Path | None = typer.Option(
        None,
        help="VisoGender-style and stereotype sets: the image store of the rows' URLs "
        "(`urls check --store`); their images are embedded.",
    ),
    checks: Path | None = _CHECKS,
    skip_missing: bool = typer.Option(
        False, help="Leave out rows whose image is not available instead of failing."
    ),
    pretty_name: str | None = typer.Option(None, help="The card's title [default: the kind's]."),
    license: str | None = typer.Option(None, help="License id for the card [default: the kind's]."),
    sources: str | None = typer.Option(
        None, help="Contrast sets: what the source photos are, for the card."
    ),
    sources_licence: str | None = typer.Option(
        None, help="Contrast sets: the source photos' licence, one sentence for the card."
    ),
    originals: bool = typer.Option(
        False, "--originals", help="Contrast sets: export the original (unedited) photos."
    ),
    balanced: bool = typer.Option(
        False, "--balanced", help="With --originals: as many masculine as feminine photos."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the --balanced draw."),
    as_json: bool = _JSON,
) -> None:
    """Export any dataset contrastkit builds, its kind detected (`contrastkit export
    PATH` runs this): VisoGender-style TSVs as `contrastkit export visogender`, a
    GenSynth / GenSwap build folder as `contrastkit export contrast`, a stereotype probe
    set as `contrastkit export stereotype`. An option the kind does not take is refused.

    Example:

        contrastkit export build/gensynth --out build/gensynth-export

        contrastkit export data/visogender_O?.tsv --store build/images --out build/export
    """
    from contrastkit.builders.export import ExportConfig, export

    with user_errors():
        result = export(ExportConfig(
            source=tuple(source), out=out, kind=kind, store=store, checks=checks,
            skip_missing=skip_missing, pretty_name=pretty_name, license=license,
            source_description=sources, source_licence=sources_licence,
            originals=originals, balanced=balanced, seed=seed,
        ))  # fmt: skip
    print_export(result, as_json)


@app.command("visogender")
def export_visogender_command(
    files: list[Path] = typer.Argument(..., help="Official-format OP and/or OO TSVs."),
    out: Path = _OUT,
    store: Path | None = typer.Option(
        None,
        help="Image store of the rows' URLs (`urls check --store`): their images are "
        "embedded. Without it a set of URLs is exported URL-only.",
    ),
    checks: Path | None = _CHECKS,
    skip_missing: bool = typer.Option(
        False, help="Leave out rows whose image is not available instead of failing."
    ),
    pretty_name: str = typer.Option(
        "VisoGender-style occupation and pronoun resolution set", help="The card's title."
    ),
    license: str = typer.Option("cc-by-4.0", help="License id of the annotations."),
    as_json: bool = _JSON,
) -> None:
    """Export VisoGender-style TSVs as a Hugging Face dataset: configs `OP` and `OO`
    (split `test`), perceived genders and contexts as ClassLabel, images embedded (URLs
    from the store; local image files, which must lie in the TSV's folder, as they are),
    saved with `save_to_disk` and as parquet shards, with a dataset card. Local files
    beside URLs need --store.

    Example:

        contrastkit export visogender data/visogender_O?.tsv --store build/images --out build/export
    """
    from contrastkit.builders.export import ExportVisoGenderConfig, export_visogender

    with user_errors():
        result = export_visogender(ExportVisoGenderConfig(
            files=tuple(files), out=out, store=store, checks=checks, skip_missing=skip_missing,
            pretty_name=pretty_name, license=license,
        ))  # fmt: skip
    print_export(result, as_json)


@app.command("stereotype")
def export_stereotype_command(
    source: Path = typer.Argument(
        ..., help="A probe TSV / JSONL, or a `contrastkit build stereoset` folder."
    ),
    out: Path = _OUT,
    store: Path | None = typer.Option(
        None, help="Image store of the rows' URLs (`urls check --store`); local files are read."
    ),
    checks: Path | None = _CHECKS,
    skip_missing: bool = typer.Option(
        False, help="Leave out rows whose image is not available instead of failing."
    ),
    pretty_name: str = typer.Option(
        "VLStereoSet-style stereotype probe set", help="The card's title."
    ),
    license: str = typer.Option(
        "cc-by-sa-4.0", help="License id of the captions (StereoSet's CC BY-SA 4.0)."
    ),
    as_json: bool = _JSON,
) -> None:
    """Export a stereotype probe set (VLStereoSet layout) as a Hugging Face dataset: config
    `stereotype` (split `test`), category and label as ClassLabel, the three captions and
    the neutralised ones, images embedded (local files, or URLs from the store), with a
    dataset card stating where the captions come from, the balancing and the counts.

    Example:

        contrastkit export stereotype build/vlss --out build/vlss-export
    """
    from contrastkit.builders.export import ExportStereotypeConfig, export_stereotype

    with user_errors():
        result = export_stereotype(ExportStereotypeConfig(
            source=source, out=out, store=store, checks=checks, skip_missing=skip_missing,
            pretty_name=pretty_name, license=license,
        ))  # fmt: skip
    print_export(result, as_json)


@app.command("contrast")
def export_contrast_command(
    build: Path = typer.Argument(..., help="A `build gensynth` or `build genswap` folder."),
    out: Path = _OUT,
    pretty_name: str | None = typer.Option(None, help="The card's title."),
    license: str = typer.Option(
        "other", help="License id of the edited images (COCO sources keep their own)."
    ),
    sources: str | None = typer.Option(
        None, help="What the source photos are, for the card [default: COCO images ...]."
    ),
    sources_licence: str | None = typer.Option(
        None, help="The source photos' licence, one sentence for the card [default: COCO's]."
    ),
    originals: bool = typer.Option(
        False,
        "--originals",
        help="Export the contrast set's original (unedited) source photos instead, one row "
        "each labelled by its captions: the natural-photo set GenSynth Tab. 3 compares with.",
    ),
    balanced: bool = typer.Option(
        False,
        "--balanced",
        help="With --originals: keep as many masculine as feminine photos (a seeded draw).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the --balanced draw."),
    as_json: bool = _JSON,
) -> None:
    """Export a GenSynth or GenSwap contrast set as a Hugging Face dataset: config
    `contrast` (split `test`), one row per edited image with its target gender
    (ClassLabel), gender-adjusted, neutral and original captions, the person box, filter
    scores and edit parameters, with a card built from the build summary.

    With `--originals` the rows are the source photos themselves (GenSynth Sec. 5.1's
    COCO_g; `--balanced --seed S` for COCO_g Bal), in the same layout, so `contrastkit
    evaluate` scores them and `contrastkit report` puts them beside the contrast set.

    Example:

        contrastkit export contrast build/gensynth --out build/gensynth-export
        contrastkit export contrast build/gensynth --out build/originals --originals
    """
    from contrastkit.builders.export import ExportContrastConfig, export_contrast_set

    provenance = {
        name: value
        for name, value in (("source_description", sources), ("source_licence", sources_licence))
        if value is not None
    }
    with user_errors():
        result = export_contrast_set(ExportContrastConfig(
            build=build, out=out, pretty_name=pretty_name, license=license,
            originals=originals, balanced=balanced, seed=seed, **provenance,
        ))  # fmt: skip
    print_export(result, as_json)


def _task_questions(
    kind: str, paths: Sequence[Path]
) -> tuple[str, list[tuple[Item, HarnessQuestion]]] | None:
    """The questions of the registered task with the harness hooks that reads ``kind``
    (:func:`contrastkit.evaluators.tasks.registry.task_questions`, imported when an export
    asks: for data of a kind no built-in set reads)."""
    from contrastkit.evaluators.tasks.registry import task_questions

    return task_questions(kind, paths)


@app.command("harness")
def export_harness_command(
    source: list[str] = typer.Argument(
        ...,
        help="The set: VisoGender TSV(s) or a folder of them, a `contrastkit export "
        "visogender` folder, `visogender` (the bundled official sets, as `evaluate --data "
        "visogender` reads them; a local folder of that name is `./visogender`), a "
        "`contrastkit export contrast` folder, a stereotype probe set, or data of a "
        "plugin's kind whose task defines the harness hooks (docs/how-to/plugins.md).",
    ),
    format: str = typer.Option(..., "--format", help="vlmevalkit or lmms-eval."),
    out: Path = typer.Option(..., help="Export folder (replaced atomically if it exists)."),
    store: Path | None = typer.Option(
        None,
        help="Image store the set's URLs are read from (`urls check --store`) [default for "
        "`visogender`: the store `contrastkit evaluate --data visogender` fills, "
        "$XDG_CACHE_HOME/contrastkit/images or ~/.cache/contrastkit/images].",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the per-item option shuffling."),
    reversed_copy: bool = typer.Option(
        True,
        "--reversed/--no-reversed",
        help="Also ask every question with its options reversed (the position-bias check).",
    ),
    skip_missing: bool | None = typer.Option(
        None,
        "--skip-missing/--no-skip-missing",
        help="Leave out (and list) rows whose image is not available instead of failing "
        "[default: on for `visogender`, as in `evaluate`, else off].",
        show_default=False,
    ),
    name: str | None = typer.Option(
        None, help="Dataset / task name [default: contrastkit_KIND, e.g. contrastkit_visogender]."
    ),
    decisions: bool = typer.Option(
        False,
        "--decisions",
        help="Export the decision questions of a contrast set (`evaluate --task decisions`): "
        "each version of each source, every option question in both option orders; "
        "`report --harness-predictions` reads the answers back into the decision figures.",
    ),
    questions: Path | None = typer.Option(
        None,
        help="Decision question templates (YAML) for --decisions [default: the bundled ones].",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Export a set as a multiple-choice task for an evaluation harness: a VLMEvalKit TSV
    (base64 images, question, options A-D, answer, category) or an lmms-eval task folder
    (YAML, utils.py, parquet), each with a README on how to run it and the key
    (contrastkit_harness.json) that `contrastkit report --harness-predictions` reads.

    `visogender` is read as `contrastkit evaluate --data visogender` reads it: the
    bundled official sets, their images from the store `evaluate` fetched them into
    (unless --store), rows without one left out and listed (unless --no-skip-missing).

    Example:

        contrastkit export harness visogender --format vlmevalkit --out vlm

        contrastkit export harness build/export --format lmms-eval --out lmms
    """
    from contrastkit.builders.harness import HarnessExportConfig, export_harness

    with user_errors():
        result = export_harness(HarnessExportConfig(
            source=tuple(source), format=format, out=out, store=store,
            seed=seed, reversed_copy=reversed_copy, skip_missing=skip_missing, name=name,
            decisions=decisions, questions=questions, task_questions=_task_questions,
        ))  # fmt: skip
    if as_json:
        print_json({
            "out": str(result.out_dir), "format": result.format, "set_kind": result.set_kind,
            "datasets": result.datasets, "items": result.items, "files": result.files,
            "skipped": result.skipped, "random_weights": result.weights_note is not None,
            "weights_note": result.weights_note,
        })  # fmt: skip
        return
    if result.weights_note:
        console.print(plain(f"random weights: {result.weights_note}", style="yellow"))
    for split, dataset in result.datasets.items():
        console.print(plain(f"{dataset} ({split}): {counted(result.items[split], 'item')}"))
    if result.skipped:
        reasons = Counter(str(entry.get("reason", "")) for entry in result.skipped)
        why = "; ".join(f"{n}: {reason}" for reason, n in reasons.most_common())
        console.print(plain(
            f"left out {counted(len(result.skipped), 'row')} ({why}; listed in the README "
            "and the key)", style="yellow",
        ))  # fmt: skip
    console.print(plain(f"wrote {result.out_dir}: {', '.join(result.files)}"))
    console.print(plain(f"how to run {result.format} on it: {result.out_dir / 'README.md'}"))


def publish_command(
    folder: Path = typer.Argument(..., help="A folder written by `contrastkit export`."),
    repo_id: str = typer.Option(..., help="Dataset repository, USER/NAME or ORG/NAME."),
    private: bool = typer.Option(False, help="Create the repository private."),
    dry_run: bool = typer.Option(
        False, help="Write the exact repository tree locally and load it with `datasets`."
    ),
    tree: Path | None = typer.Option(
        None,
        help="Where --dry-run writes the tree [default: FOLDER-hub beside FOLDER]; an "
        "existing folder is replaced only if empty or written by an earlier dry run.",
    ),
    allow_random_weights: bool = typer.Option(
        False,
        "--i-know-these-are-random-weights",
        help="Publish a set built with random-weight (tiny test) models anyway; without "
        "it such a set is refused.",
    ),
) -> None:
    """Publish an export to the Hugging Face Hub: the card (README.md), the build metadata
    and the parquet data. The token comes from `HF_TOKEN` or `hf auth login` and is never
    printed. `--dry-run` writes the exact tree locally and checks that
    `datasets.load_dataset` loads every config from it.

    Example:

        contrastkit publish build/export --repo-id my-lab/visogender-2026 --dry-run
    """
    from contrastkit.builders.publish import RANDOM_WEIGHTS_FLAG, PublishConfig, publish

    with user_errors():
        result = publish(PublishConfig(export=folder, repo_id=repo_id, private=private,
                                       dry_run=dry_run, tree=tree,
                                       allow_random_weights=allow_random_weights))  # fmt: skip
    if not dry_run:
        console.print(plain(f"published {counted(len(result.files), 'file')} to {result.url}"))
        return
    console.print(plain(f"dry run: wrote {counted(len(result.files), 'file')} to {result.tree}:"))
    for name in result.files:
        console.print(plain(f"  {name}"), highlight=False)
    for config, splits in result.loaded_rows.items():
        counts = ", ".join(f"{split} {counted(rows, 'row')}" for split, rows in splits.items())
        console.print(plain(f"datasets.load_dataset loads {config}: {counts}"))
    if result.random_weight_models:
        models = " and the ".join(result.random_weight_models)
        console.print(plain(
            f"this set was built with random-weight models (the {models}): publishing it "
            f"is refused without {RANDOM_WEIGHTS_FLAG}", style="yellow",
        ), highlight=False)  # fmt: skip
    console.print(plain(f"nothing was pushed; run without --dry-run to publish to {repo_id}"))
