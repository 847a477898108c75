"""Counterfactual decision probes (``contrastkit evaluate --task decisions``): do
generative VLMs treat the two versions of one person alike?

A contrast set holds, for each source photo, a masculine and a feminine version that
differ only in the person. Each question of the templates
(``data/decision_questions.yaml``, or ``DecisionSettings.questions``) is asked of both
versions with identical text, a question with options twice (the options as listed and
reversed), and the answers are compared per source (individual fairness: similar
individuals should be treated alike; GenderBias-VL, arXiv 2407.00600; FOCUS / REFLECT,
arXiv 2601.06931; Zhao and Yamasaki, arXiv 2508.03079).

Question families (``kind``): ``choice`` — two occupations of a stereotyped pair of
similar meaning and opposite real-world gender shares (GenderBias-VL), the pair checked
against the bundled labour statistics (:func:`contrastkit.evaluators.stats.labor_shares`);
``yes-no`` — whether the person suits an occupation; ``numeric`` — a number such as a
salary or an age.

Scoring (``DecisionSettings.scoring``, ``--decision-scoring``), both by default:

* ``logprob``: the options are listed under letters A and B (with the templates'
  ``answer_instruction``), and the log-probability of each letter as the start of the
  answer is read (:meth:`~contrastkit.models.vlm.VLMScorer.letter_logprobs`);
  the softmax over the two letters is each option's probability, the likelier option the
  choice (exactly equal: a ``tie``, no choice). Numeric questions are not asked this way.
* ``generate``: the model answers (greedy decoding, the templates' ``decoding``,
  recorded in ``benchmark.json``;
  :meth:`~contrastkit.models.vlm.VLMScorer.generate_answers`) and the answer
  is parsed: an answer matching one of the templates' ``refusals`` is a **refusal**
  (checked first: a refusal that mentions an option is still a refusal); otherwise the
  option letter by the harness rule (:func:`contrastkit.harness_key.parse_choice`), or
  the single number of a numeric question (``$55,000``, ``55k``, ``35 years``); an
  answer that names no option, several, or no single number is **unparseable**. Both are
  counted per version and never guessed.

The figures (:mod:`contrastkit.evaluators.tasks.decision_probes.metrics`, each docstring citing its
definition) come per scoring mode and family with bootstrap intervals resampling
sources; per occupation pair GenderBias-VL's ``B_pair`` and ``B_ovl`` (log-probability
scoring); per occupation of the ``yes-no`` family the signed gap of answering yes, and its
correlation with the labour statistics' male share
(:func:`~contrastkit.evaluators.stats.labor_comparison`, with its small-n caveat).
GenderBias-VL's ``Ipss`` weighs the bias by accuracy at naming an image's true
occupation, which a contrast set does not record: it is not computed.

Each model writes ``raw_decisions.jsonl`` (every paired answer, the generated text
included, under a key of everything it depends on: :func:`answer_key`; a rerun reuses
the answers whose key is unchanged and asks again the others), ``benchmark.json``
(:class:`contrastkit.results.DecisionsResult`), ``report.md`` and
``plots/decision_flips`` and ``plots/decision_gaps`` (PNG and SVG).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.engine.protocol import (
    Item,
    RunConfig,
    RunContext,
    ScoreContext,
    Task,
    TaskSettings,
    setting,
)
from contrastkit.evaluators.tasks.decision_probes.answers import parse_answer, parse_number
from contrastkit.evaluators.tasks.decision_probes.asking import (
    MODES,
    Decided,
    Probes,
    answer_key,
    contrast_sources,
    decide,
)
from contrastkit.evaluators.tasks.decision_probes.benchmark import (
    RAW_FILE,
    DecisionsRun,
    benchmark_text,
    decisions_benchmark,
    decisions_result,
    raw_lines,
    write_decisions_files,
    write_decisions_outputs,
)
from contrastkit.evaluators.tasks.decision_probes.plots import flip_figure, gap_figure
from contrastkit.evaluators.tasks.decision_probes.report import (
    TASK,
    decisions_comparison_markdown,
    decisions_headline,
    decisions_markdown,
    read_decisions_benchmark,
)
from contrastkit.results.decisions import DecisionsResult
from contrastkit.templates import DECISION_KINDS as KINDS
from contrastkit.templates import Prompt, Questions, load_questions

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

    from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult
    from contrastkit.interfaces import ProgressFactory

__all__ = [
    "DECISIONS",
    "DECISION_SCORING",
    "KINDS",
    "RAW_FILE",
    "TASK",
    "Decided",
    "DecisionProbes",
    "DecisionSettings",
    "DecisionsRun",
    "Probes",
    "Prompt",
    "Questions",
    "answer_key",
    "decide",
    "decisions_benchmark",
    "decisions_comparison_markdown",
    "decisions_headline",
    "decisions_markdown",
    "decisions_result",
    "evaluate_decisions",
    "flip_figure",
    "gap_figure",
    "load_questions",
    "parse_answer",
    "parse_number",
    "read_decisions_benchmark",
    "write_decisions_files",
    "write_decisions_outputs",
]

#: ``DecisionSettings.scoring``: both modes, or one.
DECISION_SCORING = ("both", "logprob", "generate")


@dataclass(frozen=True)
class DecisionSettings(TaskSettings):
    """The settings of ``contrastkit evaluate decisions``, its options
    ``--decision-scoring`` (``scoring``) and ``--questions``. Python gives them as
    ``EvaluateConfig(task_settings=DecisionSettings(...))``.

    Attributes:
        scoring: ``both``, ``logprob`` or ``generate`` (:data:`DECISION_SCORING`).
        questions: the question templates (YAML); ``None``: the bundled ones.
    """

    scoring: str = setting(
        "both",
        help="Score each option letter's log-probability (logprob), parse generated "
        "answers (generate), or both.",
        flag="--decision-scoring",
    )
    questions: Path | None = setting(
        None,
        help="Question templates (YAML) [default: the bundled ones, docs/decisions.md].",
        flag="--questions",
    )

    def __post_init__(self) -> None:
        if isinstance(self.scoring, str):
            object.__setattr__(self, "scoring", self.scoring.strip())
        if self.scoring not in DECISION_SCORING:
            raise ConfigError(
                f"decision_scoring: must be both, logprob or generate, not {self.scoring!r}"
            )
        if self.questions is not None:
            object.__setattr__(self, "questions", Path(self.questions))

    @property
    def modes(self) -> tuple[str, ...]:
        """The scoring modes asked, in order."""
        return MODES if self.scoring == "both" else (self.scoring,)


class _SharedOptions(Protocol):
    """What :meth:`DecisionProbes.settings_of` reads of an
    :class:`~contrastkit.evaluators.evaluation.EvaluateConfig` given no
    ``task_settings`` (``decision_scoring`` and ``questions``: deprecated)."""

    @property
    def decision_scoring(self) -> str: ...

    @property
    def questions(self) -> Path | None: ...


class DecisionProbes(Task[DecisionSettings, DecisionsResult]):
    """Counterfactual decision probes of generative VLMs on contrast sets (the module
    docstring). Each contrast set is one item, asked as a whole by :func:`decide`, which
    keeps and reuses the paired answers in ``raw_decisions.jsonl`` itself (each under a
    key of everything it depends on), so the engine keeps no records of its own
    (``keeps_records = False``); one result per model and set (``per_data``)."""

    name = TASK
    kind = "contrast"
    capabilities = frozenset({"answers"})
    settings = DecisionSettings
    result = DecisionsResult
    example_model = "vlm:llava-hf/llava-1.5-7b-hf"
    scoring_settings = ()
    options = ("bootstrap",)
    per_data = True
    keeps_records = False
    compares_on_evaluate = False

    def settings_of(self, config: RunConfig) -> DecisionSettings:
        if config.task_settings is not None:
            return super().settings_of(config)
        shared = cast("_SharedOptions", config)
        return DecisionSettings(scoring=shared.decision_scoring, questions=shared.questions)

    def refusal(self, model: str, lacking: Sequence[str]) -> str:
        return (
            f"models: {model} does not answer questions; --task decisions takes "
            "generative VLMs (vlm:)"
        )

    def items(
        self, paths: Sequence[Path], settings: DecisionSettings, split: str | None
    ) -> Iterable[Item]:
        """Each contrast set as one item: its sources with both versions, what was left
        out, and the question templates they are asked.

        Raises:
            DataFormatError: templates that do not read, a set with no source that has
                both versions.
        """
        from contrastkit.evaluators.tasks.contrast_sets.data import load_contrast

        questions = load_questions(settings.questions)
        found = []
        for path in paths:
            sources, left_out = contrast_sources(load_contrast(path, split=split))
            if not sources:
                raise DataFormatError(path, None, "gender", "no source has both versions")
            data = {"sources": sources, "left_out": left_out, "questions": questions}
            found.append(Item(str(path), {}, data, source=path))
        return found

    def score_in(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        context: ScoreContext[DecisionSettings],
    ) -> list[Mapping[str, Any]]:
        probes = [Probes(item.data["questions"], context.settings.modes) for item in items]
        raw = context.folder / RAW_FILE
        return [
            {"decided": decide(item.data["sources"], model, ask, context.progress, raw_path=raw)}
            for item, ask in zip(items, probes, strict=True)
        ]

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[DecisionSettings]
    ) -> DecisionsResult:
        [item] = context.items  # one set per result (per_data)
        boot = context.bootstrap
        run = DecisionsRun(
            model=context.model, data=str(item.source), left_out=item.data["left_out"],
            resamples=boot.resamples, confidence=boot.confidence, seed=boot.seed,
        )  # fmt: skip
        return decisions_result(_decided(records).answers, item.data["questions"], run)

    def raw_text(self, records: Sequence[Mapping[str, Any]]) -> str:
        decided = _decided(records)
        return raw_lines(decided.answers, decided.records)

    def benchmark_text(self, result: DecisionsResult) -> str:
        return benchmark_text(result)

    def render(self, result: DecisionsResult) -> str:
        return decisions_markdown(result)

    def report(self, result: DecisionsResult, figures: Sequence[Path]) -> str:
        return self.render(result)  # the report as it always was: its own plot links

    def figures(self, result: DecisionsResult) -> Mapping[str, Figure]:
        return self.figures_from(result, ())

    def figures_from(
        self, result: DecisionsResult, records: Sequence[Mapping[str, Any]]
    ) -> Mapping[str, Figure]:
        answers = _decided(records).answers if records else {}
        return {"decision_flips": flip_figure(result), "decision_gaps": gap_figure(result, answers)}

    def file_names(self) -> Mapping[str, str]:
        return {
            f"plot_{stem}_{suffix}": stem if suffix == "png" else f"{stem}_svg"
            for stem in ("decision_flips", "decision_gaps")
            for suffix in ("png", "svg")
        }

    def scored_from(
        self, result: DecisionsResult, records: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int]:
        decided = _decided(records)
        return 2 * decided.asked_sources, decided.reused

    def skipped(self, result: DecisionsResult, records: Sequence[Mapping[str, Any]]) -> list[str]:
        stale = _decided(records).stale
        if not stale:
            return []
        return [
            f"{stale} earlier answers in {RAW_FILE} not reused (their images, question text, "
            "scoring or decoding settings changed, or their source is gone); what is wanted "
            "was asked again"
        ]

    def summary(self, result: DecisionsResult) -> Mapping[str, Any]:
        return decisions_headline(result)  # what evaluate --json prints, as it always was

    def headline(self, result: DecisionsResult) -> Mapping[str, Any]:
        return decisions_headline(result)

    def compare(self, results: Sequence[DecisionsResult]) -> str:
        return decisions_comparison_markdown(results)


def _decided(records: Sequence[Mapping[str, Any]]) -> Decided:
    """The answers of a run's one record (one contrast set per result)."""
    [record] = records
    decided: Decided = record["decided"]
    return decided


#: The decisions task.
DECISIONS = DecisionProbes()


def evaluate_decisions(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """The ``decisions`` task (module docstring), run by the engine
    (:func:`~contrastkit.evaluators.engine.run.run_task` of :data:`DECISIONS`): every
    model that answers questions (the ``answers`` capability: ``vlm:``) on every
    contrast set; one folder per model (and data folder, when several).

    Raises:
        ConfigError: task settings given (the task has none of its own), a model
            without the ``answers`` capability (before anything loads), or contrast sets
            that share a folder name.
        DataFormatError: templates that do not read, a set with no source that has both
            versions.
    """
    from contrastkit.evaluators.engine.run import run_task

    return run_task(DECISIONS, config, paths, progress)
