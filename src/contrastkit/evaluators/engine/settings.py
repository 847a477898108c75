"""A task's settings: the base class of the frozen dataclass a task declares
(:class:`TaskSettings`), its fields (:func:`setting`: a default and the option's help) and
what the command line builds the task's options from (:func:`settings_fields`).
:mod:`contrastkit.evaluators.engine.protocol` gives the same names."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from typing_extensions import Unpack

from contrastkit.errors import ConfigError

__all__ = [
    "OptionDetails",
    "TaskSettings",
    "option_details",
    "setting",
    "settings_fields",
    "shared_name",
]

_HELP = "help"
_SHARED = "shared"


class OptionDetails(TypedDict, total=False):
    """How the command line offers a :func:`setting` (each key optional).

    Keys:
        flag: the option's spelling (default ``--field-name``); for a ``bool``, a flag
            without ``/`` gets its ``--no-`` form unless ``negatable`` is false.
        metavar: what the help shows for the option's value.
        panel: the help panel it is listed in (default ``Task settings``).
        min: the smallest value an ``int`` or ``float`` option takes.
        separator: a tuple field is one option of values joined by this (``","``:
            ``--k 5,10``) rather than a repeatable one; its default is shown joined.
        negatable: a ``bool`` option has its ``--no-`` form (default true); false: the
            flag alone turns it on.
    """

    flag: str
    metavar: str
    panel: str
    min: float
    separator: str
    negatable: bool


def setting(
    default: Any, *, help: str, shared: str | None = None, **option: Unpack[OptionDetails]
) -> Any:
    """A field of a :class:`TaskSettings` dataclass: its default and the help of the
    option ``contrastkit evaluate TASK`` offers for it.

    Args:
        default: the value when the option is not given.
        help: the option's help.
        shared: the field is a setting every task of a kind shares, offered by a shared
            option group rather than by the task: the name of the
            :class:`~contrastkit.evaluators.runner.EvalConfig` field (``ks``: ``--k``)
            the command line copies into it. Such a field has no option of its own.
        option: how the option is spelt and shown (:class:`OptionDetails`: ``flag``,
            ``metavar``, ``panel``, ``min``, ``separator``, ``negatable``).

    Raises:
        ConfigError: a flag not starting with ``--``, an unknown detail, a mutable
            default.
    """
    unknown = set(option) - set(OptionDetails.__annotations__)
    if unknown:
        raise ConfigError(f"setting: unknown option detail(s) {', '.join(sorted(unknown))}")
    flag = option.get("flag")
    if flag is not None and not flag.startswith("--"):
        raise ConfigError(f"setting: flag must start with --, not {flag!r}")
    if isinstance(default, list | dict | set):
        raise ConfigError(f"setting: use a tuple, not a mutable {type(default).__name__}")
    metadata = {_HELP: help, _SHARED: shared, **option}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class TaskSettings:
    """The base of a task's settings: a frozen dataclass whose fields (made with
    :func:`setting`) are the task's own options. The command line offers each as
    ``--name-with-dashes`` (a ``bool`` as ``--name/--no-name``, a tuple as a repeatable
    option, a ``Literal`` as a choice); Python passes an instance as
    ``EvaluateConfig(task_settings=...)``. A subclass checks its values in
    ``__post_init__`` (raising :class:`~contrastkit.errors.ConfigError` naming the
    field)."""

    def as_json(self) -> dict[str, Any]:
        """The values by field name, JSON-ready (paths as strings, tuples as lists):
        what a result records as its ``settings``."""
        return {
            spec.name: _json_value(getattr(self, spec.name)) for spec in dataclasses.fields(self)
        }

    def fingerprint(self, names: Sequence[str] | None = None) -> str:
        """A short digest of the values of ``names`` (default: every field): what a raw
        record stores so that a record scored under other settings is never reused."""
        values = {
            spec.name: getattr(self, spec.name)
            for spec in dataclasses.fields(self)
            if names is None or spec.name in names
        }
        text = json.dumps(values, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _json_value(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    return value


def shared_name(spec: dataclasses.Field[Any]) -> str | None:
    """The shared setting a field of a settings class takes its value from
    (:func:`setting`'s ``shared``); ``None``: the field is an option of the task's own."""
    name = spec.metadata.get(_SHARED)
    return None if name is None else str(name)


def option_details(spec: dataclasses.Field[Any]) -> OptionDetails:
    """How the command line offers the field ``spec`` of a settings class
    (:func:`setting`'s option details; empty for a plain field)."""
    details = {
        key: spec.metadata[key] for key in OptionDetails.__annotations__ if key in spec.metadata
    }
    return typing.cast("OptionDetails", details)


def settings_fields(cls: type[TaskSettings]) -> list[tuple[dataclasses.Field[Any], Any, str]]:
    """``(field, type, help)`` of every field of the settings class ``cls``, types
    resolved (what the command line builds its options from).

    Raises:
        ConfigError: a field without a default (every option needs one).
    """
    hints = typing.get_type_hints(cls)
    found = []
    for spec in dataclasses.fields(cls):
        if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise ConfigError(f"settings {cls.__name__}: field {spec.name!r} needs a default")
        found.append((spec, hints[spec.name], str(spec.metadata.get(_HELP, ""))))
    return found
