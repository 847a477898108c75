"""What a run of ``contrastkit evaluate`` returns (:class:`EvaluateResult`, one
:class:`ModelEvaluation` per model) and the pieces of its markdown every task shares:
a floor below the tasks, the engine and the config (:mod:`.evaluation` re-exports these
names, where they were first defined)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from contrastkit.tsv import VISOGENDER

if TYPE_CHECKING:
    from contrastkit.evaluators.data import SkippedRow, SkippedRowJson

__all__ = [
    "EvaluateResult",
    "EvaluationJson",
    "Images",
    "ModelEvaluation",
    "SkippedRowsJson",
    "data_labels",
    "folder_links",
    "plot_links",
    "skipped_rows_json",
]


@dataclass(frozen=True)
class Images:
    """What reading the image references did: the store, the URLs checked and fetched,
    the rows left out, and whether they were left out rather than refused."""

    store: Path | None = None
    checked: int = 0
    fetched: int = 0
    skipped_rows: tuple[SkippedRow, ...] = ()
    skip_missing: bool = False


@dataclass(frozen=True)
class ModelEvaluation:
    """One model's evaluation (on one data folder, for contrast sets).

    Attributes:
        model: the model spec.
        folder: where its files are.
        files: the files written, by name (``benchmark``, ``report``, raw scores, plots).
        data: the data folder, for contrast sets (one evaluation per model and folder);
            ``None`` when the evaluation covers all of the data.
        scored_images: images scored in this run.
        reused_records: raw records reused from an earlier run in ``folder``.
        skipped: what was skipped and why (retrieval for a captioning model).
        summary: the headline numbers: resolution bias per split and retrieval bias
            mean/sigma (VisoGender), or the contrast-set summary (GenSynth Sec. 5).
        skipped_rows: the rows left out because their image is not available
            (``skip_missing``), with why.
    """

    model: str
    folder: Path
    files: Mapping[str, Path]
    data: str | None = None
    scored_images: int = 0
    reused_records: int = 0
    skipped: tuple[str, ...] = ()
    summary: Mapping[str, Any] = field(default_factory=dict)
    skipped_rows: tuple[SkippedRow, ...] = ()

    def to_dict(self) -> EvaluationJson:
        """A JSON-ready dict (what ``contrastkit evaluate --json`` prints per entry)."""
        return {
            "model": self.model,
            "data": self.data,
            "folder": str(self.folder),
            "files": {name: str(path) for name, path in self.files.items()},
            "scored_images": self.scored_images,
            "reused_records": self.reused_records,
            "skipped": list(self.skipped),
            "skipped_rows": skipped_rows_json(self.skipped_rows),
            "summary": dict(self.summary),
        }


class SkippedRowsJson(TypedDict):
    """The ``skipped_rows`` entry of the results: how many rows were left out and each."""

    count: int
    rows: list[SkippedRowJson]


class EvaluationJson(TypedDict):
    """A :class:`ModelEvaluation` as JSON (:meth:`ModelEvaluation.to_dict`); ``summary``
    is the task's headline (:meth:`~contrastkit.evaluators.engine.protocol.Task.summary`)."""

    model: str
    data: str | None
    folder: str
    files: dict[str, str]
    scored_images: int
    reused_records: int
    skipped: list[str]
    skipped_rows: SkippedRowsJson
    summary: dict[str, Any]


def skipped_rows_json(rows: Sequence[SkippedRow]) -> SkippedRowsJson:
    """The ``skipped_rows`` entry of the results: ``{"count": n, "rows": [{"idx",
    "context", "source", "line", "url", "reason"}, ...]}``."""
    return {"count": len(rows), "rows": [row.to_dict() for row in rows]}


@dataclass(frozen=True)
class EvaluateResult:
    """What :func:`evaluate` did.

    Attributes:
        kind: the task that ran: ``visogender``, ``contrast``, ``stereotype`` or a
            plugin's (:mod:`contrastkit.evaluators.tasks.registry`).
        data: the local data evaluated (Hub datasets as their copies under ``out/_data``).
        evaluations: one per model (per model and data folder, for contrast sets), in
            the order of the config.
        comparison: ``out/comparison.md`` when several models were compared, else None.
        store: the image store URLs were read from (and fetched into), if any.
        checked: URLs checked in this run (``fetch``): those the store did not hold.
        fetched: URLs of those whose image was fetched into the store.
        skipped_rows: the rows left out because their image is not available.
    """

    kind: str
    data: tuple[Path, ...]
    evaluations: tuple[ModelEvaluation, ...]
    comparison: Path | None = None
    store: Path | None = None
    checked: int = 0
    fetched: int = 0
    skipped_rows: tuple[SkippedRow, ...] = ()


def data_labels(paths: Sequence[Path]) -> list[str]:
    """How the reports name the data: a bundled VisoGender file as ``visogender:NAME``
    (never the installation's path), anything else as given."""
    from contrastkit.evaluators.data import visogender_files

    bundled = set(visogender_files())
    return [f"{VISOGENDER}:{path.name}" if path in bundled else str(path) for path in paths]


def folder_links(out: Path, evaluations: Sequence[ModelEvaluation]) -> str:
    """The comparison's list of each model's folder and report, linked relative to ``out``."""
    lines = ["", "## Reports", ""]
    for entry in evaluations:
        folder = entry.folder.relative_to(out).as_posix()
        lines.append(f"- `{entry.model}`: [{folder}/report.md]({folder}/report.md)")
    return "\n".join(lines) + "\n"


def plot_links(plots: Sequence[Path], what: str = "the models side by side") -> str:
    """Markdown showing a comparison plot (PNG) and linking its SVG, by file name."""
    png = [p.name for p in plots if p.suffix == ".png"]
    svg = [p.name for p in plots if p.suffix == ".svg"]
    if not png:
        return ""
    text = f"\n## Plot: {what}\n\n![{what}]({png[0]})\n"
    return text + (f"\n[SVG]({svg[0]})\n" if svg else "")
