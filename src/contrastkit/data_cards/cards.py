"""Render a dataset card (Hub YAML + datasheet) from build metadata with jinja2 templates."""

from __future__ import annotations

from typing import Any

import jinja2
import yaml

from contrastkit.text import UNDEFINED, template_environment

__all__ = ["TASK_CATEGORIES", "card_yaml", "render_card", "size_category"]

TASK_CATEGORIES = {
    "visogender": ["zero-shot-image-classification", "image-to-text"],
    "gensynth": ["zero-shot-image-classification", "image-to-text", "text-to-image"],
    "genswap": ["zero-shot-image-classification", "image-to-text", "text-to-image"],
    "stereotype": ["zero-shot-image-classification", "image-to-text"],
}
"""Hub task categories per dataset kind: pronoun resolution scores captions against an
image (zero-shot classification, captioning); contrast sets also serve text-to-image
retrieval; a stereotype probe set (VLStereoSet) scores three candidate captions per image."""

_SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
          (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")]  # fmt: skip


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` value for a dataset of ``rows`` rows."""
    for bound, name in _SIZES:
        if rows < bound:
            return name
    return "n>10M"


def card_yaml(metadata: dict[str, Any]) -> dict[str, Any]:
    """The card's YAML header: licence, tasks, size, pretty name, tags and configs."""
    kind = metadata["kind"]
    configs = [
        {
            "config_name": name,
            "data_files": [
                {"split": split, "path": f"data/{name}/{split}-*.parquet"}
                for split in config["splits"]
            ],
        }
        for name, config in metadata["configs"].items()
    ]
    if len(configs) > 1 or configs[0]["config_name"] != "default":
        configs[0]["default"] = True
    return {
        "license": metadata["license"],
        "pretty_name": metadata["pretty_name"],
        "task_categories": TASK_CATEGORIES[kind],
        "language": ["en"],
        "size_categories": [size_category(metadata["total_rows"])],
        "tags": [
            "stereotype-bias" if kind == "stereotype" else "gender-bias",
            "fairness",
            "evaluation",
            "contrastkit",
            kind,
        ],
        "configs": configs,
    }


def _environment() -> jinja2.Environment:
    # StrictUndefined: a number missing from the metadata is an error
    env = template_environment("contrastkit.data_cards")
    env.filters["thousands"] = lambda n: f"{n:,}"
    env.filters["percent"] = lambda x: UNDEFINED if x is None else f"{100 * x:.1f}%"
    return env


def render_card(metadata: dict[str, Any]) -> str:
    """The Hub ``README.md`` for an export: YAML front matter, then the datasheet.

    Raises:
        jinja2.UndefinedError: the metadata lacks a value the card states.
        KeyError: unknown dataset kind.
    """
    header = yaml.safe_dump(card_yaml(metadata), sort_keys=False, allow_unicode=True)
    body = _environment().get_template(f"{metadata['kind']}.md.j2").render(m=metadata)
    return f"---\n{header}---\n\n{body}"
