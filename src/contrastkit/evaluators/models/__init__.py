"""Model adapters behind one registry of string specs.

>>> from contrastkit.config import ModelConfig
>>> from contrastkit.evaluators.models import load_model, load_scorer
>>> scorer = load_scorer("open_clip:ViT-B-32/openai", ModelConfig(device="cpu"))  # doctest: +SKIP
>>> scorer.score(images, ["The doctor and his patient"])  # doctest: +SKIP

See :mod:`contrastkit.evaluators.models.registry` for the spec forms. Importing this
package does not import torch; loading a model does.
"""

from typing import Any

from contrastkit.errors import ModelNotFoundError
from contrastkit.evaluators.models.registry import (
    KINDS,
    ModelSpec,
    check_dual,
    load_model,
    load_scorer,
    locate_model,
    parse_spec,
)
from contrastkit.interfaces import ImageTextScorer, PronounScorer

__all__ = [
    "DTYPES",
    "KINDS",
    "ImageTextScorer",
    "ModelNotFoundError",
    "ModelSpec",
    "PronounScorer",
    "check_dual",
    "load_model",
    "load_scorer",
    "locate_model",
    "parse_spec",
]


def __getattr__(name: str) -> Any:
    if name == "DTYPES":  # torch dtypes: imported on first use, not with the package
        from contrastkit.evaluators.models.base import DTYPES

        return DTYPES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
