"""Reading a JSON file whose top level is a long list, one element at a time.

Visual Genome's ``objects.json`` is a single list of about 108,000 image entries, several
GB of text; ``json.load`` would hold all of it as Python objects at once (many times the
file's size in memory). :func:`iter_json_array` reads the file in chunks and decodes one
element at a time with the standard library's decoder (no extra dependency), so memory
stays at about one chunk plus one element, and the elements are exactly what
``json.load`` would give.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.records import MAX_LINE_BYTES

__all__ = ["CHUNK_CHARS", "iter_json_array"]

#: Characters read at a time.
CHUNK_CHARS = 1 << 20

_SPACE = frozenset(" \t\n\r")


class _Reader:
    """A sliding window over a text file: ``buf[pos:]`` is what is not consumed yet;
    ``line`` is the line number of ``buf[0]``."""

    def __init__(self, path: Path, handle: Any, chunk: int) -> None:
        self.path, self.handle, self.chunk = path, handle, chunk
        self.decoder = json.JSONDecoder()
        self.buf, self.pos, self.line, self.eof = "", 0, 1, False

    def fill(self) -> bool:
        """Drop the consumed text, read one more chunk; ``False`` at the end of file."""
        self.line += self.buf.count("\n", 0, self.pos)
        self.buf, self.pos = self.buf[self.pos :], 0
        data = self.handle.read(self.chunk)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def skip_space(self) -> bool:
        """Move past white space; ``False`` when the file ends first."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return True
            if not self.fill():
                return False

    def line_at(self, pos: int) -> int:
        return self.line + self.buf.count("\n", 0, pos)

    def invalid(self, reason: str, pos: int | None = None) -> DataFormatError:
        """The error for invalid JSON, located at the line of ``pos`` (default: here)."""
        where = self.line_at(self.pos if pos is None else pos)
        return DataFormatError(self.path, where, None, f"not valid JSON ({reason})")

    def skip_space_inside(self) -> None:
        """Move past white space that must be followed by more of the list."""
        if not self.skip_space():
            raise self.invalid("the file ends inside the list")

    def elements(self, what: str) -> Iterator[Any]:
        """The elements of the list that the file holds, then a check that nothing
        follows it."""
        if not self.skip_space() or self.buf[self.pos] != "[":
            raise DataFormatError(self.path, None, None, f"expected a list of {what}")
        self.pos += 1
        self.skip_space_inside()
        if self.buf[self.pos] == "]":
            self.pos += 1
        else:
            yield from self._items()
        if self.skip_space():
            raise self.invalid("extra data after the list")

    def _items(self) -> Iterator[Any]:
        """The elements of a non-empty list, up to and including its closing ``]``."""
        while True:
            yield self._decode()
            self.skip_space_inside()
            separator = self.buf[self.pos]
            self.pos += 1
            if separator == "]":
                return
            if separator != ",":
                raise self.invalid("expected ',' or ']' after an element", self.pos - 1)
            self.skip_space_inside()

    def _decode(self) -> Any:
        """The element that starts here, reading more chunks until it is whole."""
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as error:
                if self.eof:
                    raise self.invalid(error.msg, error.pos) from error
                if len(self.buf) - self.pos > MAX_LINE_BYTES:
                    raise self.invalid(
                        f"an element longer than {MAX_LINE_BYTES} characters"
                    ) from error
                self.fill()  # then decode again (fill moves the window)
                continue
            except RecursionError as error:
                raise self.invalid("nested too deeply") from error
            except ValueError as error:  # an integer of too many digits
                raise self.invalid(str(error)) from error
            if len(self.buf) - end <= 2 and not self.eof:
                self.fill()
                # a number cut by the chunk decodes as a shorter one: "1" of "12", "0" of
                # "0.5" (tail "."), "1" of "1e+5" (tail "e+")
                continue
            self.pos = end
            return value


def iter_json_array(
    path: Path, what: str = "entries", *, chunk: int = CHUNK_CHARS
) -> Iterator[Any]:
    """The elements of the JSON list in ``path``, one at a time, in order.

    Args:
        path: a UTF-8 JSON file (a byte-order mark is allowed) holding one list.
        what: what the elements are, for the error when the top level is not a list.
        chunk: characters read at a time.

    Raises:
        DataFormatError: the file is missing, is not UTF-8, its top level is not a list,
            or it is not valid JSON (with the line where decoding failed). Elements before
            the error have been yielded.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "file not found")
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            yield from _Reader(path, handle, chunk).elements(what)
    except UnicodeDecodeError as error:
        raise DataFormatError(path, None, None, f"not valid UTF-8 ({error})") from error
