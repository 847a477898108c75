"""``contrastkit models list``: every family the registry resolves, offline and without
torch; ``--paper visogender``: the paper's models as specs that parse, with OpenCLIP tags
the installed open_clip knows, and docs/models.md equal to the data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.models.paper_models import VISOGENDER_MODELS, markdown_table
from contrastkit.models.registry import FAMILY_DOCS, KINDS, parse_spec

ROOT = Path(__file__).parents[2]
runner = CliRunner()
TABLE_2 = ["CLIP", "OpenCLIP 2B", "OpenCLIP 400M", "SLIP", "DeCLIP", "FILIP", "BLIP-2", "GIT"]


def test_every_prefix_the_registry_resolves_is_listed_with_its_kind_and_example() -> None:
    result = runner.invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "paper" not in data
    rows = {row["prefix"]: row for row in data["families"]}
    assert list(rows) == list(KINDS)  # every prefix, in the registry's order
    for prefix, row in rows.items():
        assert row["kind"] == KINDS[prefix]
        assert (row["loads"], row["example"]) == FAMILY_DOCS[prefix]
        assert row["example"].startswith(f"{prefix}:")
    assert {"blip2", "instructblip"} <= set(rows)
    text = runner.invoke(app, ["models", "list"])
    assert text.exit_code == 0, text.output
    for prefix in KINDS:
        assert re.search(rf"│ {re.escape(prefix)} +│", text.stdout), prefix
    assert f"{len(KINDS)} model families" in text.stdout


def test_models_list_runs_offline_without_torch() -> None:
    code = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from contrastkit.cli import app\n"
        "result = CliRunner().invoke(app, ['models', 'list', '--paper', 'visogender'])\n"
        "assert result.exit_code == 0, result.output\n"
        "heavy = ('torch', 'transformers', 'open_clip', 'datasets', 'matplotlib')\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_paper_table_maps_table_2_to_specs_that_parse() -> None:
    result = runner.invoke(app, ["models", "list", "--paper", "visogender", "--json"])
    assert result.exit_code == 0, result.output
    paper = json.loads(result.stdout)["paper"]
    assert paper["name"] == "visogender"
    models = {model["name"]: model for model in paper["models"]}
    assert [name for name in models if name in TABLE_2] == TABLE_2  # Table 2's order
    for model in models.values():
        for spec in filter(None, [model["spec"], *model["alternatives"]]):
            assert parse_spec(spec).kind == model["kind"], spec
        assert model["loadable"] == (model["spec"] is not None)
    # the three YFCC-15M models cannot be loaded, and the table says why
    for name in ("SLIP", "DeCLIP", "FILIP"):
        assert models[name]["spec"] is None
        assert "Not loadable" in models[name]["note"] and "YFCC-15M" in models[name]["note"]
    assert models["CLIP"]["spec"] == "open_clip:ViT-B-32/openai"
    assert models["BLIP-2"]["spec"] == "blip2:Salesforce/blip2-opt-2.7b"  # the official code's
    assert models["OpenCLIP 400M"]["imagenet_zero_shot"] == 62.9
    printed = runner.invoke(app, ["models", "list", "--paper", "visogender"])
    assert printed.exit_code == 0
    assert "visogender: 6 of 9 models load as specs" in printed.stdout
    assert printed.stdout.count("not loadable") == 3


def test_openclip_tags_exist_in_the_installed_open_clip() -> None:
    import open_clip

    known = set(open_clip.list_pretrained())
    tags = [
        spec.removeprefix("open_clip:")
        for model in VISOGENDER_MODELS
        for spec in filter(None, [model.spec, *model.alternatives])
        if spec.startswith("open_clip:")
    ]
    assert len(tags) == 5
    for tag in tags:
        arch, _, pretrained = tag.partition("/")
        assert (arch, pretrained) in known, tag
    # every ViT-B/32 the paper used: "For all VLEs, we use ViT-B/32 encoders"
    assert {tag.partition("/")[0] for tag in tags} == {"ViT-B-32"}


def test_docs_page_shows_the_table_and_where_to_download_each_tag() -> None:
    import open_clip

    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    begin, end = "<!-- paper-models:begin -->\n", "<!-- paper-models:end -->"
    shown = page[page.index(begin) + len(begin) : page.index(end)]
    assert shown == markdown_table(VISOGENDER_MODELS)
    for model in VISOGENDER_MODELS:
        if model.spec and model.spec.startswith("open_clip:"):
            arch, _, tag = model.spec.removeprefix("open_clip:").partition("/")
            repo = open_clip.get_pretrained_cfg(arch, tag)["hf_hub"].rstrip("/")
            assert f"hf download {repo} " in page, model.name
        elif model.spec:
            assert f"hf download {model.spec.partition(':')[2]}\n" in page, model.name


def test_an_unknown_paper_is_a_usage_error() -> None:
    result = runner.invoke(app, ["models", "list", "--paper", "winogender"])
    assert result.exit_code == 2
    assert "unknown paper 'winogender'; known: visogender" in result.output
