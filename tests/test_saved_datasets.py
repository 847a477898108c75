"""The split rule of saved Hugging Face datasets (contrastkit.saved_datasets), shared by
the VisoGender loader and the probe-set reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.data import ImageLoader, load_items
from contrastkit.saved_datasets import load_saved_split
from eval_data import write_small_dataset


def _save(folder: Path, splits: dict[str, int] | None) -> Path:
    """A saved dataset of a ``value`` column: a plain ``Dataset`` (``splits=None``, 3 rows)
    or a ``DatasetDict`` with that many rows per split."""
    import datasets

    if splits is None:
        datasets.Dataset.from_dict({"value": [0, 1, 2]}).save_to_disk(str(folder))
    else:
        datasets.DatasetDict(
            {
                name: datasets.Dataset.from_dict({"value": list(range(n))})
                for name, n in splits.items()
            }
        ).save_to_disk(str(folder))
    return folder


def test_the_split_is_the_named_one_the_only_one_or_test(tmp_path: Path) -> None:
    three = _save(tmp_path / "three", {"train": 5, "test": 2, "validation": 1})
    assert [len(load_saved_split(three, name)[0]) for name in ("train", "validation")] == [5, 1]
    rows, split = load_saved_split(three)
    assert (len(rows), split) == (2, "test")
    only = _save(tmp_path / "only", {"dev": 4})
    rows, split = load_saved_split(only)
    assert (len(rows), split) == (4, "dev")


def test_a_plain_dataset_has_no_split_even_when_one_is_named(tmp_path: Path) -> None:
    plain = _save(tmp_path / "plain", None)
    for asked in (None, "test"):
        rows, split = load_saved_split(plain, asked)
        assert (rows["value"], split) == ([0, 1, 2], None)


def test_an_unknown_or_ambiguous_split_and_a_broken_folder_are_located_errors(
    tmp_path: Path,
) -> None:
    two = _save(tmp_path / "two", {"train": 1, "dev": 1})
    for asked in (None, "test"):
        with pytest.raises(DataFormatError, match="choose a split with --split: one of train, dev"):
            load_saved_split(two, asked)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "dataset_info.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataFormatError, match="cannot load the dataset") as caught:
        load_saved_split(broken)
    assert caught.value.path == str(broken)


def test_a_visogender_dataset_saved_without_splits_loads_with_split_given(tmp_path: Path) -> None:
    """``--split test`` on a plain saved ``Dataset`` (no splits) reads its rows and images;
    the split is ignored rather than used to index the dataset."""
    import datasets

    folder = tmp_path / "data"
    write_small_dataset(folder)
    items = load_items([folder])
    loader = ImageLoader()
    images = [loader.open(item) for item in items]
    datasets.Dataset.from_dict(
        {
            "idx": [item.row.idx for item in items],
            "occupation": [item.row.occupation for item in items],
            "participant": [item.row.participant for item in items],
            "object": [item.row.object for item in items],
            "occupation_gender": [item.row.occupation_gender.value for item in items],
            "participant_gender": [
                item.row.participant_gender.value if item.row.participant_gender else None
                for item in items
            ],
            "image": images,
        },
        features=datasets.Features(
            {
                **{
                    name: datasets.Value("string")
                    for name in (
                        "idx",
                        "occupation",
                        "participant",
                        "object",
                        "occupation_gender",
                        "participant_gender",
                    )
                },
                "image": datasets.Image(),
            }
        ),
    ).save_to_disk(str(tmp_path / "hf"))
    saved = load_items([tmp_path / "hf"], split="test")
    assert [item.row.idx for item in saved] == [item.row.idx for item in items]
    assert saved[0].image_ref == f"dataset:{tmp_path / 'hf'}#/0"
    assert saved[0].dataset_split is None
    opened = ImageLoader().open(saved[1])
    np.testing.assert_array_equal(np.asarray(opened), np.asarray(images[1]))
