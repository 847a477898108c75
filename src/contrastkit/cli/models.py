"""``contrastkit models ...``: the model families the registry loads, and the models of a
paper as ready specs. Offline and fast: nothing is loaded, no torch is imported."""

from __future__ import annotations

from typing import Any

import typer

from contrastkit.cli.common import console, plain, print_json, user_errors
from contrastkit.cli.helptext import App

app = App(
    help=(
        "The model families contrastkit loads, and a paper's models as specs.\n\n"
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


def _paper_json(paper: str) -> dict[str, Any]:
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
    """List the model families (spec prefixes) contrastkit loads, with an example spec
    each; with --paper, the paper's models as specs, and why the others cannot be loaded.

    Captioning specs take options after the model: blip2:ID?prefix=decoder (where an
    encoder-decoder language model reads the partial caption),
    instructblip:ID?instruction=A+photo+of.

    Example:

        contrastkit models list --paper visogender
    """
    with user_errors():
        rows = families()
        paper_data = _paper_json(paper) if paper is not None else None
    if as_json:
        data: dict[str, Any] = {"families": rows}
        if paper_data is not None:
            data["paper"] = paper_data
        print_json(data)
        return
    from rich.table import Table

    table = Table(title=f"{len(rows)} model families (spec PREFIX:TARGET)")
    columns = ["prefix", "kind", "capabilities", "loads", "example"]
    if any(row["source"] != "contrastkit" for row in rows):
        columns.append("source")  # a plugin's families: say which package adds them
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(plain(row[key]) for key in columns))
    console.print(table)
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
