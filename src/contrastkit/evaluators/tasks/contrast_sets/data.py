"""The contrast-set format (GenSynth Sec. 5): what a set holds, how it is loaded, and the
queries and metrics an evaluation of it takes
(:mod:`contrastkit.evaluators.tasks.contrast_sets.scoring`).

A contrast set holds each source photo twice, once edited to each perceived gender, with
the columns :data:`CONTRAST_COLUMNS`; an export folder (``contrastkit export contrast``)
keeps it under ``saved/contrast`` beside its ``build_metadata.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.records import read_json

__all__ = [
    "CONTRAST_COLUMNS",
    "CONTRAST_METRICS",
    "INTERVAL_METRICS",
    "PAIRS_NOT_APPLICABLE",
    "RAW_SCORES_FILE",
    "RETRIEVAL_NOT_COMPUTED",
    "ExportDescription",
    "contrast_genders",
    "contrast_queries",
    "describe_export",
    "is_contrast_dataset",
    "load_contrast",
    "resolve_contrast_metrics",
]

CONTRAST_COLUMNS = ("source_id", "gender", "image", "neutral_captions")
"""Columns a dataset needs to be scored as a contrast set."""

INTERVAL_METRICS = ("bias@", "bias_gensynth@", "maxskew@")
"""Name prefixes of the retrieval metrics whose mean gets a bootstrap interval."""

PAIRS_NOT_APPLICABLE = (
    "not applicable: no source has both a masculine and a feminine version (e.g. a set "
    "of original photos, one version each)"
)
"""What the summary and the report say of pair preference on a set without pairs."""

CONTRAST_METRICS = ("auto", "all", "pairs")
"""What a contrast-set evaluation computes (``metrics`` of
:func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast`,
``contrastkit evaluate --contrast-metrics``): ``all`` (retrieval metrics and pair
preference), ``pairs`` (pair preference only: each query against its own source's two
versions), or ``auto``: ``all`` for a dual encoder, ``pairs`` for a caption scorer, whose
retrieval metrics cost ``n_images x n_queries`` model passes."""

RAW_SCORES_FILE = "raw_contrast_scores.jsonl"
"""A caption scorer's (image, query) scores in the model's output folder, reused on rerun."""

RETRIEVAL_NOT_COMPUTED = (
    "not computed: pair preference only (contrast metrics 'pairs'); the retrieval metrics "
    "rank every image for every query, n_images x n_queries model passes for a caption "
    "scorer: ask for them with --contrast-metrics all"
)
"""What the summary (``retrieval_note``) and the report say when only pairs were scored."""


def _saved_contrast(folder: Path) -> Path | None:
    candidate = folder / "saved" / "contrast"
    return candidate if candidate.is_dir() else None


def is_contrast_dataset(path: Path) -> bool:
    """Whether ``path`` is a contrast-set export folder (``contrastkit export contrast``;
    :func:`contrastkit.kinds.detect_kind`, recorded kind first)."""
    from contrastkit.kinds import detect_kind

    return detect_kind(path).name == "contrast"


def load_contrast(path: Path, split: str | None = None) -> Any:
    """The contrast set of an export folder, or of a saved dataset with the
    :data:`CONTRAST_COLUMNS`, as a ``datasets.Dataset``.

    Raises:
        DataFormatError: no such dataset, a missing split or a missing column.
    """
    from datasets import DatasetDict, load_from_disk

    path = Path(path)
    folder = _saved_contrast(path) or path
    try:
        loaded = load_from_disk(str(folder))
    except FileNotFoundError as error:
        raise DataFormatError(path, None, None, "not a saved contrast set") from error
    if isinstance(loaded, DatasetDict):
        names = list(loaded)
        split = split or (names[0] if len(names) == 1 else "test")
        if split not in loaded:
            raise DataFormatError(path, None, None, f"no split {split!r}; one of {names}")
        loaded = loaded[split]
    missing = [c for c in CONTRAST_COLUMNS if c not in loaded.column_names]
    if missing:
        raise DataFormatError(path, None, missing[0], "a contrast set needs this column")
    if len(loaded) == 0:
        raise DataFormatError(path, None, None, "the contrast set has no images")
    if not any(loaded["neutral_captions"]):
        raise DataFormatError(
            path, None, "neutral_captions", "the contrast set has no neutral captions to query with"
        )
    return loaded


class ExportDescription(TypedDict):
    """What an export folder's ``build_metadata.json`` says it holds
    (:func:`describe_export`; ``None`` where it does not say)."""

    kind: str | None
    pretty_name: str | None
    balanced: bool | None
    seed: int | None
    sources_kept: int | None


def describe_export(path: Path) -> ExportDescription | None:
    """What an export folder says it holds, from its ``build_metadata.json``: ``kind``
    (``gensynth``, ``genswap``, or ``originals`` for ``export contrast --originals``),
    ``pretty_name``, ``balanced``, ``seed`` and ``sources_kept``; ``None`` for a folder
    without readable metadata (a plain saved dataset)."""
    file = Path(path) / "build_metadata.json"
    try:
        metadata = read_json(file)
    except (OSError, DataFormatError):
        return None
    if not isinstance(metadata, dict):
        return None
    return {
        "kind": metadata.get("kind"),
        "pretty_name": metadata.get("pretty_name"),
        "balanced": metadata.get("balanced"),
        "seed": metadata.get("seed"),
        "sources_kept": metadata.get("sources_kept"),
    }


def contrast_genders(dataset: Any) -> list[str]:
    """The ``gender`` column of a loaded contrast set as strings (``masculine``,
    ``feminine``), whether stored as text or as a class label."""
    feature = dataset.features["gender"]
    values = dataset["gender"]
    return [feature.int2str(v) if hasattr(feature, "int2str") else str(v) for v in values]


def contrast_queries(
    sources: Sequence[str], genders: Sequence[str], neutral_captions: Sequence[Sequence[str]]
) -> tuple[dict[str, dict[str, int]], list[tuple[str, str]]]:
    """The rows of each source by gender (``{source: {gender: row}}``) and the queries:
    every distinct neutral caption once, with the source it describes, in dataset order."""
    own: dict[str, dict[str, int]] = {}
    for index, (source, gender) in enumerate(zip(sources, genders, strict=True)):
        own.setdefault(source, {})[gender] = index
    queries: list[tuple[str, str]] = []
    seen: set[str] = set()
    for source, captions in zip(sources, neutral_captions, strict=True):
        for caption in captions:
            if caption not in seen:
                seen.add(caption)
                queries.append((source, caption))
    return own, queries


def resolve_contrast_metrics(model: object, metrics: str = "auto") -> str:
    """``all`` or ``pairs``: what
    :func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast` computes
    for ``model`` when asked for ``metrics`` (:data:`CONTRAST_METRICS`; ``auto``
    is ``all`` for a dual encoder and ``pairs`` for a caption scorer).

    Raises:
        ConfigError: ``metrics`` is not one of :data:`CONTRAST_METRICS`.
    """
    if metrics not in CONTRAST_METRICS:
        raise ConfigError(
            f"contrast_metrics must be one of {', '.join(CONTRAST_METRICS)}, not {metrics!r}"
        )
    if metrics != "auto":
        return metrics
    return "all" if isinstance(model, ImageTextScorer) else "pairs"
