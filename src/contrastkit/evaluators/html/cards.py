"""What a gallery of the HTML report holds: cards, each with its thumbnails and the
numbers behind them, and the keys a reader sorts and filters them by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contrastkit.evaluators.html.thumbs import Thumb

__all__ = ["Card", "Entry", "Gallery", "Line"]


@dataclass(frozen=True)
class Entry:
    """One result the report shows.

    Attributes:
        task: the task's name (``visogender``, ``contrast`` ...).
        model: the model spec.
        folder: the folder holding its ``benchmark.json``, raw files and plots.
        results: the results object (a VisoGender benchmark's inner object).
        headline: the task's headline numbers.
        slug: the name of its page (``<task>-<model folder>``).
    """

    task: str
    model: str
    folder: Path
    results: Mapping[str, Any]
    headline: Mapping[str, Any]
    slug: str

    @property
    def random_weights(self) -> bool:
        """Whether the run used random weights (a tiny test model)."""
        return bool(self.results.get("random_weights") or self.headline.get("random_weights"))


@dataclass(frozen=True)
class Line:
    """One line of numbers on a card.

    Attributes:
        label: what it is (a model, a template, a caption).
        value: the number or answer, as shown.
        gender: ``masculine`` / ``feminine`` when the line is about one version.
        mark: a word that flags it (``misresolved``, ``flipped``, ``refused``), or ``""``.
    """

    label: str
    value: str
    gender: str | None = None
    mark: str = ""


@dataclass(frozen=True)
class Card:
    """One piece of evidence.

    Attributes:
        title: what it is (source id, image id, question).
        thumbs: its images.
        lines: the numbers behind it.
        group: the value it is filtered by (occupation, question family, category).
        marks: the flags that apply to it (filterable: ``misresolved``, ``flipped``).
        sort: numeric sort keys by name (a gap, a probability).
        subtitle: a line under the title (the captions, the question).
        strips: rows of small images with what they are (``(label, thumbs)``: what a
            query retrieved first, best first).
    """

    title: str
    thumbs: tuple[Thumb, ...]
    lines: tuple[Line, ...]
    group: str
    marks: tuple[str, ...] = ()
    sort: Mapping[str, float] = field(default_factory=dict)
    subtitle: str = ""
    strips: tuple[tuple[str, tuple[Thumb, ...]], ...] = ()


@dataclass(frozen=True)
class Gallery:
    """One page of evidence.

    Attributes:
        slug: its file name without ``.html``.
        title: its heading.
        intro: what the cards show, in a sentence or two.
        cards: the cards shown, in their default order.
        total: how many cards there were before the cap.
        sorts: ``(key, label)`` of the sort orders offered; the first is the default.
        group_label: what the group filter is called (``occupation``).
        marks: the flags a reader can filter by.
        entries: the results the gallery is drawn from (their flags are shown on it).
        empty: what the page says when there is no card.
    """

    slug: str
    title: str
    intro: str
    cards: tuple[Card, ...]
    total: int
    sorts: tuple[tuple[str, str], ...]
    group_label: str
    marks: tuple[str, ...]
    entries: tuple[Entry, ...]
    empty: str = "No card: these results hold nothing of this kind."
