"""Plugins: what other installed packages add to contrastkit through entry points.

A package adds model families (group ``contrastkit.models``), evaluation tasks
(``contrastkit.tasks``) or dataset kinds (``contrastkit.kinds``) by naming an object in
its ``pyproject.toml``; the registries read the groups on first use. This module only
finds and imports those objects: what each must be is the registry's business.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from contrastkit.errors import ConfigError

__all__ = ["entry_point_objects", "is_import_path", "plugin_records", "resolve"]

_R = TypeVar("_R")


def entry_point_objects(group: str) -> list[tuple[str, Any]]:
    """``(source, object)`` for every installed entry point of ``group``, sorted by
    source; ``source`` is ``DISTRIBUTION:NAME``.

    Raises:
        ConfigError: an entry point that does not import (its error chained): a broken
            plugin is named, never skipped in silence.
    """
    found = []
    for point in entry_points(group=group):
        distribution = point.dist.name if point.dist is not None else "?"
        source = f"{distribution}:{point.name}"
        try:
            value = point.load()
        except Exception as error:  # a plugin's own failure, whatever it is
            raise ConfigError(
                f"plugin {source} (entry point {point.value!r} in group {group}) does not "
                f"import: {type(error).__name__}: {error}; fix or uninstall "
                f"{distribution}"
            ) from error
        found.append((source, value))
    return sorted(found, key=lambda pair: pair[0])


def plugin_records(group: str, record: type[_R]) -> list[tuple[str, _R]]:
    """``(source, record)`` for every record the entry points of ``group`` give: each
    gives one ``record`` instance or an iterable of them.

    Raises:
        ConfigError: an entry point that does not import, or gives anything else.
    """
    name = record.__name__
    wrong = f"not {'an' if name[:1] in 'AEIOU' else 'a'} {name}"
    found = []
    for source, value in entry_point_objects(group):
        given = (
            value if isinstance(value, Iterable) and not isinstance(value, str | bytes) else [value]
        )
        for one in [value] if isinstance(value, record) else given:
            if not isinstance(one, record):
                raise ConfigError(
                    f"plugin {source} (entry point group {group}) gave "
                    f"{type(one).__name__}, {wrong}"
                )
            found.append((source, one))
    return found


def is_import_path(path: str) -> bool:
    """Whether ``path`` is ``module:name`` (or ``module:Class.method``)."""
    module, sep, name = path.partition(":")
    return bool(sep and module and all(part.isidentifier() for part in name.split(".")))


def resolve(path: str, owner: str) -> Callable[..., Any]:
    """The function ``path`` (:func:`is_import_path`) names, imported; ``owner`` says
    whose it is in messages (``model family 'vlm'``).

    Raises:
        ConfigError: the module or name does not import, or is not callable.
    """
    module_name, _, name = path.partition(":")
    try:
        function: Any = importlib.import_module(module_name)
        for part in name.split("."):
            function = getattr(function, part)
    except (ImportError, AttributeError) as error:
        raise ConfigError(
            f"{owner}: cannot import {path} ({error}); is the package that provides it installed?"
        ) from error
    if not callable(function):
        raise ConfigError(f"{owner}: {path} is not a function")
    return function  # type: ignore[no-any-return]
