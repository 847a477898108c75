"""The contrast task on the task protocol (GenSynth Sec. 5): each data folder is one item,
the whole contrast set, scored at once by
:func:`~contrastkit.evaluators.tasks.contrast_sets.scoring.evaluate_contrast` (every query
ranks every image of its set); its record aggregated into the typed
:class:`~contrastkit.results.contrast.ContrastResult`
(:func:`~contrastkit.evaluators.tasks.contrast_sets.report.contrast_result`), which the
report, the plot, the headline and the comparison take. The engine does the rest: the
capability check, loading each model once for all the sets, one folder per model and
set (``OUT/MODEL/SET/`` when several sets are given), the files.

A caption scorer's (image, query) scores are kept in the model's folder
(:data:`~contrastkit.evaluators.tasks.contrast_sets.data.RAW_SCORES_FILE`) and reused on
rerun; a dual encoder's are recomputed (they are cheap), so the engine keeps no records
to reuse (``keeps_records = False``): ``raw_contrast.jsonl`` holds the per-query records
as it always has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

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
from contrastkit.evaluators.tasks.contrast_sets.data import CONTRAST_METRICS, RAW_SCORES_FILE
from contrastkit.models.registry import parse_spec
from contrastkit.results.contrast import ContrastResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

    from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult
    from contrastkit.interfaces import ProgressFactory

__all__ = [
    "CONTRAST",
    "ContrastSets",
    "ContrastTaskSettings",
    "check_contrast_model",
    "evaluate_contrast_sets",
]

#: The stem of each model's plot (``plots/contrast_bias.png`` / ``.svg``).
PLOT_STEM = "contrast_bias"

_NOT_FOR_CONTRAST = (
    "{spec} is a captioning model: it scores pronoun continuations, not an image against "
    "a caption; contrast sets take dual encoders (open_clip:, hf-clip: ...), "
    "image-text-matching models (blip-itm:, vilt:) and generative VLMs (vlm:, scored by "
    "the caption's log-likelihood)"
)


@dataclass(frozen=True)
class ContrastTaskSettings(TaskSettings):
    """The settings of ``contrastkit evaluate contrast``: its own option
    ``--contrast-metrics`` (``metrics``) and the retrieval cut-offs, which the shared
    option group ``retrieval`` (``--k``) offers to every task that retrieves. Python
    gives them as ``EvaluateConfig(task_settings=ContrastTaskSettings(...))``.

    Attributes:
        ks: the retrieval cut-offs K.
        metrics: ``auto``, ``all`` or ``pairs``
            (:data:`~contrastkit.evaluators.tasks.contrast_sets.data.CONTRAST_METRICS`).
    """

    ks: tuple[int, ...] = setting(
        (5, 10), help="Retrieval cut-offs K (the shared --k).", shared="ks"
    )
    metrics: str = setting(
        "auto",
        help="all, pairs (pair preference only) or auto (all for dual encoders).",
        flag="--contrast-metrics",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "ks", tuple(self.ks))
        if isinstance(self.metrics, str):
            object.__setattr__(self, "metrics", self.metrics.strip())
        if self.metrics not in CONTRAST_METRICS:
            raise ConfigError(
                f"contrast_metrics must be one of {', '.join(CONTRAST_METRICS)}, not "
                f"{self.metrics!r}"
            )


class _SharedOptions(Protocol):
    """What :meth:`ContrastSets.settings_of` reads of an
    :class:`~contrastkit.evaluators.evaluation.EvaluateConfig` given no
    ``task_settings`` (``contrast_metrics``: deprecated)."""

    @property
    def contrast_metrics(self) -> str: ...

    @property
    def settings(self) -> Any: ...


def check_contrast_model(spec: str) -> None:
    """Refuse, before anything loads, a model that cannot score a contrast set: the
    captioning families (``blip:``, ``git:``, ``blip2:``, ``instructblip:``) score pronoun
    continuations only.

    Raises:
        ConfigError: such a model, or a malformed spec.
    """
    refusal = _refusal(spec)
    if refusal is not None:
        raise ConfigError(refusal)


def _refusal(spec: str) -> str | None:
    from contrastkit.evaluators.runner import answers_only

    if refusal := answers_only(spec, "contrast sets"):
        return f"models: {refusal}"
    if "captions" not in parse_spec(spec).capabilities:
        return f"models: {_NOT_FOR_CONTRAST.format(spec=spec)}"
    return None


class ContrastSets(Task[ContrastTaskSettings, ContrastResult]):
    """Retrieval bias of gender-neutral queries and pair preference on contrast sets
    (GenSynth Sec. 5), of dual encoders and caption scorers (``blip-itm:``, ``vilt:``,
    ``vlm:``)."""

    name = "contrast"
    kind = "contrast"
    capabilities = frozenset({"captions"})
    settings = ContrastTaskSettings
    result = ContrastResult
    example_model = "open_clip:ViT-B-32/openai"
    scoring_settings = ()
    options = ("retrieval", "bootstrap")
    per_data = True
    keeps_records = False
    compares_on_evaluate = False
    plots_title = "original vs balanced vs contrast set"

    def settings_of(self, config: RunConfig) -> ContrastTaskSettings:
        given = config.task_settings
        if isinstance(given, ContrastTaskSettings):
            return given
        if given is not None:
            raise ConfigError(
                f"task_settings: task {self.name} takes ContrastTaskSettings, not "
                f"{type(given).__name__}"
            )
        shared = cast("_SharedOptions", config)
        return ContrastTaskSettings(ks=tuple(shared.settings.ks), metrics=shared.contrast_metrics)

    def refusal(self, model: str, lacking: Sequence[str]) -> str | None:
        return _refusal(model)

    def items(
        self, paths: Sequence[Path], settings: ContrastTaskSettings, split: str | None
    ) -> Iterable[Item]:
        from contrastkit.evaluators.tasks.contrast_sets.data import load_contrast

        return [
            Item(str(path), {}, {"dataset": load_contrast(path, split=split)}, source=path)
            for path in paths
        ]

    def score_in(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        context: ScoreContext[ContrastTaskSettings],
    ) -> list[Mapping[str, Any]]:
        from contrastkit.evaluators.tasks.contrast_sets.scoring import (
            ContrastSettings,
            evaluate_contrast,
        )
        from contrastkit.interfaces import CaptionScorer, ImageTextScorer

        if not isinstance(model, ImageTextScorer | CaptionScorer):  # nor pairs
            raise ConfigError(f"models: {_NOT_FOR_CONTRAST.format(spec=context.model)}")
        pairs = not isinstance(model, ImageTextScorer)
        boot = context.bootstrap
        settings = ContrastSettings(
            ks=context.settings.ks, batch_size=context.batch_size,
            device="cpu" if pairs else str(getattr(model, "device", "cpu")),
            bootstrap=boot.resamples, confidence=boot.confidence, seed=boot.seed,
            metrics=context.settings.metrics,
            raw_scores=context.folder / RAW_SCORES_FILE if pairs else None,
        )  # fmt: skip
        return [
            evaluate_contrast(item.data["dataset"], model, settings, progress=context.progress)
            for item in items
        ]

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[ContrastTaskSettings]
    ) -> ContrastResult:
        from contrastkit.evaluators.tasks.contrast_sets.data import describe_export
        from contrastkit.evaluators.tasks.contrast_sets.report import (
            ContrastLabels,
            contrast_result,
        )

        [record], [item] = records, context.items  # one set per result (per_data)
        dataset = describe_export(item.source) if item.source is not None else None
        labels = ContrastLabels(model=context.model, data=context.data[0], dataset=dataset)
        return contrast_result(record["summary"], labels)

    def raw_text(self, records: Sequence[Mapping[str, Any]]) -> str:
        from contrastkit.evaluators.tasks.contrast_sets.report import raw_lines

        return "".join(raw_lines(record["queries"]) for record in records)

    def benchmark_text(self, result: ContrastResult) -> str:
        from contrastkit.evaluators.tasks.contrast_sets.report import benchmark_text

        return benchmark_text(result)

    def render(self, result: ContrastResult) -> str:
        from contrastkit.evaluators.tasks.contrast_sets.report import contrast_markdown

        return contrast_markdown(result)

    def report(self, result: ContrastResult, figures: Sequence[Path]) -> str:
        return self.render(result)  # the report as it always was: its own plot link

    def figures(self, result: ContrastResult) -> Mapping[str, Figure]:
        from contrastkit.evaluators.tasks.contrast_sets.report import contrast_plot

        return {PLOT_STEM: contrast_plot(result)}

    def file_names(self) -> Mapping[str, str]:
        return {f"plot_{PLOT_STEM}_png": "plot", f"plot_{PLOT_STEM}_svg": "plot_svg"}

    def files(self, result: ContrastResult, folder: Path) -> Mapping[str, Path]:
        scoring = result.scoring
        caption_scores = scoring is not None and scoring.unit == "image-query pair"
        return {"raw_scores": folder / RAW_SCORES_FILE} if caption_scores else {}

    def scored(self, result: ContrastResult) -> tuple[int, int]:
        reused = result.scoring.reused if result.scoring is not None else 0
        return result.summary.images or 0, int(reused or 0)

    def summary(self, result: ContrastResult) -> Mapping[str, Any]:
        return result.summary.to_json()  # what evaluate --json prints, as it always was

    def headline(self, result: ContrastResult) -> Mapping[str, Any]:
        from contrastkit.evaluators.tasks.contrast_sets.report import contrast_headline

        return contrast_headline(result)

    def compare(self, results: Sequence[ContrastResult]) -> str:
        from contrastkit.evaluators.report.markdown import contrast_comparison_markdown

        return contrast_comparison_markdown([result.to_json() for result in results])

    def compare_plots(
        self, results: Sequence[ContrastResult], folder: Path, stem: str
    ) -> list[Path]:
        from contrastkit.evaluators.report.plots import write_contrast_comparison_plots

        written = write_contrast_comparison_plots([r.to_json() for r in results], folder, stem)
        return list(written)


#: The contrast task.
CONTRAST = ContrastSets()


def evaluate_contrast_sets(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """Contrast sets (GenSynth Sec. 5), run by the engine
    (:func:`~contrastkit.evaluators.engine.run.run_task` of :data:`CONTRAST`): one report
    per model and data folder. Dual encoders and caption scorers (``blip-itm:``,
    ``vilt:``, ``vlm:``; their scores kept in ``raw_contrast_scores.jsonl`` and reused on
    rerun); captioning models that only score pronoun continuations are refused before
    anything loads."""
    from contrastkit.evaluators.engine.run import run_task

    return run_task(CONTRAST, config, paths, progress)
