"""``contrastkit models ...``: the model families the registry loads, and the models of a
paper as ready specs. Offline and fast: nothing is loaded, no torch is imported."""

from __future__ import annotations

from typing import TypedDict

import typer

from contrastkit.cli.common import console, plain, print_json, user_errors
from contrastkit.cli.helptext import App

app = App(
    help=(
        "The model and editor families contrastkit loads, and a paper's models as specs.\n\n"
        "Example:\n\n    contrastkit models list --paper visogender"
    ),
    no_args_is_help=True,
)


def families() -> list[dict[str, str]]:
    """Every spec prefix the registry resolves (plugins' too), with its kind, its
    capabilities, what it loads, an example spec and the package that provides it
    (:mod:`contrastkit.models.families`)."""
    from contrastkit.models.families import CAPABILITIES
    from contrastkit.models.families import families as registered

    return [
        {
            "prefix": prefix,
            "kind": family.kind,
            "capabilities": ", ".join(c for c in CAPABILITIES if c in family.capabilities),
            "loads": family.loads,
            "example": family.example,
            "source": family.source,
        }
        for prefix, family in registered().items()
    ]


def editors() -> list[dict[str, str]]:
    """Every editor family ``build gensynth --editor`` takes (plugins' too): its prefix,
    what it loads, its default model, an example spec and the package that provides it
    (:mod:`contrastkit.curation.editor_families`)."""
    from contrastkit.curation.editor_families import editor_families

    return [
        {
            "prefix": prefix,
            "pipeline": family.pipeline,
            "loads": family.loads,
            "default_model": family.default_model,
            "example": f"{prefix}:{family.default_model}",
            "source": family.source,
        }
        for prefix, family in editor_families().items()
    ]


def _print_table(title: str, rows: list[dict[str, str]], columns: list[str]) -> None:
    """``rows`` as a table of ``columns`` (the cells wrap on a narrow terminal), then
    their example specs one per line: never wrapped, so each can be pasted whole."""
    from rich.table import Table

    if any(row["source"] != "contrastkit" for row in rows):
        columns = [*columns, "source"]  # a plugin's families: say which package adds them
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(plain(row[key]) for key in columns))
    console.print(table)
    console.print(plain("Example specs, one a line:"))
    for row in rows:
        console.print(plain(f"  {row['example']}"), soft_wrap=True, highlight=False)


class _PaperModel(TypedDict):
    """One of a paper's models, as ``models list --paper --json`` prints it."""

    name: str
    tables: list[str]
    kind: str
    spec: str | None
    loadable: bool
    alternatives: list[str]
    imagenet_zero_shot: float | None
    note: str


class _Paper(TypedDict):
    """A paper's models as specs (``models list --paper``)."""

    name: str
    models: list[_PaperModel]


class _ListingCore(TypedDict):
    families: list[dict[str, str]]
    editors: list[dict[str, str]]


class _Listing(_ListingCore, total=False):
    """What ``models list --json`` prints: the model and editor families, and with
    ``--paper`` the paper's models."""

    paper: _Paper


def _paper_json(paper: str) -> _Paper:
    from contrastkit.models.paper_models import paper_models

    return {
        "name": paper.strip().lower(),
        "models": [
            {
                "name": model.name,
                "tables": list(model.tables),
                "kind": model.kind,
                "spec": model.spec,
                "loadable": model.loadable,
                "alternatives": list(model.alternatives),
                "imagenet_zero_shot": model.imagenet_zero_shot,
                "note": model.note,
            }
            for model in paper_models(paper)
        ],
    }


@app.command("list")
def list_command(
    paper: str | None = typer.Option(
        None,
        "--paper",
        help="Also map a paper's models to specs (visogender: Tables 2, 3 and 5).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List the model families (spec prefixes) contrastkit loads and the editor families
    `build gensynth --editor` takes, with an example spec each (on a line of its own, to
    paste); with --paper, the paper's models as specs, and why the others cannot be
    loaded.

    Captioning specs take options after the model: blip2:ID?prefix=decoder (where an
    encoder-decoder language model reads the partial caption),
    instructblip:ID?instruction=A+photo+of.

    Example:

        contrastkit models list --paper visogender
    """
    with user_errors():
        rows = families()
        editor_rows = editors()
        paper_data = _paper_json(paper) if paper is not None else None
    if as_json:
        data: _Listing = {"families": rows, "editors": editor_rows}
        if paper_data is not None:
            data["paper"] = paper_data
        print_json(data)
        return
    from rich.table import Table

    _print_table(f"{len(rows)} model families (spec PREFIX:TARGET)", rows,
                 ["prefix", "kind", "capabilities", "loads"])  # fmt: skip
    console.print()
    _print_table(
        f"{len(editor_rows)} editor families (build gensynth --editor PREFIX:TARGET; "
        "PREFIX: alone is the default model)",
        editor_rows, ["prefix", "loads", "default_model"],
    )  # fmt: skip
    if paper_data is None:
        return
    models = paper_data["models"]
    loadable = sum(model["loadable"] for model in models)
    papers = Table(
        title=f"{paper_data['name']}: {loadable} of {len(models)} models load as specs",
        show_lines=True,
    )
    for column in ("model", "tables", "kind", "spec", "note"):
        papers.add_column(column, overflow="fold")
    for model in models:
        spec = model["spec"] or "not loadable"
        if model["alternatives"]:
            spec += " (also: " + ", ".join(model["alternatives"]) + ")"
        tables = ", ".join(model["tables"]) or "code only"
        papers.add_row(
            *(plain(value) for value in (model["name"], tables, model["kind"], spec)),
            plain(model["note"]),
        )
    console.print(papers)
