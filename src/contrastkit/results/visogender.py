"""The VisoGender ``benchmark.json`` (Appendix J): one ``visogender_<model>_results``
object, whose ``task`` and ``schema_version`` sit inside it (the file keeps Appendix J's
single top-level object)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from contrastkit.errors import DataFormatError
from contrastkit.results.base import Node, Result, matching, outside, register_result
from contrastkit.results.common import METRIC_KEY, Interval, KWarning, MetricSummary, SkippedRows
from contrastkit.results.harness import HarnessSection

__all__ = [
    "CellAccuracy",
    "ErrorAnalysis",
    "FlippedRetrieval",
    "LabourStatistics",
    "ResolutionBias",
    "ResolutionSplit",
    "RetrievalBias",
    "RetrievalContext",
    "VisoGenderMetadata",
    "VisoGenderResult",
    "visogender_json",
]


@dataclass(frozen=True, kw_only=True)
class ResolutionSplit(Node):
    """Resolution accuracy of one split of the images (Tab. 2): ``RA_avg`` (the mean of
    the masculine and feminine resolution accuracies), ``gender_gap`` (masculine minus
    feminine) and the intervals of each, by the figure's name + ``_ci``."""

    RA_avg: float | None = None
    gender_gap: float | None = None
    RA_masculine: float | None = None
    RA_feminine: float | None = None
    pooled_accuracy: float | None = None
    overall_accuracy: float | None = None
    n: int | None = None
    n_masculine: int | None = None
    n_feminine: int | None = None
    intervals: Mapping[str, Interval | None] = matching(r"\w+_ci")


@dataclass(frozen=True, kw_only=True)
class CellAccuracy(Node):
    """Resolution accuracy of one gender cell (``M``, ``F``, ``MM`` ...)."""

    accuracy: float | None
    accuracy_ci: Interval | None = None
    n: int | None = None


@dataclass(frozen=True, kw_only=True)
class ResolutionBias(Node):
    """``resolution_bias``: each split, then the finer breakdowns."""

    all_images: ResolutionSplit | None = None
    single_person_images: ResolutionSplit | None = None
    two_person_images: ResolutionSplit | None = None
    two_person_images_same_gender: ResolutionSplit | None = None
    two_person_images_diff_gender: ResolutionSplit | None = None
    per_cell: Mapping[str, CellAccuracy] | None = None
    per_sector: Mapping[str, Mapping[str, Any]] | None = None
    per_specialisation: Mapping[str, Mapping[str, Any]] | None = None
    per_occupation: Mapping[str, ResolutionSplit] | None = None
    participant_first: Mapping[str, Any] | None = None
    neutral: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class RetrievalContext(Node):
    """The queries of one context (``two_person_images`` OP, ``single_person_images``
    OO): how many, and each occupation's figures by metric."""

    n_queries: int | None = None
    per_occupation: Mapping[str, Mapping[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class RetrievalBias(Node):
    """``retrieval_bias`` (Tab. 3): each metric's summary over the occupations of the
    headline context, by its name (``metrics``: ``bias@10``, ``NDKL`` ...), then the
    context, the Ks, the bootstrap settings and each context's per-occupation figures."""

    metrics: Mapping[str, MetricSummary] = matching(METRIC_KEY)
    context: str | None = None
    ks: tuple[int, ...] | None = None
    bootstrap: Mapping[str, Any] | None = None
    two_person_images: RetrievalContext | None = None
    single_person_images: RetrievalContext | None = None


@dataclass(frozen=True, kw_only=True)
class FlippedRetrieval(RetrievalBias):
    """``retrieval_flipped`` (Tab. 5): the participant-subject queries, shaped as
    :class:`RetrievalBias` with what was ranked and by which label."""

    subject: str | None = None
    label: str | None = None
    template: str | None = None
    queries: Mapping[str, str] | None = None
    excluded: str | None = None
    n_excluded_single_person_images: int | None = None
    occupation_labels: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class VisoGenderMetadata(Node):
    """``metadata``: the model, the data, the tasks run and the settings."""

    model_name: str
    experiment_desc: str | None = None
    data: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    skipped: tuple[str, ...] | None = None
    neutral: bool | None = None
    protocol: str | None = None
    bootstrap: Mapping[str, Any] | None = None
    ks: tuple[int, ...] | None = None
    ndkl_k: int | None = None
    seed: int | None = None
    n_resolution_cases: int | None = None
    n_retrieval_images: int | None = None
    flipped_retrieval: bool | None = None
    n_retrieval_flipped_images: int | None = None
    skip_missing: bool | None = None
    n_unparseable: int | None = None
    vlm: Mapping[str, Any] | None = None
    contrastkit_version: str | None = None
    created: str | None = None


@dataclass(frozen=True, kw_only=True)
class LabourStatistics(Node):
    """``labour_statistics`` (Appendix F): the male share of each occupation and the
    correlations of the model's figures with it."""

    source: str | None = None
    male_share_percent: Mapping[str, float | None] | None = None
    comparisons: Mapping[str, Mapping[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class ErrorAnalysis(Node):
    """``error_analysis`` (Appendix G): resolution on subsamples, retrieval against
    random relabelling."""

    resolution_subsamples: Mapping[str, Mapping[str, Any]] | None = None
    resolution_subsample_runs: int | None = None
    retrieval_random_baseline: Mapping[str, Any] | None = None
    retrieval_baseline_runs: int | None = None


_V = TypeVar("_V", bound="VisoGenderResult")


@dataclass(frozen=True, kw_only=True)
class VisoGenderResult(Result):
    """A VisoGender ``benchmark.json`` (``contrastkit evaluate`` on a VisoGender set, or
    ``contrastkit report --harness-predictions`` on its harness export: then with
    ``harness``). ``name`` is the file's one top-level key,
    ``visogender_<model>_results``; every other field is inside it."""

    TASK = "visogender"
    LEGACY = True

    name: str = outside("visogender_model_results")
    metadata: VisoGenderMetadata
    random_weights: bool | None = None
    weights_note: str | None = None
    resolution_bias: ResolutionBias | None = None
    retrieval_bias: RetrievalBias | None = None
    retrieval_flipped: FlippedRetrieval | None = None
    multiple_choice: Mapping[str, Any] | None = None
    labour_statistics: LabourStatistics | None = None
    error_analysis: ErrorAnalysis | None = None
    warnings: tuple[KWarning, ...] | None = None
    skipped_rows: SkippedRows | None = None
    harness: HarnessSection | None = None

    @classmethod
    def from_json(cls: type[_V], data: Any, *, path: str | Path | None = None) -> _V:
        """The result of a ``{"visogender_<model>_results": {...}}`` object."""
        where = str(path) if path is not None else "<data>"
        if not isinstance(data, dict) or len(data) != 1:
            raise DataFormatError(
                where, None, None, "expected one visogender_<model>_results object"
            )
        [(name, inner)] = data.items()
        result = cls._parse(inner, where, name)
        return replace(result, name=name)

    def to_json(self) -> dict[str, Any]:
        return {self.name: super().to_json()}

    def inner_json(self) -> dict[str, Any]:
        """The file's one object's value: the results themselves, without their name."""
        return super().to_json()


def visogender_json(results: VisoGenderResult | Mapping[str, Any]) -> Mapping[str, Any]:
    """The results object of a VisoGender result (:meth:`VisoGenderResult.inner_json`),
    what the markdown reports and plots read; a mapping (a results object read from a
    file) as it is."""
    return results.inner_json() if isinstance(results, VisoGenderResult) else results


register_result(VisoGenderResult.TASK, VisoGenderResult)
