"""Model adapters behind one registry of string specs.

>>> from contrastkit.evaluators.models import load_model, load_scorer
>>> scorer = load_scorer("open_clip:ViT-B-32/openai")  # doctest: +SKIP
>>> scorer.score(images, ["The doctor and his patient"])  # doctest: +SKIP

See :mod:`contrastkit.evaluators.models.registry` for the spec forms.
"""

from contrastkit.evaluators.models.base import (
    DTYPES,
    ImageTextScorer,
    ModelNotFoundError,
    PronounScorer,
)
from contrastkit.evaluators.models.registry import (
    KINDS,
    ModelSpec,
    load_model,
    load_scorer,
    parse_spec,
)

__all__ = [
    "DTYPES",
    "KINDS",
    "ImageTextScorer",
    "ModelNotFoundError",
    "ModelSpec",
    "PronounScorer",
    "load_model",
    "load_scorer",
    "parse_spec",
]
