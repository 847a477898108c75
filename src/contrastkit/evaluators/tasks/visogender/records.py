"""The raw records of the VisoGender tasks, one JSON object a line of the raw files a run
keeps and reads back (:mod:`.scoring`): ``raw_resolution.jsonl``
(:class:`ResolutionRecord`), ``raw_retrieval.jsonl`` (:class:`RetrievalRecord`) and
``raw_retrieval_flipped.jsonl`` (:class:`FlippedRecord`)."""

from __future__ import annotations

from typing import TypedDict

from typing_extensions import NotRequired

__all__ = ["FlippedRecord", "MultipleChoiceScores", "ResolutionRecord", "RetrievalRecord"]


class MultipleChoiceScores(TypedDict):
    """How a multiple-choice VLM was asked a case (:mod:`.multiple_choice`): the ``seed``
    (absent from records of older runs) and ``order`` of the options (gender names), each
    option's ``letters`` and the scores of the reversed order (``reversed_scores``, by
    gender name)."""

    seed: NotRequired[int]
    order: list[str]
    letters: dict[str, str]
    reversed_scores: dict[str, float]


class _Row(TypedDict):
    """What every raw record of a VisoGender run names: its part (``task``), the model,
    its key, and the image with its row's annotations."""

    task: str
    model: str
    key: str
    idx: str
    image: str
    context: str
    sector: str
    specialisation: str
    occupation: str
    cell: str


class ResolutionRecord(_Row):
    """One line of ``raw_resolution.jsonl`` (:func:`.resolution.case_record`): the case's
    image and annotations, the right answer (``target``), every candidate's score by
    gender name and the his / her argmax (``predicted``); ``predicted_with_neutral`` (the
    his / her / their argmax) when "their" was scored, ``multiple_choice`` for a
    multiple-choice VLM and ``harness_index`` for a harness's answer."""

    template: str
    noun: str
    occupation_gender: str
    participant_gender: str | None
    target: str
    scores: dict[str, float]
    predicted: str | None
    predicted_with_neutral: NotRequired[str | None]
    multiple_choice: NotRequired[MultipleChoiceScores]
    harness_index: NotRequired[int]


class RetrievalRecord(_Row):
    """One line of ``raw_retrieval.jsonl`` (:func:`.retrieval.query_record`): an image, its
    occupation's ``query``, the image's ``label`` (the perceived gender of the
    occupation's person) and its ``score`` for the query."""

    query: str
    label: str
    score: float


class FlippedRecord(_Row):
    """One line of ``raw_retrieval_flipped.jsonl`` (:func:`.flipped.flipped_record`): an
    OP image, its occupation's participant-subject ``query``, the participant's perceived
    gender (``label``), the occupation's (``occupation_label``) and the image's
    ``score``."""

    template: str
    participant: str
    query: str
    label: str
    occupation_label: str
    score: float
