"""Run a model over a dataset: score every image once, keep raw scores, resume.

Each image is decoded once (the next batch in a thread pool while the model works on
the current one) and, for dual encoders, embedded once; its embedding serves every caption
of the resolution task and its occupation's retrieval query, and each distinct caption is
embedded once (the adapter's text cache). Captioning models score the pronoun
continuations of every template of a batch of images.

Raw scores are appended to ``raw_resolution.jsonl`` / ``raw_retrieval.jsonl`` (and
``raw_retrieval_flipped.jsonl``, the participant-subject queries of Tab. 5) in the
output folder after every batch (flushed to disk), so an interrupted run loses at most one
batch. A later run with the same model reads them back and scores only what is missing:
a record is reused when its key (row ID, image reference, template, candidate pronouns or
query) and model spec match. When all is scored, the raw files are rewritten (temporary
file, then rename) with exactly the records of this dataset, in dataset order (a file
that already holds exactly those, as a first run appends them, is left as it is).

Per batch, a dual encoder embeds the batch's images once and the batch's distinct texts
(candidate captions, retrieval and flipped queries) in one ``encode_texts`` call; every
record is then an index lookup into those matrices (:func:`_score_dual`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from contrastkit.errors import ConfigError
from contrastkit.evaluators.data import EvalItem, ImageLoader
from contrastkit.evaluators.raw import RawAppender, dumps_jsonl, read_raw
from contrastkit.evaluators.tasks.visogender.flipped import (
    FLIPPED_RAW_FILE,
    FLIPPED_TASK,
    flipped_record,
    flipped_retrieval_queries,
)
from contrastkit.evaluators.tasks.visogender.records import (
    FlippedRecord,
    ResolutionRecord,
    RetrievalRecord,
)
from contrastkit.evaluators.tasks.visogender.resolution import (
    ResolutionCase,
    case_record,
    protocol_scores_neutral,
    resolution_cases,
)
from contrastkit.evaluators.tasks.visogender.retrieval import (
    RetrievalQuery,
    query_record,
    retrieval_needs_dual,
    retrieval_queries,
)
from contrastkit.interfaces import ImageTextScorer, PronounScorer
from contrastkit.io import atomic_write_text
from contrastkit.schema import Gender

if TYPE_CHECKING:
    from contrastkit.evaluators.tasks.visogender.settings import EvalConfig
    from contrastkit.pipeline import DecodeFailure

__all__ = [
    "RAW_FILES",
    "ImageBatches",
    "ScoredRun",
    "query_of_items",
    "score_dataset",
]

RAW_FILES = {
    "resolution": "raw_resolution.jsonl",
    "retrieval": "raw_retrieval.jsonl",
    FLIPPED_TASK: FLIPPED_RAW_FILE,  # part of the retrieval task (``flipped_retrieval``)
}


@dataclass
class ScoredRun:
    """The raw records of one model on one dataset, in dataset order."""

    model: str
    kind: str
    resolution: list[ResolutionRecord] = field(default_factory=list)
    retrieval: list[RetrievalRecord] = field(default_factory=list)
    retrieval_flipped: list[FlippedRecord] = field(default_factory=list)
    reused: int = 0
    scored_images: int = 0
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ImageBatches:
    """How :func:`score_dataset` reads the images.

    Attributes:
        loader: Opens the images.
        size: Images decoded and scored together.
        progress: Called with (images done, images to do) after each batch.
    """

    loader: ImageLoader
    size: int = 32
    progress: Callable[[int, int], None] | None = None


def score_dataset(
    items: Sequence[EvalItem],
    model: ImageTextScorer | PronounScorer,
    out_dir: Path,
    config: EvalConfig,
    batches: ImageBatches,
) -> ScoredRun:
    """Score ``items`` with ``model``, reusing the raw records already in ``out_dir``.

    Args:
        items: the dataset.
        model: a dual encoder or a captioning model (see :mod:`.models`).
        out_dir: the model's output folder (raw JSONL files live here).
        config: tasks and options.
        batches: the image loader, the images per batch and the progress callback
            (:class:`ImageBatches`).

    Returns:
        The records of this dataset, in dataset order.

    Raises:
        DataFormatError: an image is missing or cannot be decoded (checked up front).
        ConfigError: only ``retrieval`` asked of a captioning model.
    """
    run = ScoredRun(
        model=model.spec, kind="dual" if isinstance(model, ImageTextScorer) else "captioning"
    )
    plan = _plan(items, _runnable_tasks(model, config, run), config)
    paths = {task: out_dir / RAW_FILES[task] for task in RAW_FILES}
    done = _Stored.read(paths, plan.tasks, model.spec)
    missing_cases: dict[str, list[ResolutionCase]] = {}
    for case in plan.cases:
        if case.key not in done.resolution:
            missing_cases.setdefault(case.item.key, []).append(case)
    todo = [item for item in items if plan.needs(item, done, missing_cases)]
    run.reused = len(done.resolution) + len(done.retrieval) + len(done.flipped)
    batches.loader.check(todo)
    writers = {task: RawAppender(paths[task], done.of(task).values()) for task in plan.tasks}
    scorer = _BatchScorer(model, plan, done, missing_cases, writers, config.seed)
    try:
        if batches.progress is not None:
            batches.progress(0, len(todo))
        for batch, images in _decoded(todo, batches.loader, model, batches.size):
            scorer.score(batch, images)
            run.scored_images += len(batch)
            if batches.progress is not None:
                batches.progress(run.scored_images, len(todo))
    finally:
        for writer in writers.values():
            writer.close()
    _collect(run, plan, done, paths)
    return run


def _runnable_tasks(
    model: ImageTextScorer | PronounScorer, config: EvalConfig, run: ScoredRun
) -> list[str]:
    """The tasks of ``config`` that ``model`` can run: a captioning model cannot retrieve
    (its skipped task noted in ``run``).

    Raises:
        ConfigError: only ``retrieval`` asked of a captioning model.
    """
    tasks = list(config.tasks)
    if "retrieval" in tasks and not isinstance(model, ImageTextScorer):
        if tasks == ["retrieval"]:
            raise ConfigError(retrieval_needs_dual(model.spec))
        tasks.remove("retrieval")
        run.skipped.append("retrieval (captioning models cannot retrieve)")
    return tasks


@dataclass(frozen=True)
class _Stored:
    """A run's records by key, per task: those read back from its raw files (the records
    this module wrote, of the run's model), then those scored (:class:`_BatchScorer`
    adds them). A task the run does not do has none."""

    resolution: dict[str, ResolutionRecord]
    retrieval: dict[str, RetrievalRecord]
    flipped: dict[str, FlippedRecord]

    @classmethod
    def read(cls, paths: Mapping[str, Path], tasks: Sequence[str], model: str) -> _Stored:
        """The records of ``model`` in the raw files (``paths``) of ``tasks``."""
        stored = {task: read_raw(paths[task], model) for task in tasks}
        return cls(
            resolution=cast("dict[str, ResolutionRecord]", stored.get("resolution", {})),
            retrieval=cast("dict[str, RetrievalRecord]", stored.get("retrieval", {})),
            flipped=cast("dict[str, FlippedRecord]", stored.get(FLIPPED_TASK, {})),
        )

    def of(self, task: str) -> Mapping[str, Mapping[str, object]]:
        """The records of ``task`` (a key of :data:`RAW_FILES`) by key."""
        by_task: dict[str, Mapping[str, Mapping[str, object]]] = {
            "resolution": self.resolution,
            "retrieval": self.retrieval,
            FLIPPED_TASK: self.flipped,
        }
        return by_task[task]


@dataclass(frozen=True)
class _Plan:
    """What a run scores: its ``tasks`` (the flipped queries' task included when there are
    any), the resolution ``cases``, the retrieval and flipped queries, and, by item key,
    each item's query (``query_of``, ``flipped_of``) and the key of its record in the raw
    retrieval and flipped files (``retrieval_keys``, ``flipped_keys``)."""

    tasks: list[str]
    cases: list[ResolutionCase]
    queries: list[RetrievalQuery]
    flipped: list[RetrievalQuery]
    query_of: dict[str, RetrievalQuery]
    flipped_of: dict[str, RetrievalQuery]
    retrieval_keys: dict[str, str]
    flipped_keys: dict[str, str]

    def needs(
        self,
        item: EvalItem,
        done: _Stored,
        missing_cases: Mapping[str, list[ResolutionCase]],
    ) -> bool:
        """Whether ``item`` has a case, a retrieval or a flipped record still to score."""
        key = item.key
        return (
            key in missing_cases
            or (key in self.retrieval_keys and self.retrieval_keys[key] not in done.retrieval)
            or (key in self.flipped_keys and self.flipped_keys[key] not in done.flipped)
        )


def _plan(items: Sequence[EvalItem], tasks: list[str], config: EvalConfig) -> _Plan:
    """The :class:`_Plan` of ``tasks`` on ``items``."""
    neutral = config.neutral or protocol_scores_neutral(config.protocol)
    cases = resolution_cases(items, neutral=neutral) if "resolution" in tasks else []
    queries = retrieval_queries(items) if "retrieval" in tasks else []
    query_of = {item.key: query for query in queries for item in query.items}
    flipped = (
        flipped_retrieval_queries(items)
        if "retrieval" in tasks and config.flipped_retrieval
        else []
    )
    flipped_of = {item.key: query for query in flipped for item in query.items}
    return _Plan(
        tasks=[*tasks, FLIPPED_TASK] if flipped else list(tasks),
        cases=cases,
        queries=queries,
        flipped=flipped,
        query_of=query_of,
        flipped_of=flipped_of,
        retrieval_keys={
            item.key: f"{item.key}|{query_of[item.key].text}" for item in query_of_items(queries)
        },
        flipped_keys={key: f"{key}|{query.text}" for key, query in flipped_of.items()},
    )


@dataclass(frozen=True)
class _BatchScorer:
    """Scores one batch of images after another for a run (:func:`score_dataset`): the
    records of each batch are appended to the raw files (``writers``) and added to
    ``done``; ``missing`` holds the unscored resolution cases by item key, ``seed`` the
    option order of multiple-choice questions."""

    model: ImageTextScorer | PronounScorer
    plan: _Plan
    done: _Stored
    missing: Mapping[str, list[ResolutionCase]]
    writers: Mapping[str, RawAppender]
    seed: int

    def score(self, batch: Sequence[EvalItem], images: Any) -> None:
        """Score ``batch`` (its decoded ``images``, or pixels), then write and keep its
        records."""
        if isinstance(self.model, ImageTextScorer):
            resolution, retrieval, flipped = self._dual(batch, images)
        else:
            resolution = _score_captioning(self.model, batch, images, self.missing, self.seed)
            retrieval, flipped = [], []
        new: tuple[tuple[str, Sequence[Mapping[str, object]]], ...] = (
            ("resolution", resolution),
            ("retrieval", retrieval),
            (FLIPPED_TASK, flipped),
        )
        for task, records in new:
            if task in self.writers:
                self.writers[task].write(records)
        self.done.resolution.update((record["key"], record) for record in resolution)
        self.done.retrieval.update((record["key"], record) for record in retrieval)
        self.done.flipped.update((record["key"], record) for record in flipped)

    def _dual(self, batch: Sequence[EvalItem], images: Any) -> _BatchRecords:
        import torch  # not on import: the CLI starts without it

        model = self.model
        assert isinstance(model, ImageTextScorer)
        embeddings = (
            model.encode_pixels(images)  # type: ignore[attr-defined]
            if isinstance(images, torch.Tensor)
            else model.encode_images(images)
        )
        plan, done = self.plan, self.done
        work = _BatchWork(
            self.missing,
            _unscored(batch, plan.retrieval_keys, plan.query_of, done.retrieval),
            _unscored(batch, plan.flipped_keys, plan.flipped_of, done.flipped),
        )
        return _score_dual(model, batch, embeddings, work)


def _collect(
    run: ScoredRun,
    plan: _Plan,
    done: _Stored,
    paths: Mapping[str, Path],
) -> None:
    """Put each task's records of the dataset into ``run``, in dataset order, and rewrite
    its raw file with exactly those (:func:`_finish`)."""
    if "resolution" in plan.tasks:
        run.resolution = [done.resolution[case.key] for case in plan.cases]
        _finish(paths["resolution"], run.resolution, done.resolution)
    if "retrieval" in plan.tasks:
        run.retrieval = [
            done.retrieval[plan.retrieval_keys[item.key]] for item in query_of_items(plan.queries)
        ]
        _finish(paths["retrieval"], run.retrieval, done.retrieval)
    if FLIPPED_TASK in plan.tasks:
        run.retrieval_flipped = [
            done.flipped[plan.flipped_keys[item.key]] for item in query_of_items(plan.flipped)
        ]
        _finish(paths[FLIPPED_TASK], run.retrieval_flipped, done.flipped)


def _finish(
    path: Path, records: Sequence[Mapping[str, object]], written: Mapping[str, object]
) -> None:
    """Rewrite the raw file ``path`` with exactly ``records``, in order, unless it holds
    them already. It holds the records of ``written`` in its order (those kept when the
    run started, then those appended), so when their keys are those of ``records``, in
    order (a first run, or a rerun that appended in dataset order), it is left as is."""
    if len(written) != len(records) or any(
        key != record["key"] for key, record in zip(written, records, strict=True)
    ):
        atomic_write_text(path, dumps_jsonl(records))


def _decoded(
    todo: Sequence[EvalItem], loader: ImageLoader, model: Any, batch_size: int
) -> Iterator[tuple[Sequence[EvalItem], Any]]:
    """Each batch of ``todo`` with its images, from the image pipeline
    (:mod:`contrastkit.pipeline`): preprocessed pixels on the model's device when the
    model has a pipeline preprocessing, else decoded PIL images. Worker processes prepare
    the next batches while the model works on this one."""
    from contrastkit.pipeline import image_batches

    def located(failure: DecodeFailure) -> Exception:
        return todo[failure.index].error(f"image cannot be decoded: {failure.message}")

    sources = [loader.source(item) for item in todo]
    for batch in image_batches(sources, model, batch_size=batch_size, on_error=located):
        images = batch.pixels if batch.pixels is not None else batch.images
        yield todo[batch.indices.start : batch.indices.stop], images


def _unscored(
    batch: Sequence[EvalItem],
    keys: Mapping[str, str],
    query_of: Mapping[str, RetrievalQuery],
    done: Mapping[str, object],
) -> dict[str, RetrievalQuery]:
    """The query of each item of ``batch`` whose record (key in ``keys``) is not in
    ``done``, by item key."""
    return {
        item.key: query_of[item.key]
        for item in batch
        if item.key in keys and keys[item.key] not in done
    }


#: The resolution, retrieval and flipped-retrieval records of one batch.
_BatchRecords = tuple[list[ResolutionRecord], list[RetrievalRecord], list[FlippedRecord]]


@dataclass(frozen=True)
class _BatchWork:
    """What one batch still needs scored, by item key: its resolution cases
    (``missing``), its retrieval query and its flipped query."""

    missing: Mapping[str, list[ResolutionCase]]
    retrieval: Mapping[str, RetrievalQuery]
    flipped: Mapping[str, RetrievalQuery]


def _score_dual(
    model: ImageTextScorer, batch: Sequence[EvalItem], embeddings: Any, work: _BatchWork
) -> _BatchRecords:
    """The resolution, retrieval and flipped-retrieval records of one batch of a dual
    encoder, from the batch's image ``embeddings`` (one row per item, unit norm), for the
    cases and queries of ``work``.

    The batch's distinct texts (its cases' candidate captions, its retrieval and flipped
    queries) are embedded in one ``encode_texts`` call (which fills a caching adapter's
    cache in one batched text pass); the records are then index lookups into that
    matrix. Each similarity is the float32 product the per-case code computed before:
    a case's candidate rows (one contiguous block, as ``encode_texts`` of the case's
    captions returned them) times the image's embedding, and a query's row dotted with
    it, so the raw scores are bit for bit those of earlier runs (a single
    images x texts matrix product rounds differently in the last bit: a resumed run
    would mix two roundings).
    """
    column: dict[str, int] = {}  # distinct text -> row of the text matrix
    candidate_rows: list[int] = []  # every case's captions, case after case
    plan: list[tuple[int, list[tuple[ResolutionCase, tuple[Gender, ...], int]]]] = []
    for position, item in enumerate(batch):
        cases = []
        for case in work.missing.get(item.key, ()):
            texts = case.captions
            cases.append((case, tuple(texts), len(candidate_rows)))
            candidate_rows.extend(column.setdefault(text, len(column)) for text in texts.values())
        plan.append((position, cases))
    for queries in (work.retrieval, work.flipped):
        for text in (query.text for query in queries.values()):
            column.setdefault(text, len(column))
    matrix = model.encode_texts(list(column))
    if not isinstance(matrix, np.ndarray) or not isinstance(embeddings, np.ndarray):
        matrix, embeddings = _host(matrix), _host(embeddings)  # tensors: to the host once
    candidates = matrix[candidate_rows]  # a copy: each case's rows contiguous
    resolution: list[ResolutionRecord] = []
    retrieval_records: list[RetrievalRecord] = []
    flipped_records: list[FlippedRecord] = []
    spec = model.spec
    for position, cases in plan:
        embedding = embeddings[position]
        for case, genders, start in cases:
            sims = candidates[start : start + len(genders)] @ embedding
            scores = dict(zip(genders, sims.tolist(), strict=True))
            resolution.append(case_record(case, scores, spec))
        item = batch[position]
        query = work.retrieval.get(item.key)
        if query is not None:
            score = float(matrix[column[query.text]] @ embedding)
            retrieval_records.append(query_record(query, item, score, spec))
        query = work.flipped.get(item.key)
        if query is not None:
            score = float(matrix[column[query.text]] @ embedding)
            flipped_records.append(flipped_record(query, item, score, spec))
    return resolution, retrieval_records, flipped_records


def _host(array: Any) -> np.ndarray:
    """A float32 numpy array of ``array`` (a torch tensor on any device, or array-like)."""
    if hasattr(array, "detach"):
        array = array.detach().float().cpu().numpy()
    return np.asarray(array, dtype=np.float32)


def query_of_items(queries: Sequence[RetrievalQuery]) -> list[EvalItem]:
    """The items of all queries, query by query."""
    return [item for query in queries for item in query.items]


def _score_captioning(
    model: PronounScorer,
    batch: Sequence[EvalItem],
    images: Sequence[Any],
    missing: Mapping[str, list[ResolutionCase]],
    seed: int = 0,
) -> list[ResolutionRecord]:
    """Continuation log-probabilities of every missing case of a batch, one call per
    (template, candidate set); a multiple-choice VLM answers lettered questions instead,
    options shuffled with ``seed`` (:mod:`.multiple_choice`)."""
    from contrastkit.evaluators.tasks.visogender.multiple_choice import (
        is_multiple_choice,
        score_multiple_choice,
    )

    groups: dict[tuple[str, tuple[str, ...]], list[tuple[int, ResolutionCase]]] = {}
    for position, item in enumerate(batch):
        for case in missing.get(item.key, []):
            names = tuple(gender.value for gender in case.genders)
            groups.setdefault((case.template.key, names), []).append((position, case))
    records: list[ResolutionRecord] = []
    for members in groups.values():
        if is_multiple_choice(model):
            records += score_multiple_choice(
                model, [images[p] for p, _ in members], [case for _, case in members], seed
            )
            continue
        continuations = members[0][1].continuations
        logprobs = model.continuation_logprobs(
            [images[position] for position, _ in members],
            [case.prefix for _, case in members],
            list(continuations.values()),
        )
        for (_, case), row in zip(members, np.asarray(logprobs), strict=True):
            scores = dict(zip(continuations, row.tolist(), strict=True))
            records.append(case_record(case, scores, model.spec))
    return records
