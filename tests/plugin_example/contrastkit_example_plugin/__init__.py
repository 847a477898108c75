"""An example plugin: ``grey-clip:SPEC``, any registered dual encoder shown the images in
greyscale (a colour-blind probe of a model's use of colour)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from contrastkit.extend import LoadContext, ModelFamily

__all__ = ["GREY_CLIP", "GreyScorer", "load_grey_clip"]


class GreyScorer:
    """A dual encoder that sees every image in greyscale."""

    def __init__(self, spec: str, base: Any) -> None:
        self.spec = spec
        self.base = base

    @staticmethod
    def _grey(images: Sequence[Image.Image]) -> list[Image.Image]:
        return [image.convert("L").convert("RGB") for image in images]

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self.base.encode_images(self._grey(images))  # type: ignore[no-any-return]

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self.base.encode_texts(texts)  # type: ignore[no-any-return]

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def check_target(prefix: str, target: str) -> str:
    """The base model's spec (the registry checks it is a dual encoder)."""
    return target


def load_grey_clip(target: str, runtime: Any, context: LoadContext) -> GreyScorer:
    return GreyScorer(f"{context.prefix}:{target}", context.load_base(target, runtime))


GREY_CLIP = ModelFamily(
    "grey-clip",
    "dual",
    "any dual encoder shown the images in greyscale (example plugin)",
    "grey-clip:open_clip:ViT-B-32/openai",
    "contrastkit_example_plugin:load_grey_clip",
    check="contrastkit_example_plugin:check_target",
    wraps_base=True,
)
