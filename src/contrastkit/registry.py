"""One registry type for every table other packages extend: :class:`Registry`.

Model families, dataset kinds, editor families and evaluation tasks are each a table of
small frozen records held by one :class:`Registry`: its built-in records, then those of
the installed plugins of its entry point group (read once, on first use, through
:mod:`contrastkit.plugins`), then those registered from Python.

Order:
    the built-in records in the order they are given; then the records of entry points,
    sorted by ``DISTRIBUTION:ENTRY-POINT`` (what
    :func:`~contrastkit.plugins.entry_point_objects` sorts by; an entry point giving
    several records keeps their order); then those of :meth:`Registry.register`, in the
    order registered (the entry points are read before the first one, so a script's
    record always comes after every plugin's). A record registered again under its own
    name with ``replace_existing`` keeps its place.

Errors:
    a plugin that does not import, gives something else than a record, or gives an
    iterable that fails is a :class:`~contrastkit.errors.ConfigError` naming it
    (``plugin DIST:NAME (entry point group G) ...; fix or uninstall DIST``), raised by
    every read. A plugin claiming a name that is taken is left out, and its error (naming
    the plugin and who holds the name) is raised by :meth:`Registry.get` and
    :meth:`Registry.check` for that name only. Registering a taken name from Python is a
    ``ConfigError`` naming both sources (``model family 'x' of mine is already
    registered (by contrastkit); choose another prefix``).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Colour:
    ...     name: str
    ...     source: str = "contrastkit"
    >>> colours = Registry("colour", None, Colour, lambda c: c.name, (Colour("red"),))
    >>> _ = colours.register(Colour("blue", source="me"))
    >>> list(colours)
    ['red', 'blue']
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from contrastkit.errors import ConfigError
from contrastkit.plugins import check_conflict, register_plugins

__all__ = ["Registry", "deprecated_replace", "record_source", "with_source"]

_R = TypeVar("_R")


def deprecated_replace(function: str, replace: bool | None, replace_existing: bool) -> bool:
    """``replace_existing``, or what ``function``'s deprecated keyword ``replace`` (its
    old spelling) asks, with a ``DeprecationWarning`` pointing at the caller."""
    if replace is None:
        return replace_existing
    warnings.warn(
        f"{function}(replace=...) is deprecated; use replace_existing=...",
        DeprecationWarning,
        stacklevel=3,
    )
    return replace or replace_existing


def record_source(record: Any) -> str:
    """Who registered ``record``: its ``source`` attribute (``contrastkit`` for a
    built-in one, ``DISTRIBUTION:ENTRY-POINT`` for a plugin's)."""
    return str(getattr(record, "source", "?"))


def with_source(record: _R, source: str) -> _R:
    """``record`` (a dataclass with a ``source`` field) with its ``source`` set to
    ``source``, checked again as it was when made."""
    return dataclasses.replace(record, source=source)  # type: ignore[type-var]


@dataclass(eq=False)
class Registry(Mapping[str, _R], Generic[_R]):
    """The records of one kind by name (a read-only mapping; see the module docstring
    for their order and errors).

    Attributes:
        what: what one record is, as messages name it (``model family``).
        group: the entry point group plugins add records through; ``None``: none.
        record: the record type an entry point must give (one, or an iterable of them).
        key: a record's name (``lambda family: family.prefix``).
        built_in: the built-in records, in their order.
        key_word: what messages call the name (``prefix``; ``name`` by default).
        source: who registered a record (:func:`record_source`).
        sourced: the record with another source (:func:`with_source`): what a plugin's
            record is registered as, its source ``DISTRIBUTION:ENTRY-POINT``.
        adapt: turns what an entry point gives into a record before it is checked (a
            task written on the protocol into its registry row); ``None``: as given.
        discover: a function run once, on first use, before the plugins are read, that
            registers further built-in records (:meth:`register` inside it reads no
            plugins): built-in records found rather than listed (the task folders).
    """

    what: str
    group: str | None
    record: type[_R]
    key: Callable[[_R], str]
    built_in: Sequence[_R] = ()
    key_word: str = "name"
    source: Callable[[Any], str] = record_source
    sourced: Callable[[_R, str], _R] = with_source
    discover: Callable[[], object] | None = None
    adapt: Callable[[Any], Any] | None = None
    _records: dict[str, _R] = field(init=False, repr=False)
    _conflicts: dict[str, ConfigError] = field(init=False, repr=False, default_factory=dict)
    _loaded: bool = field(init=False, repr=False, default=False)
    _broken: ConfigError | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.built_in = tuple(self.built_in)
        self._records = {}
        for one in self.built_in:
            self._add(one, replace_existing=False)

    @property
    def records(self) -> dict[str, _R]:
        """The table itself, by name, plugins not loaded (tests patch it)."""
        return self._records

    def _add(self, record: _R, *, replace_existing: bool) -> _R:
        name = self.key(record)
        taken = self._records.get(name)
        if taken is not None and taken != record and not replace_existing:
            raise ConfigError(
                f"{self.what} {name!r} of {self.source(record)} is already registered (by "
                f"{self.source(taken)}); choose another {self.key_word}"
            )
        self._records[name] = record
        return record

    def register(self, record: _R, *, replace_existing: bool = False) -> _R:
        """Add ``record`` (after every plugin's: the entry points are read first).

        Returns:
            ``record``.

        Raises:
            ConfigError: it is no :attr:`record`; its name is taken by another record and
                ``replace_existing`` is false (naming both sources); a broken plugin.
        """
        if not isinstance(record, self.record):
            raise ConfigError(
                f"{self.what}: {type(record).__name__} is not a {self.record.__name__}"
            )
        self.load_plugins()
        return self._add(record, replace_existing=replace_existing)

    def load_plugins(self) -> None:
        """Run :attr:`discover`, then register the records of the entry point group's
        plugins, once (every read does it first).

        Raises:
            ConfigError: a plugin that does not import or gives no records
                (:func:`contrastkit.plugins.plugin_records`); raised again by every
                later read, none of the group's records registered.
        """
        if self._broken is not None:
            raise ConfigError(str(self._broken)) from self._broken.__cause__
        if self._loaded:
            return
        self._loaded = True
        try:
            if self.discover is not None:
                self.discover()
            if self.group is not None:
                self._conflicts.update(
                    register_plugins(self.group, self.record, self._plugin, self.key, self.adapt)
                )
        except ConfigError as error:
            self._broken = error
            raise
        except BaseException:
            self._loaded = False  # a bug or Ctrl-C: the next read tries again
            raise

    def _plugin(self, source: str, record: _R) -> None:
        self._add(self.sourced(record, source), replace_existing=False)

    def all(self) -> dict[str, _R]:
        """Every record by name, in the registry's order (plugins loaded)."""
        self.load_plugins()
        return dict(self._records)

    def check(self, name: str) -> None:
        """Raise the error of a plugin that claimed ``name`` while it was taken, if one
        did.

        Raises:
            ConfigError: naming the plugin and who holds the name.
        """
        self.load_plugins()
        check_conflict(self._conflicts, name)

    def get(self, name: str, default: Any = None) -> Any:
        """The record named ``name``, or ``default``.

        Raises:
            ConfigError: a plugin claimed ``name`` while it was taken (:meth:`check`).
        """
        found = self.all().get(name, default)
        self.check(name)
        return found

    def __getitem__(self, name: str) -> _R:
        """The record named ``name`` (``KeyError`` when none is).

        Raises:
            ConfigError: as :meth:`get`.
        """
        found = self.get(name, _MISSING)
        if found is _MISSING:
            raise KeyError(name)
        return found  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(self.all())

    def __len__(self) -> int:
        return len(self.all())

    def __contains__(self, name: object) -> bool:
        return name in self.all()


_MISSING = object()
