"""The hand-written writer of an export's datasets (issue 33 item 5) against the
``datasets`` that is installed: what it writes loads with ``datasets.load_from_disk`` and
with ``datasets.load_dataset("parquet", ...)`` as the same rows, features and image
bytes, so an upgrade of ``datasets`` that changes the ``save_to_disk`` format or the
internal modules the writer uses fails here (see the module's docstring for why the
public API does not write these files)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import datasets
import pytest
from PIL import Image

from contrastkit.builders import dataset_files
from contrastkit.builders.dataset_files import dataset_batches, encode_batches, write_split

FEATURES = datasets.Features({
    "name": datasets.Value("string"),
    "gender": datasets.ClassLabel(names=["masculine", "feminine"]),
    "image": datasets.Image(),
    "captions": datasets.Sequence(datasets.Value("string")),
    "box": datasets.Sequence(datasets.Value("float32")),
    "score": datasets.Value("float32"),
    "steps": datasets.Value("int32"),
})  # fmt: skip


def png(n: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8 + n, 8), (n * 20 % 256, 40, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


def records(count: int) -> list[dict[str, Any]]:
    return [
        {"name": f"row-{n}", "gender": ("masculine", "feminine")[n % 2],
         "image": {"bytes": png(n), "path": f"{n}.png"},
         "captions": [f"A person {n}.", "Another caption."] if n % 3 else [],
         "box": [0.0, 1.5, 8.0, 8.0], "score": None if n % 4 == 0 else n / 10,
         "steps": n}
        for n in range(count)
    ]  # fmt: skip


def as_written(loaded: datasets.Dataset) -> list[dict[str, Any]]:
    raw = loaded.cast_column("image", datasets.Image(decode=False))
    return [dict(row, image=row["image"]["bytes"]) for row in raw]


def expected(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    encoded = datasets.Dataset.from_list(rows, features=FEATURES)
    return as_written(encoded)


@pytest.mark.parametrize("sharded", [False, True])
def test_what_the_writer_writes_loads_with_load_from_disk_and_load_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded: bool
) -> None:
    if sharded:  # several saved files, parquet shards and row groups
        monkeypatch.setattr(dataset_files, "MAX_SHARD_BYTES", 2_000)
        monkeypatch.setattr(dataset_files, "SAVED_SHARD_BYTES", 1_500)
        monkeypatch.setattr(dataset_files, "MAX_ROW_GROUP_BYTES", 800)
        monkeypatch.setattr(dataset_files, "_arrow_batch_size", lambda features: 4)
    rows = records(13)
    count, files = write_split(
        encode_batches(iter(rows), FEATURES), FEATURES, tmp_path / "saved" / "test",
        tmp_path / "data", "test",
    )  # fmt: skip
    assert count == 13
    assert (len(files) > 1) == sharded
    assert files[-1] == f"test-{len(files) - 1:05d}-of-{len(files):05d}.parquet"
    saved = sorted((tmp_path / "saved" / "test").glob("data-*.arrow"))
    assert (len(saved) > 1) == sharded

    from_disk = datasets.load_from_disk(str(tmp_path / "saved" / "test"))
    assert isinstance(from_disk, datasets.Dataset)
    assert from_disk.features == FEATURES
    from_parquet = datasets.load_dataset(
        "parquet", data_files={"test": [str(tmp_path / "data" / f) for f in files]}
    )["test"]
    assert from_parquet.features == FEATURES
    want = expected(rows)
    assert as_written(from_disk) == want
    assert as_written(from_parquet) == want
    assert from_disk[1]["gender"] == 1 and from_disk[0]["score"] is None
    assert from_parquet[2]["image"].size == (10, 8)  # decoded as an image

    # a Dataset as the source gives the same files' rows
    again, _ = write_split(
        dataset_batches(from_disk), FEATURES, tmp_path / "again" / "test",
        tmp_path / "again-data", "test",
    )  # fmt: skip
    assert again == 13
    assert as_written(datasets.load_from_disk(str(tmp_path / "again" / "test"))) == want


def test_an_empty_split_still_loads(tmp_path: Path) -> None:
    count, files = write_split(
        encode_batches(iter([]), FEATURES), FEATURES, tmp_path / "saved", tmp_path / "data", "test"
    )
    assert count == 0 and files == ["test-00000-of-00001.parquet"]
    loaded = datasets.load_from_disk(str(tmp_path / "saved"))
    assert loaded.num_rows == 0 and loaded.features == FEATURES
