"""GenSynth Sec. 4.3 / Tab. 2 quality checks: zero-shot gender accuracy and text-to-image
recall@K, by hand and through a scorer whose embeddings are known."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from PIL import Image

from contrastkit.builders.quality import (
    CaptionQueries,
    ImageSet,
    list_pool_images,
    quality_checks,
    quality_report,
    recall_at_k,
    zero_shot_accuracy,
)
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.schema import Gender

M, F = Gender.MASCULINE, Gender.FEMININE


def test_zero_shot_accuracy_and_recall_by_hand() -> None:
    images = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    prompts = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert zero_shot_accuracy(images, prompts, [0, 1, 0]) == pytest.approx(2 / 3)
    # Two captions of image 0, one of image 1; a pool of three other images.
    texts = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    pool = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5]])
    queries = np.array([[0.8, 0.2], [0.0, 1.0]])
    # caption 0 -> image 0 at d=0.08; pool [0.9,0.1] is closer (0.02): rank 2.
    # caption 1 -> image 0 at d=1.28; all three pool images closer: rank 4.
    # caption 2 -> image 1 at d=0: rank 1.
    recall = recall_at_k(CaptionQueries(texts, [0, 0, 1], queries), pool, (1, 2, 4))
    assert recall == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3), 4: 1.0}
    # Pool = the query images themselves: own row excluded.
    assert recall_at_k(CaptionQueries(texts, [0, 0, 1], queries, [0, 1]), queries, (1,)) == {
        1: pytest.approx(2 / 3)
    }
    with pytest.raises(ValueError, match="no captions"):
        recall_at_k(CaptionQueries(texts[:0], [], queries), pool)


class ColorScorer:
    """A dual encoder whose embeddings are known: an image is its mean RGB colour, a text
    the colour its words name ("red" ... ; "man" is red, "woman" green)."""

    spec = "test:colors"
    words: ClassVar[dict[str, tuple[int, int, int]]] = {
        "red": (1, 0, 0), "man": (1, 0, 0), "green": (0, 1, 0), "woman": (0, 1, 0),
        "blue": (0, 0, 1),
    }  # fmt: skip

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        vectors = np.array([np.asarray(i, np.float32).mean(axis=(0, 1)) for i in images])
        out: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return out.astype(np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        rows = [[sum(self.words.get(w, (0, 0, 0))[c] for w in t.split()) for c in range(3)]
                for t in texts]  # fmt: skip
        vectors = np.array(rows, np.float32) + 1e-3
        out: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return out

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        out: np.ndarray = self.encode_images(images) @ self.encode_texts(texts).T
        return out


def _solid(color: tuple[int, int, int], folder: Path | None = None, name: str = "") -> Image.Image:
    image = Image.new("RGB", (8, 8), color)
    if folder is not None:
        image.save(folder / name)
    return image


def test_quality_checks_with_known_embeddings(tmp_path: Path) -> None:
    scorer = ColorScorer()
    assert isinstance(scorer, ImageTextScorer)
    red, green = _solid((250, 5, 5), tmp_path, "red.png"), _solid((5, 250, 5))
    # Image 0 is labelled masculine and is red ("man"); image 1 feminine but red too.
    checks = quality_checks(
        scorer,
        ImageSet([tmp_path / "red.png", red], [M, F], [["a red thing", "a blue thing"], ["red"]]),
        pool=[green, _solid((5, 5, 250))],
        ks=(1, 2),
    )
    assert checks["images"] == 2 and checks["captions"] == 3
    assert checks["zero_shot_gender_accuracy"] == 0.5
    assert checks["zero_shot_prompts"] == {"masculine": "a photo of a man",
                                           "feminine": "a photo of a woman"}  # fmt: skip
    # "a red thing" finds its red image first; "a blue thing" finds the blue pool image
    # first (rank 2); "red" finds image 1 (red) first.
    assert (checks["recall@1"], checks["recall@2"]) == (pytest.approx(2 / 3), 1.0)
    assert checks["retrieval_pool_size"] == 3
    with pytest.raises(DataFormatError, match="image file not found"):
        quality_checks(scorer, ImageSet([tmp_path / "nowhere.png"], [M], [["red"]]))


@dataclass(frozen=True)
class Labeled:
    images: tuple[Path, ...]
    genders: tuple[Gender, ...]
    captions: tuple[tuple[str, ...], ...]


def test_quality_report_scores_each_non_empty_set(tmp_path: Path) -> None:
    _solid((250, 5, 5), tmp_path, "a.png")
    _solid((5, 250, 5), tmp_path, "b.png")
    sets = {
        "contrast_set": Labeled(
            (tmp_path / "a.png", tmp_path / "b.png"), (M, F), (("a man",), ("a woman",))
        ),
        "empty": Labeled((), (), ()),
    }
    report = quality_report(sets, ColorScorer())
    assert list(report) == ["contrast_set"]
    row = report["contrast_set"]
    assert row["zero_shot_gender_accuracy"] == 1.0 and row["recall@1"] == 1.0
    assert row["retrieval_pool_size"] == 2  # each set retrieves among its own images


def test_pool_folder_is_listed_sorted_and_limited(tmp_path: Path) -> None:
    for name in ("b.jpg", "a.PNG", "c.webp", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in list_pool_images(tmp_path)] == ["a.PNG", "b.jpg", "c.webp"]
    assert [p.name for p in list_pool_images(tmp_path, 2)] == ["a.PNG", "b.jpg"]
    with pytest.raises(ConfigError, match="no such folder"):
        list_pool_images(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no images"):
        list_pool_images(tmp_path / "empty")


# --- Blocked recall@K (issue 15, item 3) ------------------------------------------------


def dense_recall(queries: CaptionQueries, pool: np.ndarray, ks: Sequence[int]) -> dict[int, float]:
    """recall_at_k as it was before blocking: one captions x pool distance matrix."""
    from contrastkit.distances import squared_euclidean

    texts = queries.text_embeddings
    owners_array = np.asarray(queries.owners, dtype=np.int64)
    own = np.sum((texts - queries.query_images[owners_array]) ** 2, axis=1)
    others = squared_euclidean(texts, pool)
    if queries.pool_index is not None:
        rows = np.asarray(queries.pool_index, dtype=np.int64)[owners_array]
        valid = rows >= 0
        others[np.arange(len(rows))[valid], rows[valid]] = np.inf
    closer = np.sum(others < own[:, None] - 1e-9, axis=1)
    return {k: float(np.mean(closer < k)) for k in ks}


def _integer_recall_case() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """Small integer coordinates (every distance exact in float32, many equal): 40
    captions of 10 query images, the first 6 of which are also in a 23-image pool
    (``pool_index``), beside duplicates of them."""
    rng = np.random.default_rng(3)
    pool = rng.integers(-2, 3, (23, 3)).astype(np.float32)
    pool[10:13] = pool[0:3]  # duplicates of query images 0-2 elsewhere in the pool
    query_images = np.concatenate([pool[:6], rng.integers(-2, 3, (4, 3)).astype(np.float32)])
    owners = rng.integers(0, 10, 40)
    texts = rng.integers(-2, 3, (40, 3)).astype(np.float32)
    return texts, owners, query_images, pool, [0, 1, 2, 3, 4, 5, -1, -1, -1, -1]


@pytest.mark.parametrize(
    ("caption_block", "pool_block"), [(1, 1), (2, 3), (7, 5), (40, 23), (1000, 1000), (1024, 8192)]
)
def test_blocked_recall_equals_the_dense_matrix_with_ties(
    caption_block: int, pool_block: int
) -> None:
    """Counting closer pool images block by block gives the recall of the dense
    captions x pool matrix: with and without ``pool_index`` (own pool row left out, its
    duplicates elsewhere still count as ties, not as closer), for blocks of one row, of
    sizes that do not divide the counts, exactly the counts, and larger."""
    texts, owners, query_images, pool, pool_index = _integer_recall_case()
    ks = (1, 2, 3, 5, 30)
    from contrastkit.distances import squared_euclidean

    own = np.sum((texts - query_images[owners]) ** 2, axis=1)
    assert np.any(squared_euclidean(texts, pool) == own[:, None])  # ties are exercised
    for index in (None, pool_index):
        queries = CaptionQueries(texts, owners, query_images, index)
        expected = dense_recall(queries, pool, ks)
        assert 0.0 < expected[1] < expected[5] < 1.0
        got = recall_at_k(queries, pool, ks, caption_block=caption_block, pool_block=pool_block)
        assert got == expected


def test_blocked_recall_equals_the_dense_matrix_on_real_valued_embeddings() -> None:
    rng = np.random.default_rng(5)
    pool = rng.standard_normal((300, 32)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    texts = (pool[rng.integers(0, 300, 500)] + 0.8 * rng.standard_normal((500, 32))).astype(
        np.float32
    )
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    owners = rng.integers(0, 300, 500)
    ks = (1, 5, 10)
    expected = dense_recall(CaptionQueries(texts, owners, pool, range(300)), pool, ks)
    assert 0.0 < expected[1] < expected[10] < 1.0
    for caption_block, pool_block in ((64, 100), (7, 299), (1024, 8192)):
        got = recall_at_k(CaptionQueries(texts, owners, pool, range(300)), pool, ks,
                          caption_block=caption_block, pool_block=pool_block)  # fmt: skip
        assert got == expected


def test_recall_refuses_bad_blocks_and_pool_rows() -> None:
    texts, owners, query_images, pool, _ = _integer_recall_case()
    with pytest.raises(ValueError, match="caption_block must be a positive"):
        recall_at_k(CaptionQueries(texts, owners, query_images), pool, caption_block=0)
    with pytest.raises(ValueError, match="pool_block must be a positive"):
        recall_at_k(CaptionQueries(texts, owners, query_images), pool, pool_block=-3)
    with pytest.raises(ValueError, match="past the end of a pool of 23"):
        recall_at_k(CaptionQueries(texts, owners, query_images, [23] * 10), pool)
