"""What a COCO folder's missing split is told with: the splits the folder has."""

from __future__ import annotations

from pathlib import Path

__all__ = ["no_split"]


def no_split(ann: Path, kind: str) -> str:
    """Why ``ann/<kind>_<split>.json`` is missing, naming the splits ``ann`` has
    (``no such file: the split here is train2017 (--split train2017)``)."""
    found = sorted(p.name[len(kind) + 1 : -5] for p in ann.glob(f"{kind}_*.json"))
    if not found:
        return f"no such file (this folder has no {kind}_<split>.json)"
    splits = "the split here is" if len(found) == 1 else "the splits here are"
    return f"no such file: {splits} {', '.join(found)} (--split {found[0]})"
