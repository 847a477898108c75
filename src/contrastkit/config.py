"""Config pieces shared by several jobs, and the checks every config runs.

Each job is one function taking one frozen config dataclass (``BuildVisoGenderConfig``,
``CheckJobConfig``, ``EvaluateConfig``, ...). Configs validate themselves in
``__post_init__`` and raise :class:`~contrastkit.errors.ConfigError` naming the field, so
a bad value fails before any work starts, in Python as on the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from contrastkit.errors import ConfigError

__all__ = ["DECODE_MODES", "DTYPE_NAMES", "DecodeMode", "ModelConfig", "PipelineConfig", "require"]

#: ``dtype`` names a :class:`ModelConfig` accepts.
DTYPE_NAMES = ("auto", "float32", "fp32", "float16", "fp16", "bfloat16", "bf16")


def require(condition: bool, field: str, message: str) -> None:
    """Raise :class:`ConfigError` ``"{field}: {message}"`` unless ``condition``."""
    if not condition:
        raise ConfigError(f"{field}: {message}")


DecodeMode = Literal["auto", "pil", "worker", "tensor"]
DECODE_MODES: tuple[str, ...] = ("auto", "pil", "worker", "tensor")


@dataclass(frozen=True)
class PipelineConfig:
    """How images reach the model.

    Attributes:
        workers: decoding worker processes; ``None`` picks
            :func:`contrastkit.pipeline.batches.auto_workers`, ``0``
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


@dataclass(frozen=True)
class ModelConfig:
    """Where and how a model runs; shared by every loader (scorers, captioners, editors).

    Attributes:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``; ``None`` picks CUDA when available.
        dtype: ``"auto"`` (the default; ``None`` means the same): float16 on CUDA,
            float32 (the precision the papers used) on the CPU; or ``"float32"``,
            ``"bfloat16"``, ``"float16"`` (GPU only). Hugging Face weights are loaded in
            this dtype; OpenCLIP runs under ``torch.autocast``.
        batch_size: images (or edits) per forward pass.
        download: allow fetching weights missing from the local cache; off by default,
            so a missing model is a clear error, never a hang.
        workers: image-decoding worker processes (``None``: as many as suit the device,
            ``0``: threads of this process); :mod:`contrastkit.pipeline`.
        decode: ``"pil"`` (Pillow and the model's own preprocessing in the workers),
            ``"worker"`` (8-bit pixels decoded in the workers, the preprocessing as
            tensor ops on the model's device), ``"tensor"`` (JPEGs decoded on the
            model's device too: nvJPEG on CUDA) or ``"auto"`` (``"worker"`` on CUDA,
            ``"pil"`` on the CPU); :mod:`contrastkit.pipeline.batches`.
    """

    device: str | None = None
    dtype: str | None = "auto"
    batch_size: int = 32
    download: bool = False
    workers: int | None = None
    decode: str = "auto"

    def __post_init__(self) -> None:
        require(self.batch_size >= 1, "batch_size", f"must be at least 1, not {self.batch_size}")
        if self.dtype is not None:
            require(
                self.dtype.lower() in DTYPE_NAMES,
                "dtype",
                f"unknown dtype {self.dtype!r}; use one of {', '.join(DTYPE_NAMES)}",
            )
        decode: Any = self.decode
        PipelineConfig(workers=self.workers, decode=decode)  # checks workers and decode

    def loader_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the model loaders."""
        return {
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "download": self.download,
            "workers": self.workers,
            "decode": self.decode,
        }
