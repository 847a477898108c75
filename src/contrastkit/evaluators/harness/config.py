"""The configuration and the result of :func:`contrastkit.evaluators.harness.harness_report`
(re-exported there)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from contrastkit.config import require
from contrastkit.errors import ConfigError
from contrastkit.evaluators.bootstrap import require_bootstrap
from contrastkit.evaluators.harness.figures import (
    ContrastFigures,
    ReversedOptions,
    SplitPositions,
    StereotypeFigures,
)
from contrastkit.harness_key import HarnessKey

__all__ = [
    "HarnessReport",
    "HarnessReportConfig",
    "HarnessSection",
    "ProbeHeadline",
    "UnparseableAnswer",
    "report_weights_note",
]


class UnparseableAnswer(TypedDict):
    """An answer that names no option letter: its item, split, text (200 characters at
    most) and where it was read."""

    index: int
    split: str
    answer: str
    file: str
    line: int


class ProbeHeadline(TypedDict):
    """VLStereoSet's figures of one split of a stereotype set's answers (``None`` where
    undefined)."""

    n: int
    vlrs: float | None
    vlbs: float | None
    ivlas: float | None


class _SectionCore(TypedDict):
    harness: str
    set_kind: str
    export: str
    datasets: dict[str, str]
    predictions: list[str]
    answer_rule: str
    counts: dict[str, dict[str, int]]


class HarnessSection(_SectionCore, total=False):
    """The ``harness`` section of the results of a harness's answers: where they came
    from, the answer rule and counts per split; for the multiple-choice sets the option
    seed, question, unparseable answers, rows the export left out, position bias and the
    reversed copy's figures; then what the set kind adds (``figures`` of a contrast or
    stereotype set, the per-split headlines of a VisoGender or stereotype set)."""

    option_seed: int
    question: str
    unparseable: list[UnparseableAnswer]
    export_skipped_rows: list[Mapping[str, object]]
    position_bias: dict[str, SplitPositions]
    reversed_options: ReversedOptions | None
    figures: ContrastFigures | StereotypeFigures
    resolution_by_split: dict[str, dict[str, dict[str, float | None]]]
    stereotype_by_split: dict[str, ProbeHeadline]


@dataclass(frozen=True)
class HarnessReportConfig:
    """What :func:`harness_report` reads and writes (strings are taken as paths).

    Attributes:
        predictions: the harness's prediction files (both splits' may be given).
        export: the folder ``contrastkit export harness`` wrote (its key is read).
        out: the output folder (``benchmark.json`` or ``harness_results.json``,
            ``report.md``, ``raw_harness.jsonl``).
        model: the model's name in the reports [default: from the prediction file's
            name: VLMEvalKit's ``<model>_<dataset>``, lmms-eval's log folder].
        bootstrap: resamples behind the VisoGender figures' intervals (0: none).
        confidence: the intervals' level.
        seed: the seed of the random analyses.

    Raises:
        ConfigError: naming the field.
    """

    predictions: tuple[Path, ...]
    export: Path
    out: Path
    model: str | None = None
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        predictions: object = self.predictions
        if isinstance(predictions, str | Path):
            predictions = (predictions,)
        if not isinstance(predictions, Iterable):
            raise ConfigError(f"predictions: expected files, not {predictions!r}")
        object.__setattr__(self, "predictions", tuple(Path(p) for p in predictions))
        object.__setattr__(self, "export", Path(self.export))
        object.__setattr__(self, "out", Path(self.out))
        require(bool(self.predictions), "predictions", "needs at least one prediction file")
        require(self.model is None or bool(self.model.strip()), "model", "must not be empty")
        require_bootstrap(self.bootstrap, self.confidence)


@dataclass
class HarnessReport:
    """What :func:`harness_report` wrote and found.

    Attributes:
        out_dir: the output folder.
        model: the model's name (the spec in the results).
        set_kind: ``visogender``, ``contrast``, ``decisions``, ``stereotype``, or the
            dataset kind of a task's questions.
        results_file: ``benchmark.json`` (VisoGender, stereotype, decisions, a task's
            questions) or ``harness_results.json``.
        counts: per split: ``items``, ``answered``, ``unparseable``, ``missing``.
        harness: the ``harness`` section of the results (position bias, reversed copy,
            the set's own figures for contrast and stereotype sets).
        markdown: the report.
        files: the files written.
        weights_note: why the figures are a pipeline check (the model's weights, or the
            set built with random-weight models, are random), or ``None``.
        warnings: what a reader must know before trusting the figures (decision probes:
            answers that never change).
    """

    out_dir: Path
    model: str
    set_kind: str
    results_file: Path
    counts: dict[str, dict[str, int]]
    harness: HarnessSection
    markdown: str
    files: list[Path] = field(default_factory=list)
    weights_note: str | None = None
    warnings: list[str] = field(default_factory=list)


def report_weights_note(model: str, key: HarnessKey) -> str | None:
    """The random-weights note of a report of ``model``'s answers to the export of
    ``key``: the model's own (:func:`contrastkit.models.registry.weights_note`) and that
    of a set built with random-weight models (:attr:`HarnessKey.weights_note`), or
    ``None`` when neither is random."""
    from contrastkit.models.registry import weights_note

    notes = [note for note in (weights_note(model), key.weights_note) if note]
    return " ".join(notes) if notes else None
