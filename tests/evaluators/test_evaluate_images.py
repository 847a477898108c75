"""Where evaluate reads images: URLs through the image store, an export folder's embedded
images, a saved Hugging Face dataset, and located errors for missing or broken ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.data import ImageLoader, load_items
from contrastkit.store import ImageMeta, ImageStore
from eval_data import write_small_dataset

runner = CliRunner()
FAST = ["--subsample-runs", "20", "--baseline-runs", "40"]


def _url(n: int, path: Path) -> str:
    return f"https://images.example.org/photos/{n}.png?w=600"


def _store(store: ImageStore, path: Path, url: str) -> None:
    with Image.open(path) as image:
        size = image.size
    store.put(
        path.read_bytes(),
        ImageMeta(format="PNG", width=size[0], height=size[1], phash="0" * 16),
        url=url,
    )


@pytest.mark.slow
def test_urls_are_read_from_the_image_store(tmp_path: Path, tiny_specs: dict[str, str]) -> None:
    folder = tmp_path / "data"
    write_small_dataset(folder, url_for=_url)
    store = ImageStore(tmp_path / "store")
    images = sorted(folder.glob("img_*.png"))
    for n, path in enumerate(images[:-1]):  # the last image was never stored
        _store(store, path, _url(n, path))
    items = load_items([folder])
    with pytest.raises(DataFormatError, match="contrastkit urls check") as info:
        ImageLoader(store).check(items)
    assert 'field "URL type' in str(info.value) and ":9:" in str(info.value)  # OO line 9
    with pytest.raises(DataFormatError, match="read from the image store"):
        ImageLoader(None).check(items)
    _store(store, images[-1], _url(len(images) - 1, images[-1]))
    loader = ImageLoader(tmp_path / "store")
    loader.check(items)
    assert loader.open(items[0]).size == (56, 40)  # OO rows come first: image 16
    result = runner.invoke(
        app,
        [
            "evaluate",
            "--data",
            str(folder),
            "--model",
            tiny_specs["hf_clip"],
            "--store",
            str(tmp_path / "store"),
            "--out",
            str(tmp_path / "o"),
            "--task",
            "retrieval",
            *FAST,
        ],
    )
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_an_export_folder_is_evaluated_from_its_embedded_images(
    tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    from contrastkit.builders.export import ExportVisoGenderConfig, export_visogender

    folder = tmp_path / "data"
    tsvs = write_small_dataset(folder, url_for=_url)
    store = ImageStore(tmp_path / "store")
    for n, path in enumerate(sorted(folder.glob("img_*.png"))):
        _store(store, path, _url(n, path))
    export_visogender(
        ExportVisoGenderConfig(
            files=(tsvs["OP"], tsvs["OO"]), out=tmp_path / "export", store=tmp_path / "store"
        )
    )
    items = load_items([tmp_path / "export"])
    from_tsv = load_items([tsvs["OO"], tsvs["OP"]])
    assert [(i.row.idx, i.row.cell, i.row.noun) for i in items] == [
        (i.row.idx, i.row.cell, i.row.noun) for i in from_tsv
    ]  # ClassLabel genders and contexts read back as names
    assert items[0].image_ref.startswith("dataset:")
    loader = ImageLoader()  # no store needed: the images are in the dataset
    np.testing.assert_array_equal(
        np.asarray(loader.open(items[0])), np.asarray(ImageLoader(store).open(from_tsv[0]))
    )
    result = runner.invoke(
        app,
        [
            "evaluate",
            "--data",
            str(tmp_path / "export"),
            "--model",
            tiny_specs["git"],
            "--out",
            str(tmp_path / "o"),
            *FAST,
        ],
    )
    assert result.exit_code == 0, result.output


def test_missing_and_broken_images_are_located_errors(dataset: Path) -> None:
    (dataset / "img_003.png").unlink()
    (dataset / "img_004.png").write_bytes(b"not an image")
    items = load_items([dataset])
    with pytest.raises(DataFormatError, match="image file not found") as info:
        ImageLoader().check(items)
    assert str(info.value).startswith(f"{dataset / 'visogender_OP.tsv'}:5:")
    with pytest.raises(DataFormatError, match="cannot be decoded"):
        ImageLoader().open(next(i for i in items if i.image_ref == "img_004.png"))


def test_images_from_a_saved_hugging_face_dataset(dataset: Path, tmp_path: Path) -> None:
    import datasets

    items = load_items([dataset])
    loader = ImageLoader()
    records = {
        "idx": [item.row.idx for item in items],
        "occupation": [item.row.occupation for item in items],
        "sector": [item.row.sector for item in items],
        "specialisation": [item.row.specialisation for item in items],
        "participant": [item.row.participant for item in items],
        "object": [item.row.object for item in items],
        "occupation_gender": [item.row.occupation_gender.value for item in items],
        "participant_gender": [
            item.row.participant_gender.value if item.row.participant_gender else None
            for item in items
        ],
        "image": [loader.open(item) for item in items],
    }
    features = datasets.Features(
        {
            **{name: datasets.Value("string") for name in records if name != "image"},
            "image": datasets.Image(),
        }
    )
    saved = tmp_path / "hf"
    datasets.DatasetDict(
        {"test": datasets.Dataset.from_dict(records, features=features)}
    ).save_to_disk(str(saved))
    from_hf = load_items([saved])

    def fields(item: object) -> tuple[str, ...]:
        row = item.row  # type: ignore[attr-defined]
        return (row.idx, row.context.value, row.sector, row.occupation, row.noun, row.cell)

    assert [fields(item) for item in from_hf] == [fields(item) for item in items]
    assert from_hf[0].image_ref == f"dataset:{saved}#test/0"
    hf_loader = ImageLoader()
    for original, stored in zip(items[:3], from_hf[:3], strict=True):
        a = np.asarray(loader.open(original))
        b = np.asarray(hf_loader.open(stored))
        np.testing.assert_array_equal(a, b)
