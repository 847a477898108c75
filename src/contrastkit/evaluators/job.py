"""The evaluation jobs, callable from Python exactly as the command line calls them.

* :func:`evaluate` (``contrastkit evaluate``): score models on a VisoGender-style dataset
  (resolution and retrieval bias, VisoGender Sec. 3.4-3.5, with the Appendix F labor
  statistics and Appendix G error analysis) or on GenSynth / GenSwap contrast sets
  (retrieval bias of gender-neutral queries and pair preference, GenSynth Sec. 5).
* :func:`compare_results` (``contrastkit report``): several models' results side by side
  (VisoGender Tab. 2 and Tab. 3 shapes).

Each takes one frozen config that validates itself (a bad value raises
:class:`~contrastkit.errors.ConfigError` naming the field) and returns a typed result.

Example:
    >>> from contrastkit.evaluators.job import EvaluateConfig, evaluate
    >>> from contrastkit.evaluators.runner import EvalConfig
    >>> result = evaluate(EvaluateConfig(  # doctest: +SKIP
    ...     data=("data/OP.tsv", "data/OO.tsv"),
    ...     models=("open_clip:ViT-B-32/openai",),
    ...     out="results",
    ...     settings=EvalConfig(neutral=True),
    ... ))
    >>> result.evaluations[0].folder  # doctest: +SKIP
    PosixPath('results/open_clip-ViT-B-32-openai')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from contrastkit.config import ModelConfig, require
from contrastkit.curation.urls.config import CheckConfig
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.hub import hub_name
from contrastkit.evaluators.models.registry import parse_spec
from contrastkit.evaluators.report.results import headline, load_benchmark, model_slug
from contrastkit.evaluators.runner import EvalConfig, retrieval_needs_dual
from contrastkit.interfaces import (
    CaptionScorer,
    ImageTextScorer,
    ProgressFactory,
    PronounScorer,
    progress_stage,
)
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.store import default_image_store, image_store_for
from contrastkit.tsv import VISOGENDER, is_bundled, resolve_data

if TYPE_CHECKING:
    from contrastkit.evaluators.data import EvalItem, ImageLoader, SkippedRow

__all__ = [
    "Comparison",
    "EvaluateConfig",
    "EvaluateResult",
    "ModelEvaluation",
    "ReportConfig",
    "compare_results",
    "default_image_store",
    "evaluate",
]

#: ``EvaluateConfig.task`` (``--task``) of stereotype probing.
STEREOTYPE = "stereotype"


def _strings(value: object, name: str) -> tuple[str, ...]:
    """A tuple (or list) of paths or strings as a tuple of strings; a lone string or path
    is refused (iterating it would give characters)."""
    if isinstance(value, str | Path) or not isinstance(value, Iterable):
        raise ConfigError(f"{name}: takes a tuple of strings or paths, not {value!r}")
    return tuple(str(item) for item in value)


@dataclass(frozen=True)
class EvaluateConfig:
    """What ``contrastkit evaluate`` does, as one value (strings are taken as paths, lists
    as tuples).

    Attributes:
        data: official-format TSVs, folders of them, saved Hugging Face datasets,
            ``contrastkit export`` folders, or Hub datasets as ``hf:USER/NAME`` (also
            ``hf:FOLDER`` for a folder laid out like a Hub repository), or ``visogender``:
            the official VisoGender OP and OO sets bundled with contrastkit
            (:func:`~contrastkit.evaluators.data.visogender_files`; a local folder of that
            name is given as ``./visogender``). Either all VisoGender-style data, all
            contrast-set exports, or all stereotype probe sets (:mod:`contrastkit.probes`:
            a probe TSV / JSONL, a ``build stereoset`` folder, its export or ``hf:`` copy).
        models: model specs (``open_clip:ARCH/TAG``, ``hf-clip:ID``, ``blip:ID`` ...; see
            :mod:`contrastkit.evaluators.models.registry`); each gets its own subfolder of
            ``out``.
        out: output folder.
        model: device, dtype, batch size and download permission of every model.
        store: the image store of ``contrastkit urls check --store``, where image URLs
            are read from; ``None``: :func:`default_image_store` for the bundled sets or
            when URLs are fetched, else no store.
        split: the split of a saved dataset dict (default: its only split, or ``test``).
        settings: tasks and metric options (:class:`~contrastkit.evaluators.runner.EvalConfig`):
            among them the resolution ``protocol`` (``visogender-official``, the default
            that reproduces the published tables, or ``two-way``) and the ``bootstrap``
            resamples and ``confidence`` of the intervals; contrast sets use its ``ks``
            and, for the intervals of their mean Bias@K and MaxSkew@K over queries,
            ``bootstrap``, ``confidence`` and ``seed``.
        fetch: before scoring, check the image URLs the store does not hold yet with the
            URL checker (:mod:`contrastkit.curation.urls`, its safety rules and
            ``network`` settings) and keep every image that decodes in the store; images
            already in the store are never fetched again. ``None`` (the default): on when
            ``data`` is ``visogender``, off otherwise (then the evaluator never touches
            the network).
        skip_missing: leave out the rows whose image is not available (a missing file, a
            URL the store does not hold or that failed when fetched, a row ``urls
            maintain`` flagged ``retired`` or ``content_changed``); they are counted and
            listed (row ID, URL, reason) in each model's ``benchmark.json``
            (``skipped_rows``) and ``report.md``. Off, a missing image is an error naming
            every such row. ``None`` (the default): on when ``data`` is ``visogender``.
        network: how URLs are fetched when ``fetch`` is on
            (:class:`~contrastkit.curation.urls.CheckConfig`: timeouts, retries, and the
            private networks and ``resolve`` mappings tests and intranet mirrors need).
        task: a task that is not told by the data alone: ``stereotype``
            (VLStereoSet-style stereotype probing, :mod:`contrastkit.evaluators.stereotype`;
            every ``data`` item must then be a probe set). ``None`` (the default): from
            the data: probe sets are probed for stereotypes, contrast-set exports get the
            GenSynth evaluation, anything else the VisoGender tasks of ``settings``.
        contrast_metrics: what a contrast set gets
            (:data:`~contrastkit.evaluators.contrast.CONTRAST_METRICS`): ``all`` (retrieval
            metrics and pair preference), ``pairs`` (pair preference only) or ``auto``
            (the default): ``all`` for dual encoders, ``pairs`` for caption scorers
            (``blip-itm:``, ``vilt:``, ``vlm:``), whose retrieval metrics cost one model
            pass per image and query (``n_images x n_queries``), against two per query for
            pair preference.

    Raises:
        ConfigError: naming the field: no data or no models, a malformed ``hf:`` name or
            model spec, a model given twice (or, in a contrived case
            :func:`~contrastkit.evaluators.report.results.model_slug` does not hash, two
            whose output folders would coincide).
    """

    data: tuple[str, ...]
    models: tuple[str, ...]
    out: Path
    model: ModelConfig = field(default_factory=ModelConfig)
    store: Path | None = None
    split: str | None = None
    settings: EvalConfig = field(default_factory=EvalConfig)
    fetch: bool | None = None
    skip_missing: bool | None = None
    network: CheckConfig = field(default_factory=CheckConfig)
    task: str | None = None
    contrast_metrics: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _strings(self.data, "data"))
        object.__setattr__(
            self, "models", tuple(s.strip() for s in _strings(self.models, "models"))
        )
        object.__setattr__(self, "out", Path(self.out))
        if self.store is not None:
            object.__setattr__(self, "store", Path(self.store))
        require(bool(self.data), "data", "give at least one dataset")
        for item in self.data:
            hub_name(item)  # raises ConfigError for a malformed hf: name
        require(bool(self.models), "models", "give at least one model spec")
        for spec in self.models:
            parse_spec(spec)
        folders: dict[str, str] = {}
        for spec in self.models:
            other = folders.get(model_slug(spec))
            if other is not None:
                raise ConfigError(
                    f"models: {spec} given twice" if other == spec else
                    f"models: {other} and {spec} would share the output folder "
                    f"{model_slug(spec)}; give one of them as an absolute path"
                )  # fmt: skip
            folders[model_slug(spec)] = spec
        require(isinstance(self.model, ModelConfig), "model", "must be a ModelConfig")
        require(isinstance(self.settings, EvalConfig), "settings", "must be an EvalConfig")
        require(isinstance(self.network, CheckConfig), "network", "must be a CheckConfig")
        require(self.split is None or bool(self.split.strip()), "split", "must not be empty")
        require(
            self.task in (None, STEREOTYPE),
            "task",
            f"must be None or {STEREOTYPE!r}, not {self.task!r}",
        )
        require(
            self.contrast_metrics in ("auto", "all", "pairs"),
            "contrast_metrics",
            f"must be auto, all or pairs, not {self.contrast_metrics!r}",
        )

    @property
    def bundled(self) -> bool:
        """Whether ``data`` names the bundled VisoGender sets (``visogender``)."""
        return any(is_bundled(item) for item in self.data)

    @property
    def fetching(self) -> bool:
        """Whether URLs missing from the store are fetched (``fetch``, or its default)."""
        return self.bundled if self.fetch is None else self.fetch

    @property
    def skipping(self) -> bool:
        """Whether rows without an image are left out (``skip_missing``, or its default)."""
        return self.bundled if self.skip_missing is None else self.skip_missing

    @property
    def image_store(self) -> Path | None:
        """The store image URLs are read from (and fetched into): ``store``, or
        :func:`default_image_store` for the bundled sets or when URLs are fetched
        (:func:`~contrastkit.evaluators.data.image_store_for`, the rule ``validate`` and
        ``export harness`` follow too)."""
        return image_store_for(self.store, bundled=self.bundled, fetching=self.fetching)


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

    def to_dict(self) -> dict[str, Any]:
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


def skipped_rows_json(rows: Sequence[SkippedRow]) -> dict[str, Any]:
    """The ``skipped_rows`` entry of the results: ``{"count": n, "rows": [{"idx",
    "context", "source", "line", "url", "reason"}, ...]}``."""
    return {"count": len(rows), "rows": [row.to_dict() for row in rows]}


@dataclass(frozen=True)
class EvaluateResult:
    """What :func:`evaluate` did.

    Attributes:
        kind: ``visogender`` or ``contrast``.
        data: the local data evaluated (Hub datasets as their copies under ``out/_data``).
        evaluations: one per model (per model and data folder, for contrast sets), in
            the order of the config.
        comparison: ``out/comparison.md`` when several models were compared, else None.
        store: the image store URLs were read from (and fetched into), if any.
        checked: URLs checked in this run (``fetch``): those the store did not hold.
        fetched: URLs of those whose image was fetched into the store.
        skipped_rows: the rows left out because their image is not available.
    """

    kind: Literal["visogender", "contrast", "stereotype"]
    data: tuple[Path, ...]
    evaluations: tuple[ModelEvaluation, ...]
    comparison: Path | None = None
    store: Path | None = None
    checked: int = 0
    fetched: int = 0
    skipped_rows: tuple[SkippedRow, ...] = ()


def evaluate(config: EvaluateConfig, *, progress: ProgressFactory | None = None) -> EvaluateResult:
    """Score every model of ``config`` on its data and write the reports.

    Per model, into ``out/<model>/`` (a folder named after the spec): for VisoGender-style
    data ``raw_resolution.jsonl``, ``raw_retrieval.jsonl`` and
    ``raw_retrieval_flipped.jsonl`` (per-image scores, reused by a later run; the last
    holds the participant-subject queries of Tab. 5), ``benchmark.json`` (VisoGender
    Appendix J structure with ``retrieval_flipped`` beside ``retrieval_bias``, the resolution
    protocol in its metadata, the paper's overall accuracy, and ``x_ci`` bootstrap
    intervals beside the headline figures), ``report.md`` and ``plots/*.png`` and ``.svg``
    (intervals as ``[low, high]`` and error bars), and with several models
    ``out/comparison.md`` with ``comparison.png`` / ``.svg``; for contrast sets
    ``raw_contrast.jsonl`` (and for a caption scorer ``raw_contrast_scores.jsonl``, its
    image-query scores, reused by a later run), ``benchmark.json``, ``report.md`` and
    ``plots/contrast_bias.png`` / ``.svg`` (per data folder when there are several); for
    stereotype probe sets (``task="stereotype"``, or probe-set data)
    ``raw_stereotype.jsonl``, ``benchmark.json``, ``report.md`` and
    ``plots/shifting_scores.png`` / ``.svg``
    (:func:`~contrastkit.evaluators.stereotype.evaluate_stereotype`).

    With ``fetch`` (the default for ``data=("visogender",)``) the URLs the image store does
    not hold are first checked into it (:mod:`contrastkit.curation.urls`); with
    ``skip_missing`` (also the default there) rows whose image is still not available are
    left out and listed in every report (``skipped_rows``).

    Everything that can be checked before a model runs is: the output folder is writable,
    the data loads, every image is found (or the rows without one are set aside), the tasks
    suit the models.

    Args:
        config: what to evaluate.
        progress: opens a progress display per model (see :class:`ProgressFactory`).

    Returns:
        The folders and files written, the counts, and each model's headline numbers.

    Raises:
        ResourceError: ``out`` cannot be written.
        ConfigError: contrast sets mixed with VisoGender-style data, a task a model cannot
            run, a missing image store, a device or dtype this machine lacks.
        DataFormatError: data that cannot be read, a missing or broken image (without
            ``skip_missing``), no row with an image (with it).
        ModelNotFoundError: a model neither on disk nor cached, or one that does not load.
    """
    check_writable(config.out, "evaluation results")
    paths = _local_data(config)
    if config.task == STEREOTYPE or _is_probes(paths):
        from contrastkit.evaluators.stereotype import evaluate_stereotype

        _require_probes(config, paths)
        return evaluate_stereotype(config, paths, progress)
    if _is_contrast(paths):
        return _evaluate_contrast(config, paths, progress)
    return _evaluate_visogender(config, paths, progress)


def _local_data(config: EvaluateConfig) -> tuple[Path, ...]:
    """``config.data`` as local paths: Hub datasets saved under ``out/_data``."""
    from contrastkit.evaluators.hub import materialize_hub_dataset

    paths: list[Path] = []
    for given in config.data:
        name = hub_name(given)
        if name is None:
            paths.extend(resolve_data((given,)))
        else:
            paths.append(materialize_hub_dataset(name, config.out / "_data" / model_slug(name)))
    return tuple(dict.fromkeys(paths))


def _is_probes(paths: Sequence[Path]) -> bool:
    """Whether any of ``paths`` is a stereotype probe set (:mod:`contrastkit.probes`)."""
    from contrastkit.probes import is_probe_set

    return any(is_probe_set(path) for path in paths)


def _require_probes(config: EvaluateConfig, paths: Sequence[Path]) -> None:
    """Refuse data that is not all probe sets, for the stereotype task."""
    from contrastkit.probes import is_probe_set

    other = [str(path) for path in paths if not is_probe_set(path)]
    if other:
        asked = "task stereotype needs" if config.task == STEREOTYPE else "data: mixes"
        raise ConfigError(
            f"{asked} stereotype probe sets (a probe TSV / JSONL, a `contrastkit build "
            f"stereoset` folder or its export); not probe sets: {', '.join(other)}"
            + ("" if config.task == STEREOTYPE else "; evaluate them in separate runs")
        )


def _is_contrast(paths: Sequence[Path]) -> bool:
    from contrastkit.evaluators.contrast import is_contrast_dataset

    flags = [is_contrast_dataset(path) for path in paths]
    if any(flags) and not all(flags):
        contrast = ", ".join(str(p) for p, flag in zip(paths, flags, strict=True) if flag)
        other = ", ".join(str(p) for p, flag in zip(paths, flags, strict=True) if not flag)
        raise ConfigError(
            f"data: mixes contrast sets ({contrast}) with VisoGender-style data ({other}); "
            "evaluate them in separate runs"
        )
    return all(flags)


def _image_loader(store: Path | None, *, fetching: bool = False) -> ImageLoader:
    from contrastkit.evaluators.data import ImageLoader

    if store is not None and store.exists() and not store.is_dir():
        raise ConfigError(f"store: {store} is a file, not an image store folder")
    if store is not None and not fetching and not store.is_dir():
        raise ConfigError(
            f"store: {store} is not a folder; pass the image store that "
            "`contrastkit urls check --store` filled"
        )
    return ImageLoader(store)


def _fetch_missing(
    items: Sequence[EvalItem],
    loader: ImageLoader,
    config: EvaluateConfig,
    progress: ProgressFactory | None,
) -> tuple[dict[str, str], int]:
    """Check the URLs of ``items`` the store does not hold into it (the URL checker, with
    ``config.network``); rows that will be left out as retired are not fetched.

    Returns:
        Why each URL that failed is not available (URL -> reason), and how many URLs
        were checked (those the store lacked).
    """
    from urllib.parse import urlparse

    from contrastkit.curation.urls import check_urls
    from contrastkit.evaluators.data import RETIRED_CODES, maintenance_flags

    assert loader.store is not None
    urls = list(
        dict.fromkeys(
            item.image_ref
            for item in items
            if urlparse(item.image_ref).scheme in ("http", "https")
            and loader.missing(item) is not None
            and not (
                config.skipping
                and any(f in RETIRED_CODES for f in maintenance_flags(item.row.error_codes))
            )
        )
    )
    if not urls:
        return {}, 0
    check_writable(loader.store.root, "the image store")
    with progress_stage(progress, "fetching images", len(urls)) as update:
        done = 0

        def advance(_: object) -> None:
            nonlocal done
            done += 1
            update(done, len(urls))

        checks = check_urls(urls, config.network, store=loader.store, on_result=advance)
    loader.refresh()
    failures = {}
    for check in checks:
        if not check.ok:
            code = check.status.value
            if check.http_status is not None and not 200 <= check.http_status < 300:
                code += f":{check.http_status}"
            failures[check.url] = f"{code} when fetched" + (
                f": {check.detail}" if check.detail else ""
            )
    return failures, len(urls)


def _available_items(
    config: EvaluateConfig,
    paths: tuple[Path, ...],
    items: list[EvalItem],
    progress: ProgressFactory | None,
) -> tuple[list[EvalItem], ImageLoader, list[SkippedRow], tuple[int, int]]:
    """The items to score, their image loader, the rows left out and the URLs checked
    and fetched: fetch what the store lacks (``fetch``), then leave out
    (``skip_missing``) or refuse the rows still without an image."""
    loader = _image_loader(config.image_store, fetching=config.fetching)
    failures: dict[str, str] = {}
    checked = 0
    if config.fetching:
        failures, checked = _fetch_missing(items, loader, config, progress)
    fetched = (checked - len(failures), checked)
    if not config.skipping:
        loader.check(items, failures)
        return items, loader, [], fetched
    kept, skipped = loader.available(items, failures)
    if not kept:
        reasons = "; ".join(f"{row.idx}: {row.reason}" for row in skipped[:3])
        where = f"the image store {loader.store.root}" if loader.store else "an image store"
        raise DataFormatError(
            ", ".join(p.name for p in paths),
            None,
            None,
            f"no row has its image available: all {len(skipped)} were left out ({reasons}"
            + ("; ..." if len(skipped) > 3 else "")
            + f"). Images of URLs are read from {where}: "
            + ("check this machine's network access (the reasons above say what failed), "
               if failures else "fetch them with --fetch, ")
            + "or pass --store DIR with a store that `contrastkit urls check FILE --store DIR` "
            "filled elsewhere",
        )  # fmt: skip
    return kept, loader, skipped, fetched


def _data_labels(paths: Sequence[Path]) -> list[str]:
    """How the reports name the data: a bundled VisoGender file as ``visogender:NAME``
    (never the installation's path), anything else as given."""
    from contrastkit.evaluators.data import visogender_files

    bundled = set(visogender_files())
    return [f"{VISOGENDER}:{path.name}" if path in bundled else str(path) for path in paths]


def _folder_links(out: Path, evaluations: Sequence[ModelEvaluation]) -> str:
    """The comparison's list of each model's folder and report, linked relative to ``out``."""
    lines = ["", "## Reports", ""]
    for entry in evaluations:
        folder = entry.folder.relative_to(out).as_posix()
        lines.append(f"- `{entry.model}`: [{folder}/report.md]({folder}/report.md)")
    return "\n".join(lines) + "\n"


def _evaluate_visogender(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """VisoGender resolution and retrieval: one folder per model, a comparison of all."""
    from contrastkit.evaluators.data import load_items
    from contrastkit.evaluators.models import load_model
    from contrastkit.evaluators.report import benchmark, comparison_markdown, write_outputs
    from contrastkit.evaluators.report.plots import write_comparison_plots
    from contrastkit.evaluators.runner import score_dataset

    settings = config.settings
    for spec in config.models:
        if not parse_spec(spec).capabilities & {"embeddings", "pronouns"}:
            raise ConfigError(
                f"models: {spec} is an image-text-matching model: it scores captions for "
                "stereotype probing (a probe set, --task stereotype), not VisoGender pronouns"
            )
    if settings.tasks == ("retrieval",):
        for spec in config.models:
            if "embeddings" not in parse_spec(spec).capabilities:
                raise ConfigError(f"models: {retrieval_needs_dual(spec)}")
    items = load_items(paths, split=config.split)
    if not items:
        raise DataFormatError(", ".join(map(str, paths)), None, None, "the dataset has no rows")
    items, loader, skipped_rows, fetched = _available_items(config, paths, items, progress)
    labels = _data_labels(paths)
    evaluations: list[ModelEvaluation] = []
    all_results: list[Mapping[str, Any]] = []
    for spec in config.models:
        adapter = load_model(spec, config.model)
        if not isinstance(adapter, ImageTextScorer | PronounScorer):
            raise ConfigError(f"models: {spec} scores neither image-text similarity nor pronouns")
        folder = config.out / model_slug(spec)
        with progress_stage(progress, f"scoring {spec}") as update:
            run = score_dataset(
                items, adapter, folder, loader, settings,
                batch_size=config.model.batch_size, progress=update,
            )  # fmt: skip
        del adapter  # free the model before the next one loads
        results_json = benchmark(run, settings, labels)
        results = next(iter(results_json.values()))
        results["metadata"]["skip_missing"] = config.skipping
        results["skipped_rows"] = skipped_rows_json(skipped_rows)
        files = write_outputs(results_json, folder)
        all_results.append(results)
        evaluation = ModelEvaluation(
            model=spec, folder=folder, files=files, scored_images=run.scored_images,
            reused_records=run.reused, skipped=tuple(run.skipped), summary=headline(results),
            skipped_rows=tuple(skipped_rows),
        )  # fmt: skip
        evaluations.append(evaluation)
    comparison = None
    if len(all_results) > 1:
        comparison = config.out / "comparison.md"
        plots = write_comparison_plots(all_results, config.out)
        text = comparison_markdown(all_results) + _plot_links(plots)
        text += _folder_links(config.out, evaluations)
        atomic_write_text(comparison, text)
    return EvaluateResult(
        "visogender", paths, tuple(evaluations), comparison, store=loader.store.root
        if loader.store is not None else None, checked=fetched[1], fetched=fetched[0],
        skipped_rows=tuple(skipped_rows),
    )  # fmt: skip


def _evaluate_contrast(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """Contrast sets (GenSynth Sec. 5): one report per model and data folder. Dual
    encoders and caption scorers (``blip-itm:``, ``vilt:``, ``vlm:``; their scores kept in
    ``raw_contrast_scores.jsonl`` and reused on rerun); captioning models that only score
    pronoun continuations are refused before anything loads."""
    from contrastkit.evaluators.contrast import (
        RAW_SCORES_FILE,
        describe_export,
        evaluate_contrast,
        load_contrast,
        write_contrast_outputs,
    )
    from contrastkit.evaluators.models import load_model

    for spec in config.models:
        _check_contrast_model(spec)
    names = [path.name for path in paths]
    if len(paths) > 1 and len(set(names)) < len(names):
        raise ConfigError(f"data: contrast sets need distinct folder names, not {names}")
    sets = [(path, load_contrast(path, split=config.split)) for path in paths]
    evaluations: list[ModelEvaluation] = []
    for spec in config.models:
        scorer = load_model(spec, config.model)
        pairs = isinstance(scorer, CaptionScorer) and not isinstance(scorer, ImageTextScorer)
        if not pairs and not isinstance(scorer, ImageTextScorer):
            raise ConfigError(f"models: {_NOT_FOR_CONTRAST.format(spec=spec)}")
        for path, dataset in sets:
            folder = config.out / model_slug(spec)
            folder = folder / path.name if len(paths) > 1 else folder
            raw_scores = folder / RAW_SCORES_FILE if pairs else None
            label = f"scoring {spec}" + (" (image-caption pairs)" if pairs else "")
            with progress_stage(progress, label, len(dataset)) as update:
                result = evaluate_contrast(
                    dataset, scorer, ks=config.settings.ks,
                    batch_size=config.model.batch_size, progress=update,
                    device="cpu" if pairs else str(getattr(scorer, "device", "cpu")),
                    bootstrap=config.settings.bootstrap,
                    confidence=config.settings.confidence, seed=config.settings.seed,
                    metrics=config.contrast_metrics, raw_scores=raw_scores,
                )  # fmt: skip
            files = write_contrast_outputs(
                result, folder, model=spec, data=str(path), dataset=describe_export(path)
            )
            if raw_scores is not None:
                files = {**files, "raw_scores": raw_scores}
            scoring = result["summary"].get("scoring") or {}
            evaluation = ModelEvaluation(
                model=spec, folder=folder, files=files, data=str(path),
                scored_images=result["summary"]["images"], summary=result["summary"],
                reused_records=int(scoring.get("reused", 0)),
            )  # fmt: skip
            evaluations.append(evaluation)
        del scorer
    return EvaluateResult("contrast", paths, tuple(evaluations))


_NOT_FOR_CONTRAST = (
    "{spec} is a captioning model: it scores pronoun continuations, not an image against "
    "a caption; contrast sets take dual encoders (open_clip:, hf-clip: ...), "
    "image-text-matching models (blip-itm:, vilt:) and generative VLMs (vlm:, scored by "
    "the caption's log-likelihood)"
)


def _check_contrast_model(spec: str) -> None:
    """Refuse, before anything loads, a model that cannot score a contrast set: the
    captioning families (``blip:``, ``git:``, ``blip2:``, ``instructblip:``) score pronoun
    continuations only.

    Raises:
        ConfigError: such a model, or a malformed spec.
    """
    if "captions" not in parse_spec(spec).capabilities:
        raise ConfigError(f"models: {_NOT_FOR_CONTRAST.format(spec=spec)}")


@dataclass(frozen=True)
class ReportConfig:
    """What ``contrastkit report`` does, as one value (strings are taken as paths).

    Attributes:
        results: ``benchmark.json`` files, or the model folders :func:`evaluate` wrote.
        out: also write the markdown comparison here.

    Raises:
        ConfigError: no results given.
    """

    results: tuple[Path, ...]
    out: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(map(Path, _strings(self.results, "results"))))
        if self.out is not None:
            object.__setattr__(self, "out", Path(self.out))
        require(bool(self.results), "results", "give at least one benchmark.json or folder")


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare_results` found.

    Attributes:
        markdown: the side-by-side tables (VisoGender Tab. 2 and Tab. 3 shapes; GenSynth
            Tab. 3 for contrast sets).
        results: each benchmark's results object, in the order given.
        headlines: each model's headline numbers (model, resolution bias per split,
            retrieval bias mean/sigma), what ``contrastkit report --json`` prints.
        out: where the markdown was written, if anywhere.
    """

    markdown: str
    results: tuple[Mapping[str, Any], ...]
    headlines: tuple[dict[str, Any], ...]
    out: Path | None = None


def _plot_links(plots: Sequence[Path], what: str = "the models side by side") -> str:
    """Markdown showing a comparison plot (PNG) and linking its SVG, by file name."""
    png = [p.name for p in plots if p.suffix == ".png"]
    svg = [p.name for p in plots if p.suffix == ".svg"]
    if not png:
        return ""
    text = f"\n## Plot: {what}\n\n![{what}]({png[0]})\n"
    return text + (f"\n[SVG]({svg[0]})\n" if svg else "")


def compare_results(config: ReportConfig) -> Comparison:
    """Put several models' results side by side.

    VisoGender results give the Tab. 2 / Tab. 3 tables (and, with ``out``, the
    comparison plot ``OUT_STEM.png`` / ``.svg`` beside it); contrast-set results
    (``benchmark.json`` of a contrast set, an original-photo set or a balanced one) give
    the GenSynth Tab. 3 table
    (:func:`~contrastkit.evaluators.report.markdown.contrast_comparison_markdown`):
    one row per set and model with Bias@K and MaxSkew@K and their intervals, a K
    covering a whole set marked in place of its figures and listed under Warnings, and
    with ``out`` its plot
    (:func:`~contrastkit.evaluators.report.plots.contrast_comparison_figure`;
    ``OUT_STEM.png`` / ``.svg``, ``OUT_STEM_contrast.png`` / ``.svg`` beside VisoGender
    results). Mixed inputs give both, VisoGender first. Stereotype-probing results give
    VLStereoSet's Tables 3 and 4 with the reference models
    (:func:`~contrastkit.evaluators.stereotype.stereotype_comparison_markdown`), after
    the others. The ``harness_results.json`` that ``contrastkit report
    --harness-predictions`` writes for a contrast set (or its folder) gives its harness
    tables (:func:`~contrastkit.evaluators.harness.harness_results_markdown`).
    ``results`` and ``headlines`` keep the order given, harness results last (a contrast
    headline has ``task: "contrast"``, a stereotype one ``task: "stereotype"``, a harness
    one ``task: "harness-contrast"``).

    Raises:
        ResourceError: ``out`` cannot be written (checked before anything is read).
        DataFormatError: a missing or malformed benchmark file.
    """
    from contrastkit.evaluators.contrast import contrast_headline, read_contrast_benchmark
    from contrastkit.evaluators.harness import (
        harness_headline,
        harness_results_markdown,
        read_harness_results,
    )
    from contrastkit.evaluators.report import comparison_markdown
    from contrastkit.evaluators.report.markdown import contrast_comparison_markdown
    from contrastkit.evaluators.report.plots import (
        write_comparison_plots,
        write_contrast_comparison_plots,
    )
    from contrastkit.evaluators.stereotype import (
        read_stereotype_benchmark,
        stereotype_comparison_markdown,
        stereotype_headline,
    )

    if config.out is not None:
        check_writable(config.out, "the comparison", folder=False)
    loaded: list[dict[str, Any]] = []
    kinds: list[bool] = []  # True: a contrast-set benchmark
    probed: list[bool] = []  # True: a stereotype benchmark
    answered: list[dict[str, Any]] = []  # harness_results.json (no benchmark)
    for path in config.results:
        harness_results = read_harness_results(path)
        if harness_results is not None:
            answered.append(harness_results)
            continue
        probes = read_stereotype_benchmark(path)
        contrast = read_contrast_benchmark(path) if probes is None else None
        probed.append(probes is not None)
        kinds.append(contrast is not None)
        loaded.append(
            probes if probes is not None
            else contrast if contrast is not None else load_benchmark(path)[1]
        )  # fmt: skip
    stereotypes = [r for r, flag in zip(loaded, probed, strict=True) if flag]
    visogender = [
        r for r, flag, probe in zip(loaded, kinds, probed, strict=True) if not flag and not probe
    ]
    contrasts = [r for r, flag in zip(loaded, kinds, strict=True) if flag]
    parts = [comparison_markdown(visogender)] if visogender else []
    parts += [contrast_comparison_markdown(contrasts)] if contrasts else []
    parts += [stereotype_comparison_markdown(stereotypes)] if stereotypes else []
    parts += [harness_results_markdown(r) for r in answered]
    text = "\n".join(parts)
    if config.out is not None:
        plots = write_comparison_plots(visogender, config.out.parent, config.out.stem)
        text += _plot_links(plots)
        stem = config.out.stem + ("_contrast" if visogender else "")
        plots = write_contrast_comparison_plots(contrasts, config.out.parent, stem)
        text += _plot_links(plots, "original vs balanced vs contrast set")
        atomic_write_text(config.out, text)
    headlines = tuple(
        stereotype_headline(r) if probe else contrast_headline(r) if flag else headline(r)
        for r, flag, probe in zip(loaded, kinds, probed, strict=True)
    ) + tuple(harness_headline(r) for r in answered)
    return Comparison(text, (*loaded, *answered), headlines, config.out)
