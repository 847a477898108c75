"""Asking a model the questions about both versions of every source of a contrast set
(:func:`decide`), each paired answer stored in ``raw_decisions.jsonl`` under a key of
everything it depends on (:func:`answer_key`), so that a rerun reuses what is unchanged
and asks again the rest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np

from contrastkit.evaluators.tasks.decision_probes.answers import logprob_answer, parse_answer
from contrastkit.evaluators.tasks.decision_probes.benchmark import finite_json
from contrastkit.evaluators.tasks.decision_probes.metrics import Answer, PairedAnswer
from contrastkit.templates import Prompt, Questions

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "MODES",
    "VERSIONS",
    "Decided",
    "DecisionModel",
    "Probes",
    "Source",
    "answer_key",
    "contrast_sources",
    "decide",
]

#: The scoring modes, in the order they are asked.
MODES = ("logprob", "generate")
#: The two versions of a source.
VERSIONS = ("masculine", "feminine")


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
    from contrastkit.evaluators.tasks.contrast_sets.data import contrast_genders

    genders = contrast_genders(dataset)
    rows: dict[str, dict[str, int]] = {}
    extra = 0
    for index, (source, gender) in enumerate(zip(dataset["source_id"], genders, strict=True)):
        taken = rows.setdefault(str(source), {})
        if gender in taken or gender not in VERSIONS:
            extra += 1
            continue
        taken[gender] = index
    sources = []
    for source, taken in rows.items():
        if len(taken) == 2:
            images = {g: dataset[taken[g]]["image"].convert("RGB") for g in VERSIONS}
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


class _Asked(TypedDict):
    mode: str
    images: str
    kind: str
    text: str
    shown: list[int]
    options: list[str]


class _AnswerSetting(_Asked, total=False):
    """Everything one paired answer depends on (:func:`answer_key` digests it): the
    scoring mode, both images' digest, the prompt and what each letter shows; under
    generation the decoding settings and refusal patterns, else the log-probability
    rule."""

    decoding: Mapping[str, object]
    refusals: list[str]
    logprob: str


def answer_key(mode: str, source: str, images: str, prompt: Prompt, questions: Questions) -> str:
    """The key of one paired answer in ``raw_decisions.jsonl``: the scoring mode, the
    source and a digest of everything the answer depends on: both images, the text the
    model reads and what each letter shows, and under generation the decoding settings
    and the refusal patterns (which parse the answer). A change to any of these gives
    a new key, so the answer is asked again rather than reused."""
    setting: _AnswerSetting = {
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
    modes: tuple[str, ...] = MODES


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
    for version in VERSIONS:
        image = getattr(source, version)
        if mode == "logprob":
            scores = np.asarray(model.letter_logprobs([image] * len(texts), texts, 2))
            answers[version] = [
                logprob_answer(row, p) for row, p in zip(scores, prompts, strict=True)
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
