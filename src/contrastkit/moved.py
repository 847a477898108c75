"""Old import paths of modules that moved: each old module is replaced by the new one
(same object: private names, isinstance checks and monkeypatches keep working) with a
:class:`DeprecationWarning`. Old paths are kept for one release after the move."""

from __future__ import annotations

import importlib
import sys
import warnings

__all__ = ["moved"]


def moved(old: str, new: str, release: str = "0.2") -> None:
    """Make ``import old`` give module ``new``; call it as the whole body of ``old``."""
    module = importlib.import_module(new)
    warnings.warn(
        f"{old} moved to {new} in contrastkit {release}; the old path will be removed in "
        "the next release",
        DeprecationWarning,
        stacklevel=3,
    )
    sys.modules[old] = module
