"""The typed VisoGender result (tasks/visogender/benchmark.visogender_result): what
``benchmark()`` writes is its JSON, its parts are typed nodes, a part the run lacks is
left out of the file, and the reports and plots read the typed result as they read the
results object of a file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from contrastkit.evaluators.data import ImageLoader, load_items
from contrastkit.evaluators.runner import EvalConfig, ImageBatches, score_dataset
from contrastkit.evaluators.tasks.visogender.benchmark import (
    benchmark,
    headline,
    visogender_result,
)
from contrastkit.evaluators.tasks.visogender.report import markdown_report
from contrastkit.results import VisoGenderResult, load_result
from contrastkit.results.common import KWarning
from contrastkit.results.visogender import (
    LabourStatistics,
    ResolutionBias,
    RetrievalBias,
    VisoGenderMetadata,
)
from eval_data import write_small_dataset

FAST = {"subsample_runs": 5, "baseline_runs": 5, "bootstrap": 20}


class TwoWayScorer:
    """A dual encoder whose image embeddings depend on the image's width: every image
    leans to "his" or "her" by its width's parity, and to "their" by its size."""

    spec = "planted:parity"

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        return np.array(
            [[image.width % 2, 1 - image.width % 2, image.width / 1000] for image in images],
            dtype=np.float32,
        )

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        basis = {" his ": 0, " her ": 1, " their ": 2}
        rows = np.zeros((len(texts), 3), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i, next(v for k, v in basis.items() if k in f" {text} ")] = 1.0
        return rows

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    write_small_dataset(folder)
    return folder


def _result(dataset: Path, out: Path, **settings: Any) -> tuple[VisoGenderResult, dict[str, Any]]:
    items = load_items([dataset])
    config = EvalConfig(**{**FAST, **settings})
    run = score_dataset(items, TwoWayScorer(), out, config, ImageBatches(ImageLoader(), 5))
    return visogender_result(run, config, [dataset]), benchmark(run, config, [dataset])


def test_the_file_is_the_typed_result_as_json_and_reads_back_the_same(
    dataset: Path, tmp_path: Path
) -> None:
    result, written = _result(dataset, tmp_path / "out")
    assert isinstance(result.metadata, VisoGenderMetadata)
    assert isinstance(result.resolution_bias, ResolutionBias)
    assert isinstance(result.retrieval_bias, RetrievalBias)
    assert isinstance(result.labour_statistics, LabourStatistics)
    assert all(isinstance(warning, KWarning) for warning in result.warnings or ())
    assert result.metadata.model_name == "planted:parity" and result.task == "visogender"
    assert result.name == "visogender_planted-parity_results"
    [(name, inner)] = written.items()
    created = inner["metadata"]["created"]
    mine = result.to_json()[name]
    mine["metadata"]["created"] = created  # the two builds may fall in different seconds
    assert json.dumps(mine) == json.dumps(inner)  # same keys, same order, same values
    assert list(inner)[:5] == ["task", "schema_version", "random_weights", "weights_note",
                               "metadata"]  # fmt: skip
    assert "skipped_rows" not in inner and "skip_missing" not in inner["metadata"]
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(written), encoding="utf-8")
    assert load_result(path).to_json() == written


def test_a_part_the_run_lacks_is_left_out(dataset: Path, tmp_path: Path) -> None:
    result, written = _result(dataset, tmp_path / "out", tasks=("resolution",))
    inner = next(iter(written.values()))
    assert result.retrieval_bias is None and result.retrieval_flipped is None
    assert "retrieval_bias" not in inner and "retrieval_flipped" not in inner
    assert inner["warnings"] == [] and "multiple_choice" not in inner


def test_reports_read_the_typed_result_as_the_file(dataset: Path, tmp_path: Path) -> None:
    result, _ = _result(dataset, tmp_path / "out")
    inner = result.inner_json()
    assert markdown_report(result) == markdown_report(inner)
    assert headline(result) == headline(inner)
