"""``contrastkit build ...``: assemble datasets.

Each command maps its options onto the job's config, runs the job
(:func:`contrastkit.builders.visogender.build_visogender`,
:func:`contrastkit.builders.stereoset.build_stereoset`) and prints the result; the
contrast-set builds (``gensynth``, ``merge``, ``genswap``) are in
:mod:`contrastkit.cli.build_contrast`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from contrastkit.cli.build_contrast import DEFAULT_EDITOR, genswap, gensynth, merge
from contrastkit.cli.common import (
    TAXONOMY_OPTION,
    console,
    parse_contexts,
    plain,
    print_json,
    user_errors,
)
from contrastkit.cli.helptext import App
from contrastkit.cli.outdir import tidy_output
from contrastkit.text import count as counted

if TYPE_CHECKING:
    from contrastkit.builders.visogender import BuildResult

__all__ = ["DEFAULT_EDITOR", "app", "genswap", "gensynth", "merge", "stereoset", "visogender"]

app = App(
    help="Assemble datasets.\n\nExample:\n\n    contrastkit build visogender "
    "--candidates examples/candidates.csv --out build/example\n\n"
    "    contrastkit build gensynth --coco coco --out build/gensynth --limit 100",
    no_args_is_help=True,
)


def visogender(
    candidates: Path = typer.Option(
        ...,
        "--candidates",
        help="Candidate pool: CSV, TSV, JSONL or JSON (fields: docs/reference/commands/build.md).",
    ),
    out: Path = typer.Option(..., "--out", help="Output folder."),
    per_cell: int = typer.Option(5, "--per-cell", "-n", help="Images per gender cell (paper: 5)."),
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
    from contrastkit.builders.visogender import BuildVisoGenderConfig, build_visogender

    with tidy_output(out), user_errors():
        result = build_visogender(BuildVisoGenderConfig(
            candidates=candidates, out=out, taxonomy=tuple(taxonomy or ()), per_cell=per_cell,
            seed=seed, contexts=tuple(parse_contexts(contexts)), occupations=occupations,
            keep_incomplete=keep_incomplete, strict=strict,
        ))  # fmt: skip
    if as_json:
        print_json(result.report())
    else:
        _print_visogender(result)
    if strict and result.shortfalls:
        raise typer.Exit(1)


def _print_visogender(result: BuildResult) -> None:
    from rich.table import Table

    counts = ", ".join(f"{c.value}: {counted(len(rows), 'row')}" for c, rows in result.rows.items())
    console.print(plain(f"Selected {counts} for {counted(len(result.included), 'occupation')}."))
    console.print(
        plain(
            f"Skipped {len(result.skipped_unlicensed)} unlicensed and "
            f"{len(result.skipped_duplicates)} duplicate candidates."
        )
    )
    if result.shortfalls:
        table = Table(title="Cells that fall short")
        for column in ("occupation", "context", "cell", "available", "needed", "short by"):
            table.add_column(column, justify="right" if column[0] in "ans" else "left")
        for s in result.shortfalls:
            table.add_row(*(plain(value) for value in (
                s.occupation, s.context, s.cell, s.available, s.needed, s.short_by)))  # fmt: skip
        console.print(table)
        if result.excluded:
            console.print(plain(f"Left out (incomplete): {', '.join(result.excluded)}"))
    for path in result.written:
        console.print(plain(f"wrote {path}"), highlight=False)


def stereoset(
    stereoset_file: Path = typer.Option(
        ...,
        "--stereoset",
        help="StereoSet's JSON (the intrasentence layout: dev.json / test.json).",
    ),
    images: Path = typer.Option(
        ..., "--images", help="Verified images TSV: statement_id, image, label, annotator, licence."
    ),
    out: Path = typer.Option(..., "--out", help="Output folder (probes.tsv, build.json)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the per-category down-sampling."),
    no_balance: bool = typer.Option(
        False, "--no-balance", help="Keep every image (no per-category balancing)."
    ),
    neutral_terms: Path | None = typer.Option(
        None,
        "--neutral-terms",
        help="Two-column TSV (target, neutral term) extending the default neutral terms.",
    ),
    categories: str | None = typer.Option(
        None, "--categories", help="Comma-separated bias types (default: all four)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the build summary as JSON."),
) -> None:
    """Build a VLStereoSet-style probe set from StereoSet and verified images.

    Each image gets its StereoSet item's three captions (stereotypical,
    anti-stereotypical, unrelated) and the label it was verified with; each category is
    balanced by seeded down-sampling (VLStereoSet Sec. 3.2) unless --no-balance.

    Example:

        contrastkit build stereoset --stereoset dev.json --images images.tsv --out build/vlss
    """
    from contrastkit.builders.stereoset import StereoSetConfig, build_stereoset

    with tidy_output(out), user_errors():
        result = build_stereoset(StereoSetConfig(
            stereoset=stereoset_file, images=images, out=out, seed=seed,
            balance=not no_balance, neutral_terms=neutral_terms,
            categories=categories,  # type: ignore[arg-type]  # the config splits the text
        ))  # fmt: skip
    if as_json:
        print_json(result.report())
        return
    from rich.table import Table

    table = Table(title="Images per category (VLStereoSet Table 1 for reference)")
    for column in ("category", "stereotype", "anti-stereotype", "images", "before balancing",
                   "no neutral form", "paper (Table 1)"):  # fmt: skip
        table.add_column(column, justify="left" if column == "category" else "right")
    for entry in result.table():
        table.add_row(*(plain(entry[key]) for key in (
            "category", "stereotype", "anti-stereotype", "images", "before_balancing",
            "without_neutral", "paper_table1")))  # fmt: skip
    console.print(table)
    balance = "not balanced (--no-balance)" if no_balance else f"balanced with seed {seed}"
    console.print(plain(f"{counted(len(result.rows), 'image')} kept, {balance}."))
    if result.skipped_categories:
        console.print(plain(
            f"Skipped {counted(result.skipped_categories, 'image')} of other categories."
        ))  # fmt: skip
    empty = [
        e["category"] for e in result.table()[:-1] if e["before_balancing"] and not e["images"]
    ]
    if empty:
        console.print(plain(
            f"Warning: balancing left no images in {', '.join(empty)} "
            "(no images of one of the two labels)."
        ))  # fmt: skip
    for path in result.written:
        console.print(plain(f"wrote {path}"), highlight=False)


# The commands in the order `contrastkit build --help` lists them.
for _name, _command in (
    ("visogender", visogender),
    ("gensynth", gensynth),
    ("merge", merge),
    ("genswap", genswap),
    ("stereoset", stereoset),
):
    app.command(_name)(_command)
