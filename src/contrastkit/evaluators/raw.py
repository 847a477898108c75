"""Raw score files: JSON Lines of one record per scored unit, kept across runs so that a
rerun scores only what is missing.

Every record is a JSON object with a ``key`` (what it scores: a row, its image, its
captions or query) and the ``model`` spec that scored it. A run reads the file back
(:func:`read_raw`), rewrites it with the records it keeps and appends new ones after each
batch, flushed to disk (:class:`RawAppender`), so an interrupted run loses at most one
batch. The evaluation runner (:mod:`contrastkit.evaluators.runner`) and the stereotype
probing task (:mod:`contrastkit.evaluators.tasks.stereotype_probing.scoring`) share this format.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text
from contrastkit.records import parse_json, text_lines

__all__ = ["RawAppender", "dumps_jsonl", "read_raw"]


def read_raw(
    path: Path, model: str | None = None, *, required: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """Records of a raw JSONL file by key (of ``model`` only, when given). Lines that are
    not complete JSON objects with a ``key`` and every field of ``required`` (the tail of
    an interrupted write) are skipped; a missing file has none."""
    records: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return records
    for number, line in text_lines(path):
        try:
            record = parse_json(path, number, line)
        except DataFormatError:
            continue
        if not isinstance(record, dict) or any(f not in record for f in ("key", *required)):
            continue
        if model is None or record.get("model") == model:
            records[str(record["key"])] = record
    return records


#: ``json.dumps(record, ensure_ascii=False)``, without building an encoder per record.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def dumps_jsonl(records: Iterable[Mapping[str, Any]]) -> str:
    """``records`` as JSON Lines (UTF-8 text kept as is)."""
    return "".join(_ENCODE(record) + "\n" for record in records)


class RawAppender:
    """Rewrites a raw file with the records ``existing`` (dropping stale records and any
    partial line), then appends records to it, forcing each batch to disk. A context
    manager; :meth:`close` closes the file."""

    def __init__(self, path: Path, existing: Iterable[Mapping[str, Any]]):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, dumps_jsonl(existing))
        self.handle = path.open("a", encoding="utf-8")

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append ``records`` and flush them to disk (nothing for none)."""
        if records:
            self.handle.write(dumps_jsonl(records))
            self.handle.flush()
            os.fsync(self.handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self.handle.close()

    def __enter__(self) -> RawAppender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
