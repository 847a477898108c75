"""The zero-shot disparity analysis's ``disparity.json``: ``task``
``zero-shot-disparity``. The analysis makes this result itself
(:mod:`contrastkit.evaluators.tasks.zero_shot.result`), writes it, and its report, plots,
headline and comparison read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from contrastkit.results.base import Node, Result, matching, register_result

__all__ = [
    "ConceptDisparity",
    "ConceptLanguageBias",
    "ConsistencyConcept",
    "EmbeddingsKept",
    "LanguageSource",
    "PredictionsFile",
    "SignAgreement",
    "WordVectorsUsed",
    "ZeroShotBootstrap",
    "ZeroShotCache",
    "ZeroShotCalibration",
    "ZeroShotConsistency",
    "ZeroShotCounts",
    "ZeroShotData",
    "ZeroShotMap",
    "ZeroShotResult",
]

#: An interval written as ``[low, high]``.
Pair = tuple[float | None, ...]


@dataclass(frozen=True, kw_only=True)
class ZeroShotData(Node):
    """``data``: the folder read, its layout and split, and the concept map."""

    path: str
    layout: str | None = None
    split: str | None = None
    concept_map: str | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotCounts(Node):
    """``counts``: the images read, kept and dropped, and the concepts."""

    images_read: int | None = None
    images: Mapping[str, int] | None = None
    images_kept: int | None = None
    dropped: Mapping[str, int] | None = None
    without_concept: int | None = None
    images_without_concepts: str | None = None
    concepts_seen: int | None = None
    concepts_kept: int | None = None
    filter_split: str | None = None
    min_images: int | None = None


@dataclass(frozen=True, kw_only=True)
class ConceptDisparity(Node):
    """One concept: its positive images per group, the AP of each group by
    ``ap_<group>`` (``ap``), their difference and its interval; where calibration was
    computed the same for ECE (``ece_<group>``, ``ece_diff``: women - men); a ``note``
    where its AP is 100 by construction in a group."""

    concept: str
    positives: Mapping[str, int] | None = None
    ap: Mapping[str, float | None] = matching(r"ap_(?!diff$|diff_ci$)\w+")
    ap_diff: float | None = None
    ap_diff_ci: Pair | None = None
    ece: Mapping[str, float | None] = matching(r"ece_(?!diff$|diff_ci$)\w+")
    ece_diff: float | None = None
    ece_diff_ci: Pair | None = None
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotBootstrap(Node):
    """``bootstrap``: the resamples of the intervals (0: none), their confidence and
    seed, and what was resampled."""

    resamples: int | None = None
    confidence: float | None = None
    seed: int | None = None
    over: str | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotMap(Node):
    """``map``: the mAP of each group over the kept concepts, their difference (men -
    women), and each one's bootstrap interval (``None``: no bootstrap)."""

    men: float | None = None
    women: float | None = None
    difference: float | None = None
    men_ci: Pair | None = None
    women_ci: Pair | None = None
    difference_ci: Pair | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotCalibration(Node):
    """``calibration``: whether ECE was computed (``computed``), in which ``mode``
    (``multi-label``, ``softmax``), over how many ``bins``, with which ``temperature``
    (softmax), from which ``probabilities``, or why not (``reason``); and what the
    difference is (``difference``)."""

    computed: bool = False
    mode: str | None = None
    bins: int | None = None
    temperature: float | None = None
    probabilities: str | None = None
    reason: str | None = None
    difference: str | None = None


@dataclass(frozen=True, kw_only=True)
class EmbeddingsKept(Node):
    """The image or prompt embeddings of a run: ``reused`` from an earlier run and
    ``computed``."""

    reused: int
    computed: int


@dataclass(frozen=True, kw_only=True)
class ZeroShotCache(Node):
    """``cache`` (with a model): the embeddings' folder (relative to the output folder)
    and what it gave for the ``images`` and the ``prompts``."""

    folder: str
    images: EmbeddingsKept
    prompts: EmbeddingsKept


@dataclass(frozen=True, kw_only=True)
class PredictionsFile(Node):
    """``predictions_file`` (with predictions instead of a model): the file, its kind of
    rows (``score``, ``hit``), the rows read and used, the images and concepts outside
    the analysis (and some of those concepts), whether it has probabilities and why
    not."""

    file: str
    kind: str | None = None
    rows: int | None = None
    rows_used: int | None = None
    unknown_images: int | None = None
    unknown_concepts: int | None = None
    unknown_concept_examples: tuple[str, ...] | None = None
    probabilities: bool | None = None
    why_no_probabilities: str | None = None


@dataclass(frozen=True, kw_only=True)
class WordVectorsUsed(Node):
    """A word source's ``vectors``: their name and where they came from."""

    name: str | None = None
    source: str | None = None


@dataclass(frozen=True, kw_only=True)
class ConceptLanguageBias(Node):
    """The language bias of one concept (Appendix A.3): the ``words`` looked up (and
    the ``modifier`` phrase of an ambiguous synset), the mean cosine similarity to the
    ``man`` and the ``woman`` terms, ``bias`` = man - woman (``None``: a word without a
    vector, listed in ``missing``, or another ``reason``)."""

    concept: str
    words: tuple[str, ...] = ()
    modifier: str | None = None
    man: float | None = None
    woman: float | None = None
    bias: float | None = None
    missing: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class SignAgreement(Node):
    """How often the sign of the language bias agrees with the sign of a disparity:
    ``agree`` of ``n`` concepts (``share``), the Pearson and Spearman correlations of
    the two with their p-values (``None`` with a ``reason`` when they cannot be
    computed), the ``concepts`` compared and those ``agreeing``."""

    n: int
    agree: int
    share: float | None = None
    pearson_r: float | None = None
    pearson_p: float | None = None
    spearman_rho: float | None = None
    spearman_p: float | None = None
    reason: str | None = None
    concepts: tuple[str, ...] = ()
    agreeing: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class LanguageSource(Node):
    """One word source of ``language`` (``file``, ``model``): the ``vectors``, each
    concept's language bias, and its sign agreement with each disparity (``ap``,
    ``ece``)."""

    vectors: WordVectorsUsed
    concepts: Mapping[str, ConceptLanguageBias]
    agreement: Mapping[str, SignAgreement]


@dataclass(frozen=True, kw_only=True)
class ConsistencyConcept(Node):
    """One concept of both datasets: its AP difference in each and its colour
    (``green``, ``red``, ``yellow``)."""

    concept: str
    ap_diff: float | None = None
    other_ap_diff: float | None = None
    colour: str


@dataclass(frozen=True, kw_only=True)
class ZeroShotConsistency(Node):
    """``consistency`` (Fig. 3-4): the second dataset (``other``, and the data and
    label of its results), the ``threshold``, the shared concepts with their colour and
    the ``counts`` of each colour."""

    other: str
    other_data: str | None = None
    other_label: str | None = None
    threshold: float | None = None
    concepts: tuple[ConsistencyConcept, ...] = ()
    counts: Mapping[str, int] | None = None


@dataclass(frozen=True, kw_only=True)
class ZeroShotResult(Result):
    """A ``disparity.json``."""

    TASK = "zero-shot-disparity"

    data: ZeroShotData
    groups: tuple[str, ...]
    concepts: tuple[ConceptDisparity, ...]
    model: str | None = None
    predictions: str | None = None
    label: str | None = None
    random_weights: bool | None = None
    weights_note: str | None = None
    counts: ZeroShotCounts | None = None
    paper_counts: Mapping[str, int] | None = None
    prompt: str | None = None
    units: str | None = None
    bootstrap: ZeroShotBootstrap | None = None
    map: ZeroShotMap | None = None
    calibration: ZeroShotCalibration | None = None
    cache: ZeroShotCache | None = None
    predictions_file: PredictionsFile | None = None
    language: Mapping[str, LanguageSource] | None = None
    compare_report: str | None = None
    consistency: ZeroShotConsistency | None = None
    plots: Mapping[str, str] | None = None
    contrastkit_version: str | None = None


register_result(ZeroShotResult.TASK, ZeroShotResult)
