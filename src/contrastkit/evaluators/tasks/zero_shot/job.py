"""The zero-shot disparity job (the zero-shot disparities paper): ``contrastkit evaluate
--task zero-shot-disparity``.

One call runs the paper's three experiments on a Visual Genome or COCO folder
(:mod:`.groups`):

1. **AP disparity** (Sec. 3.1): zero-shot multi-label classification with a dual encoder
   from the registry — one prompt per concept (``prompt``, by default the concept's name
   alone: the paper used "an object class as the text input", Sec. 2.1), the cosine
   similarity of image and prompt as the concept's score — or with the predictions of any
   model brought as a file (:mod:`.predictions`); AP per concept per group,
   ``AP_men - AP_women`` with a bootstrap interval, mAP per group (Fig. 2), and with a
   second dataset the consistency colouring of Fig. 3-4.
2. **Calibration disparity** (Sec. 3.2): ECE per concept per group and
   ``ECE_women - ECE_men`` (:mod:`.metrics`) for predictions that carry probabilities.
   A dual encoder's multi-label cosine similarities are *not* probabilities: each is a
   similarity in [-1, 1] of one image and one prompt, with no scale that makes it the
   chance the concept is present, and several concepts can be present at once, so no
   softmax over concepts applies either (Appendix A.2). ECE is therefore refused for them
   unless ``calibration="softmax"`` asks for the single-label setting of Appendix A.2:
   the softmax over the concepts of ``temperature`` x cosine similarity, one distribution
   per image.
3. **Language bias** (Sec. 3.3, Appendix A.3): each concept's word vector against the
   man and woman term sets, from a word2vec/GloVe file and/or the model's own text
   encoder (:mod:`.words`), and how often its sign agrees with the AP / ECE difference.

Example:
    >>> from contrastkit.evaluators.tasks.zero_shot.job import (  # doctest: +SKIP
    ...     ZeroShotDisparityConfig, zero_shot_disparity)
    >>> result = zero_shot_disparity(ZeroShotDisparityConfig(  # doctest: +SKIP
    ...     data="vg", model="open_clip:ViT-B-32/openai", out="results"))
    >>> result.files["report"]  # doctest: +SKIP
    PosixPath('results/open_clip-ViT-B-32-openai/zero_shot/report.md')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.tasks.zero_shot.config import (
    CALIBRATION_MODES,
    DEFAULT_PROMPT,
    TASK,
    WORD_SOURCES,
    ZeroShotDisparityConfig,
)
from contrastkit.evaluators.tasks.zero_shot.groups import (
    GroupedData,
    GroupingOptions,
    concept_words,
    load_grouped,
    read_concept_map,
)
from contrastkit.evaluators.tasks.zero_shot.metrics import (
    GroupMetrics,
    MetricSettings,
    group_metrics,
)
from contrastkit.evaluators.tasks.zero_shot.result import (
    Header,
    Provenance,
    concept_rows,
    consistency_section,
    disparity_result,
    group_map,
    required,
    with_sections,
)
from contrastkit.interfaces import ImageTextScorer, ProgressFactory, progress_stage
from contrastkit.io import check_writable
from contrastkit.records import read_json
from contrastkit.results.zero_shot import (
    EmbeddingsKept,
    LanguageSource,
    WordVectorsUsed,
    ZeroShotBootstrap,
    ZeroShotCache,
    ZeroShotCalibration,
    ZeroShotCounts,
    ZeroShotData,
    ZeroShotResult,
)

__all__ = [
    "CALIBRATION_MODES",
    "DEFAULT_PROMPT",
    "WORD_SOURCES",
    "ZeroShotDisparityConfig",
    "ZeroShotDisparityResult",
    "analyse",
    "check_folders",
    "checked_scorer",
    "zero_shot_disparity",
]


class ApDifference(TypedDict):
    """One of the largest AP differences of a :class:`DisparitySummary`."""

    concept: str
    ap_diff: float | None


class DisparitySummary(TypedDict):
    """The headline numbers of a zero-shot analysis (:attr:`ZeroShotDisparityResult.summary`)."""

    images: dict[str, int] | None
    concepts: int | None
    map: Mapping[str, object]
    top_ap_differences: list[ApDifference]
    calibration: bool
    random_weights: bool | None
    cache: Mapping[str, object] | None


@dataclass(frozen=True)
class ZeroShotDisparityResult:
    """What :func:`zero_shot_disparity` wrote and found.

    Attributes:
        folder: the output folder.
        files: the files written, by name (``json``, ``report``, plots).
        result: the ``disparity.json`` written, typed.
        compared: the second dataset's result, when ``compare`` named a data folder.
    """

    folder: Path
    files: Mapping[str, Path]
    result: ZeroShotResult
    compared: ZeroShotDisparityResult | None = None

    @property
    def results(self) -> dict[str, Any]:
        """The ``disparity.json`` content (its JSON object, as written)."""
        return self.result.to_json()

    @property
    def summary(self) -> DisparitySummary:
        """Headline numbers: counts, mAP per group, the largest AP differences."""
        r = self.result
        counts, calibration = required(r.counts, "counts"), required(r.calibration, "calibration")
        return {
            "images": None if counts.images is None else dict(counts.images),
            "concepts": counts.concepts_kept,
            "map": required(r.map, "map").to_json(),
            "top_ap_differences": [
                {"concept": c.concept, "ap_diff": c.ap_diff} for c in r.concepts[:5]
            ],
            "calibration": calibration.computed,
            "random_weights": r.random_weights,
            "cache": None if r.cache is None else r.cache.to_json(),
        }


@dataclass(frozen=True)
class _ConceptScores:
    """What AP and ECE are computed from, and where it came from.

    Attributes:
        scores: ``(images, concepts)``: what AP ranks by.
        probabilities: ``(images, concepts)`` probabilities for ECE, or ``None``.
        why_no_probabilities: why there are none, from a predictions file.
        probability_source: where a predictions file's probabilities come from.
        provenance: the ``disparity.json`` entries about the source: ``cache`` (a model)
            or ``predictions_file``.
    """

    scores: np.ndarray
    probabilities: np.ndarray | None = None
    why_no_probabilities: str | None = None
    probability_source: str | None = None
    provenance: Provenance = field(default_factory=Provenance)


def _concept_scores(
    config: ZeroShotDisparityConfig,
    grouped: GroupedData,
    folder: Path,
    scorer: ImageTextScorer | None,
    progress: ProgressFactory | None,
) -> _ConceptScores:
    """The model's cosine similarities (and with ``softmax`` their probabilities), or
    the predictions file laid over the analysis' images and concepts."""
    from contrastkit.evaluators.tasks.zero_shot.predictions import load_predictions

    if scorer is not None:
        scores, _, cache = _model_scores(scorer, grouped, config, folder, progress)
        probabilities = None
        if config.calibration == "softmax":
            probabilities = _softmax(config.temperature * scores)
        return _ConceptScores(scores, probabilities, provenance=Provenance(cache=cache))
    assert config.predictions is not None
    predictions = load_predictions(
        config.predictions, [r.image_id for r in grouped.images], grouped.concepts
    )
    return _ConceptScores(
        predictions.scores, predictions.probabilities, predictions.why_no_probabilities,
        predictions.probability_source, Provenance(predictions_file=predictions.described()),
    )  # fmt: skip


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def _model_scores(
    scorer: ImageTextScorer,
    grouped: GroupedData,
    config: ZeroShotDisparityConfig,
    folder: Path,
    progress: ProgressFactory | None,
) -> tuple[np.ndarray, list[str], ZeroShotCache]:
    """Cosine similarity of every image with every concept's prompt, ``(images,
    concepts)``, the prompts, and what the embedding cache gave (:mod:`.cache`).

    Image and prompt embeddings are kept in ``folder/cache/``, written batch by batch as
    they are computed; only those not kept yet are computed. The scores are always taken
    from the kept float32 embeddings, so a rerun gives exactly the first run's scores.
    """
    from contrastkit.evaluators.tasks.zero_shot.cache import CACHE_FOLDER, EmbeddingCache, image_key
    from contrastkit.io import exclusive_lock
    from contrastkit.pipeline import iter_embeddings  # torch: not on import

    prompts = [config.prompt.replace("{}", concept_words(c)) for c in grouped.concepts]
    where = folder / CACHE_FOLDER
    precision = str(getattr(scorer, "dtype", ""))
    with exclusive_lock(where / ".lock", str(where), f"contrastkit evaluate --task {TASK}"):
        images = EmbeddingCache(where, "images", scorer.spec, precision)
        keys = [image_key(grouped.root, r.image_id, r.path) for r in grouped.images]
        missing = images.missing(keys)
        sources = {key: record.path for key, record in zip(keys, grouped.images, strict=True)}
        todo = [sources[key] for key in missing]
        label = f"embedding images ({grouped.root.name})"
        with progress_stage(progress, label, len(todo)) as up:
            for positions, vectors in iter_embeddings(
                scorer, todo, batch_size=config.model_config.batch_size
            ):
                images.add(missing[positions.start : positions.stop], vectors)
                up(positions.stop, len(todo))
        texts = EmbeddingCache(where, "texts", scorer.spec, precision)
        new_prompts = texts.missing(prompts)
        for i in range(0, len(new_prompts), 256):
            chunk = new_prompts[i : i + 256]
            texts.add(chunk, scorer.encode_texts(chunk))
        images.consolidate()
        texts.consolidate()
        image_matrix, text_matrix = images.matrix(keys), texts.matrix(prompts)
    distinct_images, distinct_prompts = len(set(keys)), len(set(prompts))
    cache = ZeroShotCache(
        folder=CACHE_FOLDER,
        images=EmbeddingsKept(reused=distinct_images - len(missing), computed=len(missing)),
        prompts=EmbeddingsKept(
            reused=distinct_prompts - len(new_prompts), computed=len(new_prompts)
        ),
    )
    scores = image_matrix.astype(np.float64) @ text_matrix.astype(np.float64).T
    return scores, prompts, cache


def _load_compare(path: Path) -> ZeroShotResult:
    """An earlier run's ``disparity.json`` (or the folder holding it, or a model folder
    with ``zero_shot/disparity.json``)."""
    candidates = [path, path / "disparity.json", path / "zero_shot" / "disparity.json"]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise DataFormatError(path, None, None, "no disparity.json here")
    results = read_json(found)
    if not isinstance(results, dict) or results.get("task") != TASK:
        raise DataFormatError(found, None, "task", f"not a {TASK} results file")
    return ZeroShotResult.from_json(results, path=found)


def _is_results(path: Path) -> bool:
    return path.is_file() or any(
        (path / name).is_file() for name in ("disparity.json", "zero_shot/disparity.json")
    )


def _language(
    config: ZeroShotDisparityConfig,
    scorer: ImageTextScorer | None,
    concepts: tuple[str, ...],
    diffs: Mapping[str, Mapping[str, float]],
    progress: ProgressFactory | None,
) -> dict[str, LanguageSource]:
    """Experiment 3 for each requested word source: per-concept language bias and its
    sign agreement with each disparity (``ap``, ``ece``)."""
    from contrastkit.evaluators.tasks.zero_shot import words

    out: dict[str, LanguageSource] = {}
    for source in config.words_from:
        vectors: words.WordVectors
        with progress_stage(progress, f"word vectors ({source})"):
            if source == "file":
                assert config.words is not None
                vectors = words.load_word_vectors(config.words)
            else:
                assert scorer is not None
                vectors = words.model_word_vectors(scorer)
            biases = words.language_bias(concepts, vectors)
        values = {c: b.bias for c, b in biases.items()}
        out[source] = LanguageSource(
            vectors=WordVectorsUsed(name=vectors.name, source=vectors.source),
            concepts={c: b.node() for c, b in biases.items()},
            agreement={
                kind: words.sign_agreement(values, diff).node() for kind, diff in diffs.items()
            },
        )
    return out


def _result(
    config: ZeroShotDisparityConfig,
    grouped: GroupedData,
    metrics: GroupMetrics,
    truth: np.ndarray,
    scored: _ConceptScores,
) -> ZeroShotResult:
    """The ``disparity.json`` of the analysis (before languages, consistency and
    plots)."""
    from contrastkit.evaluators.tasks.zero_shot.groups import PAPER_COUNTS
    from contrastkit.models.registry import weights_note

    header = Header(
        model=config.model,
        predictions=str(config.predictions) if config.predictions else None,
        label=config.label,
        weights_note=weights_note(config.model) if config.model is not None else None,
        data=ZeroShotData(
            path=str(grouped.root), layout=grouped.layout, split=grouped.split,
            concept_map=str(config.concept_map) if config.concept_map else None,
        ),
        # the groups' counts as read (their keys in order), and the threshold
        counts=ZeroShotCounts.from_json({**grouped.counts, "min_images": grouped.min_images}),
        paper_counts=dict(PAPER_COUNTS[grouped.layout]),
        prompt=config.prompt if config.model is not None else None,
        bootstrap=ZeroShotBootstrap(
            resamples=config.bootstrap, confidence=config.confidence, seed=config.seed,
            over="images, resampled within each group",
        ),
    )  # fmt: skip
    rows = concept_rows(grouped.concepts, truth, grouped.group_mask("men"), metrics)
    return disparity_result(
        header, rows, group_map(metrics), _calibration(config, scored), scored.provenance
    )


def _calibration(config: ZeroShotDisparityConfig, scored: _ConceptScores) -> ZeroShotCalibration:
    """The ``calibration`` entry: whether ECE was computed, from what, or why not."""
    from contrastkit.evaluators.tasks.zero_shot.report import COSINE_NOT_PROBABILITIES

    probabilities, why = scored.probabilities, scored.why_no_probabilities
    described = scored.probability_source
    if config.model is not None and config.calibration == "multi-label":
        why = COSINE_NOT_PROBABILITIES
    source = None
    if probabilities is not None:
        source = (
            f"softmax over the concepts of {config.temperature:g} x cosine similarity "
            "(single-label setting, Appendix A.2)"
            if config.model is not None
            else described or "the predictions' probabilities"
        )
    return ZeroShotCalibration(
        computed=probabilities is not None,
        mode=config.calibration,
        bins=config.bins,
        temperature=config.temperature if config.calibration == "softmax" else None,
        probabilities=source,
        reason=None if probabilities is not None else why,
        difference="ECE_women - ECE_men (positive: better calibrated for images of men)",
    )


def _analyse(
    config: ZeroShotDisparityConfig,
    folder: Path,
    scorer: ImageTextScorer | None,
    progress: ProgressFactory | None,
) -> ZeroShotDisparityResult:
    from contrastkit.evaluators.tasks.zero_shot.report import write_disparity_files

    concept_map = read_concept_map(config.concept_map) if config.concept_map else None
    grouped = load_grouped(
        config.data,
        GroupingOptions(
            layout=config.layout, min_images=config.min_images, split=config.split,
            filter_split=config.filter_split, concept_map=concept_map,
            images_without_concepts=config.images_without_concepts,
        ),
    )  # fmt: skip
    if not grouped.concepts:
        most = max((min(per.values()) for per in grouped.concept_images.values()), default=0)
        raise DataFormatError(
            config.data, None, None,
            f"no concept occurs in at least {grouped.min_images} images of each group "
            f"(the most any concept has in both: {most}); lower min_images (--min-images)",
        )  # fmt: skip
    truth = grouped.labels()
    scored = _concept_scores(config, grouped, folder, scorer, progress)
    with progress_stage(progress, "AP and ECE per concept and group"):
        settings = MetricSettings(config.bins, config.bootstrap, config.confidence, config.seed)
        metrics = group_metrics(
            truth, scored.scores, grouped.group_mask("men"),
            probabilities=scored.probabilities, settings=settings,
        )  # fmt: skip
    result = _result(config, grouped, metrics, truth, scored)
    diffs = {"ap": {r.concept: r.ap_diff for r in result.concepts}}
    if scored.probabilities is not None:
        diffs["ece"] = {r.concept: r.ece_diff for r in result.concepts}
    kept = {k: {c: v for c, v in d.items() if v is not None} for k, d in diffs.items()}
    if config.words_from:
        result = with_sections(
            result, language=_language(config, scorer, grouped.concepts, kept, progress)
        )
    compared: ZeroShotDisparityResult | None = None
    if config.compare is not None:
        if _is_results(config.compare):
            other = _load_compare(config.compare)
        else:
            sub = replace(
                config, data=config.compare, compare=None, layout="auto", split=None,
                filter_split=None, word_source=None, words=None,
            )  # fmt: skip
            compared = _analyse(sub, folder / "compare", scorer, progress)
            other = compared.result
            result = with_sections(result, compare_report="compare/report.md")
        consistency = consistency_section(kept["ap"], other, str(config.compare), config.threshold)
        result = with_sections(result, consistency=consistency)
    written, files = write_disparity_files(result, folder, top=config.top, plots=config.plots)
    return ZeroShotDisparityResult(folder, files, written, compared)


def zero_shot_disparity(
    config: ZeroShotDisparityConfig, progress: ProgressFactory | None = None
) -> ZeroShotDisparityResult:
    """Run the zero-shot disparity analysis of ``config`` and write its reports.

    Writes into ``out/<model slug>/zero_shot/``: ``disparity.json`` (counts, per-concept
    AP and ECE per group with differences and intervals, mAP per group, language bias and
    agreement, consistency), ``report.md``, and the plots (PNG and SVG) of the top AP
    differences, the mAP per group and, with ``compare``, the consistency scatter.

    With a model, the image and prompt embeddings are kept in ``zero_shot/cache/``
    (:mod:`.cache`), flushed batch by batch: a rerun with the same model embeds only what
    is not kept yet (nothing, for the same data and prompts; only the new prompts, for a
    changed prompt or concept set), an interrupted run resumes, and ``disparity.json``
    says what was reused (``cache``: ``images`` and ``prompts``, each ``reused`` and
    ``computed``).

    Args:
        config: what to analyse.
        progress: opens a progress display per stage.

    Raises:
        ResourceError: ``out`` cannot be written.
        ConfigError: an option that cannot work (see the config), a folder of neither
            layout.
        DataFormatError: a malformed annotation or predictions file, a missing image, no
            concept above ``min_images``.
        ModelNotFoundError: a model neither on disk nor cached.
        StateError: another run is using the same output folder's cache.
    """
    return analyse(config, checked_scorer(config), progress)


def checked_scorer(config: ZeroShotDisparityConfig) -> ImageTextScorer | None:
    """What :func:`zero_shot_disparity` checks before the analysis, and then its model:
    the data folder, the output folder, ``compare``; the dual encoder of
    ``config.model`` loaded (``None`` for a predictions file).

    Raises:
        ResourceError: ``out`` cannot be written.
        ConfigError: data or ``compare`` that is not a folder, a data folder to compare
            with a predictions file; what loading the model refuses.
        ModelNotFoundError: a model neither on disk nor cached.
    """
    check_folders(config)
    if config.model is None:
        return None
    from contrastkit.models import load_scorer

    return load_scorer(config.model, config.model_config)


def check_folders(config: ZeroShotDisparityConfig) -> None:
    """The checks of :func:`checked_scorer` before its model loads: the data folder, the
    output folder (created), ``compare``.

    Raises:
        ResourceError: ``out`` cannot be written.
        ConfigError: data or ``compare`` that is not a folder, a data folder to compare
            with a predictions file.
    """
    if not config.data.is_dir():
        raise ConfigError(f"data: {config.data} is not a folder")
    check_writable(config.folder, "the zero-shot disparity results")
    if config.compare is not None and not _is_results(config.compare):
        if not config.compare.is_dir():
            raise ConfigError(f"compare: {config.compare} is neither results nor a data folder")
        if config.model is None:
            raise ConfigError(
                "compare: with a predictions file, compare with an earlier run's "
                "disparity.json, not a data folder"
            )


def analyse(
    config: ZeroShotDisparityConfig,
    scorer: ImageTextScorer | None,
    progress: ProgressFactory | None = None,
) -> ZeroShotDisparityResult:
    """The analysis of :func:`zero_shot_disparity` with ``scorer`` (from
    :func:`checked_scorer`; ``None``: the predictions file), its files written into
    ``config.folder``.

    Raises:
        ConfigError: a folder of neither layout.
        DataFormatError: a malformed annotation or predictions file, a missing image, no
            concept above ``min_images``.
        StateError: another run is using the same output folder's cache.
    """
    return _analyse(config, config.folder, scorer, progress)
