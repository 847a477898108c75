"""Reading and writing probe files (``.tsv`` / ``.jsonl``), and finding a probe set in a
file, a folder or an export (:func:`load_probe_set`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text
from contrastkit.probes.format import (
    COLUMNS,
    EXPORT_CONFIG,
    OPTIONAL_COLUMNS,
    PROBE_FILE,
    ProbeRow,
    check_probe_row,
)
from contrastkit.records import json_lines, parse_json, read_json, text_lines
from contrastkit.saved_datasets import load_saved_split

__all__ = ["is_probe_set", "load_probe_set", "read_probes", "write_probes"]


def _row_from(record: Mapping[str, str], path: Path, line: int) -> ProbeRow:
    values: dict[str, Any] = {name: record.get(name, "") for name in COLUMNS}
    row = ProbeRow(**values, source=str(path), line=line)
    check_probe_row(row)
    return row


def _check_header(path: Path, names: list[str]) -> None:
    import difflib

    unknown = [n for n in names if n not in COLUMNS]
    for name in COLUMNS:
        if name not in names and name not in OPTIONAL_COLUMNS:
            close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.6)
            hint = f" (found {close[0]!r}: rename it)" if close else ""
            raise DataFormatError(path, 1, name, f"missing column{hint}")
    if unknown:
        raise DataFormatError(path, 1, unknown[0], "unknown column for a probe set")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataFormatError(path, 1, name, "column appears twice")
        seen.add(name)


def _read_tsv(path: Path) -> Iterator[ProbeRow]:
    lines = text_lines(path)
    header: list[str] | None = None
    for number, text in lines:
        if header is None:
            if not text.strip():
                raise DataFormatError(path, 1, None, "empty header line")
            header = [name.strip() for name in text.split("\t")]
            _check_header(path, header)
            continue
        if not text.strip():
            continue
        values = text.split("\t")
        if len(values) != len(header):
            name = header[len(values)] if len(values) < len(header) else None
            raise DataFormatError(
                path,
                number,
                name,
                f"expected {len(header)} tab-separated fields, found {len(values)}",
            )
        yield _row_from(dict(zip(header, values, strict=True)), path, number)
    if header is None:
        raise DataFormatError(path, None, None, "empty file: no header")


def _read_jsonl(path: Path) -> Iterator[ProbeRow]:
    for number, record in json_lines(path, unique_keys=True):
        if not isinstance(record, dict):
            raise DataFormatError(path, number, None, "expected a JSON object")
        for name in COLUMNS:
            if name not in record and name not in OPTIONAL_COLUMNS:
                raise DataFormatError(path, number, name, "missing key")
        for name, value in record.items():
            if name not in COLUMNS:
                raise DataFormatError(path, number, str(name), "unknown key for a probe set")
            if not isinstance(value, str):
                raise DataFormatError(
                    path, number, name, f"expected a string, found {type(value).__name__}"
                )
        yield _row_from(record, path, number)


def _check_unique(rows: Iterable[ProbeRow]) -> list[ProbeRow]:
    seen: dict[str, ProbeRow] = {}
    out = []
    for row in rows:
        if row.id in seen:
            first = seen[row.id]
            raise DataFormatError(
                row.source or "<probes>",
                row.line,
                "id",
                f"duplicate id {row.id!r} (first on line {first.line})",
            )
        seen[row.id] = row
        out.append(row)
    return out


def read_probes(path: str | Path) -> list[ProbeRow]:
    """Read and check a probe file: ``.tsv`` or ``.jsonl`` (:mod:`contrastkit.probes`).

    Raises:
        DataFormatError: the first problem, naming the file, line and field.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".tsv":
        return _check_unique(_read_tsv(path))
    if suffix == ".jsonl":
        return _check_unique(_read_jsonl(path))
    raise DataFormatError(path, None, None, "a probe file ends in .tsv or .jsonl")


def write_probes(rows: Iterable[ProbeRow], path: Path) -> None:
    """Write ``rows`` to ``path`` atomically, as TSV or JSON Lines by its suffix.

    Every row is checked first (:func:`check_probe_row`, unique IDs); on an error
    nothing is written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".tsv", ".jsonl"):
        raise DataFormatError(path, None, None, "a probe file ends in .tsv or .jsonl")
    rows = list(rows)
    for row in rows:
        check_probe_row(row)
    _check_unique(rows)
    if suffix == ".tsv":
        lines = ["\t".join(COLUMNS)]
        lines += ["\t".join(row.to_record().values()) for row in rows]
    else:
        lines = [json.dumps(row.to_record(), ensure_ascii=False) for row in rows]
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def _sniff_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return False
    if path.suffix.lower() == ".tsv":
        names = {name.strip() for name in first.split("\t")}
        return {"stereotype_caption", "anti_stereotype_caption", "label"} <= names
    if path.suffix.lower() == ".jsonl":
        try:
            record = parse_json(path, 1, first)
        except DataFormatError:
            return False
        return isinstance(record, dict) and "stereotype_caption" in record
    return False


def _probe_files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.suffix.lower() in (".tsv", ".jsonl") and _sniff_file(p)
    )


def _dataset_folder(path: Path) -> Path | None:
    def is_dataset(folder: Path) -> bool:
        return (folder / "dataset_info.json").is_file() or (folder / "dataset_dict.json").is_file()

    exported = path / "saved" / EXPORT_CONFIG
    if is_dataset(exported):
        return exported
    if is_dataset(path):
        return path
    return None


def _dataset_is_probes(folder: Path) -> bool:
    for info in (folder / "dataset_dict.json", folder / "dataset_info.json"):
        if not info.is_file():
            continue
        try:
            data = read_json(info)
        except DataFormatError:
            return False
        if not isinstance(data, dict):
            return False
        if info.name == "dataset_dict.json":
            splits = data.get("splits", [])
            names = [s for s in splits if isinstance(s, str)] if isinstance(splits, list) else []
            # a split is a folder of this one: a plain name, never a path out of it
            plain = [s for s in names if s == Path(s).name and s not in ("", ".", "..")]
            return any(_dataset_is_probes(folder / split) for split in plain)
        features = data.get("features", {})
        return isinstance(features, dict) and "stereotype_caption" in features
    return False


def is_probe_set(path: str | Path) -> bool:
    """Whether ``path`` looks like a probe set, from its header alone (cheap): a ``.tsv``
    / ``.jsonl`` with the probe columns, a folder holding one, a ``contrastkit export``
    folder of a stereotype set, or a saved dataset with a ``stereotype_caption`` column.
    """
    path = Path(path)
    if path.is_file():
        return _sniff_file(path)
    if not path.is_dir():
        return False
    folder = _dataset_folder(path)
    if folder is not None:
        return _dataset_is_probes(folder)
    return bool(_probe_files(path))


def load_probe_set(path: str | Path, *, split: str | None = None) -> list[ProbeRow]:
    """The rows of a probe set given as a file, a folder or an export.

    Args:
        path: a ``.tsv`` / ``.jsonl`` probe file; a folder holding exactly one (a build
            folder's ``probes.tsv`` is preferred); a ``contrastkit export stereotype``
            folder (its ``saved/stereotype`` dataset) or a ``save_to_disk`` folder of a
            stereotype set. A dataset's rows come back with the columns they were
            exported with (the image reference as written, in ``image_ref``); when
            the images are embedded, :attr:`ProbeRow.image_ref` names the stored one.
        split: the split of a dataset dict (default: its only split, or ``test``).

    Raises:
        DataFormatError: a missing or malformed file or dataset, located.
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, None, None, "no such file or folder")
    if path.is_file():
        return read_probes(path)
    folder = _dataset_folder(path)
    if folder is not None:
        return _dataset_rows(folder, split)
    if (path / PROBE_FILE).is_file():
        return read_probes(path / PROBE_FILE)
    files = _probe_files(path)
    if len(files) != 1:
        found = "no probe file" if not files else f"{len(files)} probe files"
        raise DataFormatError(
            path, None, None, f"folder holds {found}: name one .tsv / .jsonl probe file"
        )
    return read_probes(files[0])


def _dataset_rows(folder: Path, split: str | None) -> list[ProbeRow]:
    from datasets import ClassLabel

    loaded, split = load_saved_split(folder, split)
    columns = loaded.column_names
    sources = {name: ("image_ref" if name == "image" else name) for name in COLUMNS}
    for name, column in sources.items():
        if column not in columns and name not in OPTIONAL_COLUMNS:
            raise DataFormatError(folder, None, column, "the dataset has no such column")
    text_columns = [c for c in sources.values() if c in columns]
    labels = {
        c: feature.int2str
        for c in text_columns
        if isinstance(feature := loaded.features[c], ClassLabel)
    }
    embedded = "image" in columns and type(loaded.features["image"]).__name__ == "Image"
    rows = []
    for index, record in enumerate(loaded.select_columns(text_columns)):
        values: dict[str, Any] = {}
        for name, column in sources.items():
            value = record.get(column)
            if column in labels and value is not None:
                value = labels[column](value)
            values[name] = "" if value is None else str(value)
        row = ProbeRow(
            **values,
            source=str(folder),
            line=None,
            dataset_index=index if embedded else None,
            dataset_split=split if embedded else None,
        )
        try:
            check_probe_row(row, folder, None)
        except DataFormatError as exc:
            raise DataFormatError(folder, None, f"row {index} {exc.field}", exc.reason) from None
        rows.append(row)
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.id in seen:
            raise DataFormatError(folder, None, f"row {index} id", f"duplicate id {row.id!r}")
        seen.add(row.id)
    return rows
