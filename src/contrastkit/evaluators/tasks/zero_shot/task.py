"""The zero-shot disparity analysis as a row of the task registry
(:mod:`contrastkit.evaluators.tasks.registry`, task ``zero-shot``, dataset kind
``zero-shot``): what :func:`contrastkit.evaluators.job.evaluate` runs on a Visual Genome
or COCO folder (:func:`evaluate_zero_shot`), and how ``contrastkit report`` reads a
``disparity.json`` (:func:`read_zero_shot_result`, the typed
:class:`~contrastkit.results.ZeroShotResult`); its headline and comparison are in
:mod:`.comparison`.

The task engine runs it (:func:`~contrastkit.evaluators.engine.run.run_task` of
:data:`ZERO_SHOT`, the :class:`ZeroShot` task): the data folder is one item, analysed as
a whole for each model by :func:`~.job.analyse`, which keeps the embeddings in its own
cache and writes ``disparity.json``, ``report.md`` and the plots into
``out/<model slug>/zero_shot/``; each model is checked (its analysis' config, the data
and output folders, ``compare``) just before it loads, and the analysis opens its own
progress stages. This package's ``__init__`` names no ``TASK``: the registry keeps its
built-in ``zero-shot`` row, whose ``run`` is :func:`evaluate_zero_shot`.

``contrastkit evaluate zero-shot`` (and ``contrastkit evaluate --data VG_OR_COCO``) keeps
its own command and printing (:mod:`contrastkit.cli.zero_shot`): its models run through
one :func:`~contrastkit.evaluators.job.evaluate` of this task, a predictions file in
place of a model through :func:`~.job.zero_shot_disparity`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import (
    Item,
    RunConfig,
    RunContext,
    ScoreContext,
    Task,
    TaskSettings,
    setting,
)
from contrastkit.results.zero_shot import ZeroShotResult

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.evaluators.evaluation import EvaluateConfig
    from contrastkit.evaluators.outcome import EvaluateResult
    from contrastkit.evaluators.tasks.zero_shot.config import ZeroShotDisparityConfig
    from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityResult
    from contrastkit.interfaces import ImageTextScorer, ProgressFactory

__all__ = [
    "PANEL",
    "TASK_NAME",
    "ZERO_SHOT",
    "ZeroShot",
    "ZeroShotSettings",
    "evaluate_zero_shot",
    "read_zero_shot_result",
]

#: The task's name in the registry (its results record ``zero-shot-disparity``).
TASK_NAME = "zero-shot"

#: The help panel of the analysis' options.
PANEL = "Zero-shot disparity"


@dataclass(frozen=True)
class ZeroShotSettings(TaskSettings):
    """The analysis' own settings when it runs through
    :func:`~contrastkit.evaluators.job.evaluate` (``EvaluateConfig(task_settings=...)``):
    the fields of :class:`~.config.ZeroShotDisparityConfig` that are neither the data,
    the model, the output nor the bootstrap (those come from the
    :class:`~contrastkit.evaluators.evaluation.EvaluateConfig`), checked by that config
    when the analysis runs. A predictions file instead of a model is
    ``contrastkit evaluate zero-shot --predictions`` or the config itself."""

    prompt: str = setting(
        "{}", help="Text per concept, {} for its words (the paper: the concept alone).",
        panel=PANEL,
    )  # fmt: skip
    layout: str = setting("auto", help="auto, vg (Visual Genome) or coco.", panel=PANEL)
    min_images: int | None = setting(
        None, help="Images per group a concept needs [default: 50 Visual Genome, 100 COCO].",
        min=1, panel=PANEL,
    )  # fmt: skip
    images_without_concepts: str = setting(
        "keep", help="Images that show no kept concept: keep them as negatives of every "
        "concept (the paper) or drop them.", metavar="keep|drop", panel=PANEL,
    )  # fmt: skip
    filter_split: str | None = setting(
        None, help="COCO split that decides the concept filter (the paper: train) "
        "[default: --split].", panel=PANEL,
    )  # fmt: skip
    concept_map: Path | None = setting(
        None, help="Two-column TSV (COCO category, synset) extending the built-in table.",
        metavar="FILE", panel=PANEL,
    )  # fmt: skip
    bins: int = setting(15, help="ECE bins (equal width).", min=1, panel=PANEL)
    calibration: str = setting(
        "multi-label", help="multi-label (ECE only of probabilities) or softmax (over the "
        "concepts, Appendix A.2).", panel=PANEL,
    )  # fmt: skip
    temperature: float = setting(
        100.0, help="Scale of the cosine similarities in the softmax (CLIP: 100).", min=0.0,
        panel=PANEL,
    )  # fmt: skip
    words: Path | None = setting(
        None, help="word2vec / GloVe vectors for the language bias (Experiment 3).",
        metavar="FILE", panel=PANEL,
    )  # fmt: skip
    word_source: str | None = setting(
        None, help="file (--words), model (its text encoder) or both [default: file with "
        "--words, else none].", panel=PANEL,
    )  # fmt: skip
    compare: Path | None = setting(
        None, help="A second dataset (a run's disparity.json, or a data folder) for the "
        "consistency colouring (Fig. 3-4).", metavar="RESULTS_OR_DIR", panel=PANEL,
    )  # fmt: skip
    threshold: float = setting(
        5.0, help="Consistency threshold in AP points.", min=0.0, panel=PANEL
    )
    top: int = setting(
        20, help="Concepts in the top-differences tables and plots.", min=1, panel=PANEL
    )


def _one_folder(paths: Sequence[Path]) -> None:
    """Refuse several data folders.

    Raises:
        ConfigError: not exactly one.
    """
    if len(paths) != 1:
        raise ConfigError(
            "data: the zero-shot task reads one Visual Genome or COCO folder; compare with a "
            "second one through ZeroShotSettings(compare=...)"
        )


@dataclass(frozen=True)
class _Loaded:
    """A model as the task loads it: its analysis' config and its dual encoder."""

    analysis: ZeroShotDisparityConfig
    scorer: ImageTextScorer | None


def _done(records: Sequence[Mapping[str, Any]]) -> ZeroShotDisparityResult:
    """The analysis in a model's one record."""
    [record] = records
    done: ZeroShotDisparityResult = record["done"]
    return done


class ZeroShot(Task[ZeroShotSettings, ZeroShotResult]):
    """Per-concept zero-shot disparities of dual encoders on a Visual Genome or COCO
    folder (the module docstring)."""

    name = TASK_NAME
    kind = "zero-shot"
    settings = ZeroShotSettings
    result = ZeroShotResult
    description = "Per-concept zero-shot AP and calibration disparities by perceived gender."
    example_model = "open_clip:ViT-B-32/openai"
    scoring_settings = ()
    keeps_records = False
    compares_on_evaluate = False
    progress_label = None

    def items(
        self, paths: Sequence[Path], settings: ZeroShotSettings, split: str | None
    ) -> Iterable[Item]:
        """One item: the data folder (read by the analysis of each model).

        Raises:
            ConfigError: several data folders.
        """
        _one_folder(paths)
        return [Item(TASK_NAME, {}, source=paths[0])]

    def load(
        self, spec: str, config: RunConfig, settings: ZeroShotSettings, paths: tuple[Path, ...]
    ) -> _Loaded:
        """The analysis of ``spec`` (its config, with the bootstrap of the run's settings)
        checked and its dual encoder loaded (:func:`~.job.checked_scorer`).

        Raises:
            ConfigError: what the analysis' config refuses (a model that is no dual
                encoder, a bad setting), data or ``compare`` that is not a folder.
            ResourceError: the output folder cannot be written.
            ModelNotFoundError: a model that is not on this machine or does not load.
        """
        from contrastkit.evaluators.tasks.zero_shot.config import ZeroShotDisparityConfig
        from contrastkit.evaluators.tasks.zero_shot.job import checked_scorer

        statistics = config.settings
        analysis = ZeroShotDisparityConfig(
            data=paths[0], out=config.out, model=spec, split=config.split,
            model_config=config.model, bootstrap=statistics.bootstrap,
            confidence=statistics.confidence, seed=statistics.seed, **asdict(settings),
        )  # fmt: skip
        return _Loaded(analysis, checked_scorer(analysis))

    def score_in(
        self,
        model: _Loaded,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        context: ScoreContext[ZeroShotSettings],
    ) -> list[Mapping[str, Any]]:
        """The analysis of the data folder (:func:`~.job.analyse`), its files written."""
        from contrastkit.evaluators.tasks.zero_shot.job import analyse

        return [{"done": analyse(model.analysis, model.scorer, context.stages)}]

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[ZeroShotSettings]
    ) -> ZeroShotResult:
        return _done(records).result

    def written(
        self, result: ZeroShotResult, records: Sequence[Mapping[str, Any]]
    ) -> tuple[Path, Mapping[str, Path]]:
        """``out/<model slug>/zero_shot/`` and the files the analysis wrote there."""
        done = _done(records)
        return done.folder, dict(done.files)

    def raw_text(self, records: Sequence[Mapping[str, Any]]) -> None:
        return None  # the analysis keeps its embeddings in its own cache

    def scored_from(
        self, result: ZeroShotResult, records: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int]:
        return 0, 0  # what is embedded and reused is in disparity.json's cache entry

    def summary(self, result: ZeroShotResult) -> Mapping[str, Any]:
        """The analysis' summary (:attr:`~.job.ZeroShotDisparityResult.summary`) with the
        headline ``figures`` the console prints (mAP per group and their difference)
        and the weights note."""
        from contrastkit.evaluators.tasks.zero_shot.comparison import headline_figures
        from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityResult

        summary = ZeroShotDisparityResult(Path(), {}, result).summary
        return {**summary, "figures": headline_figures(result), "weights_note": result.weights_note}

    def render(self, result: ZeroShotResult) -> str:
        from contrastkit.evaluators.tasks.zero_shot.report import disparity_markdown

        return disparity_markdown(result)

    def headline(self, result: ZeroShotResult) -> Mapping[str, Any]:
        from contrastkit.evaluators.tasks.zero_shot.comparison import zero_shot_headline

        return zero_shot_headline(result)

    def compare(self, results: Sequence[ZeroShotResult]) -> str:
        from contrastkit.evaluators.tasks.zero_shot.comparison import (
            zero_shot_comparison_markdown,
        )

        return zero_shot_comparison_markdown(results)


#: The zero-shot task (the registry keeps its built-in ``zero-shot`` row, whose run is
#: :func:`evaluate_zero_shot`: see the module docstring).
ZERO_SHOT = ZeroShot()


def evaluate_zero_shot(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None = None
) -> EvaluateResult:
    """The analysis of each model of ``config`` on its one data folder, into
    ``out/<model slug>/zero_shot/`` (:func:`~.job.analyse`), with the bootstrap of
    ``config.settings`` and the :class:`ZeroShotSettings` of ``config.task_settings``
    (its defaults when none): :func:`~contrastkit.evaluators.engine.run.run_task` of
    :data:`ZERO_SHOT`, what the registry's ``zero-shot`` row runs.

    Raises:
        ConfigError: several data folders, settings of another task, or what the
            analysis' config refuses.
        DataFormatError: data the analysis cannot read, no concept above ``min_images``.
    """
    from contrastkit.evaluators.engine.run import run_task

    _one_folder(paths)  # before the settings, as the task always refused it
    return run_task(ZERO_SHOT, config, paths, progress)


def read_zero_shot_result(path: Path) -> ZeroShotResult | None:
    """The typed result of a ``disparity.json``, of the ``zero_shot`` folder holding
    one or of the model folder above it; ``None`` for any other file or folder (another
    task's, read by its own reader).

    Raises:
        DataFormatError: a ``zero-shot-disparity`` file that does not fit
            :class:`~contrastkit.results.ZeroShotResult`.
    """
    from contrastkit.records import read_json
    from contrastkit.results.base import RESULT_FILES

    path = Path(path)
    file = path if path.is_file() else None
    if path.is_dir():
        file = next((path / name for name in RESULT_FILES if (path / name).is_file()), None)
    if file is None:
        return None
    try:
        data = read_json(file)  # bounded (records.MAX_JSON_BYTES)
    except (OSError, ValueError):  # the other readers say what is wrong with it
        return None
    if not isinstance(data, dict) or data.get("task") != ZeroShotResult.TASK:
        return None
    return ZeroShotResult.from_json(data, path=file)
