"""Plugins: what other installed packages add to contrastkit through entry points.

A package adds model families (group ``contrastkit.models``), evaluation tasks
(``contrastkit.tasks``), dataset kinds (``contrastkit.kinds``) or editor families
(``contrastkit.editors``) by naming an object in its ``pyproject.toml``; the registries
(:class:`contrastkit.registry.Registry`) read the groups on first use. This module only
finds and imports those objects: what each must be is the registry's business.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from contrastkit.errors import ConfigError

__all__ = [
    "check_conflict",
    "entry_point_objects",
    "is_import_path",
    "plugin_records",
    "register_plugins",
    "resolve",
]

_R = TypeVar("_R")


def _broken(source: str, group: str, doing: str, error: BaseException) -> ConfigError:
    """The error naming a plugin that failed, ``error`` summed up (chained by the caller)."""
    distribution = source.partition(":")[0]
    return ConfigError(
        f"plugin {source} (entry point group {group}) {doing}: {type(error).__name__}: "
        f"{error}; fix or uninstall {distribution}"
    )


def _points(group: str) -> list[Any]:
    """The installed entry points of ``group``; metadata that cannot be read is an error
    naming the group."""
    try:
        return list(entry_points(group=group))
    except Exception as error:  # a distribution's broken metadata, whatever it is
        raise ConfigError(
            f"the installed plugins of entry point group {group} cannot be listed: "
            f"{type(error).__name__}: {error}; reinstall or uninstall the package at fault"
        ) from error


def entry_point_objects(group: str) -> list[tuple[str, Any]]:
    """``(source, object)`` for every installed entry point of ``group``, sorted by
    source; ``source`` is ``DISTRIBUTION:NAME``.

    Raises:
        ConfigError: an entry point that does not import (its error chained), whatever it
            raises: an ``Exception``, ``SystemExit`` (a plugin calling ``sys.exit`` at
            import must not end the command as if it had succeeded) or another
            ``BaseException`` (only ``KeyboardInterrupt`` goes through). A broken plugin
            is named, never skipped in silence.
    """
    found = []
    for point in _points(group):
        distribution = point.dist.name if point.dist is not None else "?"
        source = f"{distribution}:{point.name}"
        try:
            value = point.load()
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # a plugin's own failure, whatever it is
            doing = f"does not import (entry point {point.value!r})"
            raise _broken(source, group, doing, error) from error
        found.append((source, value))
    return sorted(found, key=lambda pair: pair[0])


def plugin_records(
    group: str, record: type[_R], adapt: Callable[[Any], Any] | None = None
) -> list[tuple[str, _R]]:
    """``(source, record)`` for every record the entry points of ``group`` give: each
    gives one ``record`` instance or an iterable of them (each first passed through
    ``adapt``, when given: what turns another declaration into a record).

    Raises:
        ConfigError: an entry point that does not import, gives anything else, or gives
            an iterable whose iteration fails.
    """
    name = record.__name__
    wrong = f"not {'an' if name[:1] in 'AEIOU' else 'a'} {name}"
    found = []
    for source, value in entry_point_objects(group):
        if isinstance(value, record):
            given: list[Any] = [value]
        elif isinstance(value, Iterable) and not isinstance(value, str | bytes):
            try:
                given = list(value)
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # the plugin's own iterator failed
                raise _broken(source, group, f"gives {name}s that cannot be read", error) from (
                    error
                )
        else:
            given = [value]
        for one in given:
            if adapt is not None:
                try:
                    one = adapt(one)
                except ConfigError as error:  # an incomplete declaration, named
                    raise _broken(
                        source, group, "gives a declaration that is refused", error
                    ) from error
            if not isinstance(one, record):
                raise ConfigError(
                    f"plugin {source} (entry point group {group}) gave "
                    f"{type(one).__name__}, {wrong}"
                )
            found.append((source, one))
    return found


def register_plugins(
    group: str,
    record: type[_R],
    register: Callable[[str, _R], object],
    name: Callable[[_R], str],
    adapt: Callable[[Any], Any] | None = None,
) -> dict[str, ConfigError]:
    """Register every record of ``group``'s plugins (:func:`plugin_records`) with
    ``register(source, record)``. A record whose name is taken (``register`` raises a
    :class:`ConfigError`) is left out; its error, naming the plugin, is returned by name
    for the registry to raise when that name is used (:func:`check_conflict`), so that
    commands that never use it still work.

    Raises:
        ConfigError: as :func:`plugin_records`.
    """
    conflicts: dict[str, ConfigError] = {}
    for source, one in plugin_records(group, record, adapt):
        try:
            register(source, one)
        except ConfigError as error:
            distribution = source.partition(":")[0]
            conflicts[name(one)] = ConfigError(
                f"plugin {source} (entry point group {group}) is left out: {error}, or "
                f"uninstall {distribution}"
            )
    return conflicts


def check_conflict(conflicts: dict[str, ConfigError], name: str) -> None:
    """Raise the error of a plugin that claimed ``name`` while it was taken, if any.

    Raises:
        ConfigError: naming the plugin and who holds the name.
    """
    error = conflicts.get(name)
    if error is not None:
        raise ConfigError(str(error))


def is_import_path(path: str) -> bool:
    """Whether ``path`` is ``module:name`` (or ``module:Class.method``)."""
    module, sep, name = path.partition(":")
    return bool(sep and module and all(part.isidentifier() for part in name.split(".")))


def resolve(path: str, owner: str) -> Callable[..., Any]:
    """The function ``path`` (:func:`is_import_path`) names, imported; ``owner`` says
    whose it is in messages (``model family 'vlm'``).

    Raises:
        ConfigError: the module or name does not import (whatever its import raises,
            ``SystemExit`` included), or is not callable.
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
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a module failing at import, SystemExit(0) included
        raise ConfigError(
            f"{owner}: {path} does not import: {type(error).__name__}: {error}; fix or "
            "uninstall the package that provides it"
        ) from error
    if not callable(function):
        raise ConfigError(f"{owner}: {path} is not a function")
    return function  # type: ignore[no-any-return]
