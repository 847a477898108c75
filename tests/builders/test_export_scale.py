"""Export memory does not grow with the number of images (issue 16, item 1).

The export runs in a fresh Python process (``bench/scale.py``'s ``measure_export``),
which reports its resident memory once its imports are done (the libraries the export
loads as it runs included: datasets, pyarrow and torch, ~470 MiB that would otherwise
count as growth) and its own peak (``VmHWM``; not ``ru_maxrss``, which counts the test
worker's memory the child held between fork and exec); the growth between the two is
what the export itself held. Exporting ten times as many images must add less memory
than the added images' bytes: the old export (rows and image bytes in a list, then
``Dataset.from_dict``, a second copy in Arrow) grew by about two to three times the
images' bytes. Measured here: 37 MiB at 200 images (10.7 MiB), 75 MiB at 2000
(107 MiB): the parquet writer's buffers, not the images."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from contrastkit.builders.export import load_export

ROOT = Path(__file__).resolve().parents[2]


def _bench_scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_export_peak_memory_does_not_grow_with_the_number_of_images(tmp_path: Path) -> None:
    scale = _bench_scale()
    growth, image_mib = {}, {}
    for edits in (200, 2000):
        build = scale.write_contrast_build(tmp_path / f"b{edits}", edits, image_size=300)
        image_mib[edits] = sum(p.stat().st_size for p in (build / "edits").iterdir()) / 2**20
        report = scale.measure_export(build, tmp_path / f"out{edits}")
        assert report["rows"] == edits
        growth[edits] = report["growth_mib"]
        data = load_export(tmp_path / f"out{edits}", "contrast", source="parquet")["test"]
        assert data.num_rows == edits
    assert image_mib[2000] > 40  # the larger set: enough bytes for the old way to show
    # the growth is the export's own, not the libraries' imports (~470 MiB) or the test
    # worker's memory (~2 GiB in the suite), which would hide it
    assert growth[200] < 300, growth
    # Ten times the images: less added memory than the added images' bytes (~97 MiB);
    # holding them would add 2-3 times that.
    assert growth[2000] - growth[200] < image_mib[2000] - image_mib[200], (growth, image_mib)


# -- the streamed export of a contrast set, on a small synthetic build ---------------------


@pytest.fixture
def small_build(tmp_path: Path) -> Path:
    return Path(_bench_scale().write_contrast_build(tmp_path / "build", 20, image_size=48))


def test_streamed_contrast_export_keeps_rows_order_and_image_bytes(
    small_build: Path, tmp_path: Path
) -> None:
    import datasets

    from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
    from contrastkit.builders.manifest import read_contrast_set

    result = export_contrast_set(ExportContrastConfig(small_build, tmp_path / "out"))
    items = read_contrast_set(small_build)
    assert result.metadata["sources_kept"] == 10
    assert result.metadata["counts"] == {"contrast": {"masculine": 10, "feminine": 10}}
    for source in ("disk", "parquet"):
        data = load_export(tmp_path / "out", "contrast", source=source)["test"]
        raw = data.cast_column("image", datasets.Image(decode=False))
        assert [r["edit_id"] for r in raw] == [i.edit_id for i in items]
        assert [r["image"]["bytes"] for r in raw] == [
            (small_build / i.image).read_bytes() for i in items
        ]
    assert result.configs["contrast"]["test"].num_rows == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "out"]


def test_a_torn_last_manifest_line_is_left_out_and_a_repeated_edit_is_an_error(
    small_build: Path, tmp_path: Path
) -> None:
    from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
    from contrastkit.errors import DataFormatError

    manifest = small_build / "manifest.jsonl"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines) + lines[0][:30])  # an append that never finished
    assert (
        export_contrast_set(ExportContrastConfig(small_build, tmp_path / "out")).metadata[
            "total_rows"
        ]
        == 20
    )
    manifest.write_text("".join(lines) + lines[3])
    with pytest.raises(
        DataFormatError, match=r"manifest.jsonl:21: field 'edit_id': .* listed twice"
    ):
        export_contrast_set(ExportContrastConfig(small_build, tmp_path / "again"))
    manifest.write_text("".join(lines))
    (small_build / "edits" / "000007.jpg").unlink()
    with pytest.raises(DataFormatError, match=r"contrast_set.jsonl:8: .*000007.jpg is missing"):
        export_contrast_set(ExportContrastConfig(small_build, tmp_path / "again"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "out"]  # nothing left


def test_large_splits_are_cut_into_shards_that_load_as_one(
    small_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets
    import pyarrow.parquet as pq

    from contrastkit.builders import dataset_files, export
    from contrastkit.builders.manifest import read_contrast_set

    # Sizes scaled down so that 20 small images need several files and row groups.
    monkeypatch.setattr(dataset_files, "MAX_SHARD_BYTES", 12_000)
    monkeypatch.setattr(dataset_files, "SAVED_SHARD_BYTES", 10_000)
    monkeypatch.setattr(dataset_files, "MAX_ROW_GROUP_BYTES", 4_000)
    monkeypatch.setattr(dataset_files, "_arrow_batch_size", lambda features: 3)
    result = export.export_contrast_set(export.ExportContrastConfig(small_build, tmp_path / "o"))
    files = result.metadata["configs"]["contrast"]["splits"]["test"]["files"]
    shards = len(files)
    assert shards > 1 and files[-1].endswith(f"-of-{shards:05d}.parquet")
    sizes = [pq.ParquetFile(tmp_path / "o" / f).metadata.num_rows for f in files]
    numbers = datasets.Dataset.from_dict({"i": list(range(20))})
    # the rows of each shard are those Dataset.shard(contiguous=True) gave the old export
    assert sizes == [len(numbers.shard(shards, i, contiguous=True)) for i in range(shards)]
    groups = pq.ParquetFile(tmp_path / "o" / files[0]).metadata.num_row_groups
    assert groups > 1
    saved = sorted((tmp_path / "o" / "saved" / "contrast" / "test").glob("data-*.arrow"))
    assert len(saved) > 1
    items = read_contrast_set(small_build)
    for source in ("disk", "parquet"):
        data = export.load_export(tmp_path / "o", "contrast", source=source)["test"]
        raw = data.cast_column("image", datasets.Image(decode=False))
        assert [r["edit_id"] for r in raw] == [i.edit_id for i in items]
        assert [r["image"]["bytes"] for r in raw] == [
            (small_build / i.image).read_bytes() for i in items
        ]
