"""Reading a harness's prediction files: VLMEvalKit tables and lmms-eval samples JSONL
(the rules are in the docstring of :mod:`contrastkit.evaluators.harness`)."""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.harness_key import (
    HarnessKey,
    KeyItem,
    loss_choice,
    option_loss,
    parse_choice,
)
from contrastkit.records import MAX_JSON_BYTES, MAX_LINE_BYTES, json_lines, read_json

__all__ = ["TABLE_SUFFIXES", "HarnessAnswer", "read_predictions"]

#: The prediction-file suffixes read as tables (VLMEvalKit).
TABLE_SUFFIXES = (".xlsx", ".tsv", ".csv", ".json")


@dataclass(frozen=True)
class HarnessAnswer:
    """One answer of a prediction file.

    Attributes:
        index: the item's ``index``.
        text: the answer as written (a generated text, or the log-likelihoods as text).
        letter: the option letter it names, or ``None`` (unparseable).
        path: the file.
        line: its line (a table's header is line 1).
    """

    index: int
    text: str
    letter: str | None
    path: Path
    line: int


def _table(path: Path) -> Any:
    import pandas as pd

    suffix = path.suffix.lower()
    try:
        if suffix == ".xlsx":
            return _workbook(path)
        if suffix == ".json":
            return pd.DataFrame(read_json(path)).astype(str)
        return _delimited(path, "\t" if suffix == ".tsv" else ",")
    except DataFormatError:
        raise
    except (OSError, ValueError) as error:
        reason = f"cannot read the prediction table: {error}"
        raise DataFormatError(path, None, None, reason) from error


def _workbook(path: Path) -> Any:
    """A VLMEvalKit ``.xlsx``, all cells as text; a truncated file, or one that is not a
    workbook, is a data error naming it."""
    from importlib.util import find_spec

    import pandas as pd

    if find_spec("openpyxl") is None:
        raise DataFormatError(
            path, None, None,
            "reading .xlsx needs openpyxl (`pip install \"contrastkit[harness]\"`); "
            "or rerun VLMEvalKit with PRED_FORMAT=tsv and pass the .tsv",
        )  # fmt: skip
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        with zipfile.ZipFile(path) as archive:  # sizes as declared: zipfile reads no more
            unpacked = sum(info.file_size for info in archive.infolist())
        if unpacked > MAX_JSON_BYTES:
            raise DataFormatError(
                path, None, None,
                f"unpacks to {unpacked:,} bytes, more than the {MAX_JSON_BYTES:,} a workbook "
                "may hold; rerun VLMEvalKit with PRED_FORMAT=tsv and pass the .tsv",
            )  # fmt: skip
        return pd.read_excel(path, dtype=str, keep_default_na=False)
    except (zipfile.BadZipFile, KeyError, InvalidFileException) as error:
        raise DataFormatError(path, None, None, f"not an Excel workbook: {error}") from error


def _delimited(path: Path, separator: str) -> Any:
    """A TSV / CSV prediction file as text cells, read once. Every row has the header's
    number of fields: a file cut mid-row (a copy that stopped, a full disk) is refused at
    its last line, instead of read with empty answers."""
    import csv

    import pandas as pd

    limit = csv.field_size_limit()
    csv.field_size_limit(MAX_LINE_BYTES)  # VLMEvalKit rows carry base64 images
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle, delimiter=separator)
            header = next(reader, None)
            if header is None:
                raise DataFormatError(path, None, None, "empty file: no header")
            rows = []
            for row in reader:
                if not row:
                    continue  # a blank line
                if len(row) != len(header):
                    raise DataFormatError(
                        path, reader.line_num, None,
                        f"{len(row)} fields where the header has {len(header)}"
                        " (a file cut mid-row?)",
                    )  # fmt: skip
                rows.append(row)
    except csv.Error as error:
        raise DataFormatError(path, None, None, f"malformed table: {error}") from error
    except UnicodeDecodeError as error:
        raise DataFormatError(path, None, None, f"not UTF-8 text ({error.reason})") from error
    finally:
        csv.field_size_limit(limit)
    return pd.DataFrame(rows, columns=header, dtype=str)


def _index(path: Path, line: int, value: Any, field: str = "index") -> int:
    try:
        number = float(str(value).strip())
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number != int(number):
        raise DataFormatError(path, line, field, f"not an item index: {value!r}")
    return int(number)


def _from_table(path: Path, key: Mapping[int, KeyItem]) -> list[HarnessAnswer]:
    frame = _table(path)
    for column in ("index", "prediction"):
        if column not in frame.columns:
            raise DataFormatError(path, 1, column, "a VLMEvalKit prediction file needs this column")
    answers = []
    for position, (raw_index, text) in enumerate(
        zip(frame["index"], frame["prediction"], strict=True)
    ):
        line = position + 2
        index = _index(path, line, raw_index)
        item = key.get(index)
        if item is None:
            raise DataFormatError(
                path, line, "index", f"item {index} is not in this export (wrong --harness-set?)"
            )
        answers.append(HarnessAnswer(index, str(text), parse_choice(str(text), item.options),
                                     path, line))  # fmt: skip
    return answers


def _loss_letter(path: Path, line: int, field: str, values: list[Any], item: KeyItem) -> str | None:
    """The letter of an ``output_type: multiple_choice`` sample: one (loss, is_greedy)
    entry per option (:func:`~contrastkit.harness_key.option_loss`), the lowest loss wins
    (:func:`~contrastkit.harness_key.loss_choice`; a tie is unparseable)."""
    letters = list(item.options)
    if len(values) != len(letters):
        raise DataFormatError(
            path, line, field,
            f"{len(values)} entries for item {item.index}, which has {len(letters)} options "
            f"({', '.join(letters)}): a multiple_choice sample has one (loss, is_greedy) per "
            "option (was the task changed after the export?)",
        )  # fmt: skip
    losses = []
    for position, value in enumerate(values):
        loss = option_loss(value)
        if loss is None:
            raise DataFormatError(
                path, line, f"{field}[{position}]",
                f"not a (loss, is_greedy) pair as lmms-eval logs one per option, such as "
                f"'(0.357, True)': {value!r:.80}",
            )  # fmt: skip
        losses.append(loss)
    return loss_choice(losses, letters)


def _sample_split(path: Path, key: HarnessKey) -> str | None:
    """The split whose task wrote ``path``: lmms-eval names a samples file
    ``<date>_samples_<task>.jsonl``, the task being the split's dataset name."""
    for split, dataset in key.datasets.items():
        if path.name.endswith(f"_samples_{dataset}.jsonl"):
            return split
    return None


@dataclass(frozen=True)
class _SamplesFile:
    """One lmms-eval samples file with what finds the item each of its samples answers.

    Attributes:
        path: the file.
        key: the export's key.
        by_index: the key's items by ``index``.
        rows: the items of the split whose task wrote the file, in the task's row order
            (what ``doc_id`` counts), or ``None`` when the file's name names no task of
            the export.
    """

    path: Path
    key: HarnessKey
    by_index: Mapping[int, KeyItem]
    rows: Sequence[KeyItem] | None

    @classmethod
    def of(cls, path: Path, key: HarnessKey) -> _SamplesFile:
        """The file at ``path`` answering items of ``key``."""
        split = _sample_split(path, key)
        rows = [item for item in key.items if item.split == split] if split else None
        return cls(path, key, key.by_index(), rows)


def _sample_item(samples: _SamplesFile, line: int, record: Mapping[str, Any]) -> KeyItem:
    """The item a logged sample answers. lmms-eval 0.7.3 drops ``doc`` from every sample;
    it keeps ``doc_id``, the row of the task's data (whose task the file name says), and
    the export's ``process_results`` logs the item's ``index`` under ``accuracy``. Either
    finds the item; when both are there they must agree. ``doc.index`` (a sample that
    still holds its ``doc``) is read last."""
    path, key, by_index, rows = samples.path, samples.key, samples.by_index, samples.rows
    found: list[tuple[str, KeyItem]] = []
    if rows is not None and "doc_id" in record:
        row = _index(path, line, record["doc_id"], "doc_id")
        if not 0 <= row < len(rows):
            raise DataFormatError(
                path, line, "doc_id",
                f"row {row} of a task with {len(rows)} items in this export "
                "(wrong --harness-set?)",
            )  # fmt: skip
        found.append(("doc_id", rows[row]))
    for name, holder in (("accuracy.index", "accuracy"), ("doc.index", "doc")):
        logged = record.get(holder)
        if isinstance(logged, dict) and logged.get("index") is not None:
            index = _index(path, line, logged["index"], name)
            if index not in by_index:
                raise DataFormatError(
                    path, line, name,
                    f"item {index} is not in this export (wrong --harness-set?)",
                )  # fmt: skip
            found.append((name, by_index[index]))
    if not found:
        names = ", ".join(f"<date>_samples_{name}.jsonl" for name in key.datasets.values())
        raise DataFormatError(
            path, line, "doc_id",
            "cannot tell which item this sample answers: it logs no item index "
            "(accuracy.index, written by the exported task), and the file is not named "
            f"after a task of this export ({names}), so its doc_id names no row",
        )  # fmt: skip
    (first, item), *others = found
    for name, other in others:
        if other.index != item.index:
            raise DataFormatError(
                path, line, name,
                f"names item {other.index}, but {first} names item {item.index}"
                + (" (a file renamed after another task?)" if first == "doc_id" else ""),
            )  # fmt: skip
    return item


def _from_jsonl(path: Path, key: HarnessKey) -> list[HarnessAnswer]:
    samples = _SamplesFile.of(path, key)
    answers = []
    for number, record in json_lines(path):
        if not isinstance(record, dict):
            raise DataFormatError(path, number, None, "not a JSON object")
        item = _sample_item(samples, number, record)
        answer_field = "filtered_resps" if "filtered_resps" in record else "resps"
        responses = record.get(answer_field)
        if isinstance(responses, list) and len(responses) > 1:  # output_type: multiple_choice
            letter = _loss_letter(path, number, answer_field, responses, item)
            answers.append(HarnessAnswer(item.index, json.dumps(responses), letter, path, number))
            continue
        while isinstance(responses, list) and responses:
            responses = responses[0]
        text = responses if isinstance(responses, str) else ""
        answers.append(
            HarnessAnswer(item.index, text, parse_choice(text, item.options), path, number)
        )
    return answers


def read_predictions(path: str | Path, key: HarnessKey) -> list[HarnessAnswer]:
    """The answers of one prediction file (VLMEvalKit table or lmms-eval samples JSONL;
    module docstring), each with the letter :func:`~contrastkit.harness_key.parse_choice`
    reads (``None``: unparseable).

    Raises:
        DataFormatError: no such file, an unknown format, a missing column, an index
            that is not an item of ``key`` (located).
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such prediction file")
    if path.suffix.lower() == ".jsonl":
        return _from_jsonl(path, key)
    if path.suffix.lower() in TABLE_SUFFIXES:
        return _from_table(path, key.by_index())
    raise DataFormatError(
        path, None, None,
        "unknown prediction file: expected VLMEvalKit's .xlsx / .tsv / .csv / .json or "
        "lmms-eval's --log_samples .jsonl",
    )  # fmt: skip
