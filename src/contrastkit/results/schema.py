"""JSON Schemas (draft 2020-12) of the result trees, generated from the dataclasses, and
the files ``docs/schemas/<task>.schema.json`` written from them.

Run ``python -m contrastkit.results [FOLDER]`` (default ``docs/schemas``) to
write them again after changing a tree; ``tests/test_results.py`` checks that the
committed files equal what :func:`json_schema` generates now.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from contrastkit.io import atomic_write_text
from contrastkit.results.base import (
    SCHEMA_VERSION,
    Node,
    Result,
    node_fields,
    node_hints,
    registered_results,
)

__all__ = ["json_schema", "schema_file_name", "write_schemas"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _first_line(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    return re.sub(r"\s+", " ", doc.split("\n\n")[0])


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def type_schema(self, tp: Any) -> dict[str, Any]:
        origin = get_origin(tp)
        if tp is Any:
            return {}
        if tp is type(None):
            return {"type": "null"}
        if origin in (Union, types.UnionType):
            options = [self.type_schema(arg) for arg in get_args(tp)]
            return {"anyOf": options}
        if origin is Literal:
            return {"enum": list(get_args(tp))}
        if isinstance(tp, type) and issubclass(tp, Node):
            return self.node_ref(tp)
        simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
        if tp in simple:
            return {"type": simple[tp]}
        if origin in (list, tuple, Sequence):
            return {"type": "array", "items": self.type_schema(get_args(tp)[0])}
        if origin in (dict, Mapping):
            return {"type": "object", "additionalProperties": self.type_schema(get_args(tp)[1])}
        raise TypeError(f"json_schema: unsupported field type {tp!r}")

    def node_ref(self, cls: type[Node]) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # placeholder: a tree that refers to itself
            self.defs[name] = self.node_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def node_schema(self, cls: type[Node]) -> dict[str, Any]:
        hints = node_hints(cls)
        properties: dict[str, Any] = {}
        patterns: dict[str, Any] = {}
        required: list[str] = []
        for spec in node_fields(cls):
            if spec.pattern is not None:
                patterns[f"^(?:{spec.pattern})$"] = self.type_schema(get_args(hints[spec.name])[1])
                continue
            if issubclass(cls, Result) and spec.name == "task":
                properties[spec.key] = (
                    {"type": "string", "pattern": f"^(?:{cls.TASK_PATTERN})$"}
                    if cls.TASK_PATTERN is not None
                    else {"const": cls.TASK}
                )
            elif issubclass(cls, Result) and spec.name == "schema_version":
                properties[spec.key] = {"type": "integer", "minimum": 1, "maximum": SCHEMA_VERSION}
            else:
                properties[spec.key] = self.type_schema(hints[spec.name])
            if not spec.has_default or (
                issubclass(cls, Result) and spec.name == "task" and not cls.LEGACY
            ):
                required.append(spec.key)
        schema: dict[str, Any] = {"type": "object", "description": _first_line(cls)}
        schema["properties"] = properties
        if patterns:
            schema["patternProperties"] = patterns
        if required:
            schema["required"] = required
        return schema


def json_schema(cls: type[Result]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a result tree's files. Every object allows
    keys beyond those typed (they are kept in ``extra``). A VisoGender benchmark is one
    ``visogender_<model>_results`` object holding the typed results."""
    from contrastkit.results.visogender import VisoGenderResult

    builder = _Builder()
    ref = builder.node_ref(cls)
    if issubclass(cls, VisoGenderResult):
        top: dict[str, Any] = {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "patternProperties": {"^visogender_.*_results$": ref},
            "additionalProperties": False,
        }
    else:
        top = dict(ref)
    return {
        "$schema": DIALECT,
        "title": f"contrastkit {cls.TASK} result (schema version {SCHEMA_VERSION})",
        "description": _first_line(cls),
        **top,
        "$defs": dict(sorted(builder.defs.items())),
    }


def schema_file_name(cls: type[Result]) -> str:
    """``<task>.schema.json``."""
    return f"{cls.TASK}.schema.json"


def write_schemas(folder: str | Path) -> list[Path]:
    """Write each registered tree's schema into ``folder``; return the files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for cls in sorted(set(registered_results().values()), key=lambda c: c.TASK):
        path = folder / schema_file_name(cls)
        atomic_write_text(path, json.dumps(json_schema(cls), indent=2) + "\n")
        written.append(path)
    return written
