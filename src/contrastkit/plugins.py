"""Plugins: what other installed packages add to contrastkit through entry points.

A package adds model families (group ``contrastkit.models``), evaluation tasks
(``contrastkit.tasks``) or dataset kinds (``contrastkit.kinds``) by naming an object in
its ``pyproject.toml``; the registries read the groups on first use. This module only
finds and imports those objects: what each must be is the registry's business.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from contrastkit.errors import ConfigError

__all__ = ["entry_point_objects"]


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
