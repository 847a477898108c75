"""Model adapters behind one registry of string specs.

>>> from contrastkit.config import ModelConfig
>>> from contrastkit.models import load_model, load_scorer
>>> scorer = load_scorer("open_clip:ViT-B-32/openai", ModelConfig(device="cpu"))  # doctest: +SKIP
>>> scorer.score(images, ["The doctor and his patient"])  # doctest: +SKIP

See :mod:`contrastkit.models.registry` for the spec forms. Importing this
package does not import torch; loading a model does.
"""

from typing import Any

from contrastkit.errors import ModelNotFoundError
from contrastkit.interfaces import ImageTextScorer, PronounScorer
from contrastkit.models.registry import (
    ModelSpec,
    check_dual,
    load_model,
    load_scorer,
    locate_model,
    parse_spec,
)

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
        from contrastkit.models.base import DTYPES

        return DTYPES
    if name == "KINDS":  # from the registry, plugins' families included: read when asked,
        # so that importing this package (as a plugin's own module does) loads no plugin
        from contrastkit.models import registry

        return registry.KINDS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
