"""Benchmark JSON: the structure of VisoGender Appendix J, reading it back, and the
headline numbers of one result.

The benchmark JSON holds one object, ``visogender_<model>_results``, with ``metadata``
(``experiment_desc`` ``CLIP`` or ``CAPTIONING``, ``model_name``, the resolution
``protocol``, the ``bootstrap`` settings, ...), ``resolution_bias`` and
``retrieval_bias`` as in Appendix J (plus finer breakdowns; ``all_images.overall_accuracy``
is the paper's overall accuracy, the mean of the single-person and two-person
``RA_avg``), ``retrieval_flipped`` (Tab. 5: the participant-subject queries ranking the
two-person images by the participant's perceived gender, shaped as ``retrieval_bias``;
:func:`~contrastkit.evaluators.tasks.visogender.flipped.summarize_flipped`; absent from files
written before it existed or with ``flipped_retrieval`` off), ``labour_statistics``
(Appendix F), ``error_analysis`` (Appendix G; a random-relabelling ``z`` is ``null``
with a ``z_reason`` where the baseline does not vary), for a generative VLM
``metadata.vlm`` (its protocol and prompts) and, under the multiple-choice protocol,
``multiple_choice`` (position bias and the option-swap result,
:func:`~contrastkit.evaluators.tasks.visogender.multiple_choice.summarize_multiple_choice`)
and ``warnings``
(:func:`retrieval_warnings`: a K at or above the images of a query, whose @K metrics are
then trivial). A figure ``x`` with a bootstrap confidence interval has a sibling
``x_ci`` = ``{"low", "high", "level", "resamples"}``. Undefined numbers (an accuracy
over no images, a skew of ``-inf``) are written as ``null``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from contrastkit import __version__
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.bootstrap import BootstrapSettings
from contrastkit.evaluators.report.files import a_task, benchmark_file, jsonable, model_slug
from contrastkit.evaluators.stats import labor_comparison, labor_shares
from contrastkit.evaluators.tasks.visogender.baselines import (
    resolution_subsamples,
    retrieval_random_baseline,
)
from contrastkit.evaluators.tasks.visogender.flipped import FLIPPED_TASK, summarize_flipped
from contrastkit.evaluators.tasks.visogender.multiple_choice import summarize_multiple_choice
from contrastkit.evaluators.tasks.visogender.resolution import apply_protocol, summarize_resolution
from contrastkit.evaluators.tasks.visogender.retrieval import (
    CONTEXT_SECTIONS,
    by_query,
    summarize_retrieval,
)
from contrastkit.evaluators.tasks.visogender.scoring import ScoredRun
from contrastkit.models.registry import weights_note
from contrastkit.models.vlm_spec import vlm_metadata
from contrastkit.results import SCHEMA_VERSION, VisoGenderResult, load_result
from contrastkit.results.common import KWarning
from contrastkit.results.visogender import (
    ErrorAnalysis,
    FlippedRetrieval,
    LabourStatistics,
    ResolutionBias,
    RetrievalBias,
    VisoGenderMetadata,
    visogender_json,
)

if TYPE_CHECKING:
    from contrastkit.evaluators.metrics import CutoffWarning
    from contrastkit.evaluators.tasks.visogender.settings import EvalConfig

__all__ = [
    "benchmark",
    "headline",
    "load_benchmark",
    "read_visogender_benchmark",
    "retrieval_warnings",
    "visogender_result",
]


def _labour_section(
    resolution: Mapping[str, Any],
    retrieval: Mapping[str, Any],
    warnings: Sequence[Mapping[str, Any]] = (),
) -> LabourStatistics:
    """Appendix F: per-occupation values against the male share. An occupation whose
    retrieval pool the compared K covers (``warnings``: its Bias@K is the pool's own
    balance, no reading) is left out of the retrieval comparison and named under its
    ``left_out``; when that leaves none, the comparison is n/a, its ``caveat`` saying
    why."""
    from contrastkit.evaluators.metrics import cutoffs_by_k

    shares = labor_shares()
    comparisons: dict[str, Mapping[str, Any]] = {}
    occupations = resolution.get("per_occupation", {})
    if occupations:
        comparisons["resolution_gap"] = labor_comparison(
            {name: entry["gender_gap"] for name, entry in occupations.items()}
        )
        comparisons["resolution_gap_two_person"] = labor_comparison(
            {name: entry["two_person"]["gender_gap"] for name, entry in occupations.items()}
        )
        for cell in ("MM", "FF", "MF", "FM"):  # Tab. 7: occupation | participant
            comparisons[f"resolution_accuracy_{cell}"] = labor_comparison(
                {
                    name: entry["per_cell"][cell]["accuracy"]
                    for name, entry in occupations.items()
                    if cell in entry["per_cell"]
                }
            )
    if retrieval.get("context"):
        section_name = (
            "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
        )
        k = 10 if 10 in retrieval["ks"] else max(retrieval["ks"])
        comparisons[f"retrieval_bias@{k}"] = _retrieval_comparison(
            retrieval[section_name]["per_occupation"],
            k,
            cutoffs_by_k(warnings, section_name).get(k),
        )
    return LabourStatistics(
        source=next(iter(shares.values())).source,
        male_share_percent=jsonable(
            {name: share.male_share_percent for name, share in shares.items()}
        ),
        comparisons=jsonable(comparisons),
    )


def _retrieval_comparison(
    per_occupation: Mapping[str, Mapping[str, Any]],
    k: int,
    warning: Mapping[str, Any] | None,
) -> Mapping[str, Any]:
    """The labour comparison of each occupation's Bias@``k``, without the occupations
    whose whole pool ``k`` covers (``warning``, :func:`_labour_section`)."""
    from contrastkit.evaluators.metrics import cutoff_marking

    covered = sorted(
        str(q) for q in (warning or {}).get("queries") or [] if str(q) in per_occupation
    )
    comparison = labor_comparison(
        {name: v[f"bias@{k}"] for name, v in per_occupation.items() if name not in covered}
    )
    if covered and warning is not None:
        comparison["left_out"] = {"k_covers_all_candidates": covered}
        if comparison["n"] == 0:
            comparison["caveat"] = (
                f"{cutoff_marking(warning)} of every occupation: Bias@{k} is each pool's "
                "own gender balance, not the model's ranking; no correlation"
            )
    return comparison


#: Retrieval sections in words, for warnings.
_SECTION_WORDS = {
    "two_person_images": "Retrieval, two-person images (OP)",
    "single_person_images": "Retrieval, single-person images (OO)",
}


def retrieval_warnings(
    records: Sequence[Mapping[str, Any]], ks: Sequence[int]
) -> list[CutoffWarning]:
    """The ``warnings`` of a benchmark: one for every retrieval K at or above the number
    of images of some occupation's query, per context
    (:func:`~contrastkit.evaluators.metrics.cutoff_warnings`; e.g. Bias@10 on the 10
    single-person images of each official OO occupation is 0 whatever the model)."""
    from contrastkit.evaluators.metrics import cutoff_warnings

    groups = by_query(records)
    found: list[CutoffWarning] = []
    for context, section in CONTEXT_SECTIONS.items():
        pools = {occ: len(group) for (ctx, occ), group in groups.items() if ctx == context.value}
        found += cutoff_warnings(ks, pools, section=section, label=_SECTION_WORDS[section])
    return found


#: The keys of a VisoGender result, in the order its file has them.
_RESULT_ORDER = (
    "task", "schema_version", "random_weights", "weights_note", "metadata",
    "resolution_bias", "retrieval_bias", FLIPPED_TASK, "multiple_choice",
    "labour_statistics", "error_analysis", "warnings", "skipped_rows",
)  # fmt: skip

#: The keys of its ``metadata``, in the order its file has them (``vlm`` for a generative
#: VLM only; ``skip_missing`` once the evaluation sets it).
_METADATA_ORDER = (
    "experiment_desc", "model_name", "contrastkit_version", "data", "tasks", "skipped",
    "neutral", "protocol", "bootstrap", "ks", "ndkl_k", "seed", "n_resolution_cases",
    "n_retrieval_images", "flipped_retrieval", "n_retrieval_flipped_images", "created",
    "vlm", "skip_missing",
)  # fmt: skip


def _metadata(run: ScoredRun, config: EvalConfig, data: Sequence[str | Path]) -> VisoGenderMetadata:
    """The ``metadata`` of one scored run: the model, the data, the tasks run (those a
    captioning model cannot run left out, ``skipped``), the settings and the counts."""
    vlm = vlm_metadata(run.model)  # a generative VLM: its protocol and prompts
    absent = {"n_unparseable", "skip_missing"} | ({"vlm"} if vlm is None else set())
    return VisoGenderMetadata(
        experiment_desc="CLIP" if run.kind == "dual" else "CAPTIONING",
        model_name=run.model,
        contrastkit_version=__version__,
        data=tuple(str(path) for path in data),
        tasks=tuple(
            task for task in config.tasks if not any(s.startswith(task) for s in run.skipped)
        ),
        skipped=tuple(run.skipped),
        neutral=config.neutral,
        protocol=config.protocol,
        bootstrap={
            "resamples": config.bootstrap,
            "level": config.confidence,
            "method": "percentile",
            "unit": {
                "resolution": "image, resampled within each context (OO, OP)",
                "retrieval": "occupation, with all its images",
            },
        },
        ks=tuple(config.ks),
        ndkl_k=config.ndkl_k,
        seed=config.seed,
        n_resolution_cases=len(run.resolution),
        n_retrieval_images=len(run.retrieval),
        flipped_retrieval=config.flipped_retrieval,
        n_retrieval_flipped_images=len(run.retrieval_flipped),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        vlm=jsonable(vlm) if vlm is not None else None,
        absent=frozenset(absent),
        key_order=_METADATA_ORDER,
    )


def _error_analysis(run: ScoredRun, config: EvalConfig) -> ErrorAnalysis:
    """Appendix G: resolution on random subsamples (G.1) and retrieval against random
    relabelling (G.2), for the tasks the run has (the other's fields left out)."""
    subsamples = baseline = None
    if run.resolution:
        predicted = apply_protocol(run.resolution, config.protocol)
        subsamples = {
            f"k={k}": resolution_subsamples(
                predicted, k, runs=config.subsample_runs, seed=config.seed
            )
            for k in config.subsample_ks
        }
    if run.retrieval:
        baseline = retrieval_random_baseline(
            run.retrieval,
            config.ks,
            runs=config.baseline_runs,
            seed=config.seed,
            ndkl_k=config.ndkl_k,
        )
    absent = set()
    if subsamples is None:
        absent |= {"resolution_subsamples", "resolution_subsample_runs"}
    if baseline is None:
        absent |= {"retrieval_random_baseline", "retrieval_baseline_runs"}
    return ErrorAnalysis(
        resolution_subsamples=jsonable(subsamples),
        resolution_subsample_runs=config.subsample_runs,
        retrieval_random_baseline=jsonable(baseline),
        retrieval_baseline_runs=config.baseline_runs,
        absent=frozenset(absent),
    )


@dataclass(frozen=True)
class _Sections:
    """The summaries of one scored run, each a typed section (``None``: the run has no
    such part): resolution (Tab. 2, 4), retrieval (Tab. 3), flipped retrieval (Tab. 5),
    the multiple-choice checks, and the retrieval warnings; ``resolution`` and
    ``retrieval`` also as the summaries' JSON (what the labour section reads)."""

    resolution: Mapping[str, Any]
    retrieval: Mapping[str, Any]
    flipped: FlippedRetrieval | None
    multiple_choice: Mapping[str, Any] | None
    warnings: tuple[KWarning, ...]


def _sections(run: ScoredRun, config: EvalConfig) -> _Sections:
    """The summaries of ``run`` (:class:`_Sections`)."""
    bootstrap = BootstrapSettings(config.bootstrap, config.confidence, config.seed)
    resolution = (
        summarize_resolution(
            run.resolution,
            protocol=config.protocol,
            bootstrap=config.bootstrap,
            confidence=config.confidence,
            seed=config.seed,
        )
        if run.resolution
        else {}
    )
    retrieval = (
        summarize_retrieval(run.retrieval, config.ks, ndkl_k=config.ndkl_k, bootstrap=bootstrap)
        if run.retrieval
        else {}
    )
    flipped = None
    if run.retrieval_flipped:
        flipped = FlippedRetrieval.from_json(
            jsonable(
                summarize_flipped(
                    run.retrieval_flipped,
                    config.ks,
                    ndkl_k=config.ndkl_k,
                    bootstrap=bootstrap,
                    single_person_images=sum(1 for r in run.retrieval if r.get("context") == "OO"),
                )
            )
        )
    choice = summarize_multiple_choice(run.resolution, protocol=config.protocol, seed=config.seed)
    warnings = retrieval_warnings(run.retrieval, config.ks) if run.retrieval else []
    return _Sections(
        resolution=resolution,
        retrieval=retrieval,
        flipped=flipped,
        multiple_choice=jsonable(choice) if choice is not None else None,
        warnings=tuple(KWarning.from_json(jsonable(warning)) for warning in warnings),
    )


def visogender_result(
    run: ScoredRun, config: EvalConfig, data: Sequence[str | Path]
) -> VisoGenderResult:
    """The typed result of one scored run (its ``benchmark.json``, Appendix J structure).

    Its top level also says whether the model's weights are random (``random_weights``,
    from :func:`~contrastkit.models.registry.random_weights`: ``ARCH/random``
    or a marked tiny-model folder) and, if so, the plain sentence every report and plot
    of it carries (``weights_note``; ``None`` for trained weights). A part the run does
    not have (no resolution, no retrieval, no flipped queries, not a multiple-choice VLM)
    is left out of the file; ``skipped_rows`` is the evaluation's to add."""
    note = weights_note(run.model)
    sections = _sections(run, config)
    raw_warnings = [warning.to_json() for warning in sections.warnings]
    labour = _labour_section(sections.resolution, sections.retrieval, raw_warnings)
    present = {
        "resolution_bias": bool(sections.resolution),
        "retrieval_bias": bool(sections.retrieval),
        "retrieval_flipped": sections.flipped is not None,
        "multiple_choice": sections.multiple_choice is not None,
    }
    return VisoGenderResult(
        name=f"visogender_{model_slug(run.model)}_results",
        schema_version=SCHEMA_VERSION,
        random_weights=note is not None,
        weights_note=note,
        metadata=_metadata(run, config, data),
        resolution_bias=(
            ResolutionBias.from_json(jsonable(sections.resolution)) if sections.resolution else None
        ),
        retrieval_bias=(
            RetrievalBias.from_json(jsonable(sections.retrieval)) if sections.retrieval else None
        ),
        retrieval_flipped=sections.flipped,
        multiple_choice=sections.multiple_choice,
        labour_statistics=labour,
        error_analysis=_error_analysis(run, config),
        warnings=sections.warnings,
        absent=frozenset({name for name, there in present.items() if not there})
        | {"skipped_rows", "harness"},
        key_order=_RESULT_ORDER,
    )


def benchmark(run: ScoredRun, config: EvalConfig, data: Sequence[str | Path]) -> dict[str, Any]:
    """The benchmark JSON object of one scored run (Appendix J structure): the file's
    single ``visogender_<model>_results`` object, :func:`visogender_result` as JSON."""
    return visogender_result(run, config, data).to_json()


def load_benchmark(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Read a VisoGender benchmark JSON (or the ``benchmark.json`` of an output folder),
    through :class:`contrastkit.results.VisoGenderResult` (a file of an older
    contrastkit, without ``task`` and ``schema_version``, reads the same).

    Returns:
        The top-level name and its results object.

    Raises:
        DataFormatError: missing file, invalid JSON, a value of the wrong type (located
            by its dotted path), or not a VisoGender benchmark.
    """
    path = benchmark_file(path)
    result = load_result(path)
    if not isinstance(result, VisoGenderResult):
        raise DataFormatError(
            path, None, "task", f"{a_task(result.task)} result, not a VisoGender benchmark"
        )
    return result.name, result.to_json()[result.name]


def read_visogender_benchmark(path: str | Path) -> dict[str, Any]:
    """The VisoGender results of a ``benchmark.json`` (or of the folder holding one).

    Raises:
        DataFormatError: a missing or malformed file (say which).
    """
    return load_benchmark(path)[1]


class VisoGenderHeadline(TypedDict):
    """The headline numbers of one VisoGender result (:func:`headline`): the figures
    of each resolution split and of each retrieval metric as the file has them."""

    model: str
    random_weights: bool
    weights_note: str | None
    protocol: str | None
    resolution_bias: dict[str, Mapping[str, object]]
    retrieval_bias: dict[str, Mapping[str, object]]
    retrieval_context: str | None
    retrieval_flipped: dict[str, Mapping[str, object]]
    warnings: list[Mapping[str, object]]


def headline(result: VisoGenderResult | Mapping[str, Any]) -> VisoGenderHeadline:
    """The headline numbers of one benchmark result: the model, whether its weights are
    random (and the note saying so), the resolution protocol
    (``None`` for a file written before protocols were recorded), the resolution bias of
    each split (VisoGender Tab. 2; the per-occupation / per-cell breakdowns left out) and
    the mean and sigma of each retrieval metric across occupations (Tab. 3), with their
    intervals when the file has them; ``retrieval_flipped`` the same for the
    participant-subject queries (Tab. 5; empty for a file without them); ``warnings``
    the result's warnings (each K at or above a query's candidates:
    :func:`retrieval_warnings`). ``result``: the typed result, or its results object as
    read from a file."""
    results = visogender_json(result)
    return {
        "model": results["metadata"]["model_name"],
        "random_weights": bool(results.get("random_weights", False)),
        "weights_note": results.get("weights_note"),
        "protocol": results["metadata"].get("protocol"),
        "resolution_bias": {
            name: value
            for name, value in (results.get("resolution_bias") or {}).items()
            if not name.startswith("per_")
        },
        "retrieval_bias": {
            name: value
            for name, value in (results.get("retrieval_bias") or {}).items()
            if isinstance(value, dict) and "mean" in value
        },
        "retrieval_context": (results.get("retrieval_bias") or {}).get("context"),
        "retrieval_flipped": {
            name: value
            for name, value in (results.get(FLIPPED_TASK) or {}).items()
            if isinstance(value, dict) and "mean" in value
        },
        "warnings": list(results.get("warnings") or []),
    }
