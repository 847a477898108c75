"""The item tables of a harness export (:mod:`contrastkit.builders.harness`): each
question's options shuffled per item into key items (:func:`key_items`), written as
VLMEvalKit's TSV (:func:`write_tsv`) or lmms-eval's parquet data file
(:func:`write_parquet`), images as JPEG.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contrastkit.builders.harness_questions import Question, QuestionSet
from contrastkit.errors import DataFormatError
from contrastkit.harness_key import LETTERS, KeyItem

__all__ = ["JPEG_QUALITY", "key_items", "write_parquet", "write_tsv"]

#: JPEG quality of the exported images (no chroma subsampling).
JPEG_QUALITY = 95


def _shuffle_key(seed: int, row: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{row}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _jpeg(source: Any) -> bytes:
    from contrastkit.pipeline.sources import decode

    buffer = io.BytesIO()
    decode(source).save(buffer, format="JPEG", quality=JPEG_QUALITY, subsampling=0)
    return buffer.getvalue()


class _Encoder:
    """JPEG bytes of each question's image, the last one kept (consecutive questions of
    one row share it)."""

    def __init__(self) -> None:
        self.last: tuple[str, bytes] | None = None

    def __call__(self, question: Question) -> bytes:
        if self.last is None or self.last[0] != question.image_id:
            try:
                data = _jpeg(question.image())
            except (OSError, ValueError) as error:
                raise DataFormatError(
                    Path(question.image_id), None, None,
                    f"the image of {question.row} cannot be decoded: {error}",
                ) from error  # fmt: skip
            self.last = (question.image_id, data)
        return self.last[1]


def key_items(found: QuestionSet, seed: int, reversed_copy: bool) -> list[tuple[KeyItem, Question]]:
    """Every question of ``found`` as a key item with its options shuffled by ``seed``
    and the question's row (split ``main``), then, with ``reversed_copy``, each again
    with its options reversed (split ``reversed``), paired by ``pair``."""
    count = len(found.questions)
    main: list[tuple[KeyItem, Question]] = []
    flipped: list[tuple[KeyItem, Question]] = []
    for position, question in enumerate(found.questions):
        order = list(question.options)
        _shuffle_key(seed, question.row).shuffle(order)
        for split, options, index, pair in (
            ("main", order, position, count + position if reversed_copy else None),
            ("reversed", order[::-1], count + position, position),
        ):
            if split == "reversed" and not reversed_copy:
                continue
            letters = LETTERS[: len(options)]
            item = KeyItem(
                index=index,
                split=split,
                row=question.row,
                options={letter: text for letter, (text, _) in zip(letters, options, strict=True)},
                labels={letter: label for letter, (_, label) in zip(letters, options, strict=True)},
                answer=next(
                    letter
                    for letter, (_, label) in zip(letters, options, strict=True)
                    if label == question.answer
                ),
                category=question.category,
                pair=pair,
                annotations=question.annotations,
            )
            (main if split == "main" else flipped).append((item, question))
    return main + flipped


_TSV_COLUMNS = (
    "index", "image", "question", "A", "B", "C", "D", "answer", "category", "l2-category",
    "split",
)  # fmt: skip


def write_tsv(path: Path, items: Sequence[tuple[KeyItem, Question]]) -> None:
    """Write ``items`` as a VLMEvalKit MCQ TSV (base64 JPEG images; a repeated image
    holds the ``index`` of its first row)."""
    encode = _Encoder()
    first_row: dict[str, int] = {}
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(_TSV_COLUMNS)
        for item, question in items:
            if question.image_id in first_row:
                image = str(first_row[question.image_id])
            else:
                image = base64.b64encode(encode(question)).decode("ascii")
                first_row[question.image_id] = item.index
            writer.writerow([
                item.index, image, question.question,
                *(item.options.get(letter, "") for letter in LETTERS),
                item.answer, item.category, question.l2_category, item.split,
            ])  # fmt: skip


def write_parquet(path: Path, items: Sequence[tuple[KeyItem, Question]]) -> None:
    """Write ``items`` as lmms-eval's parquet data file (images as bytes, Hugging Face
    ``Image`` features), 64 rows per row group."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Features, Image, Value

    features = Features(
        {
            "index": Value("int64"),
            "image": Image(),
            "question": Value("string"),
            **{letter: Value("string") for letter in LETTERS},
            "answer": Value("string"),
            "category": Value("string"),
            "l2-category": Value("string"),
            "split": Value("string"),
        }
    )
    schema = features.arrow_schema
    encode = _Encoder()
    path.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(str(path), schema) as writer:
        batch: list[dict[str, Any]] = []
        for item, question in items:
            batch.append({
                "index": item.index,
                "image": {"bytes": encode(question), "path": f"{item.index}.jpg"},
                "question": question.question,
                **{letter: item.options.get(letter, "") for letter in LETTERS},
                "answer": item.answer,
                "category": item.category,
                "l2-category": question.l2_category,
                "split": item.split,
            })  # fmt: skip
            if len(batch) == 64:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or not items:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
