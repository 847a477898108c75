"""The files of an export's datasets, written by hand: ``saved/<config>/<split>/`` in
``save_to_disk``'s format and ``data/<config>/<split>-*.parquet``, from a stream of Arrow
tables, in memory that does not grow with the number of rows or images.

Why by hand, and not ``Dataset.from_generator`` + ``save_to_disk(max_shard_size=...)`` +
``to_parquet`` (issue 33 item 5, measured with ``python bench/scale.py --part writer``,
bench/RESULTS.md): on the 2-core dev machine with ``datasets`` 5.2.0, exporting a
synthetic contrast set of 64 px JPEG edits through the public API peaked at 222 MiB RSS
against 217 MiB for this writer at 10,000 edits (1.02x), but at 349 MiB against 216 MiB
at 50,000 (1.62x) and 789 MiB against 262 MiB at 200,000 edits (3.0x; the export process
grew by 642 MiB against 116 MiB, and took 1.7x the time): the public path writes the
rows to a cache folder first and then reads that table memory-mapped, through
``save_to_disk`` and ``to_parquet``, so every page of it that is touched counts, and a
third copy of the images goes to disk. That is over the 1.5x the issue allows, so the
writer stays, here, in this one module: the only one that imports ``datasets``' internal
modules (``arrow_writer``, ``fingerprint``, ``utils.py_utils``, ``utils.tqdm``).
``tests/builders/test_dataset_files.py`` loads what it writes with
``datasets.load_from_disk`` and ``datasets.load_dataset("parquet", ...)``, so a
``datasets`` upgrade that changes the format or those modules fails the tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Dataset, DatasetInfo, Features
from datasets import config as datasets_config
from datasets.arrow_writer import (
    ArrowWriter,
    get_arrow_writer_batch_size_from_features,
    get_parquet_column_options,
    get_writer_batch_size_from_features,
)
from datasets.fingerprint import generate_random_fingerprint
from datasets.utils.py_utils import asdict
from datasets.utils.tqdm import (
    are_progress_bars_disabled,
    disable_progress_bars,
    enable_progress_bars,
)

from contrastkit.errors import StateError
from contrastkit.io import atomic_write_text
from contrastkit.records import read_json_object

__all__ = [
    "MAX_ROW_GROUP_BYTES",
    "MAX_SHARD_BYTES",
    "SAVED_SHARD_BYTES",
    "dataset_batches",
    "encode_batches",
    "progress_bars_off",
    "write_split",
]

MAX_SHARD_BYTES = 256 * 1024 * 1024
"""Parquet shards are cut so that none holds much more than this (images included)."""


MAX_ROW_GROUP_BYTES = 8 * 1024 * 1024
"""Parquet row groups hold about this much (at least one row): what writing one costs in
memory, and what reading one row from the Hub costs."""
SAVED_SHARD_BYTES = 500 * 1024 * 1024
"""``saved/`` Arrow files are cut at about this size (``save_to_disk``'s default)."""


def _arrow_batch_size(features: Features) -> int:
    """Rows per record batch: 100 for image tables (``datasets``' choice), else 1000."""
    size = get_arrow_writer_batch_size_from_features(features)
    return int(size or datasets_config.DEFAULT_MAX_BATCH_SIZE)


def encode_batches(rows: Iterable[Mapping[str, object]], features: Features) -> Iterator[pa.Table]:
    """Rows as Arrow tables of :func:`_arrow_batch_size` rows, encoded as
    ``Dataset.from_dict`` encodes them (ClassLabel names to ids, images to structs)."""
    size, schema = _arrow_batch_size(features), features.arrow_schema
    batch: list[Mapping[str, object]] = []

    def encode() -> pa.Table:
        columns = {name: [row[name] for row in batch] for name in features}
        return pa.Table.from_pydict(features.encode_batch(columns), schema=schema)

    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield encode()
            batch = []
    if batch:
        yield encode()


@dataclass(frozen=True)
class _SavedSplit:
    """A split written in ``save_to_disk``'s format by :func:`_write_saved_split`: its
    folder, features, number of rows and Arrow bytes (what its parquet shards are cut by)."""

    folder: Path
    features: Features
    rows: int
    nbytes: int


def _write_saved_split(
    batches: Iterator[pa.Table], features: Features, folder: Path
) -> _SavedSplit:
    """Write one split in ``save_to_disk``'s format (``data-XXXXX-of-NNNNN.arrow``
    files, ``state.json``, ``dataset_info.json``)."""
    folder.mkdir(parents=True)
    parts: list[Path] = []
    writer: ArrowWriter | None = None
    rows = nbytes = part_bytes = 0

    def close() -> None:
        if writer is not None:
            writer.finalize()
            writer.close()

    try:
        for table in _regroup(batches):
            if writer is None or part_bytes >= SAVED_SHARD_BYTES:
                close()
                parts.append(folder / f".part-{len(parts):05d}.arrow")
                writer = ArrowWriter(features=features, path=str(parts[-1]))
                part_bytes = 0
            writer.write_table(table, writer_batch_size=table.num_rows)  # one record batch
            rows += table.num_rows
            nbytes += table.nbytes
            part_bytes += table.nbytes
        if writer is None:  # no rows: one empty file, so the split still loads
            parts.append(folder / ".part-00000.arrow")
            writer = ArrowWriter(features=features, path=str(parts[-1]))
        close()
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    names = [f"data-{i:05d}-of-{len(parts):05d}.arrow" for i in range(len(parts))]
    for part, name in zip(parts, names, strict=True):
        part.rename(folder / name)
    state = {
        "_data_files": [{"filename": name} for name in names],
        "_fingerprint": generate_random_fingerprint(),
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": None,
    }
    atomic_write_text(folder / "state.json", json.dumps(state, indent=2, sort_keys=True))
    info = asdict(DatasetInfo(features=features))
    atomic_write_text(
        folder / "dataset_info.json", json.dumps({key: info[key] for key in sorted(info)}, indent=2)
    )
    return _SavedSplit(folder, features, rows, nbytes)


def _regroup(batches: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """Tables of up to 1000 rows (``save_to_disk``'s record batches) and about
    :data:`MAX_ROW_GROUP_BYTES`: few record batches keep loading the saved copy cheap
    (each one read touches the pages around it)."""
    pending: list[pa.Table] = []
    rows = nbytes = 0
    for table in batches:
        if pending and (
            rows + table.num_rows > datasets_config.DEFAULT_MAX_BATCH_SIZE
            or nbytes + table.nbytes > MAX_ROW_GROUP_BYTES
        ):
            yield pa.concat_tables(pending)
            pending, rows, nbytes = [], 0, 0
        pending.append(table)
        rows += table.num_rows
        nbytes += table.nbytes
    if pending:
        yield pa.concat_tables(pending)


def _read_saved_split(folder: Path) -> Iterator[pa.RecordBatch]:
    """The record batches of a split written by :func:`_write_saved_split`, read from
    the files (not memory-mapped: a batch's memory is freed once it is used)."""
    state = read_json_object(folder / "state.json")
    for entry in state["_data_files"]:
        with pa.OSFile(str(folder / entry["filename"])) as handle:
            yield from pa.ipc.open_stream(handle)


def _write_parquet_split(saved: _SavedSplit, folder: Path, split: str) -> list[str]:
    """Write one split's parquet shards from its ``saved/`` files, as
    ``Dataset.shard(contiguous=True).to_parquet`` did (the same shard count, none much
    over :data:`MAX_SHARD_BYTES`, the same rows and writer options), except that row
    groups hold about :data:`MAX_ROW_GROUP_BYTES` (``datasets`` aims at 100 MB): a row
    group is held in memory until it is written. Returns the file names."""
    features, rows, nbytes = saved.features, saved.rows, saved.nbytes
    folder.mkdir(parents=True, exist_ok=True)
    shards = max(1, math.ceil(nbytes / MAX_SHARD_BYTES))
    group = min(
        get_writer_batch_size_from_features(features) or rows or 1,
        max(1, rows * MAX_ROW_GROUP_BYTES // nbytes) if nbytes else 1,
    )
    schema = features.arrow_schema
    cdc = datasets_config.DEFAULT_CDC_OPTIONS
    source = _Rows(_read_saved_split(saved.folder))
    names = []
    per_shard, extra = divmod(rows, shards)
    for index in range(shards):
        name = f"{split}-{index:05d}-of-{shards:05d}.parquet"
        writer = pq.ParquetWriter(
            str(folder / name),
            schema=schema,
            use_content_defined_chunking=cdc,
            write_page_index=True,
            **get_parquet_column_options(features, schema),
        )
        try:
            left = per_shard + (1 if index < extra else 0)
            while left > 0:
                table = source.take(min(group, left))
                writer.write_table(table.cast(schema))
                left -= table.num_rows
            writer.add_key_value_metadata({"content_defined_chunking": json.dumps(cdc)})
        finally:
            writer.close()
        names.append(name)
    return names


class _Rows:
    """Takes tables of exactly ``n`` rows from a stream of record batches."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self.batches = batches
        self.pending: list[pa.RecordBatch] = []
        self.count = 0

    def take(self, n: int) -> pa.Table:
        while self.count < n:
            batch = next(self.batches, None)
            if batch is None:
                raise StateError("the saved Arrow files hold fewer rows than were written")
            self.pending.append(batch)
            self.count += batch.num_rows
        table = pa.Table.from_batches(self.pending)
        rest = table.slice(n)
        self.pending, self.count = rest.to_batches(), rest.num_rows
        return table.slice(0, n)


def dataset_batches(dataset: Dataset) -> Iterator[pa.Table]:
    """A ``Dataset``'s rows as Arrow tables of :func:`_arrow_batch_size` rows."""
    size = _arrow_batch_size(dataset.features)
    return iter(dataset.with_format("arrow").iter(batch_size=size))


def write_split(
    batches: Iterator[pa.Table], features: Features, saved: Path, parquet: Path, split: str
) -> tuple[int, list[str]]:
    """Write one split: the ``save_to_disk`` files under ``saved`` (a new folder), then
    the parquet shards ``<split>-XXXXX-of-NNNNN.parquet`` under ``parquet`` from them.
    Returns the number of rows and the parquet files' names."""
    written = _write_saved_split(batches, features, saved)
    return written.rows, _write_parquet_split(written, parquet, split)


@contextmanager
def progress_bars_off() -> Iterator[None]:
    """``datasets``' progress bars off inside (contrastkit prints its own), as before
    after."""
    were_on = not are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if were_on:
            enable_progress_bars()
