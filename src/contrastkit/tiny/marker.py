"""The marker a random-weight model folder carries, and the plain sentence reports print.

Every tiny model :mod:`contrastkit.tiny` saves gets a :data:`MARKER_FILE` beside its
weights. Model loaders read it (:func:`marked_random`), so a model built with random
weights says so wherever its results go: the adapter's ``random_weights`` attribute, the
``random_weights`` / ``weights_note`` keys of a results JSON, the note at the top of a
markdown report, the dataset card of a set built with it. This module imports nothing
heavy (no torch), so specs can be checked without loading anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from contrastkit.errors import DataFormatError
from contrastkit.records import read_json

__all__ = [
    "MARKER_FILE",
    "RANDOM_WEIGHTS_NOTE",
    "mark_random_weights",
    "marked_random",
    "random_weights_note",
    "spec_has_random_weights",
]

MARKER_FILE = "contrastkit_random_weights.json"
"""The file (JSON: ``{"random_weights": true, "what": "..."}``) that marks a model folder
whose weights are random."""

RANDOM_WEIGHTS_NOTE = (
    "{model} has random weights ({what}): these figures are a pipeline check, not a "
    "measurement of any real model."
)
"""The sentence reports print for a random-weight model (``{model}``: its spec;
``{what}``: what kind of model it is)."""


def mark_random_weights(folder: str | Path, what: str = "tiny model") -> Path:
    """Write :data:`MARKER_FILE` into the model folder ``folder``; return its path.

    Args:
        folder: a saved model folder (created if absent).
        what: a few words on what the model is (kept in the marker for people).
    """
    path = Path(folder) / MARKER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"random_weights": True, "what": what, "written_by": "contrastkit.tiny"}
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return path


def marked_random(location: str | Path) -> bool:
    """Whether ``location`` (a model folder, or a checkpoint file in one) carries the
    random-weights marker. Anything that is not a local path is ``False``."""
    try:
        path = Path(location).expanduser()
        folder = path if path.is_dir() else path.parent if path.is_file() else None
    except (OSError, ValueError):
        return False
    if folder is None:
        return False
    marker = folder / MARKER_FILE
    if not marker.is_file():
        return False
    try:
        payload = read_json(marker)
    except (OSError, DataFormatError):
        return True  # a damaged marker still marks the folder: err on the honest side
    return not isinstance(payload, dict) or bool(payload.get("random_weights", True))


def random_weights_note(model: str) -> str:
    """The plain sentence for a random-weight ``model`` (a spec or a folder)."""
    what = (
        "the architecture with no trained weights loaded"
        if model.strip().endswith("/random")
        else "a tiny test model built by contrastkit"
    )
    return RANDOM_WEIGHTS_NOTE.format(model=model, what=what)


def spec_has_random_weights(spec: str) -> bool:
    """Whether a model spec (``PREFIX:TARGET``) or a bare model folder names random
    weights: ``open_clip:ARCH/random``, or a local folder (or a checkpoint file in one)
    carrying :data:`MARKER_FILE`. Never raises, never loads anything: anything else (a
    Hub id, a pretrained tag, a malformed spec) is ``False``."""
    spec = spec.strip()
    prefix, sep, target = spec.partition(":")
    if not sep or "/" in prefix or "\\" in prefix:  # a bare folder, not a spec
        return marked_random(spec) if spec else False
    target = target.strip()
    if not target:
        return False
    if prefix == "open_clip" and not target.startswith("hf-hub:"):
        arch, slash, pretrained = target.partition("/")
        if slash and pretrained == "random" and arch and not Path(target).exists():
            return True
        if slash and marked_random(pretrained):
            return True
    return marked_random(target)
