"""The dense contrast-set evaluation, as it was before blocked scoring (issue 15, item 3):
the oracle of tests/evaluators/test_contrast.py and the baseline of bench/blocked.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from contrastkit.evaluators.contrast import (
    ContrastCounts,
    QueryOutcomes,
    contrast_queries,
    contrast_summary,
)
from contrastkit.evaluators.metrics import retrieval_metrics_batch
from contrastkit.interfaces import ImageTextScorer

__all__ = ["dense_evaluate_contrast"]


def dense_evaluate_contrast(
    dataset: Any, scorer: ImageTextScorer, ks: Sequence[int]
) -> dict[str, Any]:
    """What :func:`contrastkit.evaluators.contrast.evaluate_contrast` computed before
    blocking: one dense ``queries x images`` similarity matrix (float32 for float32
    embeddings), then a Python loop with one ``retrieval_metrics_batch`` call and one
    stable ``argsort`` per query.

    The images are read row by row from ``dataset.select_columns(["image"])``, converted
    to RGB and embedded 32 at a time, the captions 256 at a time, as the dense code did;
    so ``dataset`` may be a ``datasets.Dataset`` or a stand-in with ``features["gender"]``
    (a ``ClassLabel``'s ``int2str``), columns by name, ``select_columns`` and rows by
    index. ``ks`` below 1 are dropped. Returns ``{"summary": ..., "queries": [...]}`` in
    the format of ``evaluate_contrast``.
    """
    feature = dataset.features["gender"]
    genders = [feature.int2str(v) for v in dataset["gender"]]
    sources = [str(s) for s in dataset["source_id"]]
    n = len(genders)
    image_column = dataset.select_columns(["image"])
    image_embeddings = np.concatenate(
        [
            scorer.encode_images(
                [image_column[i]["image"].convert("RGB") for i in range(s, min(s + 32, n))]
            )
            for s in range(0, n, 32)
        ]
    )
    own, queries = contrast_queries(sources, genders, dataset["neutral_captions"])
    text_embeddings = np.concatenate(
        [
            scorer.encode_texts([c for _, c in queries[s : s + 256]])
            for s in range(0, len(queries), 256)
        ]
    )
    similarity = text_embeddings @ image_embeddings.T  # (queries, images), cosine
    labels = np.asarray(genders)
    ks = [k for k in ks if k >= 1]
    per_query: dict[str, list[float]] = {}
    records: list[dict[str, Any]] = []
    preferred: list[float] = []
    gaps: list[float] = []
    for row, (source, caption) in enumerate(queries):
        metrics = retrieval_metrics_batch(similarity[row], labels, ks)
        values = {name: float(array[0]) for name, array in metrics.items()}
        for name, value in values.items():
            per_query.setdefault(name, []).append(value)
        pair = own.get(source, {})
        record: dict[str, Any] = {"source_id": source, "query": caption, **values}
        if "masculine" in pair and "feminine" in pair:
            masculine = float(similarity[row, pair["masculine"]])
            feminine = float(similarity[row, pair["feminine"]])
            record |= {"score_masculine": masculine, "score_feminine": feminine}
            gaps.append(masculine - feminine)
            preferred.append(1.0 if masculine > feminine else 0.5 if masculine == feminine else 0.0)
        order = np.argsort(-similarity[row], kind="stable")[: max(ks, default=0)]
        record["top"] = [f"{sources[i]}:{genders[i]}" for i in order]
        records.append(record)
    counts = ContrastCounts(n, len(own), len(queries))
    summary = contrast_summary(counts, ks, QueryOutcomes(per_query, gaps, preferred))
    return {"summary": summary, "queries": records}
