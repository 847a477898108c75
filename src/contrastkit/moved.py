"""Old import paths of modules that moved: each old module is replaced by the new one
(same object: private names, isinstance checks and monkeypatches keep working) with a
:class:`DeprecationWarning`. Old paths are kept for one release after the move."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["moved", "moved_names", "moved_package"]


def _warn(old: str, new: str, release: str) -> None:
    warnings.warn(
        f"{old} moved to {new} in contrastkit {release}; the old path will be removed in "
        "the next release",
        DeprecationWarning,
        stacklevel=4,
    )


def moved(old: str, new: str, release: str = "0.2") -> None:
    """Make ``import old`` give module ``new``; call it as the whole body of ``old``."""
    module = importlib.import_module(new)
    _warn(old, new, release)
    sys.modules[old] = module


def moved_names(old: str, names: Mapping[str, str], release: str = "0.2") -> Callable[[str], Any]:
    """A module ``__getattr__`` for module ``old`` whose names in ``names`` moved: each
    maps to its new module, or to ``module:name`` where its name changed too. Asking
    ``old`` for one imports its new module then (not when ``old`` is imported) and gives
    the same object, with a :class:`DeprecationWarning` naming the new path. Assign it as
    ``__getattr__ = moved_names(__name__, {...})``."""

    def moved_attribute(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        module, _, attribute = names[name].partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        warnings.warn(
            f"{old}.{name} moved to {module}.{attribute or name} in contrastkit {release}; "
            "the old path will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return moved_attribute


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``OLD.x.y`` as the already-imported (or now imported) ``NEW.x.y``."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.old + "."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.new + spec.name[len(self.old) :])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported under its new name."""


def moved_package(old: str, new: str, release: str = "0.2") -> None:
    """Make ``import old`` and ``import old.anything`` give ``new`` and its submodules
    (the same module objects); call it as the whole body of ``old/__init__.py``."""
    if not any(isinstance(f, _Alias) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias(old, new))
    moved(old, new, release)
