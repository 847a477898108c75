"""The zero-shot analysis makes its typed result (:class:`~contrastkit.results.ZeroShotResult`)
itself: what it writes is that result's JSON, every section typed, and the report reads
the same from the result as from the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contrastkit.evaluators.tasks.zero_shot.groups import GroupingOptions, load_grouped
from contrastkit.evaluators.tasks.zero_shot.job import (
    ZeroShotDisparityConfig,
    ZeroShotDisparityResult,
    zero_shot_disparity,
)
from contrastkit.evaluators.tasks.zero_shot.report import disparity_markdown, write_outputs
from contrastkit.evaluators.tasks.zero_shot.words import MAN_TERMS, WOMAN_TERMS
from contrastkit.results import ZeroShotResult
from contrastkit.results.base import Node
from zero_shot_data import (
    VG_KEPT,
    planted_rows,
    truth_of,
    vg_images,
    write_coco,
    write_jsonl,
    write_vg,
)


def _nodes(value: Any) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
        for field in vars(value).values():
            yield from _nodes(field)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _nodes(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _nodes(item)


def _assert_typed_as_written(done: ZeroShotDisparityResult) -> None:
    """The job's typed result is the ``disparity.json`` it wrote, byte for byte; read
    back it is equal, nothing in it is left untyped, and ``results`` is its JSON."""
    text = done.files["json"].read_text(encoding="utf-8")
    written = json.loads(text)
    assert json.dumps(done.result.to_json(), indent=2) + "\n" == text
    assert ZeroShotResult.from_json(written) == done.result
    assert done.results == written
    assert not [type(n).__name__ for n in _nodes(done.result) if n.extra]


def _words(path: Path) -> Path:
    """Word vectors: necktie on the man terms, dress on the woman terms."""
    rng = np.random.default_rng(4)
    vectors = {w: rng.normal(size=6) for w in (*MAN_TERMS, *WOMAN_TERMS)}
    vectors["necktie"] = np.mean([vectors[w] for w in MAN_TERMS], axis=0)
    vectors["dress"] = np.mean([vectors[w] for w in WOMAN_TERMS], axis=0)
    lines = "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items())
    path.write_text(f"{len(vectors)} 6\n{lines}", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def analyses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ZeroShotDisparityResult]:
    """A VG analysis with probabilities (ECE), intervals and word vectors, and a COCO
    analysis compared with it (consistency)."""
    tmp = tmp_path_factory.mktemp("typed")
    vg, coco = write_vg(tmp / "vg"), write_coco(tmp / "coco")
    truth, groups = truth_of(vg_images(), VG_KEPT)
    favoured = {"necktie.n.01": "men", "dress.n.01": "women"}
    rows = write_jsonl(tmp / "vg.jsonl", planted_rows(truth, groups, favoured=favoured, seed=0))
    first = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, predictions=rows, out=tmp / "vg-out", min_images=5, bootstrap=20,
        words=_words(tmp / "vectors.txt"), plots=False,
    ))  # fmt: skip
    grouped = load_grouped(coco, GroupingOptions(min_images=4))
    images = [(r.image_id, r.group, r.concepts) for r in grouped.images]
    truth, groups = truth_of(images, grouped.concepts)
    planted = planted_rows(truth, groups, favoured={"necktie.n.01": "men"}, seed=1)
    second = zero_shot_disparity(ZeroShotDisparityConfig(
        data=coco, predictions=write_jsonl(tmp / "coco.jsonl", planted),
        out=tmp / "coco-out", min_images=4, bootstrap=0, compare=first.folder, plots=False,
    ))  # fmt: skip
    return {"vg": first, "coco": second}


@pytest.mark.parametrize("name", ["vg", "coco"])
def test_the_written_file_is_the_typed_result(
    analyses: dict[str, ZeroShotDisparityResult], name: str
) -> None:
    done = analyses[name]
    _assert_typed_as_written(done)
    result = done.result
    assert result.calibration is not None and result.calibration.computed
    assert result.predictions_file is not None and result.cache is None
    assert "cache" in result.absent and "predictions_file" not in result.absent
    if name == "vg":
        assert result.language is not None
        agreement = result.language["file"].agreement["ap"]
        assert (agreement.n, agreement.agree) == (2, 2)
        assert result.consistency is None and "consistency" in result.absent
    else:
        assert result.consistency is not None
        assert result.consistency.counts == {"green": 1, "red": 0, "yellow": 0}


@pytest.mark.parametrize("name", ["vg", "coco"])
def test_the_report_reads_the_same_from_the_result_and_from_the_file(
    analyses: dict[str, ZeroShotDisparityResult], name: str, tmp_path: Path
) -> None:
    done = analyses[name]
    report = done.files["report"].read_text(encoding="utf-8")
    assert disparity_markdown(done.result) == report
    assert disparity_markdown(done.results) == report
    data = done.results
    files = write_outputs(data, tmp_path, plots=False)  # the JSON API writes the same
    assert files["json"].read_bytes() == done.files["json"].read_bytes()
    assert files["report"].read_text(encoding="utf-8") == report
    assert data == done.results
