"""A protocol task's settings class as an option group of ``contrastkit evaluate TASK``:
one option per field (``max_new_tokens`` -> ``--max-new-tokens``, or the ``flag`` the
field names), its help from :func:`contrastkit.evaluators.engine.setting`, for built-in
and plugin tasks alike. A field that names a ``shared`` setting (``ks``: ``--k``) gets no
option here: the shared option group offers it, and :meth:`SettingsOptions.settings`
copies its value in.

A ``bool`` field is a ``--name/--no-name`` flag (or ``--name`` alone: ``negatable=False``),
a tuple a repeatable option (or one option of joined values: ``separator=","``), a
``Literal`` a choice (checked when the settings are made), ``X | None`` an option
without a default value. The field's option details
(:class:`~contrastkit.evaluators.engine.OptionDetails`) set its spelling, metavar, help
panel and minimum.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import typer

from contrastkit.cli.common import split_values
from contrastkit.cli.options import OptionGroup
from contrastkit.errors import ConfigError

__all__ = ["SETTINGS_PANEL", "SettingsOptions", "settings_group"]

#: The help panel a task's own options are shown in.
SETTINGS_PANEL = "Task settings"

_SIMPLE = (bool, int, float, str, Path)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SettingsOptions(OptionGroup):
    """The options of one task's settings (:func:`settings_group` makes the subclass).

    Attributes:
        settings_class: the settings class the options are made from.
        feeds_shared: the values are shared settings
            (:class:`~contrastkit.evaluators.runner.EvalConfig` fields of the same names,
            :meth:`values`) rather than a task's own (:meth:`settings`).
    """

    settings_class: ClassVar[type]
    feeds_shared: ClassVar[bool] = False

    def values(self) -> dict[str, Any]:
        """The value of each option by field name: a ``separator`` option split and
        each part converted (``"5,10"`` -> ``(5, 10)``), a repeated one as a tuple.

        Raises:
            ConfigError: a part that is not of the field's type, or no part at all
                (naming the option).
        """
        from contrastkit.evaluators.engine import option_details, settings_fields

        kinds = {spec.name: (spec, hint) for spec, hint, _ in settings_fields(self.settings_class)}
        values = {}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if spec.name in kinds and isinstance(value, str):
                field_spec, hint = kinds[spec.name]
                separator = option_details(field_spec).get("separator")
                if separator is not None:  # blank: () where that is the default
                    args = typing.get_args(_unoptional(hint))
                    kind = args[0] if args and args[0] in (int, float, Path) else str
                    empty = field_spec.default == ()
                    flag = _flag(field_spec)
                    value = split_values(value, flag, kind, separator, empty=empty)
            values[spec.name] = tuple(value) if isinstance(value, list) else value
        return values

    def settings(self, shared: object | None = None) -> Any:
        """The task's settings made of the options' values (:meth:`values`) and, for the
        fields that name a shared setting, its value in ``shared`` (an
        :class:`~contrastkit.evaluators.runner.EvalConfig`; ``None``: their defaults).
        Options beside the settings class's fields are left out.

        Raises:
            ConfigError: a value the settings class refuses (naming the field).
        """
        from contrastkit.evaluators.engine import settings_fields, shared_name

        own = self.values()
        values = {}
        for spec, _, _ in settings_fields(self.settings_class):
            name = shared_name(spec)
            if name is not None and shared is not None:  # checked tuples already (EvalConfig)
                values[spec.name] = getattr(shared, name)
            elif spec.name in own:
                values[spec.name] = own[spec.name]
        return self.settings_class(**values)

    def shared_values(self) -> dict[str, Any]:
        """The options' values as the shared settings of the same names (a group that
        :attr:`feeds_shared`), normalised and checked as the settings class does it."""
        made = self.settings()
        return {spec.name: getattr(made, spec.name) for spec in dataclasses.fields(self)}


def _spelling(spec: dataclasses.Field[Any]) -> str:
    """The option's spelling of the settings field ``spec``: its ``flag``, else
    ``--name-with-dashes``."""
    from contrastkit.evaluators.engine import option_details

    return option_details(spec).get("flag") or "--" + spec.name.replace("_", "-")


def _flag(spec: dataclasses.Field[Any]) -> str:
    """The option's spelling of the settings field ``spec`` (its ``--no-`` form apart)."""
    return _spelling(spec).split("/")[0]


def _unoptional(hint: Any) -> Any:
    """``X`` of ``X | None``; any other type as it is."""
    args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1
    return args[0] if optional else hint


def _option_type(hint: Any, where: str, separator: str | None) -> tuple[Any, str]:
    """The type typer parses an option of ``hint`` as, and what its help adds."""
    base = _unoptional(hint)
    if base is not hint:
        inner, extra = _option_type(base, where, separator)
        return inner | None, extra
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        return str, f" One of: {', '.join(map(str, choices))}."
    if origin is tuple:
        inner, extra = _option_type(typing.get_args(hint)[0], where, None)
        if separator is not None:
            return str, extra
        return list[inner], extra + " Repeatable."  # type: ignore[valid-type]
    if hint in _SIMPLE:
        return hint, ""
    raise ConfigError(
        f"{where}: a setting of type {hint!r} cannot be an option; use bool, int, float, "
        "str, Path, a Literal, a tuple of those, or X | None"
    )


def _option_field(spec: dataclasses.Field[Any], hint: Any, help_text: str, where: str) -> Any:
    """The annotated type and field of the option of the settings field ``spec``."""
    from contrastkit.evaluators.engine import option_details

    details = option_details(spec)
    _check_details(details, hint, where)
    separator = details.get("separator")
    option, extra = _option_type(hint, where, separator)
    flag = _spelling(spec)
    negatable = details.get("negatable", True)
    declared = (
        f"{flag}/--no-{flag[2:]}" if option is bool and negatable and "/" not in flag else flag
    )
    extras: dict[str, Any] = {}
    if "metavar" in details:
        extras["metavar"] = details["metavar"]
    if "min" in details:
        extras["min"] = details["min"]
    info = typer.Option(
        declared, help=(help_text + extra).strip(),
        rich_help_panel=details.get("panel", SETTINGS_PANEL), **extras,
    )  # fmt: skip
    default = spec.default
    if separator is not None and isinstance(default, tuple):
        default = separator.join(map(str, default))  # shown (and parsed) as typed
    return Annotated[option, info], dataclasses.field(default=default)


def _check_details(details: Mapping[str, Any], hint: Any, where: str) -> None:
    """Refuse an option detail that the field's type cannot take (it would be ignored).

    Raises:
        ConfigError: ``separator`` on a field that is no tuple, ``negatable`` on one that
            is no ``bool``, ``min`` on one that is no number.
    """
    base = _unoptional(hint)
    wrong = [
        name
        for name, fits in (
            ("separator", typing.get_origin(base) is tuple),
            ("negatable", base is bool),
            ("min", base in (int, float)),
        )
        if name in details and not fits
    ]
    if wrong:
        raise ConfigError(f"{where}: {', '.join(wrong)} does not apply to a {hint!r} field")


@functools.cache
def settings_group(
    settings_class: type, omit: tuple[str, ...] = (), feeds_shared: bool = False
) -> type[SettingsOptions]:
    """The option group of ``settings_class`` (a
    :class:`~contrastkit.evaluators.engine.TaskSettings` subclass): one option per field
    in field order, but for the fields that name a ``shared`` setting and those in
    ``omit``. ``feeds_shared``: the values are shared settings of the same names
    (:attr:`SettingsOptions.feeds_shared`), as VisoGender's analyses are for every task
    that offers them.

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
        if shared is not None or spec.name in omit:
            continue  # a shared option group offers it, or this command does not
        where = f"settings {settings_class.__name__}.{spec.name}"
        annotation, default = _option_field(spec, hint, help_text, where)
        fields.append((spec.name, annotation, default))
    group = dataclasses.make_dataclass(
        f"{settings_class.__name__}Options", fields, bases=(SettingsOptions,),
        frozen=True, kw_only=True,
    )  # fmt: skip
    group.settings_class = settings_class  # type: ignore[attr-defined]
    group.feeds_shared = feeds_shared  # type: ignore[attr-defined]
    return typing.cast("type[SettingsOptions]", group)
