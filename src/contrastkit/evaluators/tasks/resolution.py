"""The resolution task (VisoGender Sec. 3.5): match one image to captions that differ only
in the pronoun, and measure how often the pronoun of the referent's perceived gender wins.

Cases: every OO image with the OO template, every OP image with the occupation-first
template (the paper's main results) and with the participant-first template (the template
flip of Appendix D.1). Candidates are his/her, plus their with ``neutral=True``.

* Dual encoders score each caption: the similarity of the image and "The doctor and her
  patient" (:class:`~contrastkit.evaluators.models.ImageTextScorer`).
* Captioning models score each pronoun as a continuation of "The doctor and"
  (:class:`~contrastkit.evaluators.models.PronounScorer`).

A case's prediction is the highest-scoring candidate among his/her (the binary task of
Tab. 2); with ``neutral`` the prediction among his/her/their is recorded as well, for the
neutral rate of Appendix D.1. Equal top scores are a tie: no pronoun is chosen and the
case counts as not resolved correctly.

:func:`summarize_resolution` turns the per-case records into the ``resolution_bias``
section of the benchmark JSON (Appendix J): the four splits of Tab. 2, per gender cell,
per sector / specialisation / occupation (Appendix B), the template flip and the neutral
rates.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contrastkit.evaluators.data import EvalItem
from contrastkit.evaluators.metrics import neutral_summary, resolution_summary
from contrastkit.schema import Context, Gender
from contrastkit.templates import (
    PRONOUNS,
    Template,
    captioning_prefix,
    captions,
    correct_pronoun,
    templates_for,
)

__all__ = [
    "SPLITS",
    "ResolutionCase",
    "predict",
    "resolution_cases",
    "summarize_resolution",
]

#: Splits of Tab. 2 / Appendix J: name -> (context, cells); ``None`` cells: all of them.
SPLITS: dict[str, tuple[Context | None, tuple[str, ...] | None]] = {
    "all_images": (None, None),
    "single_person_images": (Context.OO, None),
    "two_person_images": (Context.OP, None),
    "two_person_images_same_gender": (Context.OP, ("MM", "FF")),
    "two_person_images_diff_gender": (Context.OP, ("MF", "FM")),
}
#: The templates of the paper's main results; participant-first is the flip ablation.
MAIN_TEMPLATES = frozenset({Template.OO.key, Template.OP_OCCUPATION_FIRST.key})


@dataclass(frozen=True)
class ResolutionCase:
    """One image under one template: what to score and the right answer.

    Attributes:
        item: the image and its annotations.
        template: the caption template.
        genders: the candidate pronouns' genders, in scoring order.
        target: the gender of the correct pronoun.
    """

    item: EvalItem
    template: Template
    genders: tuple[Gender, ...]
    target: Gender

    @property
    def captions(self) -> dict[Gender, str]:
        """Full candidate captions, for dual encoders ("The doctor and her patient")."""
        return captions(self.item.row, self.template, self.genders)

    @property
    def prefix(self) -> str:
        """The partial caption a captioning model continues ("The doctor and")."""
        return captioning_prefix(self.item.row, self.template)

    @property
    def continuations(self) -> dict[Gender, str]:
        """The pronoun continuations (" his", " her", " their")."""
        return {gender: " " + PRONOUNS[gender].possessive for gender in self.genders}

    @property
    def key(self) -> str:
        """Identifies the case across runs: image, template and candidates."""
        names = ",".join(gender.value for gender in self.genders)
        return f"{self.item.key}|{self.template.key}|{names}"


def resolution_cases(items: Iterable[EvalItem], *, neutral: bool = False) -> list[ResolutionCase]:
    """Every (image, template) case of the items, with his/her (and their) candidates."""
    genders = (*Gender.binary(), Gender.NEUTRAL) if neutral else Gender.binary()
    return [
        ResolutionCase(item, template, genders, correct_pronoun(item.row, template))
        for item in items
        for template in templates_for(item.row.context)
    ]


def predict(scores: Mapping[str, float], genders: Sequence[str]) -> str | None:
    """The gender whose candidate scored highest among ``genders``; ``None`` for a tie."""
    best = max(scores[gender] for gender in genders)
    winners = [gender for gender in genders if scores[gender] == best]
    return winners[0] if len(winners) == 1 else None


def case_record(case: ResolutionCase, scores: Mapping[Gender, float], model: str) -> dict[str, Any]:
    """The raw JSONL record of one scored case."""
    row = case.item.row
    by_name = {gender.value: float(score) for gender, score in scores.items()}
    binary = [gender.value for gender in Gender.binary()]
    record: dict[str, Any] = {
        "task": "resolution",
        "model": model,
        "key": case.key,
        "idx": row.idx,
        "image": case.item.image_ref,
        "context": row.context.value,
        "template": case.template.key,
        "sector": row.sector,
        "specialisation": row.specialisation,
        "occupation": row.occupation,
        "noun": row.noun,
        "occupation_gender": row.occupation_gender.value,
        "participant_gender": row.participant_gender.value if row.participant_gender else None,
        "cell": row.cell,
        "target": case.target.value,
        "scores": by_name,
        "predicted": predict(by_name, binary),
    }
    if Gender.NEUTRAL in case.genders:
        record["predicted_with_neutral"] = predict(by_name, list(by_name))
    return record


def _summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    correct = [record["predicted"] == record["target"] for record in records]
    return resolution_summary(correct, [record["target"] for record in records])


def _neutral(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return neutral_summary(
        [record["predicted_with_neutral"] for record in records],
        [record["target"] for record in records],
    )


def _split(
    records: Sequence[Mapping[str, Any]], context: Context | None, cells: tuple[str, ...] | None
) -> list[Mapping[str, Any]]:
    return [
        record
        for record in records
        if (context is None or record["context"] == context.value)
        and (cells is None or record["cell"] in cells)
    ]


def _cell_accuracy(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        by_cell[record["cell"]].append(record)
    order = {cell: n for n, cell in enumerate(("M", "F", "MM", "MF", "FM", "FF"))}
    return {
        cell: {"accuracy": _summary(group)["overall_accuracy"], "n": len(group)}
        for cell, group in sorted(by_cell.items(), key=lambda pair: order.get(pair[0], 9))
    }


def _grouped(
    records: Sequence[Mapping[str, Any]], field: str, with_cells: bool = False
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[record[field]].append(record)
    result: dict[str, dict[str, Any]] = {}
    for name, group in groups.items():
        entry: dict[str, Any] = dict(_summary(group))
        entry["single_person"] = _summary(_split(group, Context.OO, None))
        entry["two_person"] = _summary(_split(group, Context.OP, None))
        if with_cells:
            entry["per_cell"] = _cell_accuracy(group)
        result[name] = entry
    return result


def summarize_resolution(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``resolution_bias`` section of the benchmark JSON.

    Keys: the :data:`SPLITS` (each with ``RA_avg``, ``gender_gap``, ``RA_masculine``,
    ``RA_feminine``, ``overall_accuracy``, counts), ``per_cell`` accuracy (Fig. 2),
    ``per_sector``, ``per_specialisation``, ``per_occupation`` (with per-cell accuracy,
    Appendix B and F), ``participant_first`` (the template flip, Appendix D.1) and, when
    the records hold their/neutral scores, ``neutral`` (Tab. 4).
    """
    main = [record for record in records if record["template"] in MAIN_TEMPLATES]
    flipped = [
        record for record in records if record["template"] == Template.OP_PARTICIPANT_FIRST.key
    ]
    result: dict[str, Any] = {
        name: _summary(_split(main, context, cells)) for name, (context, cells) in SPLITS.items()
    }
    result["per_cell"] = _cell_accuracy(main)
    result["per_sector"] = _grouped(main, "sector")
    result["per_specialisation"] = _grouped(main, "specialisation")
    result["per_occupation"] = _grouped(main, "occupation", with_cells=True)
    if flipped:
        result["participant_first"] = {
            name: _summary(_split(flipped, context, cells))
            for name, (context, cells) in SPLITS.items()
            if context is Context.OP
        }
        result["participant_first"]["per_cell"] = _cell_accuracy(flipped)
    if main and all("predicted_with_neutral" in record for record in main):
        result["neutral"] = {
            name: _neutral(_split(main, context, cells))
            for name, (context, cells) in SPLITS.items()
        }
    return result
