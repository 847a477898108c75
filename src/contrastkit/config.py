"""Config pieces shared by several jobs, and the checks every config runs.

Each job is one function taking one frozen config dataclass (``BuildVisoGenderConfig``,
``CheckJobConfig``, ``EvaluateConfig``, ...). Configs validate themselves in
``__post_init__`` and raise :class:`~contrastkit.errors.ConfigError` naming the field, so
a bad value fails before any work starts, in Python as on the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contrastkit.errors import ConfigError

__all__ = ["DTYPE_NAMES", "ModelConfig", "require"]

#: ``dtype`` names a :class:`ModelConfig` accepts.
DTYPE_NAMES = ("float32", "fp32", "float16", "fp16", "bfloat16", "bf16")


def require(condition: bool, field: str, message: str) -> None:
    """Raise :class:`ConfigError` ``"{field}: {message}"`` unless ``condition``."""
    if not condition:
        raise ConfigError(f"{field}: {message}")


@dataclass(frozen=True)
class ModelConfig:
    """Where and how a model runs; shared by every loader (scorers, captioners, editors).

    Attributes:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``; ``None`` picks CUDA when available.
        dtype: ``"float32"`` (``None``: float32, the precision the papers used),
            ``"bfloat16"``, ``"float16"`` (GPU only).
        batch_size: images (or edits) per forward pass.
        download: allow fetching weights missing from the local cache; off by default,
            so a missing model is a clear error, never a hang.
    """

    device: str | None = None
    dtype: str | None = None
    batch_size: int = 32
    download: bool = False

    def __post_init__(self) -> None:
        require(self.batch_size >= 1, "batch_size", f"must be at least 1, not {self.batch_size}")
        if self.dtype is not None:
            require(
                self.dtype.lower() in DTYPE_NAMES,
                "dtype",
                f"unknown dtype {self.dtype!r}; use one of {', '.join(DTYPE_NAMES)}",
            )

    def loader_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the model loaders."""
        return {
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "download": self.download,
        }
