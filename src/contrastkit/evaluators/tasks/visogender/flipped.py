"""Retrieval with template flipping (VisoGender Appendix D.2, Tab. 5).

The occupation-subject retrieval (:mod:`.retrieval`, Tab. 3) ranks each occupation's
images with "The doctor and their patient". The flipped retrieval swaps the subject:
the participant comes first and the pronoun refers to it, "The patient and their doctor"
(the official code's ``par_first`` template, ``The $PARTICIPANT and $POSS_PRONOUN
$OCCUPATION``, with the neutral possessive). The query ranks the same two-person (OP)
images of the occupation, and an image's label ``g(I)`` is the perceived gender of the
**participant**, the person the pronoun now refers to. Single-person (OO) images have
no participant, so they take no part in it.

The metrics are the occupation-subject ones, computed by the same code
(:func:`~contrastkit.evaluators.tasks.visogender.retrieval.summarize_retrieval`, hence
:func:`~contrastkit.evaluators.metrics.retrieval_metrics` and
:func:`~contrastkit.evaluators.metrics.summarize`): Bias@K, MaxSkew@K and NDKL per
occupation, their mean and sample standard deviation across occupations, and the same
bootstrap intervals.

The official code (``retrieval_bias/run_retrieval_bias.py``) stores only the
occupation's perceived gender for both templates ("we measure bias only for the
occupation genders"), so its ``par_first`` figures rank the flipped query by the
*occupation's* gender. That reading is kept beside the participant-labelled one
(``occupation_labels``), for comparison with the published Tab. 5.

Raw scores are kept in ``raw_retrieval_flipped.jsonl`` (one record per OP image), beside
``raw_retrieval.jsonl``, and reused by a later run as the other raw files are.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from contrastkit.evaluators.bootstrap import NO_BOOTSTRAP, BootstrapSettings
from contrastkit.evaluators.data import EvalItem
from contrastkit.evaluators.tasks.visogender.records import FlippedRecord
from contrastkit.evaluators.tasks.visogender.retrieval import (
    DEFAULT_KS,
    RetrievalQuery,
    summarize_retrieval,
)
from contrastkit.schema import Context, Gender
from contrastkit.templates import PRONOUNS, Template

__all__ = [
    "FLIPPED_RAW_FILE",
    "FLIPPED_TASK",
    "OO_EXCLUDED",
    "flipped_query_text",
    "flipped_record",
    "flipped_retrieval_queries",
    "summarize_flipped",
]

#: The raw scores of the flipped queries, in a model's output folder.
FLIPPED_RAW_FILE = "raw_retrieval_flipped.jsonl"
#: The ``task`` of its records and the key of its section in the benchmark JSON.
FLIPPED_TASK = "retrieval_flipped"
#: Why single-person images are not part of it, as every report says.
OO_EXCLUDED = (
    "single-person (occupation-object) images are excluded: they have no participant "
    "for the pronoun to refer to"
)


def flipped_query_text(occupation: str, participant: str) -> str:
    """The gender-neutral participant-subject query: ``The patient and their doctor``."""
    pattern: str = Template.OP_PARTICIPANT_FIRST.value
    neutral = PRONOUNS[Gender.NEUTRAL].possessive
    return pattern.format(participant=participant, pronoun=neutral, occupation=occupation)


def flipped_retrieval_queries(items: Iterable[EvalItem]) -> list[RetrievalQuery]:
    """One participant-subject query per occupation of the two-person (OP) items, in order
    of first appearance; OO items are left out (no participant). The participant noun is
    the one most of the occupation's OP rows use (ties: alphabetical), as the
    occupation-subject query chooses its noun."""
    groups: dict[str, list[EvalItem]] = defaultdict(list)
    for item in items:
        if item.row.context is Context.OP and item.row.participant_gender is not None:
            groups[item.row.occupation].append(item)
    queries = []
    for occupation, members in groups.items():
        nouns = Counter(item.row.noun for item in members)
        noun = sorted(nouns, key=lambda name: (-nouns[name], name))[0]
        text = flipped_query_text(occupation, noun)
        queries.append(RetrievalQuery(Context.OP, occupation, text, tuple(members)))
    return queries


def flipped_record(
    query: RetrievalQuery, item: EvalItem, score: float, model: str
) -> FlippedRecord:
    """The raw JSONL record of one OP image's score for its occupation's flipped query:
    ``label`` is the participant's perceived gender, ``occupation_label`` the
    occupation's (what the official code ranks by)."""
    row = item.row
    assert row.participant_gender is not None  # OP rows only
    return {
        "task": FLIPPED_TASK,
        "model": model,
        "key": f"{item.key}|{query.text}",
        "idx": row.idx,
        "image": item.image_ref,
        "context": row.context.value,
        "template": Template.OP_PARTICIPANT_FIRST.key,
        "sector": row.sector,
        "specialisation": row.specialisation,
        "occupation": row.occupation,
        "participant": row.noun,
        "query": query.text,
        "label": row.participant_gender.value,
        "occupation_label": row.occupation_gender.value,
        "cell": row.cell,
        "score": float(score),
    }


def summarize_flipped(
    records: Sequence[Mapping[str, Any]],
    ks: Sequence[int] = DEFAULT_KS,
    *,
    ndkl_k: int | None = None,
    bootstrap: BootstrapSettings = NO_BOOTSTRAP,
    single_person_images: int = 0,
) -> dict[str, Any]:
    """The ``retrieval_flipped`` section of the benchmark JSON (VisoGender Tab. 5).

    Shaped as the ``retrieval_bias`` section
    (:func:`~contrastkit.evaluators.tasks.visogender.retrieval.summarize_retrieval`, same metrics,
    same code): every metric's ``{"mean", "sigma", "n", ...}`` (and ``mean_ci`` with
    ``bootstrap``) at the top level, ``context`` (``OP``), ``ks`` and
    ``two_person_images`` with ``n_queries`` and ``per_occupation``, all with the
    participant's perceived gender as the label. Added:

    * ``subject``: ``participant``; ``label``: ``participant_gender``;
      ``template``: ``participant_first``; ``queries``: occupation -> query text;
    * ``excluded``: :data:`OO_EXCLUDED`, and ``n_excluded_single_person_images``: the
      ``single_person_images`` of the dataset (plus any OO record given, which is
      dropped);
    * ``occupation_labels``: the metric summaries of the same rankings labelled by the
      occupation's perceived gender, as the official code computes its ``par_first``
      figures (no intervals).
    """
    pairs = [record for record in records if record.get("context") == Context.OP.value]
    result = summarize_retrieval(pairs, ks, ndkl_k=ndkl_k, bootstrap=bootstrap)
    relabelled = [{**record, "label": record["occupation_label"]} for record in pairs]
    plain = replace(bootstrap, resamples=0)
    official = summarize_retrieval(relabelled, ks, ndkl_k=ndkl_k, bootstrap=plain) if pairs else {}
    result.update(
        {
            "subject": "participant",
            "label": "participant_gender",
            "template": Template.OP_PARTICIPANT_FIRST.key,
            "queries": {str(r["occupation"]): str(r["query"]) for r in pairs},
            "excluded": OO_EXCLUDED,
            "n_excluded_single_person_images": single_person_images + len(records) - len(pairs),
            "occupation_labels": {
                name: value
                for name, value in official.items()
                if isinstance(value, dict) and "mean" in value
            },
        }
    )
    return result
