"""The settings of a VisoGender evaluation (:class:`EvalConfig`, what
:class:`~contrastkit.evaluators.evaluation.EvaluateConfig` holds as ``settings``; defined
in :mod:`contrastkit.evaluators.tasks.visogender.settings`) and the refusals other tasks
share (:func:`answers_only`, and ``retrieval_needs_dual``, which
lives with the retrieval task in :mod:`contrastkit.evaluators.tasks.visogender.retrieval`).

Scoring a dataset (``score_dataset``, ``ScoredRun``, ``ImageBatches``, ``RAW_FILES``)
moved to :mod:`contrastkit.evaluators.tasks.visogender.scoring` (the VisoGender task
folder); its names are imported here so that old imports keep working.
"""

from __future__ import annotations

from contrastkit.evaluators.raw import read_raw
from contrastkit.evaluators.tasks.visogender.retrieval import retrieval_needs_dual
from contrastkit.evaluators.tasks.visogender.scoring import (
    RAW_FILES,
    ImageBatches,
    ScoredRun,
    query_of_items,
    score_dataset,
)
from contrastkit.evaluators.tasks.visogender.settings import PROTOCOLS, TASKS, EvalConfig

__all__ = [
    "PROTOCOLS",
    "RAW_FILES",
    "TASKS",
    "EvalConfig",
    "ImageBatches",
    "ScoredRun",
    "answers_only",
    "query_of_items",
    "read_raw",
    "retrieval_needs_dual",
    "score_dataset",
]


def answers_only(spec: str, task: str) -> str | None:
    """Why a model that only answers questions (its family's capabilities are just
    ``answers``) cannot run ``task``; ``None`` for any other model."""
    from contrastkit.models.registry import parse_spec

    if parse_spec(spec).capabilities != {"answers"}:
        return None
    return (
        f"{spec} only answers questions about an image (capability 'answers'): it runs "
        f"decision probes (contrastkit evaluate decisions), not {task}"
    )
