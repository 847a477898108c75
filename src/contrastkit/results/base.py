"""The generic layer of typed results: :class:`Node` (a frozen dataclass that reads and
writes one JSON object), :class:`Result` (a whole results file, with ``task`` and
``schema_version``), the task registry and :func:`load_result`.

A node's fields are read from the JSON keys of the same name (``key("M")`` names another
key); a field with a default (``None`` for most) may be absent from the file, and is
then listed in the node's ``absent`` so :meth:`Node.to_json` leaves it out again; a field made with
``matching(PATTERN)`` collects every key that matches the pattern (``bias@5``,
``maxskew@10`` ... beside a section's fixed keys). Keys that no field names are kept in
``extra``, so ``to_json(from_json(x)) == x`` for every file, whatever it holds beyond
what is typed. A value of the wrong type is a
:class:`~contrastkit.errors.DataFormatError` naming the file and the dotted path of the
field (``summary.overall.vlrs``).
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from contrastkit.errors import DataFormatError
from contrastkit.records import read_json_object
from contrastkit.registry import Registry

__all__ = [
    "RESULT_CLASSES",
    "SCHEMA_VERSION",
    "Node",
    "NodeField",
    "Result",
    "ResultClass",
    "key",
    "load_result",
    "matching",
    "node_fields",
    "node_hints",
    "outside",
    "register_result",
    "registered_results",
    "result_class",
    "task_of",
]

#: The schema version this contrastkit writes; a file without ``schema_version`` is read
#: as this version (every file written before the field existed has this shape).
SCHEMA_VERSION = 1

#: Where a value came from, for errors: a file, or ``<data>`` for a dict in memory.
_NO_PATH = "<data>"

_KEY = "json_key"
_PATTERN = "json_pattern"
_OUTSIDE = "json_outside"


def key(name: str, **kwargs: Any) -> Any:
    """A field read from and written to the JSON key ``name`` (not a Python name:
    ``"M"``, ``"k=1"``). ``kwargs`` go to :func:`dataclasses.field`."""
    return field(metadata={_KEY: name}, **kwargs)


def outside(default: Any) -> Any:
    """A field that is not a key of the node's object (the name of the key that holds
    it, say); the node's class reads and writes it itself."""
    return field(default=default, metadata={_OUTSIDE: True})


def matching(pattern: str) -> Any:
    """A mapping field holding every key of the object that matches ``pattern`` (a
    regular expression, matched whole), written back flat beside the other keys."""
    return field(default_factory=dict, metadata={_PATTERN: pattern})


_N = TypeVar("_N", bound="Node")


@dataclass(frozen=True, kw_only=True)
class Node:
    """One JSON object as a frozen dataclass (module docstring).

    Attributes:
        extra: the object's keys that no field names, as read.
        absent: the fields with a default that the object did not have (left out by
            :meth:`to_json`).
        key_order: the object's keys in the order read (:meth:`to_json` writes them in
            that order again; not compared).
    """

    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = frozenset()
    key_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls: type[_N], data: Any, *, path: str | Path | None = None) -> _N:
        """The node of one JSON object.

        Raises:
            DataFormatError: ``data`` is not an object, lacks a required key or holds a
                value of the wrong type (``field`` is its dotted path).
        """
        return cls._parse(data, str(path) if path is not None else _NO_PATH, "")

    def to_json(self) -> dict[str, Any]:
        """The JSON object: every field present when read (or set), then ``extra``."""
        out: dict[str, Any] = {}
        for spec in node_fields(type(self)):
            if spec.name in self.absent:
                continue
            value = getattr(self, spec.name)
            if spec.pattern is not None:
                out.update({name: _dump(item) for name, item in value.items()})
            else:
                out[spec.key] = _dump(value)
        out.update({name: _dump(item) for name, item in self.extra.items()})
        if self.key_order:
            out = {**{k: out[k] for k in self.key_order if k in out}, **out}
        return out

    @classmethod
    def _parse(cls: type[_N], data: Any, path: str, where: str) -> _N:
        if not isinstance(data, dict):
            raise DataFormatError(
                path, None, where or None, f"expected an object, got {_kind(data)}"
            )
        hints = node_hints(cls)
        values: dict[str, Any] = {}
        absent: set[str] = set()
        used: set[str] = set()
        for spec in node_fields(cls):
            hint = hints[spec.name]
            if spec.pattern is not None:
                regex = re.compile(spec.pattern)
                found = {k: v for k, v in data.items() if regex.fullmatch(k)}
                used.update(found)
                item_type = get_args(hint)[1]
                values[spec.name] = {
                    k: _parse_value(item_type, v, path, _join(where, k)) for k, v in found.items()
                }
                continue
            used.add(spec.key)
            if spec.key not in data:
                if not spec.has_default:
                    raise DataFormatError(path, None, _join(where, spec.key), "missing")
                absent.add(spec.name)
                continue
            values[spec.name] = _parse_value(hint, data[spec.key], path, _join(where, spec.key))
        extra = {k: v for k, v in data.items() if k not in used}
        read = _ReadObject(values, extra, frozenset(absent), tuple(data))
        return cls._build(read, path, where)

    @classmethod
    def _build(cls: type[_N], read: _ReadObject, path: str, where: str) -> _N:
        """The node of an object read at ``where`` in ``path`` (a subclass checks the
        values first)."""
        return cls(**read.values, extra=read.extra, absent=read.absent, key_order=read.order)


@dataclass(frozen=True)
class _ReadObject:
    """One JSON object as :meth:`Node._parse` read it, before the node is made.

    Attributes:
        values: each field's parsed value, by field name.
        extra: the keys no field names, as read.
        absent: the fields with a default that the object did not have.
        order: the object's keys in the order read.
    """

    values: dict[str, Any]
    extra: dict[str, Any]
    absent: frozenset[str]
    order: tuple[str, ...]


@dataclass(frozen=True)
class NodeField:
    """How one field of a node is read: its Python name, its JSON key, the pattern of
    the keys it collects (:func:`matching`), and whether the key may be absent."""

    name: str
    key: str
    pattern: str | None
    has_default: bool


_FIELDS: dict[type, tuple[NodeField, ...]] = {}
_HINTS: dict[type, dict[str, Any]] = {}


def node_fields(cls: type) -> tuple[NodeField, ...]:
    """The fields of a node class that are keys of its JSON object."""
    if cls not in _FIELDS:
        _FIELDS[cls] = tuple(
            NodeField(
                f.name,
                f.metadata.get(_KEY) or f.name,
                f.metadata.get(_PATTERN),
                f.default is not MISSING or f.default_factory is not MISSING,
            )
            for f in fields(cls)
            if f.name not in ("extra", "absent", "key_order") and not f.metadata.get(_OUTSIDE)
        )
    return _FIELDS[cls]


def node_hints(cls: type) -> dict[str, Any]:
    """The resolved type of each field of a node class."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _kind(value: Any) -> str:
    """The JSON kind of a parsed value, in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _fits(tp: Any, value: Any) -> bool:
    """Whether ``value``'s JSON kind is the one ``tp`` reads (not checking inside)."""
    origin = get_origin(tp)
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if _is_union(tp):
        return any(_fits(arg, value) for arg in get_args(tp))
    if origin is Literal:
        return any(value == arg and type(value) is type(arg) for arg in get_args(tp))
    if isinstance(tp, type) and issubclass(tp, Node):
        return isinstance(value, dict)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin in (list, tuple, Sequence):
        return isinstance(value, list)
    if origin in (dict, Mapping):
        return isinstance(value, dict)
    raise TypeError(f"results: unsupported field type {tp!r}")


def _describe(tp: Any) -> str:
    """What a type reads, in words (for errors)."""
    if _is_union(tp):
        return " or ".join(_describe(arg) for arg in get_args(tp))
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    names = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number",
             str: "a string"}  # fmt: skip
    if tp in names:
        return names[tp]
    origin = get_origin(tp)
    if origin in (list, tuple, Sequence):
        return "an array"
    return "an object"


def _parse_value(tp: Any, value: Any, path: str, where: str) -> Any:
    if tp is Any:
        return value
    if _is_union(tp):
        for arg in get_args(tp):
            if _fits(arg, value):
                return _parse_value(arg, value, path, where)
        raise DataFormatError(path, None, where, f"expected {_describe(tp)}, got {_kind(value)}")
    if not _fits(tp, value):
        raise DataFormatError(
            path,
            None,
            where,
            f"expected {_describe(tp)}, got {_kind(value)}"
            + (f" {value!r}" if get_origin(tp) is Literal else ""),
        )
    origin = get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, Node):
        return tp._parse(value, path, where)
    if origin in (list, tuple, Sequence):
        item = get_args(tp)[0]
        return tuple(_parse_value(item, v, path, f"{where}[{n}]") for n, v in enumerate(value))
    if origin in (dict, Mapping):
        item = get_args(tp)[1]
        return {k: _parse_value(item, v, path, _join(where, k)) for k, v in value.items()}
    return value


def _dump(value: Any) -> Any:
    if isinstance(value, Node):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_dump(item) for item in value]
    if isinstance(value, Mapping):
        return {k: _dump(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- results
_R = TypeVar("_R", bound="Result")


@dataclass(frozen=True, kw_only=True)
class Result(Node):
    """A whole results file: a :class:`Node` with ``task`` (which tree reads it) and
    ``schema_version`` (:data:`SCHEMA_VERSION` when the file has none).

    Subclasses set :attr:`TASK`; :attr:`TASK_PATTERN` instead where several task names
    share one tree (``harness-contrast``, ...); :attr:`LEGACY` where files written
    before ``task`` existed lack it (they are then recognised by their shape,
    :func:`task_of`)."""

    TASK: ClassVar[str] = ""
    TASK_PATTERN: ClassVar[str | None] = None
    LEGACY: ClassVar[bool] = False

    task: str = ""
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not self.task:
            object.__setattr__(self, "task", self.TASK)

    @classmethod
    def accepts(cls, task: str) -> bool:
        """Whether ``task`` names this tree."""
        if cls.TASK_PATTERN is not None:
            return re.fullmatch(cls.TASK_PATTERN, task) is not None
        return task == cls.TASK

    @classmethod
    def _build(cls: type[_R], read: _ReadObject, path: str, where: str) -> _R:
        values = read.values
        task = values.get("task")
        if task is None and not cls.LEGACY:
            raise DataFormatError(path, None, _join(where, "task"), "missing")
        if task is not None and not cls.accepts(task):
            raise DataFormatError(
                path, None, _join(where, "task"), f"{task!r} is not a {cls.TASK} result"
            )
        version = values.get("schema_version", SCHEMA_VERSION)
        if not 1 <= version <= SCHEMA_VERSION:
            raise DataFormatError(
                path, None, _join(where, "schema_version"),
                f"version {version}: this contrastkit reads versions 1 to {SCHEMA_VERSION}"
                + (" (the file is from a newer contrastkit)" if version > SCHEMA_VERSION else ""),
            )  # fmt: skip
        return super()._build(read, path, where)


@dataclass(frozen=True)
class ResultClass:
    """One row of the result-class registry: the tree files of ``task`` are read with.

    Attributes:
        task: the ``task`` a results file records.
        cls: the :class:`Result` subclass that reads it.
        source: who registered it: the class's dotted name
            (``contrastkit.results.contrast.ContrastResult``).
    """

    task: str
    cls: type[Result]
    source: str = ""


#: The result classes by task (:class:`~contrastkit.registry.Registry`: no entry point
#: group of its own; a plugin's task registers its class with :func:`register_result`).
RESULT_CLASSES: Registry[ResultClass] = Registry(
    "result class of task", None, ResultClass, lambda row: row.task, key_word="task name"
)


def register_result(
    task: str, cls: type[Result], *, replace_existing: bool = False
) -> type[Result]:
    """Make ``cls`` the tree that :func:`load_result` reads files of ``task`` with (a
    plugin's own task, say). Returns ``cls``.

    Raises:
        TypeError: ``cls`` is not a :class:`Result` subclass.
        ConfigError: another class reads ``task`` and ``replace_existing`` is false
            (naming both classes).
    """
    if not (isinstance(cls, type) and issubclass(cls, Result)):
        raise TypeError(f"register_result: {cls!r} is not a Result subclass")
    row = ResultClass(task, cls, f"{cls.__module__}.{cls.__qualname__}")
    RESULT_CLASSES.register(row, replace_existing=replace_existing)
    return cls


def registered_results() -> dict[str, type[Result]]:
    """The registered trees, by task name, in the order registered."""
    return {task: row.cls for task, row in RESULT_CLASSES.all().items()}


def result_class(task: str, *, path: str | Path | None = None) -> type[Result]:
    """The tree registered for ``task`` (or the one whose pattern it matches).

    Raises:
        DataFormatError: no tree reads ``task``.
    """
    registered = registered_results()
    if task in registered:
        return registered[task]
    for cls in registered.values():
        if cls.TASK_PATTERN is not None and cls.accepts(task):
            return cls
    known = ", ".join(sorted(registered))
    raise DataFormatError(
        path if path is not None else _NO_PATH,
        None,
        "task",
        f"unknown task {task!r} (known: {known})",
    )


#: Shapes of files written before ``task`` existed: (task, test), tried in order.
_LEGACY_SHAPES: list[tuple[str, Callable[[Mapping[str, Any]], bool]]] = [
    (
        "visogender",
        lambda data: (
            len(data) == 1
            and re.fullmatch(r"visogender_.*_results", next(iter(data))) is not None
            and isinstance(next(iter(data.values())), dict)
        ),
    ),
    ("audit", lambda data: isinstance(data.get("composition"), dict) and "analyses" in data),
]


def task_of(data: Mapping[str, Any], *, path: str | Path | None = None) -> str:
    """The task of a results file's JSON object: its ``task`` field, or, for a file
    written before that field existed, the task its shape is: a VisoGender benchmark
    (one ``visogender_<model>_results`` object, whose own ``task`` is read where it has
    one) or a dataset audit (``composition`` and ``analyses``).

    Raises:
        DataFormatError: ``task`` is not a string, or no ``task`` and no known shape.
    """
    where = path if path is not None else _NO_PATH
    for shape, test in _LEGACY_SHAPES:
        if "task" not in data and test(data):
            if shape == "visogender":
                inner = next(iter(data.values())).get("task", shape)
                if not isinstance(inner, str):
                    raise DataFormatError(
                        where,
                        None,
                        f"{next(iter(data))}.task",
                        f"expected a string, got {_kind(inner)}",
                    )
                return inner
            return shape
    task = data.get("task")
    if task is None:
        raise DataFormatError(
            where, None, "task",
            "missing: not a contrastkit results file (no task, and not a VisoGender "
            "benchmark or a dataset audit)",
        )  # fmt: skip
    if not isinstance(task, str):
        raise DataFormatError(where, None, "task", f"expected a string, got {_kind(task)}")
    return task


#: The results file of an output folder, by the name it has there, in order.
RESULT_FILES = (
    "benchmark.json",
    "disparity.json",
    "zero_shot/disparity.json",
    "audit.json",
    "harness_results.json",
)


def load_result(
    source: str | Path | Mapping[str, Any], *, path: str | Path | None = None
) -> Result:
    """The typed result of a results file (``benchmark.json``, ``disparity.json``,
    ``audit.json``, ``harness_results.json``), of the folder that holds one (looked for
    in the order of :data:`RESULT_FILES`), or of its JSON object already read (then
    ``path``, if given, is the file errors name); the tree is chosen by :func:`task_of`.

    Raises:
        DataFormatError: no such file, not a JSON object, an unknown task, or a value of
            the wrong type (located by its dotted path).
    """
    if isinstance(source, Mapping):
        data: Mapping[str, Any] = source
    else:
        path = Path(source)
        if path.is_dir():
            folder = path
            path = next((path / name for name in RESULT_FILES if (path / name).is_file()), None)
            if path is None:
                looked = ", ".join(RESULT_FILES)
                raise DataFormatError(folder, None, None, f"no results file here ({looked})")
        data = read_json_object(path, "a results object")
    cls = result_class(task_of(data, path=path), path=path)
    return cls.from_json(dict(data), path=path)
