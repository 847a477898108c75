"""The pipeline's settings (no torch import: configs validate without it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contrastkit.config import require

__all__ = ["DECODE_MODES", "DecodeMode", "PipelineConfig"]

DecodeMode = Literal["auto", "pil", "worker", "tensor"]
DECODE_MODES: tuple[str, ...] = ("auto", "pil", "worker", "tensor")


@dataclass(frozen=True)
class PipelineConfig:
    """How images reach the model.

    Attributes:
        workers: decoding worker processes; ``None`` picks :func:`auto_workers`, ``0``
            decodes in threads of the calling process.
        decode: ``"auto"``, ``"pil"``, ``"worker"`` or ``"tensor"``
            (:mod:`contrastkit.pipeline.batches`).
        prefetch: batches each worker prepares ahead of the model.
    """

    workers: int | None = None
    decode: DecodeMode = "auto"
    prefetch: int = 2

    def __post_init__(self) -> None:
        if self.workers is not None:
            require(self.workers >= 0, "workers", f"must be 0 or more, not {self.workers}")
        require(
            self.decode in DECODE_MODES,
            "decode",
            f"must be one of {', '.join(DECODE_MODES)}, not {self.decode!r}",
        )
        require(self.prefetch >= 1, "prefetch", f"must be at least 1, not {self.prefetch}")
