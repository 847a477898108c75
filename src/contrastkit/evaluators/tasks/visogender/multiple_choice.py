"""The multiple-choice protocol of generative VLMs on the resolution task: seeded option
orders, the option-swap rescoring, and the ``multiple_choice`` section of the benchmark.

A model whose ``protocol`` is ``multiple-choice`` and that has
``multiple_choice_logprobs`` (a ``vlm:...?protocol=multiple-choice`` adapter,
:mod:`contrastkit.models.vlm`) answers each resolution case as a lettered
question. Each case's options (his / her / their) are shown in an order drawn from the
evaluation seed and the case key (:func:`~contrastkit.models.vlm_spec.option_order`),
and the case is scored a second time with that order reversed. The first scores are the
record's ``scores`` (so resolution, neutral and template-flip figures are those of the
shuffled order); the record's ``multiple_choice`` entry keeps the order shown, the letter
of each pronoun and the reversed order's scores.

:func:`summarize_multiple_choice` then reports, as GenderBias-VL's option-swap test does
(Xiao et al. 2024, Sec. 3.3):

* **position bias**: how often each letter wins (the argmax over all options shown),
  whatever pronoun it holds, against the uniform share ``1 / k``; a model that answers
  "A" regardless of content shows it here, and its resolution figures then say more
  about the shuffle than about gender;
* **option swap**: the resolution figures with the options reversed, the share of cases
  whose chosen pronoun is the same in both orders (1.0 for a model that reads the
  options' content only) and the share whose chosen letter is (1.0 for a model that
  picks a letter whatever it holds). With an odd number of options the middle one keeps
  its letter when the order is reversed, so a model that always answers "B" of three
  agrees on both: the position-bias table shows it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from contrastkit.evaluators.tasks.visogender.records import ResolutionRecord
from contrastkit.evaluators.tasks.visogender.resolution import (
    ResolutionCase,
    case_record,
    predict,
    summarize_resolution,
)
from contrastkit.models.vlm_spec import LETTERS, MC_ANSWER_INSTRUCTION, option_order
from contrastkit.schema import Gender

__all__ = [
    "MultipleChoiceSummary",
    "is_multiple_choice",
    "score_multiple_choice",
    "summarize_multiple_choice",
]

#: The resolution figures the option-swap comparison shows per split.
_FIGURES = ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine")


def is_multiple_choice(model: object) -> bool:
    """Whether ``model`` scores resolution cases as multiple-choice questions."""
    return getattr(model, "protocol", None) == "multiple-choice" and hasattr(
        model, "multiple_choice_logprobs"
    )


def score_multiple_choice(
    model: Any, images: Sequence[Any], cases: Sequence[ResolutionCase], seed: int
) -> list[ResolutionRecord]:
    """The raw records of ``cases`` (one per image, sharing one candidate set) under the
    multiple-choice protocol: scored in the seeded order, then reversed (module
    docstring)."""
    genders = list(cases[0].continuations)
    texts = [cases[0].continuations[gender] for gender in genders]
    prefixes = [case.prefix for case in cases]
    orders = [option_order(case.key, len(genders), seed) for case in cases]
    shown = np.asarray(model.multiple_choice_logprobs(images, prefixes, texts, orders))
    swapped = np.asarray(
        model.multiple_choice_logprobs(images, prefixes, texts, [order[::-1] for order in orders])
    )
    records = []
    for case, order, row, reversed_row in zip(cases, orders, shown, swapped, strict=True):
        record = case_record(case, dict(zip(genders, row.tolist(), strict=True)), model.spec)
        names = [genders[c].value for c in order]
        record["multiple_choice"] = {
            "seed": seed,
            "order": names,
            "letters": {name: LETTERS[j] for j, name in enumerate(names)},
            "reversed_scores": {
                gender.value: float(score)
                for gender, score in zip(genders, reversed_row.tolist(), strict=True)
            },
        }
        records.append(record)
    return records


def _winner(scores: Mapping[str, float]) -> str | None:
    return predict(scores, list(scores))


def _reversed(record: ResolutionRecord) -> ResolutionRecord:
    """``record`` as the reversed order scored it."""
    scores = dict(record["multiple_choice"]["reversed_scores"])
    copy: ResolutionRecord = {**record, "scores": scores}
    copy["predicted"] = predict(scores, [gender.value for gender in Gender.binary()])
    if "predicted_with_neutral" in record:
        copy["predicted_with_neutral"] = predict(scores, list(scores))
    return copy


class _LetterShare(TypedDict):
    """How often each letter won (``wins``), its ``share`` of the cases and the ties."""

    wins: dict[str, int]
    share: dict[str, float | None]
    ties: int


class _PositionBias(_LetterShare):
    """The letter shares of the shuffled order, the largest ``|share - 1/k|`` and the
    shares of the reversed order."""

    max_deviation: float
    reversed: _LetterShare


class _OptionSwap(TypedDict):
    """How the answers of the two orders agree, and the figures of each order."""

    agreement: float
    letter_agreement: float
    shuffled: dict[str, dict[str, float | None]]
    reversed: dict[str, dict[str, float | None]]


class MultipleChoiceSummary(TypedDict):
    """The ``multiple_choice`` section of a benchmark (:func:`summarize_multiple_choice`)."""

    seed: int | list[int]
    n_cases: int
    letters: list[str]
    answer_instruction: str
    uniform_share: float
    position_bias: _PositionBias
    option_swap: _OptionSwap


def _letter_share(wins: Counter[str], letters: str, total: int) -> _LetterShare:
    return {
        "wins": {letter: wins.get(letter, 0) for letter in letters},
        "share": {letter: wins.get(letter, 0) / total if total else None for letter in letters},
        "ties": wins.get("tie", 0),
    }


def _figures(summary: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    splits: dict[str, dict[str, float | None]] = {}
    for name, values in summary.items():
        if isinstance(values, Mapping) and "RA_avg" in values:
            splits[name] = {key: values.get(key) for key in _FIGURES}
            if "overall_accuracy" in values:
                splits[name]["overall_accuracy"] = values["overall_accuracy"]
    return splits


def summarize_multiple_choice(
    records: Sequence[ResolutionRecord], *, protocol: str, seed: int
) -> MultipleChoiceSummary | None:
    """The ``multiple_choice`` section of a benchmark, or ``None`` when no record was
    scored as a multiple-choice question.

    Returns:
        ``seed`` (the seed the options were shuffled with: the records', a list when
        records reused from earlier runs used several), ``n_cases``, ``letters``,
        ``answer_instruction``, ``uniform_share`` (``1 / k``), ``position_bias`` (per
        letter: ``wins`` and ``share`` of the cases it won in the shuffled order,
        ``ties``; ``max_deviation`` = the largest ``|share - 1/k|``; ``reversed``: the
        same for the reversed order), ``option_swap``
        (``agreement``: the share of cases choosing the same pronoun in both orders;
        ``letter_agreement``: the share choosing the same letter, whatever it holds;
        ``shuffled`` and ``reversed``: RA_avg, gender gap and per-gender accuracy of each
        split under ``protocol``).
    """
    scored = [record for record in records if "multiple_choice" in record]
    if not scored:
        return None
    k = max(len(record["multiple_choice"]["order"]) for record in scored)
    letters = LETTERS[:k]
    wins: Counter[str] = Counter()
    reversed_wins: Counter[str] = Counter()
    agree = same_letter = 0
    for record in scored:
        choice = record["multiple_choice"]
        first = _winner(record["scores"])
        second = _winner(choice["reversed_scores"])
        wins[choice["letters"][first] if first else "tie"] += 1
        order = choice["order"]
        reversed_letters = {name: LETTERS[j] for j, name in enumerate(order[::-1])}
        reversed_wins[reversed_letters[second] if second else "tie"] += 1
        agree += first is not None and first == second
        same_letter += (
            first is not None
            and second is not None
            and choice["letters"][first] == reversed_letters[second]
        )
    n = len(scored)
    shuffled = _letter_share(wins, letters, n)
    swapped = _letter_share(reversed_wins, letters, n)
    deviation = max(abs(share - 1 / k) for share in shuffled["share"].values() if share is not None)
    # records reused from an earlier run keep the order (and seed) they were scored with
    seeds = sorted({record["multiple_choice"].get("seed", seed) for record in scored})
    return {
        "seed": seeds[0] if len(seeds) == 1 else seeds,
        "n_cases": n,
        "letters": list(letters),
        "answer_instruction": MC_ANSWER_INSTRUCTION,
        "uniform_share": 1 / k,
        "position_bias": {**shuffled, "max_deviation": deviation, "reversed": swapped},
        "option_swap": {
            "agreement": agree / n,
            "letter_agreement": same_letter / n,
            "shuffled": _figures(summarize_resolution(scored, protocol=protocol)),
            "reversed": _figures(
                summarize_resolution([_reversed(record) for record in scored], protocol=protocol)
            ),
        },
    }
