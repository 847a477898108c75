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
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from contrastkit import __version__
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.decision_metrics import (
    Answer,
    PairedAnswer,
    family_figures,
    option_gap,
    overall_bias,
    pair_bias,
)
from contrastkit.evaluators.evaluation import EvaluateConfig, EvaluateResult, ModelEvaluation
from contrastkit.evaluators.report.results import model_slug
from contrastkit.interfaces import ProgressFactory, progress_stage
from contrastkit.io import atomic_write_text
from contrastkit.templates import DECISION_KINDS as KINDS
from contrastkit.templates import Prompt, Questions, load_questions
from contrastkit.text import format_number, markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

__all__ = [
    "DECISION_SCORING",
    "KINDS",
    "TASK",
    "Decided",
    "Prompt",
    "Questions",
    "answer_key",
    "decide",
    "decisions_benchmark",
    "decisions_comparison_markdown",
    "decisions_headline",
    "decisions_markdown",
    "evaluate_decisions",
    "load_questions",
    "parse_answer",
    "parse_number",
    "read_decisions_benchmark",
    "write_decisions_outputs",
]

#: What results of this task record as their ``task``.
TASK = "decisions"

#: ``EvaluateConfig.decision_scoring``: both modes, or one.
DECISION_SCORING = ("both", "logprob", "generate")


_MODES = ("logprob", "generate")
_VERSIONS = ("masculine", "feminine")
RAW_FILE = "raw_decisions.jsonl"


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

    if any(pattern.search(text) for pattern in refusals):
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
    """The answer log-probability scoring reads from the two letters' log-probabilities."""
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
    record: dict[str, Any] = _finite_json({"key": key, "model": spec, "mode": mode, **asdict(pair)})
    return record


def _paired(record: Mapping[str, Any]) -> PairedAnswer:
    """A paired answer read back from its raw record."""
    return PairedAnswer(
        str(record["source"]), str(record["family"]), str(record["question"]),
        int(record["order"]), Answer(**record["masculine"]), Answer(**record["feminine"]),
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


def decide(
    sources: Sequence[Source],
    model: DecisionModel,
    questions: Questions,
    modes: Sequence[str] = _MODES,
    progress: Any = None,
    *,
    raw_path: Path | None = None,
) -> Decided:
    """Ask ``model`` every question of ``questions`` about both versions of every
    source, in each scoring mode; the paired answers by mode.

    With ``raw_path`` (``raw_decisions.jsonl``), answers already there for this model
    under the same key (:func:`answer_key`) are reused and not asked again; the others
    are asked and appended (flushed) after each source, so an interrupted run resumes.
    Records of this model whose key is no longer wanted (a changed question, scoring or
    decoding setting) are dropped and counted as ``stale``."""
    from contrastkit.evaluators.raw import RawAppender, read_raw

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


# -- the benchmark -------------------------------------------------------------------------
def decisions_benchmark(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    *,
    resamples: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The figures of ``benchmark.json`` from the paired answers of each mode:
    ``summary`` (mode -> family -> :func:`~.decision_metrics.family_figures` and
    ``kind``), ``occupation_pairs`` (mode -> pair -> figures, with ``b_pair`` under
    log-probability scoring), ``genderbias_vl`` (``b_ovl``; ``ipss`` is ``None`` with
    its reason), ``occupations`` (mode -> occupation of the yes-no families -> ``yes_gap``,
    ``flip_rate``, ``n``, ``male_share``) and ``labour`` (mode -> correlation of
    ``yes_gap`` with the male share)."""
    from contrastkit.evaluators.stats import labor_comparison, labor_shares

    shares = labor_shares()
    settings: dict[str, Any] = {"resamples": resamples, "level": confidence, "seed": seed}
    summary: dict[str, Any] = {}
    pairs_out: dict[str, Any] = {}
    occupations: dict[str, Any] = {}
    labour: dict[str, Any] = {}
    bias: dict[str, Any] = {}
    for mode, paired in answers.items():
        by_family: dict[str, list[PairedAnswer]] = {}
        for pair in paired:
            by_family.setdefault(pair.family, []).append(pair)
        summary[mode] = {
            family: {"kind": questions.families[family], **family_figures(rows, **settings)}
            for family, rows in by_family.items()
        }
        by_question: dict[tuple[str, str], list[PairedAnswer]] = {}
        for pair in paired:
            by_question.setdefault((pair.family, pair.question), []).append(pair)
        mode_pairs: dict[str, Any] = {}
        mode_occupations: dict[str, Any] = {}
        for (family, question), rows in by_question.items():
            kind = questions.families[family]
            if kind == "choice":
                tm, tf = questions.pairs[question]
                figures = family_figures(rows, **settings)
                entry = {
                    "family": family, "masculine_stereotyped": tm, "feminine_stereotyped": tf,
                    "male_share_masculine_stereotyped": shares[tm].male_share_percent,
                    "male_share_feminine_stereotyped": shares[tf].male_share_percent,
                    "n": figures["n"], "flip_rate": figures["flip_rate"], "gap": figures["gap"],
                }  # fmt: skip
                if mode == "logprob":
                    entry["b_pair"] = pair_bias(rows)
                mode_pairs[question] = entry
            elif kind == "yes-no":
                gaps = [g for g in map(option_gap, rows) if g is not None]
                yes_is_masculine = shares[question].male_share_percent > 50
                mean = float(np.mean(gaps)) if gaps else None
                mode_occupations[question] = {
                    "family": family,
                    "male_share": shares[question].male_share_percent,
                    "yes_gap": None if mean is None else (mean if yes_is_masculine else -mean),
                    "flip_rate": family_figures(rows)["flip_rate"],
                    "n": len(rows),
                }
        if mode_pairs:
            pairs_out[mode] = mode_pairs
        if mode_occupations:
            occupations[mode] = mode_occupations
            values = {
                name: entry["yes_gap"]
                for name, entry in mode_occupations.items()
                if entry["yes_gap"] is not None
            }
            labour[mode] = labor_comparison(values)
        if mode == "logprob" and mode_pairs:
            bias = {
                "b_ovl": overall_bias({k: v["b_pair"] for k, v in mode_pairs.items()}),
                "ipss": None,
                "ipss_reason": _IPSS_REASON,
            }
    return {
        "summary": summary,
        "occupation_pairs": pairs_out,
        "genderbias_vl": bias or None,
        "occupations": occupations,
        "labour": labour,
    }


_IPSS_REASON = (
    "Ipss weighs B_pair by the accuracy of naming each image's true occupation; a "
    "contrast set records no occupation, so it is not computed"
)


def _finite_json(value: Any) -> Any:
    """``value`` with every non-finite float as ``None`` (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_json(v) for v in value]
    return value


def _raw_lines(
    answers: Mapping[str, Sequence[PairedAnswer]], records: Sequence[Mapping[str, Any]] | None
) -> str:
    if records is None:
        records = [
            _finite_json({"mode": mode, **asdict(pair)})
            for mode, paired in answers.items()
            for pair in paired
        ]
    return "".join(json.dumps(record) + "\n" for record in records)


def write_decisions_outputs(
    answers: Mapping[str, Sequence[PairedAnswer]],
    questions: Questions,
    folder: Path,
    *,
    model: str,
    data: str,
    left_out: Mapping[str, int],
    resamples: int,
    confidence: float,
    seed: int,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[dict[str, Path], dict[str, Any]]:
    """Write ``raw_decisions.jsonl`` (``records``, the keyed records of :func:`decide`,
    when given), ``benchmark.json``, ``report.md`` and the two plots (PNG and SVG) into
    ``folder``; return the files by name and the benchmark."""
    from contrastkit.evaluators.report.figures import save_formats
    from contrastkit.models.registry import weights_note
    from contrastkit.results import SCHEMA_VERSION

    folder.mkdir(parents=True, exist_ok=True)
    note = weights_note(model)
    figures = decisions_benchmark(
        answers, questions, resamples=resamples, confidence=confidence, seed=seed
    )
    sources = {pair.source for paired in answers.values() for pair in paired}
    benchmark = _finite_json({
        "task": TASK,
        "schema_version": SCHEMA_VERSION,
        "contrastkit_version": __version__,
        "model": model,
        "data": data,
        "random_weights": note is not None,
        "weights_note": note,
        "sources": len(sources),
        "left_out": dict(left_out),
        "scoring": {
            "modes": list(answers),
            "questions": questions.source,
            "answer_instruction": questions.answer_instruction,
            "decoding": dict(questions.decoding),
            "refusals": [pattern.pattern for pattern in questions.refusals],
            "logprob": "softmax over the log-probabilities of the option letters A and B "
            "as the start of the answer",
        },
        "metadata": {"bootstrap": resamples, "confidence": confidence, "seed": seed},
        **figures,
    })  # fmt: skip
    paths = {
        "raw": folder / RAW_FILE,
        "benchmark": folder / "benchmark.json",
        "report": folder / "report.md",
    }
    atomic_write_text(paths["raw"], _raw_lines(answers, records))
    atomic_write_text(paths["benchmark"], json.dumps(benchmark, indent=2) + "\n")
    atomic_write_text(paths["report"], decisions_markdown(benchmark))
    plots = folder / "plots"
    for name, figure in (
        ("decision_flips", flip_figure(benchmark)),
        ("decision_gaps", gap_figure(benchmark, answers)),
    ):
        png, svg = save_formats(figure, plots / name)
        paths[name], paths[f"{name}_svg"] = png, svg
    return paths, benchmark


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
                    sources, model, questions, modes, update,  # type: ignore[arg-type]
                    raw_path=folder / RAW_FILE,
                )  # fmt: skip
            files, benchmark = write_decisions_outputs(
                decided.answers, questions, folder, model=spec, data=str(path),
                left_out=left_out, resamples=settings.bootstrap,
                confidence=settings.confidence, seed=settings.seed, records=decided.records,
            )  # fmt: skip
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


# -- reports -------------------------------------------------------------------------------
def read_decisions_benchmark(path: Path) -> dict[str, Any] | None:
    """A decisions ``benchmark.json`` (or the folder holding one), or ``None`` for
    another task's."""
    from contrastkit.records import read_json_object

    file = Path(path) / "benchmark.json" if Path(path).is_dir() else Path(path)
    if not file.is_file():
        return None
    data = read_json_object(file, "a benchmark object")
    return data if data.get("task") == TASK else None


def decisions_headline(benchmark: Mapping[str, Any]) -> dict[str, Any]:
    """The console headline: the model, data and sources, and as ``figures`` (name ->
    value, with ``NAME_ci`` intervals beside) the flip rate of each family under each
    scoring mode and ``B_ovl``."""
    figures: dict[str, Any] = {}
    for mode, families in (benchmark.get("summary") or {}).items():
        for family, values in families.items():
            name = f"flip rate {family} ({mode})"
            figures[name] = values.get("flip_rate")
            if values.get("flip_rate_ci") is not None:
                figures[f"{name}_ci"] = values["flip_rate_ci"]
    b_ovl = (benchmark.get("genderbias_vl") or {}).get("b_ovl")
    if b_ovl is not None:
        figures["B_ovl"] = b_ovl
    return {
        "task": TASK,
        "model": benchmark.get("model"),
        "data": benchmark.get("data"),
        "random_weights": bool(benchmark.get("random_weights")),
        "weights_note": benchmark.get("weights_note"),
        "sources": benchmark.get("sources"),
        "figures": figures,
    }


def _cell(figures: Mapping[str, Any], key: str) -> str:
    from contrastkit.evaluators.report.tables import format_interval

    return format_interval(figures, key) if figures.get(key) is not None else "–"


_SUMMARY_HEADER = [
    "family", "kind", "sources", "compared", "flip rate", "stereotyped flips", "gap",
    "abs gap", "first position", "refusals M / F", "unparseable M / F",
]  # fmt: skip


def _summary_rows(families: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for family, f in families.items():
        rows.append([
            family, f.get("kind"), f.get("n_sources"), f.get("n_compared"),
            _cell(f, "flip_rate"), _cell(f, "stereotyped_flip_share"), _cell(f, "gap"),
            _cell(f, "abs_gap"), _cell(f, "first_position_rate"),
            f"{f.get('n_refusals_masculine')} / {f.get('n_refusals_feminine')}",
            f"{f.get('n_unparseable_masculine')} / {f.get('n_unparseable_feminine')}",
        ])  # fmt: skip
    return rows


_MODE_TITLES = {
    "logprob": "Log-probability of each option",
    "generate": "Generated answers",
}


def decisions_markdown(benchmark: Mapping[str, Any]) -> str:
    """``report.md`` of one model."""
    from contrastkit.evaluators.report.tables import interval_note

    scoring = benchmark.get("scoring") or {}
    lines = [f"# Decision probes: `{benchmark.get('model')}`", ""]
    if benchmark.get("weights_note"):
        lines += [f"**{benchmark['weights_note']}**", ""]
    left = benchmark.get("left_out") or {}
    lines += [
        f"- data: `{benchmark.get('data')}`: {benchmark.get('sources')} sources with both "
        f"versions ({left.get('unpaired', 0)} with one version only and "
        f"{left.get('extra_versions', 0)} further rows left out)",
        f"- questions: {scoring.get('questions')}; each asked of both versions with "
        "identical text, the options in both orders",
        f"- decoding: {json.dumps(scoring.get('decoding'))}",
        "",
        "Flip rate: share of paired answers (both versions chose, or both gave a number) "
        "where the answers differ. Gap: masculine minus feminine, of the probability of "
        "the masculine-stereotyped option (log-probability), of choosing it (generated), "
        "or of the number; positive is toward the stereotype. First position: share of "
        "choices on the option shown first (0.5: no position bias). Refusals and "
        "unparseable answers are counted per version (M / F) and enter no other figure.",
        "",
    ]
    for mode, families in (benchmark.get("summary") or {}).items():
        lines += [f"## {_MODE_TITLES.get(mode, mode)}", ""]
        lines += markdown_table(_SUMMARY_HEADER, _summary_rows(families))
        lines += interval_note(list(families.values()), "resampling sources")
    bias = benchmark.get("genderbias_vl") or {}
    for mode, pairs in (benchmark.get("occupation_pairs") or {}).items():
        lines += [f"## Occupation pairs ({_MODE_TITLES.get(mode, mode).lower()})", ""]
        header = ["pair (masculine / feminine stereotyped)", "men %", "n", "flip rate", "gap"]
        if mode == "logprob":
            header.append("B_pair")
        rows = []
        for name, p in pairs.items():
            row = [
                name,
                f"{p['male_share_masculine_stereotyped']:g} / "
                f"{p['male_share_feminine_stereotyped']:g}",
                p["n"], format_number(p.get("flip_rate")), format_number(p.get("gap")),
            ]  # fmt: skip
            if mode == "logprob":
                row.append(format_number(p.get("b_pair")))
            rows.append(row)
        lines += markdown_table(header, rows)
        if mode == "logprob" and bias:
            lines += [
                f"B_ovl (GenderBias-VL, mean |B_pair|): {format_number(bias.get('b_ovl'))}. "
                f"Ipss: not computed ({bias.get('ipss_reason')}).",
                "",
            ]
    labour = benchmark.get("labour") or {}
    for mode, occupations in (benchmark.get("occupations") or {}).items():
        lines += [f"## Per occupation ({_MODE_TITLES.get(mode, mode).lower()})", ""]
        rows = [
            [name, f"{o['male_share']:g}", o["n"], format_number(o.get("yes_gap")),
             format_number(o.get("flip_rate"))]
            for name, o in sorted(occupations.items(), key=lambda kv: -kv[1]["male_share"])
        ]  # fmt: skip
        lines += markdown_table(["occupation", "men %", "n", "yes gap (M - F)", "flip rate"], rows)
        corr = labour.get(mode) or {}
        text = (
            f"Correlation of the yes gap with the share of men (US labour statistics), "
            f"n = {corr.get('n')}: Pearson r = {format_number(corr.get('pearson_r'))}, "
            f"Kendall tau = {format_number(corr.get('kendall_tau'))}"
        )
        if corr.get("caveat"):
            text += f" — {corr['caveat']}."
        else:
            text += (
                f" (p = {format_number(corr.get('pearson_p'), 3)}, "
                f"{format_number(corr.get('kendall_p'), 3)})."
            )
        lines += [text, ""]
    lines += ["Plots: `plots/decision_flips.png`, `plots/decision_gaps.png`.", ""]
    return "\n".join(lines)


def flip_figure(benchmark: Mapping[str, Any]) -> Figure:
    """Flip rate per question family and scoring mode, with the bootstrap intervals
    (resampling sources)."""
    from contrastkit.evaluators.report.figures import (
        FONT,
        PALETTE,
        add_legend,
        draw_bars,
        figure_title,
        interval_error,
        interval_handle,
        interval_level,
        label_bars,
        new_figure,
        style_axis,
        suptitle,
    )

    summary = benchmark.get("summary") or {}
    families = list(dict.fromkeys(f for mode in summary.values() for f in mode))
    figure, (axis,) = new_figure(max(4.5, 1.3 * len(families) + 2), 3.6)
    colours = {"logprob": PALETTE["masculine"], "generate": PALETTE["feminine"]}
    width = 0.8 / max(1, len(summary))
    handles: list[Any] = []
    for m, (mode, figures) in enumerate(summary.items()):
        positions = [i + (m - (len(summary) - 1) / 2) * width for i in range(len(families))]
        errors = [interval_error(figures.get(f), "flip_rate") for f in families]
        defined = [
            i for i, f in enumerate(families) if (figures.get(f) or {}).get("flip_rate") is not None
        ]
        bars = draw_bars(
            axis, [positions[i] for i in defined], [errors[i] for i in defined], width=width,
            color=colours.get(mode, "grey"),
        )  # fmt: skip
        label_bars(axis, bars, [errors[i] for i in defined])
        for i in set(range(len(families))) - set(defined):  # nothing compared: no bar
            axis.annotate("n/a", (positions[i], 0), xytext=(0, 2), textcoords="offset points",
                          ha="center", va="bottom", fontsize=FONT - 2)  # fmt: skip
        from matplotlib.patches import Patch

        handles.append(Patch(color=colours.get(mode, "grey"), label=_MODE_TITLES.get(mode, mode)))
    axis.set_xticks(range(len(families)), families)
    axis.set_xlim(-0.6, len(families) - 0.4)
    axis.set_ylabel("flip rate (answers differ between versions)", fontsize=FONT)
    axis.set_ylim(0, 1.1)
    style_axis(axis)
    level = interval_level(f for mode in summary.values() for f in mode.values())
    handles.append(interval_handle(level, "resampling sources"))
    add_legend(figure, handles, ncols=3)
    title = figure_title(
        benchmark,
        str(benchmark.get("model")),
        "Flip rate per question family",
        f"{benchmark.get('sources')} sources",
    )
    suptitle(figure, title, benchmark)
    return figure


def gap_figure(
    benchmark: Mapping[str, Any], answers: Mapping[str, Sequence[PairedAnswer]]
) -> Figure:
    """The distribution of the paired differences (masculine minus feminine) behind the
    gap of the option questions, one panel per scoring mode."""
    from contrastkit.evaluators.report.figures import (
        FONT,
        PALETTE,
        figure_title,
        new_figure,
        style_axis,
        suptitle,
    )

    kinds = {
        family: f.get("kind")
        for mode in (benchmark.get("summary") or {}).values()
        for family, f in mode.items()
    }
    modes = [mode for mode in answers if answers[mode]] or ["logprob"]
    figure, axes = new_figure(4.2 * len(modes), 3.4, len(modes))
    for axis, mode in zip(axes, modes, strict=True):
        gaps = [
            g
            for pair in answers.get(mode, ())
            if kinds.get(pair.family) != "numeric" and (g := option_gap(pair)) is not None
        ]
        if gaps:
            axis.hist(gaps, bins=np.linspace(-1.05, 1.05, 22), color=PALETTE["neutral"])
        else:
            axis.text(0.5, 0.5, "no paired answers", ha="center", transform=axis.transAxes)
        axis.axvline(0, color=PALETTE["reference"], linewidth=0.8)
        axis.set_title(f"{_MODE_TITLES.get(mode, mode)} (n = {len(gaps)})", fontsize=8)
        axis.set_xlabel("masculine − feminine\n(> 0: toward the stereotype)", fontsize=FONT)
        axis.set_ylabel("paired answers", fontsize=FONT)
        style_axis(axis)
    title = figure_title(
        benchmark,
        str(benchmark.get("model")),
        "Paired differences of the option questions",
        f"{benchmark.get('sources')} sources",
    )
    suptitle(figure, title, benchmark)
    return figure


def decisions_comparison_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """The models side by side (``contrastkit report``): per scoring mode and family
    the flip rate, gap and refusal rates, and ``B_ovl``."""
    from contrastkit.evaluators.report.tables import RANDOM_WEIGHTS_CELL

    lines = ["## Decision probes", ""]
    header = ["model", "data", "mode", "family", "flip rate", "gap", "stereotyped flips",
              "refusals M", "refusals F", "B_ovl"]  # fmt: skip
    rows = []
    for result in results:
        name = f"`{result.get('model')}`" + (
            RANDOM_WEIGHTS_CELL if result.get("random_weights") else ""
        )
        b_ovl = (result.get("genderbias_vl") or {}).get("b_ovl")
        for mode, families in (result.get("summary") or {}).items():
            for family, f in families.items():
                rows.append([
                    name, result.get("data"), mode, family, _cell(f, "flip_rate"),
                    _cell(f, "gap"), _cell(f, "stereotyped_flip_share"),
                    format_number(f.get("refusal_rate_masculine")),
                    format_number(f.get("refusal_rate_feminine")),
                    format_number(b_ovl) if mode == "logprob" else "–",
                ])  # fmt: skip
    lines += markdown_table(header, rows)
    return "\n".join(lines)
