"""The pipeline's settings (no torch import: configs validate without it).

:class:`PipelineConfig` is defined in :mod:`contrastkit.config` beside
:class:`~contrastkit.config.ModelConfig`, which checks its fields with it; it is
re-exported here, where the pipeline's code looks for it.
"""

from __future__ import annotations

from contrastkit.config import DECODE_MODES, DecodeMode, PipelineConfig

__all__ = ["DECODE_MODES", "DecodeMode", "PipelineConfig"]
