"""The warnings a tiny test model is expected to raise, hidden while it runs.

The tiny editors' CLIP tokenizer splits text into characters, so every instruction is
longer than the 77 tokens CLIP takes: diffusers says it truncated the prompt, and
transformers that the sequence is longer than the model's maximum, on every batch. With
a real model neither happens for the bundled instructions, and both still show.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ["EXPECTED_OF_TINY_MODELS", "tiny_model_warnings_hidden"]

#: How the expected warnings of a tiny model start (diffusers, transformers).
EXPECTED_OF_TINY_MODELS = (
    "The following part of your input was truncated because CLIP can only handle",
    "Token indices sequence length is longer than the specified maximum sequence length",
)

#: The loggers whose handlers print them.
_LIBRARIES = ("diffusers", "transformers")


class _Expected(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(EXPECTED_OF_TINY_MODELS)


@contextlib.contextmanager
def tiny_model_warnings_hidden(tiny: bool = True) -> Iterator[None]:
    """While the block runs, drop the log records of :data:`EXPECTED_OF_TINY_MODELS`
    from the diffusers and transformers loggers (and their handlers, which print their
    modules' records); nothing is hidden unless ``tiny``."""
    if not tiny:
        yield
        return
    expected = _Expected()
    targets: list[logging.Logger | logging.Handler] = []
    for name in _LIBRARIES:
        logger = logging.getLogger(name)
        targets += [logger, *logger.handlers]
    targets += logging.getLogger().handlers  # records that propagate to the root
    for target in targets:
        target.addFilter(expected)
    try:
        yield
    finally:
        for target in targets:
            target.removeFilter(expected)
