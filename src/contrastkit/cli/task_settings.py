"""A protocol task's settings class as an option group of ``contrastkit evaluate TASK``:
one option per field (``max_new_tokens`` -> ``--max-new-tokens``, or the ``flag`` the
field names), its help from :func:`contrastkit.evaluators.engine.setting`, for built-in
and plugin tasks alike. A field that names a ``shared`` setting (``ks``: ``--k``) gets no
option here: the shared option group offers it, and :meth:`SettingsOptions.settings`
copies its value in.

A ``bool`` field is a ``--name/--no-name`` flag, a tuple a repeatable option, a
``Literal`` a choice (checked when the settings are made), ``X | None`` an option
without a default value.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import typer

from contrastkit.cli.options import OptionGroup
from contrastkit.errors import ConfigError

__all__ = ["SETTINGS_PANEL", "SettingsOptions", "settings_group"]

#: The help panel a task's own options are shown in.
SETTINGS_PANEL = "Task settings"

_SIMPLE = (bool, int, float, str, Path)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SettingsOptions(OptionGroup):
    """The options of one task's settings (:func:`settings_group` makes the subclass)."""

    settings_class: ClassVar[type]

    def settings(self, shared: object | None = None) -> Any:
        """The task's settings made of the options' values (tuples for repeated options)
        and, for the fields that name a shared setting, its value in ``shared`` (an
        :class:`~contrastkit.evaluators.runner.EvalConfig`; ``None``: their defaults).

        Raises:
            ConfigError: a value the settings class refuses (naming the field).
        """
        from contrastkit.evaluators.engine import settings_fields, shared_name

        values = {}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            values[spec.name] = tuple(value) if isinstance(value, list) else value
        if shared is not None:  # its values are checked tuples already (EvalConfig)
            for spec, _, _ in settings_fields(self.settings_class):
                name = shared_name(spec)
                if name is not None:
                    values[spec.name] = getattr(shared, name)
        return self.settings_class(**values)


def _option_type(hint: Any, where: str) -> tuple[Any, str]:
    """The type typer parses an option of ``hint`` as, and what its help adds."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(args) == 1:
            inner, extra = _option_type(args[0], where)
            return inner | None, extra
    if origin is Literal:
        choices = typing.get_args(hint)
        return str, f" One of: {', '.join(map(str, choices))}."
    if origin is tuple:
        inner, extra = _option_type(typing.get_args(hint)[0], where)
        return list[inner], extra + " Repeatable."  # type: ignore[valid-type]
    if hint in _SIMPLE:
        return hint, ""
    raise ConfigError(
        f"{where}: a setting of type {hint!r} cannot be an option; use bool, int, float, "
        "str, Path, a Literal, a tuple of those, or X | None"
    )


@functools.cache
def settings_group(settings_class: type) -> type[SettingsOptions]:
    """The option group of ``settings_class`` (a
    :class:`~contrastkit.evaluators.engine.TaskSettings` subclass).

    Raises:
        ConfigError: a field whose type cannot be an option, or without a default; a
            ``shared`` name that is no shared setting.
    """
    from contrastkit.evaluators.engine import settings_fields, shared_name
    from contrastkit.evaluators.runner import EvalConfig

    offered = {spec.name for spec in dataclasses.fields(EvalConfig)}
    fields: list[tuple[str, Any, Any]] = []
    for spec, hint, help_text in settings_fields(settings_class):
        shared = shared_name(spec)
        if shared is not None and shared not in offered:
            raise ConfigError(
                f"settings {settings_class.__name__}.{spec.name}: shared={shared!r} is no "
                f"shared setting; one of {', '.join(sorted(offered))}"
            )
        if shared is not None:
            continue  # a shared option group offers it
        where = f"settings {settings_class.__name__}.{spec.name}"
        option, extra = _option_type(hint, where)
        flag = spec.metadata.get("flag") or "--" + spec.name.replace("_", "-")
        declared = f"{flag}/--no-{flag[2:]}" if option is bool else flag
        metavar = spec.metadata.get("metavar")
        info = typer.Option(
            declared, help=(help_text + extra).strip(), rich_help_panel=SETTINGS_PANEL,
            **({"metavar": metavar} if metavar else {}),
        )  # fmt: skip
        annotation = Annotated[option, info]  # type: ignore[valid-type]
        fields.append((spec.name, annotation, dataclasses.field(default=spec.default)))
    group = dataclasses.make_dataclass(
        f"{settings_class.__name__}Options", fields, bases=(SettingsOptions,),
        frozen=True, kw_only=True,
    )  # fmt: skip
    group.settings_class = settings_class  # type: ignore[attr-defined]
    return typing.cast("type[SettingsOptions]", group)
