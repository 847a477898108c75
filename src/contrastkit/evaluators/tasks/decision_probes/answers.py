"""Reading one version's answer: a generated answer parsed (a refusal, an option's
letter, a number, or unparseable: :func:`parse_answer`) and the choice log-probability
scoring reads from the two letters (:func:`logprob_answer`); the rules are the task's
(:mod:`contrastkit.evaluators.tasks.decision_probes.task`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from contrastkit.evaluators.tasks.decision_probes.metrics import Answer
from contrastkit.templates import Prompt, is_refusal

__all__ = ["logprob_answer", "parse_answer", "parse_number"]

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
    """A generated answer to ``prompt`` as an :class:`~.metrics.Answer`: a
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


def logprob_answer(logprobs: np.ndarray, prompt: Prompt) -> Answer:
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
