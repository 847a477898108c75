"""Score a CLIP-like model on a GenSynth / GenSwap contrast set (GenSynth Sec. 5).

A contrast set holds each source photo twice, once edited to each perceived gender, with
everything else unchanged. Two measurements, both with the captions made gender-neutral
(the export's ``neutral_captions``; GenSynth Tab. 4 word table):

* **Retrieval bias** (GenSynth Sec. 5, Eq. 1-3): every distinct neutral caption is a
  text-to-image query over all images of the set; per query Bias@K in both conventions
  (GenSynth Eq. 1 ``(N_m - N_f) / (N_m + N_f)``, 0 when the top K holds neither; VisoGender
  Appendix A, the mean of +1/-1 labels), Skew@K per gender, MaxSkew@K, MinSkew@K and NDKL,
  computed by :func:`contrastkit.evaluators.metrics.retrieval_metrics_batch`; reported as
  mean and standard deviation over queries (:func:`~contrastkit.evaluators.metrics.summarize`,
  which counts the queries it leaves out by reason, e.g. a MinSkew of ``-inf``).
  0 is balanced, positive leans masculine. Tied similarities (the two versions of a photo
  can score alike) take each metric's exact expectation over the orders of the tied
  images, and MinSkew is also given as the official code computes it
  (``minskew@K_official_smoothed``); docs/differences.md.
  With ``bootstrap`` resamples, the mean of each Bias@K and MaxSkew@K also gets
  ``mean_ci``, a percentile bootstrap interval over queries (:func:`query_intervals`),
  and the pair preference ``masculine_preferred_ci``, the same over the queries with a
  pair.
* **Pair preference**: for each query, the similarity of its own source's masculine and
  feminine versions. ``masculine_preferred`` is the share of queries whose masculine
  version scores higher (0.5 is no preference; ties count half) and ``mean_gap`` the mean
  of ``s(q, masculine) - s(q, feminine)`` in cosine similarity. Because the two images
  differ only in the edited person, this isolates the model's response to perceived gender
  presentation from the scene. A set with one version per photo (the original photos of
  ``contrastkit export contrast --originals``) has no pairs: ``pairs.applicable`` is
  false and the reports say "not applicable".

The score ``s(q, i)`` of a query and an image is the model's (``score_kind`` in the summary's
``scoring``, the benchmark and the report): the cosine similarity of a dual encoder's unit
embeddings, or, for any :class:`~contrastkit.interfaces.CaptionScorer`, its own caption
score as
:func:`contrastkit.evaluators.tasks.stereotype_probing.scoring.caption_scores` gives it: the match
logit of an image-text-matching head (``blip-itm:``, ``vilt:``), the caption's mean
log-likelihood per token under a generative VLM (``vlm:``; the sum with
``?length_normalise=false``). Every metric above is computed from these scores unchanged.
The cost differs: a dual encoder embeds each image and each query once (``n_images +
n_queries`` passes) and the scores are dot products; a caption scorer runs once per
(image, query) pair, ``n_images x n_queries`` passes for the retrieval metrics, which rank
every image for every query. Pair preference alone needs only each query against its own
source's two versions (``2 x n_queries`` passes): ``metrics="pairs"``
(:data:`CONTRAST_METRICS`), the default for caption scorers (``auto``); dual encoders
default to ``all``. A caption scorer's scores are kept in ``raw_contrast_scores.jsonl``
(:data:`RAW_SCORES_FILE`), flushed after every model call, and a rerun (also one asking for
more metrics) reuses every score of the same model, image and query.

Outputs (:func:`write_contrast_outputs`): ``raw_contrast.jsonl`` (per query: its source,
both own-pair scores and, with the retrieval metrics, those metrics and the top-K image
ids), ``benchmark.json``, ``report.md`` and ``plots/contrast_bias.png`` (and ``.svg``).
Evaluators never import builders; the data meet through the exported dataset.

This module scores (:func:`evaluate_contrast`); the set's format and loading are in
:mod:`~contrastkit.evaluators.tasks.contrast_sets.data`, a caption scorer's score matrix in
:mod:`~contrastkit.evaluators.tasks.contrast_sets.captions`, the summary over queries and its
intervals in :mod:`~contrastkit.evaluators.tasks.contrast_sets.outcomes` and the files and
reports in :mod:`~contrastkit.evaluators.tasks.contrast_sets.report`; their public names
are importable from here as well.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.metrics import retrieval_metrics_batch
from contrastkit.evaluators.tasks.contrast_sets.captions import (
    CaptionMatrix,
    CaptionRun,
    caption_score_matrix,
)
from contrastkit.evaluators.tasks.contrast_sets.data import (
    CONTRAST_COLUMNS,
    CONTRAST_METRICS,
    INTERVAL_METRICS,
    PAIRS_NOT_APPLICABLE,
    RAW_SCORES_FILE,
    RETRIEVAL_NOT_COMPUTED,
    contrast_genders,
    contrast_queries,
    describe_export,
    is_contrast_dataset,
    load_contrast,
    resolve_contrast_metrics,
)
from contrastkit.evaluators.tasks.contrast_sets.outcomes import (
    ContrastCounts,
    QueryOutcomes,
    contrast_summary,
    query_intervals,
)
from contrastkit.evaluators.tasks.contrast_sets.report import (
    ContrastLabels,
    contrast_headline,
    contrast_markdown,
    contrast_scoring,
    read_contrast_benchmark,
    write_contrast_outputs,
)
from contrastkit.interfaces import CaptionScorer, ImageTextScorer, PronounScorer
from contrastkit.models.base import batched

if TYPE_CHECKING:
    import torch

__all__ = [
    "CONTRAST_COLUMNS",
    "CONTRAST_METRICS",
    "INTERVAL_METRICS",
    "PAIRS_NOT_APPLICABLE",
    "RAW_SCORES_FILE",
    "RETRIEVAL_NOT_COMPUTED",
    "CaptionMatrix",
    "CaptionRun",
    "ContrastCounts",
    "ContrastLabels",
    "ContrastSettings",
    "QueryOutcomes",
    "caption_score_matrix",
    "contrast_genders",
    "contrast_headline",
    "contrast_markdown",
    "contrast_queries",
    "contrast_scoring",
    "contrast_summary",
    "describe_export",
    "evaluate_contrast",
    "is_contrast_dataset",
    "load_contrast",
    "query_intervals",
    "read_contrast_benchmark",
    "resolve_contrast_metrics",
    "write_contrast_outputs",
]


def _pair_cells(
    own: Mapping[str, Mapping[str, int]], queries: Sequence[tuple[str, str]]
) -> dict[int, list[int]]:
    """Per image row, the query columns pair preference needs: each query against its own
    source's masculine and feminine versions (sources with both only)."""
    cells: dict[int, list[int]] = {}
    for column, (source, _) in enumerate(queries):
        pair = own.get(source, {})
        if "masculine" in pair and "feminine" in pair:
            for gender in ("masculine", "feminine"):
                cells.setdefault(pair[gender], []).append(column)
    return cells


@dataclass(frozen=True)
class ContrastSettings:
    """How :func:`evaluate_contrast` scores a contrast set.

    Attributes:
        ks: The retrieval cut-offs K.
        batch_size: Images per forward pass of a dual encoder; (image, query) pairs per
            call of a caption scorer.
        block: Queries scored together. Default: as many as keep ``block x images`` at
            most 131,072 (2**17) similarities, between 1 and 256 queries (about 30 MB of
            working memory; larger blocks gain nothing on the CPU, whose cache the metrics'
            sorts then overflow).
        device: The torch device of a dual encoder's similarity products and the top-K
            search (``"cpu"``, ``"cuda"``, ``"cuda:1"``); the metrics run on the CPU, and
            so does the ranking of a caption scorer's scores.
        bootstrap: Resamples of queries behind each Bias@K and MaxSkew@K mean's
            ``mean_ci`` and the pair preference's ``masculine_preferred_ci``
            (:func:`query_intervals`; 0: no intervals).
        confidence: The intervals' level.
        seed: The seed of the resamples.
        metrics: ``all``, ``pairs`` or ``auto`` (:data:`CONTRAST_METRICS`).
        raw_scores: Where a caption scorer keeps its scores for reuse
            (:data:`RAW_SCORES_FILE` in the output folder; :func:`caption_score_matrix`);
            ``None``: not kept. A dual encoder's scores are recomputed (they are cheap).
    """

    ks: Sequence[int] = (5, 10)
    batch_size: int = 32
    block: int | None = None
    device: str = "cpu"
    bootstrap: int = 0
    confidence: float = 0.95
    seed: int = 0
    metrics: str = "auto"
    raw_scores: Path | None = None


def evaluate_contrast(
    dataset: Any,
    scorer: ImageTextScorer | CaptionScorer | PronounScorer,
    settings: ContrastSettings = ContrastSettings(),
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Retrieval bias and pair preference of ``scorer`` on a contrast set (GenSynth Sec. 5).

    ``scorer`` is a dual encoder (the cosine similarity of its unit embeddings) or any
    :class:`~contrastkit.interfaces.CaptionScorer` (``blip-itm:`` / ``vilt:``: the match
    logit; ``vlm:``: the caption's mean log-likelihood per token), whose scores come from
    :func:`caption_score_matrix`; the metrics are the same for both. A dual encoder costs
    one embedding per image and per query; a caption scorer one model pass per (image,
    query) pair: ``n_images x n_queries`` for the retrieval metrics (``metrics="all"``),
    ``2 x n_queries`` for pair preference alone (``"pairs"``, the ``auto`` default for a
    caption scorer: each query against its own source's two versions, exactly the cells
    ``all`` reads for it).

    The queries are scored ``block`` at a time: the block's scores against every
    image (for a dual encoder one matrix product with torch on ``device``), its retrieval
    metrics (:func:`~contrastkit.evaluators.metrics.retrieval_metrics_batch`, one call per
    block), its top-K image ids (``torch.topk``) and its own-pair scores; then the block
    is freed. Memory is bounded by ``block x images``, never ``queries x images``: about
    230 bytes per (query, image) pair of a block, nearly all of it the metrics' sorting and
    tie bookkeeping in float64 / int64, beside one float64 copy of the image embeddings
    on ``device`` (8 bytes per image and dimension); a caption scorer's whole score
    matrix (8 bytes per cell) is held, as computing it costs far more than storing it. A
    full row per query is inherent:
    NDKL (GenSynth Eq. 3) ranks every image, so no top-K shortcut can replace the row.

    The results equal a dense ``queries x images`` evaluation query by query: same records
    in the same order, the top-K ids ordered by descending similarity with ties broken by
    the lower image index (the stable order of ``argsort(-similarity)``), tied
    similarities handled by the metrics' exact expectation. Each similarity is a float64
    dot product rounded to the dtype of the dense product (float32 for float32
    embeddings), so it does not depend on ``block``, ``device``, the BLAS library or
    TF32 settings; a float32 matrix product rounds in the last bit by kernel and shape
    (the dense computation's own figures changed with the number of queries), which
    reorders near-ties. On inputs whose products are exact (ties included),
    similarities, top-K ids and pair statistics are bit for bit those of the dense
    computation, and so are the metrics with ``block=1``; a larger block can move a
    metric's last bit or two where tied images make it an expectation, because
    ``retrieval_metrics_batch`` sums that over a grid as wide as the widest row of the
    call.

    Args:
        dataset: A contrast set (:func:`load_contrast`).
        scorer: A CLIP-like dual encoder (``load_scorer``) or a caption scorer
            (``load_model`` of a ``blip-itm:``, ``vilt:`` or ``vlm:`` spec).
        settings: The cut-offs, batches, device, intervals, metrics and raw score file
            (:class:`ContrastSettings`; the defaults: K = 5 and 10, no intervals).
        progress: Called with (images embedded, total), or for a caption scorer (pairs
            scored, pairs wanted).

    Returns:
        ``{"summary": ..., "queries": [per-query records]}``; with ``bootstrap`` and the
        retrieval metrics or pairs, the summary's ``bootstrap`` is ``{"resamples",
        "confidence", "seed", "over": "queries"}``. For a caption scorer the summary's
        ``scoring`` says what was computed and at what cost (:func:`contrast_scoring`,
        which gives the same for a dual encoder's summary).

    Raises:
        DataFormatError: a dataset without images or without neutral captions.
        ConfigError: ``block`` below 1, a ``device`` torch does not know or cannot use, a
            negative ``bootstrap``, a ``confidence`` outside (0, 1), ``metrics`` not in
            :data:`CONTRAST_METRICS`, or a model that scores neither image-text
            similarity nor captions (a captioning model: ``blip:``, ``git:``, ``blip2:``).
    """
    import torch

    genders = contrast_genders(dataset)
    sources = [str(s) for s in dataset["source_id"]]
    n = len(genders)
    if n == 0:
        raise DataFormatError(_where(dataset), None, None, "the contrast set has no images")
    scorer = _contrast_scorer(scorer)
    chosen = resolve_contrast_metrics(scorer, settings.metrics)
    own, queries = contrast_queries(sources, genders, dataset["neutral_captions"])
    if not queries:
        raise DataFormatError(
            _where(dataset), None, "neutral_captions", "no neutral captions to query with"
        )
    block = _checked_block(settings, n)
    texts = [caption for _, caption in queries]
    block_scores: Callable[[int, int], torch.Tensor]
    if isinstance(scorer, ImageTextScorer):
        block_scores = _embedding_blocks(dataset, scorer, texts, settings, progress)
        scoring: _CaptionScoring | None = None  # a dual encoder's summary is as it was
    else:
        cells = None if chosen == "all" else _pair_cells(own, queries)
        run = CaptionRun(settings.batch_size, progress, settings.raw_scores)
        matrix = caption_score_matrix(dataset, scorer, texts, cells=cells, run=run)
        block_scores = _matrix_blocks(matrix)
        scoring = _caption_scoring(matrix, chosen, settings.metrics, n * len(queries))
    ranking = _Ranking(
        np.asarray(genders),
        [f"{source}:{gender}" for source, gender in zip(sources, genders, strict=True)],
        [k for k in settings.ks if k >= 1],
        chosen == "all",
    )
    outcomes = QueryOutcomes()
    records: list[dict[str, Any]] = []
    with torch.inference_mode():
        for start in range(0, len(queries), block):
            block_queries = queries[start : start + block]
            scores = block_scores(start, start + len(block_queries))
            records += ranking.block_records(block_queries, scores, own, outcomes)
            del scores
    summary = contrast_summary(
        ContrastCounts(n, len(own), len(queries)), ranking.ks, outcomes,
        retrieval=ranking.retrieval, scoring=scoring,
    )  # fmt: skip
    _add_intervals(summary, outcomes, settings, retrieval=ranking.retrieval)
    return {"summary": summary, "queries": records}


def _where(dataset: Any) -> str:
    """The folder a loaded dataset was read from, for error messages."""
    files = getattr(dataset, "cache_files", None) or [{}]
    filename = files[0].get("filename")
    return str(Path(filename).parent) if filename else "the contrast set"


def _contrast_scorer(
    scorer: ImageTextScorer | CaptionScorer | PronounScorer,
) -> ImageTextScorer | CaptionScorer:
    """``scorer``, refused when it scores neither image-text similarity nor captions."""
    if not isinstance(scorer, ImageTextScorer | CaptionScorer):
        spec = getattr(scorer, "spec", type(scorer).__name__)
        raise ConfigError(
            f"models: {spec} scores pronoun continuations only (a captioning model): contrast "
            "sets take dual encoders (open_clip:, hf-clip: ...), image-text-matching models "
            "(blip-itm:, vilt:) or generative VLMs (vlm:), which score an image against a "
            "caption"
        )
    return scorer


def _checked_block(settings: ContrastSettings, images: int) -> int:
    """The queries per block for a set of ``images`` images, once the intervals, the block
    and the device of ``settings`` are checked.

    Raises:
        ConfigError: as :func:`evaluate_contrast` says.
    """
    import torch

    bootstrap, confidence, block = settings.bootstrap, settings.confidence, settings.block
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0:
        raise ConfigError(f"bootstrap must be a whole number >= 0, not {bootstrap!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be in (0, 1), not {confidence!r}")
    if block is None:
        block = max(1, min(256, 2**17 // images))
    elif isinstance(block, bool) or not isinstance(block, int | np.integer) or block < 1:
        raise ConfigError(f"block must be a positive number of queries, not {block!r}")
    try:
        target = torch.device(settings.device)
    except (RuntimeError, TypeError, ValueError) as error:
        raise ConfigError(f"device {settings.device!r} is not a torch device ({error})") from error
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {settings.device!r}: torch sees no CUDA device")
    return int(block)


def _embedding_blocks(
    dataset: Any,
    scorer: ImageTextScorer,
    texts: Sequence[str],
    settings: ContrastSettings,
    progress: Callable[[int, int], None] | None,
) -> Callable[[int, int], torch.Tensor]:
    """A dual encoder's scores of the queries ``start:stop`` against every image, block by
    block: each image and each query embedded once, the products on ``settings.device``.

    Similarities are float64 products rounded to the dtype the dense ``text @ images.T``
    had (float32 for float32 embeddings): float32 products round differently with the
    block's shape, the BLAS kernel and the device, which would reorder near-ties.
    """
    import torch

    from contrastkit.pipeline import DatasetImage, embed_images  # torch: not on import

    target = torch.device(settings.device)
    # the encoded images are read and decoded in the image pipeline's workers
    image_embeddings = embed_images(
        scorer,
        DatasetImage.column_of(dataset.select_columns(["image"]), "image"),
        batch_size=settings.batch_size,
        progress=progress,
    )
    text_embeddings = np.concatenate(
        [scorer.encode_texts(list(chunk)) for chunk in batched(texts, 256)]
    )
    dense_dtype = np.result_type(text_embeddings, image_embeddings, np.float32)
    score_dtype = torch.float32 if dense_dtype == np.float32 else torch.float64
    image_matrix = torch.tensor(image_embeddings, dtype=torch.float64, device=target)

    def block_scores(start: int, stop: int) -> torch.Tensor:
        rows = torch.tensor(text_embeddings[start:stop], dtype=torch.float64, device=target)
        return (rows @ image_matrix.T).to(score_dtype)  # (rows, images)

    return block_scores


def _matrix_blocks(matrix: CaptionMatrix) -> Callable[[int, int], torch.Tensor]:
    """A caption scorer's scores of the queries ``start:stop`` against every image, read
    from its whole score matrix (on the CPU)."""
    import torch

    by_query = matrix.scores.T  # (queries, images)

    def block_scores(start: int, stop: int) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(by_query[start:stop]))

    return block_scores


class _CaptionScoring(TypedDict):
    """A caption scorer's ``scoring`` in the summary (:func:`_caption_scoring`)."""

    score_kind: str
    metrics: str
    requested: str
    unit: str
    model_passes: int
    all_metrics_passes: int
    computed: int
    reused: int


def _caption_scoring(
    matrix: CaptionMatrix, chosen: str, requested: str, all_passes: int
) -> _CaptionScoring:
    """The summary's ``scoring`` of a caption scorer (:func:`contrast_scoring`): what its
    scores are, the metrics ``chosen`` for the ``requested``, and what they cost."""
    return {
        "score_kind": matrix.score_kind, "metrics": chosen, "requested": requested,
        "unit": "image-query pair", "model_passes": matrix.computed + matrix.reused,
        "all_metrics_passes": all_passes, "computed": matrix.computed,
        "reused": matrix.reused,
    }  # fmt: skip


@dataclass(frozen=True)
class _Ranking:
    """What each block of queries is ranked against: the images' gender ``labels`` and
    ``ids`` (``source:gender``), the cut-offs ``ks`` (each at least 1), and whether the
    ``retrieval`` metrics (and the top-K ids) are computed or pair preference only."""

    labels: np.ndarray
    ids: list[str]
    ks: list[int]
    retrieval: bool

    def block_records(
        self,
        queries: Sequence[tuple[str, str]],
        scores: torch.Tensor,
        own: Mapping[str, Mapping[str, int]],
        outcomes: QueryOutcomes,
    ) -> list[dict[str, Any]]:
        """The records of a block of ``queries`` (source, caption) from their ``scores``
        against every image, their metrics and own-pair scores added to ``outcomes``."""
        similarity = scores.cpu().numpy()
        found: dict[str, np.ndarray] = {}
        if self.retrieval:
            found = retrieval_metrics_batch(similarity, self.labels, self.ks)
        tops = self._top_ids(scores, similarity)
        records: list[dict[str, Any]] = []
        for row, (source, caption) in enumerate(queries):
            values = {name: float(array[row]) for name, array in found.items()}
            outcomes.add_metrics(values)
            pair = own.get(source, {})
            record: dict[str, Any] = {"source_id": source, "query": caption, **values}
            if "masculine" in pair and "feminine" in pair:
                record |= outcomes.add_pair(
                    similarity[row, pair["masculine"]], similarity[row, pair["feminine"]]
                )
            if self.retrieval:
                record["top"] = [self.ids[i] for i in tops[row]]
            records.append(record)
        return records

    def _top_ids(self, scores: torch.Tensor, similarity: np.ndarray) -> np.ndarray:
        """Each row's top-K image indices (K the largest cut-off, at most the images), by
        descending score with ties broken by the lower index. ``torch.topk`` orders tied
        scores arbitrarily: take a wider candidate list, re-sort it by (-score, index) and
        fall back to a stable full sort for a row whose tie at the K-th score reaches past
        the candidates."""
        import torch

        rows, n = similarity.shape
        top_k = min(max(self.ks, default=0), n) if self.retrieval else 0
        if not top_k:
            return np.empty((rows, 0), dtype=np.int64)
        wide = min(n, 2 * top_k + 8)
        found, candidates = (t.cpu().numpy() for t in torch.topk(scores, wide))
        order = np.lexsort((candidates, -found), axis=-1)[:, :top_k]
        tops = np.take_along_axis(candidates, order, axis=1)
        if wide < n:
            for tied in np.flatnonzero(found[:, top_k - 1] <= found[:, wide - 1]):
                tops[tied] = np.argsort(-similarity[tied], kind="stable")[:top_k]
        return tops


def _add_intervals(
    summary: dict[str, Any],
    outcomes: QueryOutcomes,
    settings: ContrastSettings,
    *,
    retrieval: bool,
) -> None:
    """Add the bootstrap intervals over queries of ``settings`` to ``summary``: each
    Bias@K and MaxSkew@K mean's ``mean_ci`` (with the retrieval metrics), the pair
    preference's ``masculine_preferred_ci`` (with pairs) and what they are
    (``bootstrap``); nothing without resamples."""
    resamples, confidence, seed = settings.bootstrap, settings.confidence, settings.seed
    if not resamples:
        return
    if retrieval:
        for name, interval in query_intervals(
            outcomes.per_query, resamples, confidence, seed
        ).items():
            summary["retrieval"][name]["mean_ci"] = interval
    if outcomes.preferred:  # the share preferring the masculine version, over queries
        shares = {"masculine_preferred": outcomes.preferred}
        summary["pairs"]["masculine_preferred_ci"] = query_intervals(
            shares, resamples, confidence, seed, names=list(shares)
        )["masculine_preferred"]
    if retrieval or outcomes.preferred:
        summary["bootstrap"] = {
            "resamples": resamples, "confidence": confidence, "seed": seed, "over": "queries"
        }  # fmt: skip
