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

The figures (:mod:`contrastkit.evaluators.decision_metrics`, each docstring citing its
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

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.decision_metrics import Answer, PairedAnswer
from contrastkit.evaluators.decision_outputs import (
    RAW_FILE,
    DecisionsRun,
    decisions_benchmark,
    finite_json,
    write_decisions_outputs,
)
from contrastkit.evaluators.decision_plots import flip_figure, gap_figure
from contrastkit.evaluators.decision_reports import (
    TASK,
    decisions_comparison_markdown,
    decisions_headline,
    decisions_markdown,
    read_decisions_benchmark,
)
from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult, ModelEvaluation
from contrastkit.evaluators.report.results import model_slug
from contrastkit.interfaces import ProgressFactory, progress_stage
from contrastkit.templates import DECISION_KINDS as KINDS
from contrastkit.templates import Prompt, Questions, is_refusal, load_questions

if TYPE_CHECKING:
    from PIL import Image

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
    "evaluate_decisions",
    "flip_figure",
    "gap_figure",
    "load_questions",
    "parse_answer",
    "parse_number",
    "read_decisions_benchmark",
    "write_decisions_outputs",
]

#: ``EvaluateConfig.decision_scoring``: both modes, or one.
DECISION_SCORING = ("both", "logprob", "generate")


_MODES = ("logprob", "generate")
_VERSIONS = ("masculine", "feminine")


# -- reading answers -----------------------------------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w.])[-+]?\$?\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*(k|thousand|million)?(?![\w])",
    re.IGNORECASE,
)
_SCALE = {"k": 1e3, "thousand": 1e3, "million": 1e6}


def parse_number(text: str) -> float | None:
    """The one number an answer gives (``$55,000``, ``55k``, ``35 years old``, ``1.5
    million``), or ``None`` when it gives none or several different ones (``30 to 40``
    is no single number: unparseable, never the midpoint)."""
    values = set()
    for match in _NUMBER.finditer(text):
        number = float(match.group(1).replace(",", "") + "." + (match.group(2) or "0"))
        values.add(number * _SCALE.get((match.group(3) or "").lower(), 1.0))
    return values.pop() if len(values) == 1 else None


def parse_answer(text: str, prompt: Prompt, refusals: Sequence[re.Pattern[str]]) -> Answer:
    """A generated answer to ``prompt`` as an :class:`~.decision_metrics.Answer`: a
    refusal if a ``refusals`` pattern matches (checked first); else the option whose
    letter the harness rule finds (:func:`contrastkit.harness_key.parse_choice`), or the
    number (:func:`parse_number`); else unparseable."""
    from contrastkit.harness_key import parse_choice

    if is_refusal(text, refusals):
        return Answer("refusal", text=text)
    if prompt.kind == "numeric":
        value = parse_number(text)
        return Answer("unparseable", text=text) if value is None else Answer(
            "number", value=value, text=text
        )  # fmt: skip
    letters = {letter: prompt.options[o] for letter, o in zip("AB", prompt.shown, strict=True)}
    letter = parse_choice(text, letters)
    if letter is None:
        return Answer("unparseable", text=text)
    position = "AB".index(letter)
    return Answer("choice", option=prompt.shown[position], position=position, text=text)


def _logprob_answer(logprobs: np.ndarray, prompt: Prompt) -> Answer:
    """The answer log-probability scoring reads from the two letters' log-probabilities:
    the likelier option, a ``tie`` when the two are exactly equal, and ``undefined`` (no
    probability, no choice) when they are not finite numbers: a NaN, a ``+inf``, or
    ``-inf`` for both letters (no softmax exists)."""
    logprobs = np.asarray(logprobs, dtype=np.float64)
    if np.isnan(logprobs).any() or np.isposinf(logprobs).any() or np.isneginf(logprobs).all():
        return Answer("undefined")
    shifted = np.exp(logprobs - np.max(logprobs))
    probs = shifted / shifted.sum()
    p0 = float(probs[prompt.shown.index(0)])
    if p0 == 0.5:
        return Answer("tie", prob=p0)
    option = 0 if p0 > 0.5 else 1
    return Answer("choice", option=option, position=prompt.shown.index(option), prob=p0)


# -- asking the model ----------------------------------------------------------------------
class DecisionModel(Protocol):
    """What the task asks of a model (the ``answers`` capability)."""

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray: ...

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]: ...


@dataclass(frozen=True)
class Source:
    """One source of a contrast set: its id and its two versions' images."""

    id: str
    masculine: Image.Image
    feminine: Image.Image


def contrast_sources(dataset: Any) -> tuple[list[Source], dict[str, int]]:
    """The sources of a loaded contrast set with both versions (the first row of each
    gender), and what was left out: ``unpaired`` sources (one version only) and
    ``extra_versions`` (further rows of a gender already taken)."""
    from contrastkit.evaluators.contrast import contrast_genders

    genders = contrast_genders(dataset)
    rows: dict[str, dict[str, int]] = {}
    extra = 0
    for index, (source, gender) in enumerate(zip(dataset["source_id"], genders, strict=True)):
        taken = rows.setdefault(str(source), {})
        if gender in taken or gender not in _VERSIONS:
            extra += 1
            continue
        taken[gender] = index
    sources = []
    for source, taken in rows.items():
        if len(taken) == 2:
            images = {g: dataset[taken[g]]["image"].convert("RGB") for g in _VERSIONS}
            sources.append(Source(source, images["masculine"], images["feminine"]))
    return sources, {"unpaired": len(rows) - len(sources), "extra_versions": extra}


def _source_digest(source: Source) -> str:
    """What identifies a source's two images across runs (an edited image is asked
    again)."""
    digest = hashlib.sha256(source.id.encode("utf-8"))
    for image in (source.masculine, source.feminine):
        digest.update(f"{image.mode}:{image.size}".encode())
        digest.update(image.tobytes())
    return digest.hexdigest()[:16]


def answer_key(mode: str, source: str, images: str, prompt: Prompt, questions: Questions) -> str:
    """The key of one paired answer in ``raw_decisions.jsonl``: the scoring mode, the
    source and a digest of everything the answer depends on: both images, the text the
    model reads and what each letter shows, and under generation the decoding settings
    and the refusal patterns (which parse the answer). A change to any of these gives
    a new key, so the answer is asked again rather than reused."""
    setting: dict[str, Any] = {
        "mode": mode, "images": images, "kind": prompt.kind, "text": prompt.text,
        "shown": list(prompt.shown), "options": list(prompt.options),
    }  # fmt: skip
    if mode == "generate":
        setting["decoding"] = dict(questions.decoding)
        setting["refusals"] = [pattern.pattern for pattern in questions.refusals]
    else:
        setting["logprob"] = "softmax over the letters A and B"
    payload = json.dumps(setting, sort_keys=True, ensure_ascii=False).encode("utf-8")
    digest = hashlib.sha256(payload).hexdigest()[:16]
    return f"{mode}:{source}:{prompt.family}:{prompt.question}:{prompt.order}:{digest}"


def _record(key: str, spec: str, mode: str, pair: PairedAnswer) -> dict[str, Any]:
    record: dict[str, Any] = finite_json({"key": key, "model": spec, "mode": mode, **asdict(pair)})
    return record


def _raw_answer(mode: str, fields: Mapping[str, Any]) -> Answer:
    """One version's answer read back from a raw record. A log-probability "choice"
    without a probability is what earlier versions of contrastkit wrote for non-finite
    letter log-probabilities (a NaN probability, stored as null, taken as a choice of
    option 1): it is read as ``undefined``, no choice."""
    answer = Answer(**fields)
    if mode == "logprob" and answer.chose and answer.prob is None:
        return Answer("undefined")
    return answer


def _paired(record: Mapping[str, Any]) -> PairedAnswer:
    """A paired answer read back from its raw record."""
    mode = str(record.get("mode"))
    return PairedAnswer(
        str(record["source"]), str(record["family"]), str(record["question"]),
        int(record["order"]), _raw_answer(mode, record["masculine"]),
        _raw_answer(mode, record["feminine"]),
    )  # fmt: skip


@dataclass(frozen=True)
class Decided:
    """What :func:`decide` gives: the paired answers by mode, their raw records (in the
    same order), and how many were reused from the raw file, asked, and left out of the
    raw file as stale (same model and source, but another question text, scoring or
    decoding setting: asked again)."""

    answers: dict[str, list[PairedAnswer]]
    records: list[dict[str, Any]]
    reused: int = 0
    asked_sources: int = 0
    stale: int = 0


@dataclass(frozen=True)
class Probes:
    """What :func:`decide` asks of each source: the question templates, and the scoring
    modes (``logprob``, ``generate``) each question is asked in."""

    questions: Questions
    modes: tuple[str, ...] = _MODES


def decide(
    sources: Sequence[Source],
    model: DecisionModel,
    probes: Probes,
    progress: Any = None,
    *,
    raw_path: Path | None = None,
) -> Decided:
    """Ask ``model`` every question of ``probes.questions`` about both versions of every
    source, in each of ``probes.modes``; the paired answers by mode.

    With ``raw_path`` (``raw_decisions.jsonl``), answers already there for this model
    under the same key (:func:`answer_key`) are reused and not asked again; the others
    are asked and appended (flushed) after each source, so an interrupted run resumes.
    Records of this model whose key is no longer wanted (a changed question, scoring or
    decoding setting) are dropped and counted as ``stale``."""
    from contrastkit.evaluators.raw import RawAppender, read_raw

    questions, modes = probes.questions, probes.modes
    spec = str(getattr(model, "spec", ""))
    earlier: dict[str, dict[str, Any]] = {}
    if raw_path is not None:
        earlier = read_raw(raw_path, spec, required=("mode", "masculine", "feminine"))
    out: dict[str, list[PairedAnswer]] = {mode: [] for mode in modes}
    records: list[dict[str, Any]] = []
    wanted: set[str] = set()
    reused = asked_sources = 0
    choice_prompts = [p for p in questions.prompts if p.kind != "numeric"]
    appender = RawAppender(raw_path, earlier.values()) if raw_path else None
    try:
        for done, source in enumerate(sources):
            images = _source_digest(source)
            new: list[dict[str, Any]] = []
            for mode in modes:
                prompts = choice_prompts if mode == "logprob" else list(questions.prompts)
                keys = [answer_key(mode, source.id, images, p, questions) for p in prompts]
                wanted.update(keys)
                missing = [i for i, key in enumerate(keys) if key not in earlier]
                asked = _ask(source, model, questions, mode, [prompts[i] for i in missing])
                fresh = dict(zip(missing, asked, strict=True))
                for i, key in enumerate(keys):
                    if i in fresh:
                        pair = fresh[i]
                        record = _record(key, spec, mode, pair)
                        new.append(record)
                    else:
                        record = earlier[key]
                        pair = _paired(record)
                        if (pair.masculine.outcome, pair.feminine.outcome) != (
                            record["masculine"]["outcome"],
                            record["feminine"]["outcome"],
                        ):  # an old record read anew: written again as it is read
                            record = _record(key, spec, mode, pair)
                        reused += 1
                    out[mode].append(pair)
                    records.append(record)
            asked_sources += bool(new)
            if appender is not None:
                appender.write(new)
            if progress is not None:
                progress(done + 1, len(sources))
    finally:
        if appender is not None:
            appender.close()
    stale = len(set(earlier) - wanted)
    return Decided(out, records, reused, asked_sources, stale)


def _ask(
    source: Source, model: DecisionModel, questions: Questions, mode: str,
    prompts: Sequence[Prompt],
) -> list[PairedAnswer]:  # fmt: skip
    """Ask ``prompts`` of both versions of ``source`` in one scoring mode."""
    if not prompts:
        return []
    texts = [p.text for p in prompts]
    answers: dict[str, list[Answer]] = {}
    for version in _VERSIONS:
        image = getattr(source, version)
        if mode == "logprob":
            scores = np.asarray(model.letter_logprobs([image] * len(texts), texts, 2))
            answers[version] = [
                _logprob_answer(row, p) for row, p in zip(scores, prompts, strict=True)
            ]
        else:
            tokens = int(questions.decoding["max_new_tokens"])
            generated = model.generate_answers([image] * len(texts), texts, tokens)
            answers[version] = [
                parse_answer(str(t), p, questions.refusals)
                for t, p in zip(generated, prompts, strict=True)
            ]
    return [
        PairedAnswer(
            source.id,
            prompt.family,
            prompt.question,
            prompt.order,
            answers["masculine"][i],
            answers["feminine"][i],
        )
        for i, prompt in enumerate(prompts)
    ]


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
    from contrastkit.evaluators.contrast import load_contrast
    from contrastkit.models import load_model
    from contrastkit.models.registry import parse_spec

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
    modes = _MODES if config.decision_scoring == "both" else (config.decision_scoring,)
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
            files, benchmark = write_decisions_outputs(
                decided.answers, questions, folder, run, records=decided.records
            )
            stale = (
                (f"{decided.stale} earlier answers in {RAW_FILE} not reused (their images, "
                 "question text, scoring or decoding settings changed, or their source is "
                 "gone); what is wanted was asked again",)
                if decided.stale else ()
            )  # fmt: skip
            evaluations.append(ModelEvaluation(
                model=spec, folder=folder, files=files, data=str(path),
                scored_images=2 * decided.asked_sources, reused_records=decided.reused,
                skipped=stale, summary=decisions_headline(benchmark),
            ))  # fmt: skip
        del model
    return EvaluateResult(TASK, paths, tuple(evaluations))
