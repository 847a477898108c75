"""The typed result of the gendered-word task (``benchmark.json``, ``task:
"gendered-words"``)."""

from __future__ import annotations

from dataclasses import dataclass

from contrastkit.evaluators.engine import TaskResult
from contrastkit.results.base import Node
from contrastkit.results.common import Interval

__all__ = ["GenderedWordsResult", "VersionRates"]


@dataclass(frozen=True, kw_only=True)
class VersionRates(Node):
    """The captions of one version (the sources' masculine, or feminine, edits): the
    share whose caption holds at least one masculine word of GenSynth Tab. 4, at least
    one feminine word, and the share labelled each way by the rule ``g`` of GenSynth
    Sec. 3.2 (only masculine words: masculine; only feminine: feminine; both or
    neither: undefined).

    Attributes:
        n: captions (one per source).
        masculine_words: share with a masculine word.
        feminine_words: share with a feminine word.
        labelled_masculine: share labelled masculine.
        labelled_feminine: share labelled feminine.
        undefined: share with both kinds of word or neither.
    """

    n: int
    masculine_words: float | None
    feminine_words: float | None
    labelled_masculine: float | None
    labelled_feminine: float | None
    undefined: float | None
    masculine_words_ci: Interval | None = None
    feminine_words_ci: Interval | None = None
    labelled_masculine_ci: Interval | None = None
    labelled_feminine_ci: Interval | None = None


@dataclass(frozen=True, kw_only=True)
class GenderedWordsResult(TaskResult):
    """How often a captioning model's description carries a gendered word, per version
    of each contrast-set source, and how often its label flips with the edit.

    Attributes:
        sources_one_version: sources of the data with only one version (left out).
        masculine: the captions of the masculine versions.
        feminine: the captions of the feminine versions.
        flip_rate: share of sources whose two captions' labels differ.
        follows_edit: share of sources whose masculine version's caption is labelled
            masculine and feminine version's feminine.
        against_edit: share labelled the opposite way on both versions.
        note: why a figure is ``null`` (n/a), or that it rests on too few sources.
    """

    TASK = "gendered-words"

    sources_one_version: int = 0
    masculine: VersionRates | None = None
    feminine: VersionRates | None = None
    flip_rate: float | None = None
    flip_rate_ci: Interval | None = None
    follows_edit: float | None = None
    follows_edit_ci: Interval | None = None
    against_edit: float | None = None
    against_edit_ci: Interval | None = None
    note: str | None = None
