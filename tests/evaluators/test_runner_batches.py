"""The evaluator's per-batch scoring of dual encoders: every record is an index lookup into
the batch's image and text embeddings, so a wrong lookup (another image's row, another
case's or candidate's column) must show. A scorer with planted similarities makes every
record's scores and winner known by hand, different per image and per template."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from contrastkit.evaluators.data import EvalItem, ImageLoader, load_items
from contrastkit.evaluators.runner import RAW_FILES, EvalConfig, ImageBatches, score_dataset
from contrastkit.evaluators.tasks.flipped import flipped_retrieval_queries
from contrastkit.evaluators.tasks.resolution import resolution_cases
from contrastkit.evaluators.tasks.retrieval import retrieval_queries
from contrastkit.models import ImageTextScorer
from contrastkit.schema import Gender
from contrastkit.templates import Template
from eval_data import write_small_dataset

ORDER = (Gender.MASCULINE, Gender.FEMININE, Gender.NEUTRAL)
TEMPLATES = {template.key: template for template in Template}


def number(width: int) -> int:
    """The image's number in the small dataset (its width is ``40 + n``)."""
    return width - 40


def favourite(n: int, template: Template) -> Gender:
    """The candidate image ``n`` prefers: cycles over his / her / their with the image,
    shifted by one for the participant-first template, so an OP image's two cases have
    different winners."""
    return ORDER[(n + (template is Template.OP_PARTICIPANT_FIRST)) % 3]


def caption_score(n: int, template: Template, gender: Gender) -> float:
    """Image ``n``'s similarity with the caption of ``gender`` under ``template``: the
    favourite wins (his / her 0.75, their 0.875 + n / 1024); else his 0.25, her 0.125,
    their n / 1024. "Their" captions are also the retrieval queries (VisoGender's
    gender-neutral query is the neutral caption), so their scores differ per image."""
    if gender is Gender.NEUTRAL:
        return (0.875 if gender is favourite(n, template) else 0.0) + n / 1024
    if gender is favourite(n, template):
        return 0.75
    return 0.25 if gender is Gender.MASCULINE else 0.125


def planted(n: int, template: Template, gender: Gender) -> float:
    """:func:`caption_score` as the scorer's float32 embeddings hold it."""
    return float(np.float32(caption_score(n, template, gender)))


class PlantedScorer:
    """Texts embed one-hot (one dimension per distinct text of the dataset); an image's
    embedding holds, in each text's dimension, its planted similarity with that text
    (:func:`caption_score`; a retrieval query is its template's "their" caption). Images
    are told apart by their width."""

    spec = "planted:by-hand"

    def __init__(self, items: Sequence[EvalItem]):
        self.caption: dict[str, tuple[Template, Gender]] = {}
        for case in resolution_cases(items, neutral=True):
            for gender, text in case.captions.items():
                self.caption[text] = (case.template, gender)
        queries = [*retrieval_queries(items), *flipped_retrieval_queries(items)]
        assert all(self.caption[query.text][1] is Gender.NEUTRAL for query in queries)
        self.dimension = {text: i for i, text in enumerate(self.caption)}

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        rows = np.zeros((len(images), len(self.dimension)), dtype=np.float32)
        for row, image in zip(rows, images, strict=True):
            for text, i in self.dimension.items():
                row[i] = caption_score(number(image.width), *self.caption[text])
        return rows

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), len(self.dimension)), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            row[self.dimension[text]] = 1.0
        return rows

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[EvalItem]:
    folder = tmp_path_factory.mktemp("data")
    return load_items(list(write_small_dataset(folder).values()))


def test_batched_records_are_the_planted_ones_at_every_batch_size(
    items: list[EvalItem], tmp_path: Path
) -> None:
    loader = ImageLoader()
    n_of = {item.key: number(loader.open(item).width) for item in items}
    occupations = [item.row.occupation for item in items]
    # a batch of 7 holds images of two occupations, and OP images with two cases each
    assert any(len(set(occupations[start : start + 7])) > 1 for start in range(0, len(items), 7))
    scorer = PlantedScorer(items)
    assert isinstance(scorer, ImageTextScorer)
    config = EvalConfig(neutral=True)
    files = {}
    for batch_size in (1, 7):
        out = tmp_path / f"batch{batch_size}"
        run = score_dataset(items, scorer, out, config, ImageBatches(loader, batch_size))
        assert len(run.resolution) == 8 + 16 * 2 and len(run.retrieval) == 24
        assert len(run.retrieval_flipped) == 16
        for record in run.resolution:
            n = n_of[record["key"].split("|")[0]]
            template = TEMPLATES[record["template"]]
            assert record["scores"] == {
                gender.value: planted(n, template, gender) for gender in ORDER
            }, record["key"]
            winner = favourite(n, template)
            assert record["predicted_with_neutral"] == winner.value
            # his / her only: "their" winning leaves his (0.25) above her (0.125)
            two_way = Gender.MASCULINE if winner is Gender.NEUTRAL else winner
            assert record["predicted"] == two_way.value
        for record in run.retrieval:
            n = n_of[record["key"].split("|")[0]]
            template = Template.OO if record["context"] == "OO" else Template.OP_OCCUPATION_FIRST
            assert record["score"] == planted(n, template, Gender.NEUTRAL), record["key"]
        for record in run.retrieval_flipped:
            n = n_of[record["key"].split("|")[0]]
            expected = planted(n, Template.OP_PARTICIPANT_FIRST, Gender.NEUTRAL)
            assert record["score"] == expected, record["key"]
        assert len({r["score"] for r in run.retrieval}) == 24  # a distinct score per image
        # every winner occurs, and OP images' two templates disagree
        assert {r["predicted_with_neutral"] for r in run.resolution} == {g.value for g in ORDER}
        files[batch_size] = {name: (out / name).read_bytes() for name in RAW_FILES.values()}
    assert files[1] == files[7]
