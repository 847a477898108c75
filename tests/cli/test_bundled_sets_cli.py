"""`visogender` names the bundled official sets by one rule in every command that takes
data (issue 31 item 12): `evaluate --data`, `validate` and `export harness` read it the
same way, images from the default store when `--store` is not given, rows without an
image left out and listed; a local folder of that name is `./visogender`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.data import visogender_files
from contrastkit.evaluators.job import EvaluateConfig, default_image_store
from contrastkit.harness_key import read_key
from contrastkit.store import ImageMeta, ImageStore
from contrastkit.tsv import read_visogender_tsv
from eval_data import write_small_dataset

runner = CliRunner()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache, and a working folder holding a local folder `visogender`
    (a small set of its own, images beside it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    write_small_dataset(tmp_path / "visogender")
    return tmp_path / "cache"


def official_rows() -> int:
    return sum(len(read_visogender_tsv(path).rows) for path in visogender_files())


def test_validate_reads_visogender_as_the_bundled_sets(cache: Path) -> None:
    bundled = runner.invoke(app, ["validate", "--json", "visogender"])
    files = runner.invoke(app, ["validate", "--json", *map(str, visogender_files())])
    assert bundled.exit_code == files.exit_code == 1  # the official files' known findings
    assert json.loads(bundled.output) == json.loads(files.output)
    local = runner.invoke(app, ["validate", "--json", "./visogender"])
    assert local.exit_code == 2  # the local folder: not a TSV file
    assert json.loads(local.output)["unusable"] == ["visogender"]


def test_export_harness_reads_visogender_from_the_default_store(cache: Path) -> None:
    """No `--store`: the images come from the store `evaluate --data visogender` fills
    (here holding one official image), and the rows without one are left out and listed,
    as `evaluate` does; a local folder named `visogender` does not change what the name
    means."""
    store = ImageStore(default_image_store())
    assert store.root == cache / "contrastkit" / "images"
    oo = read_visogender_tsv(visogender_files()[1]).rows[0]
    data = Path("visogender/img_000.png").read_bytes()
    with Image.open(io.BytesIO(data)) as opened:
        width, height = opened.size
    store.put(data, ImageMeta(format="PNG", width=width, height=height, phash="0" * 16), url=oo.url)
    result = runner.invoke(
        app, ["export", "harness", "visogender", "--format", "vlmevalkit", "--out", "vlm"]
    )
    assert result.exit_code == 0, result.output
    assert "contrastkit_visogender (main): 1 item" in result.output
    key = read_key(Path("vlm"))
    assert [item.row for item in key.items if item.split == "main"] == [f"OO:{oo.idx}|object"]
    assert len(key.skipped) == official_rows() - 1 and key.source == "visogender"
    strict = runner.invoke(app, ["export", "harness", "visogender", "--format", "vlmevalkit",
                                 "--out", "strict", "--no-skip-missing"])  # fmt: skip
    assert strict.exit_code == 2 and f"not in the image store {store.root}" in strict.output

    local = runner.invoke(
        app, ["export", "harness", "./visogender", "--format", "vlmevalkit", "--out", "mine"]
    )
    assert local.exit_code == 0, local.output
    assert not read_key(Path("mine")).skipped  # the local set, its images beside it
    assert "contrastkit_visogender (main): 1 item" not in local.output


def test_without_images_the_error_names_the_default_store(cache: Path) -> None:
    result = runner.invoke(
        app, ["export", "harness", "visogender", "--format", "lmms-eval", "--out", "lmms"]
    )
    assert result.exit_code == 2 and not Path("lmms").exists()
    output = " ".join(result.output.split())
    store = default_image_store()
    assert f"all {official_rows()} rows lack their image" in output
    assert f"not in the image store {store}" in output and "--store DIR" not in output
    assert f"contrastkit evaluate --data visogender` fetches the official images into {store}" in (
        output
    )


def test_evaluate_reads_the_default_store_for_visogender_even_without_fetching(
    cache: Path,
) -> None:
    """The same store rule in `evaluate`: `--no-fetch` does not drop the default store."""
    config = EvaluateConfig(
        data=("visogender",), models=("open_clip:ViT-B-32/openai",), out="o", fetch=False
    )
    assert config.image_store == default_image_store()
    local = EvaluateConfig(data=("./visogender",), models=("open_clip:ViT-B-32/openai",), out="o")
    assert not local.bundled and local.image_store is None
