"""Model specs as an export records them: a model given as a local folder or file is
named relative to the build folder, so no path of the exporter's machine (a home folder,
a temporary folder) is published in the card or ``build_metadata.json``.

``open_clip:/home/me/runs/models/tiny-open-clip`` exported from ``/home/me/runs/build``
is recorded as ``open_clip:../models/tiny-open-clip``; a Hub id, an OpenCLIP tag or a
path that does not exist here is kept as given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["SPEC_KEYS", "portable_spec", "portable_summary"]

#: The keys of a build summary whose values are model or editor specs.
SPEC_KEYS = frozenset({"editor", "encoder", "embedder", "model"})


def _relative(target: str, folder: Path) -> str | None:
    """``target`` relative to ``folder`` when it is a local path, else ``None``."""
    path = Path(target).expanduser()
    if not target or not (path.is_absolute() or path.exists()):
        return None
    if not path.exists() and "/" not in target.strip("/"):
        return None
    return os.path.relpath(path.resolve(), folder.resolve())


def portable_spec(spec: str, folder: Path) -> str:
    """``spec`` with the local path it names made relative to ``folder``."""
    prefix, sep, target = spec.partition(":")
    if not sep or "/" in prefix or os.sep in prefix or len(prefix) == 1:
        prefix, sep, target = "", "", spec  # a bare path (or a drive letter)
    relative = _relative(target, folder)
    if relative is None and "/" in target:  # ARCH/CHECKPOINT: the checkpoint's path
        arch, _, checkpoint = target.partition("/")
        moved = _relative(checkpoint, folder)
        relative = None if moved is None or Path(arch).exists() else f"{arch}/{moved}"
    return f"{prefix}{sep}{relative}" if relative is not None else spec


def portable_summary(summary: Any, folder: Path) -> Any:
    """A build summary (or any part of one) with every spec under :data:`SPEC_KEYS`
    made :func:`portable_spec`; the rest unchanged."""
    if isinstance(summary, Mapping):
        return {
            key: portable_spec(value, folder)
            if key in SPEC_KEYS and isinstance(value, str)
            else portable_summary(value, folder)
            for key, value in summary.items()
        }
    if isinstance(summary, list):
        return [portable_summary(value, folder) for value in summary]
    return summary
