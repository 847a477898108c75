"""Counterfactual decision probes (``contrastkit evaluate --task decisions``): do
generative VLMs treat the two versions of one person alike?

A contrast set holds, for each source photo, a masculine and a feminine version that
differ only in the person. Each question of the templates
(``data/decision_questions.yaml``, or ``EvaluateConfig.questions``) is asked of both
versions with identical text, a question with options twice (the options as listed and
reversed), and the answers are compared per source (individual fairness: similar
individuals should be treated alike; GenderBias-VL, arXiv 2407.00600; FOCUS / REFLECT,
arXiv 2601.06931; Zhao and Yamasaki, arXiv 2508.03079).

Question families (``kind``): ``choice`` — two occupations of a stereotyped pair of
similar meaning and opposite real-world gender shares (GenderBias-VL), the pair checked
against the bundled labour statistics (:func:`contrastkit.evaluators.stats.labor_shares`);
``yes-no`` — whether the person suits an occupation; ``numeric`` — a number such as a
salary or an age.

Scoring (``EvaluateConfig.decision_scoring``, ``--decision-scoring``), both by default:

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

from pathlib import Path

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult, ModelEvaluation
from contrastkit.evaluators.report.results import model_slug
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
    decisions_benchmark,
    decisions_result,
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
from contrastkit.interfaces import ProgressFactory, progress_stage
from contrastkit.templates import DECISION_KINDS as KINDS
from contrastkit.templates import Prompt, Questions, load_questions

__all__ = [
    "DECISION_SCORING",
    "KINDS",
    "RAW_FILE",
    "TASK",
    "Decided",
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

#: ``EvaluateConfig.decision_scoring``: both modes, or one.
DECISION_SCORING = ("both", "logprob", "generate")


def evaluate_decisions(
    config: EvaluateConfig, paths: tuple[Path, ...], progress: ProgressFactory | None
) -> EvaluateResult:
    """The ``decisions`` task (module docstring): every model that answers questions
    (the ``answers`` capability: ``vlm:``) on every contrast set; one folder per model
    (and data folder, when several).

    Raises:
        ConfigError: a model without the ``answers`` capability (before anything
            loads), or contrast sets that share a folder name.
        DataFormatError: templates that do not read, a set with no source that has both
            versions.
    """
    from contrastkit.evaluators.evaluation import no_task_settings
    from contrastkit.evaluators.tasks.contrast_sets.data import load_contrast
    from contrastkit.models import load_model
    from contrastkit.models.registry import parse_spec

    no_task_settings(config, "decisions")
    for spec in config.models:
        if "answers" not in parse_spec(spec).capabilities:
            raise ConfigError(
                f"models: {spec} does not answer questions; --task decisions takes "
                "generative VLMs (vlm:)"
            )
    names = [path.name for path in paths]
    if len(set(names)) < len(names):
        raise ConfigError(f"data: contrast sets need distinct folder names, not {names}")
    questions = load_questions(config.questions)
    modes = MODES if config.decision_scoring == "both" else (config.decision_scoring,)
    probes = Probes(questions, modes)
    sets = []
    for path in paths:
        sources, left_out = contrast_sources(load_contrast(path, split=config.split))
        if not sources:
            raise DataFormatError(path, None, "gender", "no source has both versions")
        sets.append((path, sources, left_out))
    evaluations = []
    settings = config.settings
    for spec in config.models:
        model = load_model(spec, config.model)
        for path, sources, left_out in sets:
            folder = config.out / model_slug(spec)
            folder = folder / path.name if len(paths) > 1 else folder
            with progress_stage(progress, f"asking {spec}", len(sources)) as update:
                decided = decide(
                    sources, model, probes, update,  # type: ignore[arg-type]
                    raw_path=folder / RAW_FILE,
                )  # fmt: skip
            run = DecisionsRun(
                model=spec, data=str(path), left_out=left_out, resamples=settings.bootstrap,
                confidence=settings.confidence, seed=settings.seed,
            )  # fmt: skip
            result = decisions_result(decided.answers, questions, run)
            files = write_decisions_files(result, decided.answers, folder, records=decided.records)
            stale = (
                (f"{decided.stale} earlier answers in {RAW_FILE} not reused (their images, "
                 "question text, scoring or decoding settings changed, or their source is "
                 "gone); what is wanted was asked again",)
                if decided.stale else ()
            )  # fmt: skip
            evaluations.append(ModelEvaluation(
                model=spec, folder=folder, files=files, data=str(path),
                scored_images=2 * decided.asked_sources, reused_records=decided.reused,
                skipped=stale, summary=decisions_headline(result),
            ))  # fmt: skip
        del model
    return EvaluateResult(TASK, paths, tuple(evaluations))
