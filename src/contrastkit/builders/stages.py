"""The GenSynth stages and default embedder, in a module light enough for the command
line's ``--help`` (no model library is imported here)."""

from __future__ import annotations

from enum import Enum

__all__ = ["DEFAULT_EMBEDDER", "Stage"]

#: CLIP by default (GenSynth Sec. 4.2 embeds with CLIP ViT-B/32).
DEFAULT_EMBEDDER = "open_clip:ViT-B-32/openai"


class Stage(str, Enum):
    """Which GenSynth stages a run does: one, or all in turn."""

    ALL = "all"
    EDIT = "edit"
    FILTER = "filter"
    SELECT = "select"

    def runs(self, step: Stage) -> bool:
        """Whether this choice runs ``step`` (one of edit, filter, select)."""
        return self in (Stage.ALL, step)
