"""What every evaluation shares: the config of ``contrastkit evaluate``
(:class:`EvaluateConfig`), what a run returns (:class:`EvaluateResult`, one
:class:`ModelEvaluation` per model), and getting the data ready: Hub datasets copied
locally, image URLs fetched into the store, rows without an image set aside.

The tasks (:mod:`contrastkit.evaluators.tasks.registry`) run on these; the job that picks
one, :func:`contrastkit.evaluators.job.evaluate`, sits above them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from contrastkit.config import ModelConfig, require
from contrastkit.curation.urls.config import CheckConfig
from contrastkit.errors import ConfigError
from contrastkit.evaluators.availability import available_items
from contrastkit.evaluators.hub import hub_name
from contrastkit.evaluators.outcome import (
    EvaluateResult,
    ModelEvaluation,
    data_labels,
    folder_links,
    plot_links,
    skipped_rows_json,
)
from contrastkit.evaluators.report.results import model_slug
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.models.registry import parse_spec
from contrastkit.store import default_image_store, image_store_for
from contrastkit.tsv import is_bundled, resolve_data

if TYPE_CHECKING:
    from contrastkit.evaluators.engine.protocol import TaskSettings

__all__ = [
    "STEREOTYPE",
    "EvaluateConfig",
    "EvaluateResult",
    "ModelEvaluation",
    "as_strings",
    "available_items",
    "data_labels",
    "default_image_store",
    "folder_links",
    "local_data",
    "no_task_settings",
    "plot_links",
    "skipped_rows_json",
]


#: ``EvaluateConfig.task`` (``--task``) of stereotype probing.
STEREOTYPE = "stereotype"

#: The deprecated fields of :class:`EvaluateConfig` (a task's settings, now in the
#: task's settings class): each one's default and what to give instead.
_DEPRECATED_FIELDS: dict[str, tuple[object, str]] = {
    "contrast_metrics": ("auto", "ContrastTaskSettings(metrics=...)"),
    "decision_scoring": ("both", "DecisionSettings(scoring=...)"),
    "questions": (None, "DecisionSettings(questions=...)"),
}


def as_strings(value: object, name: str) -> tuple[str, ...]:
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
            :mod:`contrastkit.models.registry`); each gets its own subfolder of
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
        task: the registered task to run (:mod:`contrastkit.evaluators.tasks.registry`:
            ``visogender``, ``contrast``, ``stereotype`` (VLStereoSet-style stereotype
            probing,
            :mod:`contrastkit.evaluators.tasks.stereotype_probing.benchmark`), ``decisions``
            (counterfactual decision probes of generative VLMs on contrast sets,
            :mod:`contrastkit.evaluators.decisions`), or a plugin's; every ``data`` item
            must then be data it reads). ``None`` (the default): from the data: probe
            sets are probed for stereotypes, contrast-set exports get the GenSynth
            evaluation, anything else the VisoGender tasks of ``settings``.
        contrast_metrics: deprecated (a DeprecationWarning when given): use
            ``task_settings=ContrastTaskSettings(metrics=...)``
            (:class:`~contrastkit.evaluators.tasks.contrast_sets.ContrastTaskSettings`).
            What a contrast set gets: ``all`` (retrieval metrics and pair preference),
            ``pairs`` (pair preference only) or ``auto`` (the default): ``all`` for dual
            encoders, ``pairs`` for caption scorers (``blip-itm:``, ``vilt:``,
            ``vlm:``), whose retrieval metrics cost one model pass per image and query.
        decision_scoring: deprecated: use ``task_settings=DecisionSettings(scoring=...)``
            (:class:`~contrastkit.evaluators.tasks.decision_probes.task.DecisionSettings`).
            How the ``decisions`` task scores answers: ``both`` (the default),
            ``logprob`` or ``generate``.
        questions: deprecated: use ``task_settings=DecisionSettings(questions=...)``.
            The ``decisions`` task's question templates (YAML); ``None``: the bundled
            ones.
        task_settings: the settings of a task written on the protocol
            (:class:`~contrastkit.evaluators.engine.TaskSettings`, the class the task
            names; its fields are the task's own options); ``None``: its defaults.

    Raises:
        ConfigError: naming the field: no data or no models, a malformed ``hf:`` name or
            model spec, a deprecated field given with ``task_settings`` (one of the two
            would be ignored), a model given twice (or, in a contrived case
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
    decision_scoring: str = "both"
    questions: Path | None = None
    task_settings: TaskSettings | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", as_strings(self.data, "data"))
        object.__setattr__(
            self, "models", tuple(s.strip() for s in as_strings(self.models, "models"))
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
        if self.task is not None:
            from contrastkit.evaluators.tasks.registry import tasks

            runnable = [name for name, task in tasks().items() if task.run is not None]
            require(
                self.task in runnable,
                "task",
                f"must be None or one of {', '.join(map(repr, runnable))}, not {self.task!r}",
            )
        require(
            self.decision_scoring in ("both", "logprob", "generate"),
            "decision_scoring",
            f"must be both, logprob or generate, not {self.decision_scoring!r}",
        )
        if self.questions is not None:
            object.__setattr__(self, "questions", Path(self.questions))
        if self.task_settings is not None:
            from contrastkit.evaluators.engine.protocol import TaskSettings

            require(
                isinstance(self.task_settings, TaskSettings),
                "task_settings",
                f"must be a task's TaskSettings, not {type(self.task_settings).__name__}",
            )
        self._deprecated_fields()
        require(
            self.contrast_metrics in ("auto", "all", "pairs"),
            "contrast_metrics",
            f"must be auto, all or pairs, not {self.contrast_metrics!r}",
        )

    def _deprecated_fields(self) -> None:
        """Warn of each deprecated task field given; refuse one given beside
        ``task_settings``, which would leave one of the two ignored."""
        given = [
            (name, instead)
            for name, (default, instead) in _DEPRECATED_FIELDS.items()
            if getattr(self, name) != default
        ]
        for name, instead in given:
            if self.task_settings is not None:
                raise ConfigError(
                    f"{name}: deprecated, and ignored beside task_settings; give it in "
                    f"{type(self.task_settings).__name__} instead"
                )
            warnings.warn(
                f"EvaluateConfig.{name} is deprecated; give task_settings={instead} instead",
                DeprecationWarning,
                stacklevel=4,
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


def local_data(config: EvaluateConfig) -> tuple[Path, ...]:
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


def no_task_settings(config: EvaluateConfig, task: str) -> None:
    """Refuse ``config.task_settings`` for a task that has no settings of its own (its
    options are :class:`EvaluateConfig`'s fields): running it with its defaults while
    the caller believes its settings were used would be a silently wrong result.

    Raises:
        ConfigError: settings were given.
    """
    if config.task_settings is not None:
        raise ConfigError(
            f"task_settings: task {task} has no settings of its own (its options are "
            f"EvaluateConfig's fields), so {type(config.task_settings).__name__} would "
            "be ignored; leave task_settings out"
        )
