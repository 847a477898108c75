"""A planted captioner for the task-engine tests: a model family whose loader returns a
captioner that describes a red-dominant image as a man and a blue-dominant one as a
woman (the two versions of tests/contrast_data.py), so every share of the
gendered-words task is known in advance. Registered through the real model registry."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from PIL import Image

from contrastkit.extend import ModelFamily, register_model
from contrastkit.models.families import REGISTRY

PREFIX = "planted-captioner"
#: Every call's ``max_new_tokens``, in order (what the task passed).
CALLS: list[int] = []


class PlantedCaptioner:
    """Describes by colour; ``target`` ``swapped`` describes the other way round, ``same``
    says "a man" of every image."""

    def __init__(self, spec: str, mode: str) -> None:
        self.spec = spec
        self.mode = mode

    def generate_captions(self, images: Sequence[Image.Image], max_new_tokens: int) -> list[str]:
        CALLS.append(max_new_tokens)
        out = []
        for image in images:
            red, _, blue = image.convert("RGB").getpixel((0, 0))
            masculine = red > blue
            if self.mode == "swapped":
                masculine = not masculine
            if self.mode == "same":
                masculine = True
            out.append("A man riding a horse." if masculine else "A woman and her dog.")
        return out


def load_planted(target: str, runtime: Any, context: Any) -> PlantedCaptioner:
    return PlantedCaptioner(f"{context.prefix}:{target}", target)


FAMILY = ModelFamily(
    PREFIX, "captioning", "planted captions (tests)", f"{PREFIX}:colour",
    "planted_captioner:load_planted", capabilities=frozenset({"descriptions"}),
)  # fmt: skip


@contextmanager
def planted_family() -> Iterator[str]:
    """The family registered for the block; yields its prefix."""
    register_model(FAMILY, replace_existing=True)
    try:
        yield PREFIX
    finally:
        REGISTRY.records.pop(PREFIX, None)
