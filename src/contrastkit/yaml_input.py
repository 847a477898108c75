"""Reading a small YAML file a user gives (the decision question templates) without
trusting it: bounded in size, depth and expansion, every failure a located
:class:`~contrastkit.errors.DataFormatError`.

PyYAML's ``safe_load`` builds no objects but plain ones, yet it still expands aliases
(a 500-byte chain of ``&a [*b, *b, ...]`` anchors grows to gigabytes), recurses once per
level of nesting (100,000 levels end in a ``RecursionError``), converts integers of any
length (Python refuses more than 4,300 digits with a bare ``ValueError``) and keeps the
last of a key given twice. :func:`read_yaml` reads with a loader that refuses all four,
before anything is built:

* at most :data:`MAX_YAML_BYTES` of UTF-8 text (a byte-order mark allowed);
* no alias (``*name``): write the value out where it is needed (an anchor alone is
  harmless and allowed);
* at most :data:`MAX_YAML_DEPTH` levels of nesting;
* integers of at most :data:`MAX_INT_DIGITS` digits;
* no key twice in one mapping.

Each error names the file, the line and, where it can, the field (``families.x.pairs[0]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from contrastkit.errors import DataFormatError

__all__ = ["MAX_INT_DIGITS", "MAX_YAML_BYTES", "MAX_YAML_DEPTH", "read_yaml"]

#: The largest YAML file :func:`read_yaml` reads (bytes); the bundled question file is
#: about 3 kB.
MAX_YAML_BYTES = 1024 * 1024
#: The deepest nesting of lists and mappings :func:`read_yaml` takes.
MAX_YAML_DEPTH = 32
#: The longest integer (digits) :func:`read_yaml` takes.
MAX_INT_DIGITS = 100

_INT_TAG = "tag:yaml.org,2002:int"


class _RefusedError(yaml.YAMLError):  # type: ignore[misc]
    """A YAML document the strict loader refuses: where, and why."""

    def __init__(self, node_or_event: Any, field: str | None, reason: str) -> None:
        super().__init__(reason)
        mark = node_or_event.start_mark
        self.line = None if mark is None else mark.line + 1
        self.field = field
        self.reason = reason


class _StrictLoader(yaml.SafeLoader):  # type: ignore[misc]
    """``yaml.SafeLoader`` refusing aliases, deep nesting, huge integers and repeated
    keys while it composes the document (before any object is built)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._path: list[str] = []

    def _field(self) -> str | None:
        parts = self._path if len(self._path) <= 8 else [*self._path[:6], "..."]
        return "".join(parts).lstrip(".") or None

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if isinstance(index, ScalarNode):
            part = f".{index.value}"
        elif isinstance(index, int):
            part = f"[{index}]"
        else:
            part = "" if parent is None else ".(a key)"
        self._path.append(part)
        try:
            if self.check_event(yaml.AliasEvent):
                raise _RefusedError(
                    self.peek_event(), self._field(),
                    "an alias (*name) is not read here: write the value out where it is needed",
                )  # fmt: skip
            if len(self._path) > MAX_YAML_DEPTH:
                raise _RefusedError(
                    self.peek_event(), self._field(),
                    f"nested more than {MAX_YAML_DEPTH} levels deep",
                )  # fmt: skip
            node: Node = super().compose_node(parent, index)
            self._check(node)
        finally:
            self._path.pop()
        return node

    def _check(self, node: Node) -> None:
        if isinstance(node, ScalarNode) and node.tag == _INT_TAG:
            digits = sum(ch.isalnum() for ch in str(node.value))
            if digits > MAX_INT_DIGITS:
                raise _RefusedError(
                    node, self._field(),
                    f"an integer of {digits} digits; at most {MAX_INT_DIGITS} are read",
                )  # fmt: skip
        if isinstance(node, MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, _ in node.value:
                if not isinstance(key, ScalarNode):
                    continue
                if (key.tag, key.value) in seen:
                    name = self._field()
                    raise _RefusedError(
                        key, f"{name}.{key.value}" if name else str(key.value),
                        f"the key {key.value!r} is given twice",
                    )  # fmt: skip
                seen.add((key.tag, key.value))


def _text(path: Path | None, where: str, text: str | None) -> str:
    """The file's text: at most :data:`MAX_YAML_BYTES`, UTF-8."""
    if text is not None:
        data = text.encode("utf-8", "surrogatepass")
    else:
        assert path is not None
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_YAML_BYTES + 1)
        except FileNotFoundError as error:
            raise DataFormatError(where, None, None, "no such file") from error
        except IsADirectoryError as error:
            raise DataFormatError(where, None, None, "is a folder, not a file") from error
    if len(data) > MAX_YAML_BYTES:
        raise DataFormatError(
            where, None, None, f"larger than {MAX_YAML_BYTES} bytes, the most a YAML file may hold"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DataFormatError(where, line, None, f"not UTF-8 text ({error.reason})") from None


def read_yaml(path: Path | None, where: str, text: str | None = None) -> Any:
    """The YAML document of ``path`` (or of ``text``), read by the strict loader.

    Args:
        path: the file (read only up to :data:`MAX_YAML_BYTES`, plus one byte).
        where: how errors name it.
        text: the document itself, instead of reading ``path``.

    Raises:
        DataFormatError: naming ``where``, the line and where it can the field: a file
            missing, too large or not UTF-8; not YAML; an alias, nesting deeper than
            :data:`MAX_YAML_DEPTH`, an integer longer than :data:`MAX_INT_DIGITS`
            digits, a key given twice.
    """
    source = _text(path, where, text)
    loader = _StrictLoader(source)
    try:
        return loader.get_single_data()
    except _RefusedError as error:
        raise DataFormatError(where, error.line, error.field, error.reason) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = None if mark is None else mark.line + 1
        reason = " ".join(part for part in (error.context, error.problem) if part)
        raise DataFormatError(where, line, None, f"not YAML: {reason}") from None
    except yaml.YAMLError as error:
        raise DataFormatError(where, None, None, f"not YAML: {error}") from None
    except (ValueError, RecursionError) as error:  # a conversion PyYAML does not guard
        raise DataFormatError(where, None, None, f"not YAML: {error}") from None
    finally:
        loader.dispose()
