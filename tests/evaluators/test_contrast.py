"""Contrast-set evaluation: known similarities give known metrics; exports and Hub-style
folders evaluate end to end from the command line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.builders.export import (
    ExportVisoGenderConfig,
    contrast_features,
    export_visogender,
)
from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.contrast import ContrastSettings, evaluate_contrast, load_contrast
from contrastkit.evaluators.hub import hub_name
from dense_contrast import dense_evaluate_contrast

datasets.disable_progress_bars()
runner = CliRunner()


class RedMeansMasculine:
    """Image embedding (red, blue) normalised; every text embeds as (1, 0): a model whose
    neutral queries always prefer the red (masculine) version."""

    spec = "known:red"

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        rows = np.array([np.asarray(i, dtype=np.float32).mean(axis=(0, 1))[[0, 2]] for i in images])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (len(texts), 1))

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def test_known_similarities_give_known_metrics(tmp_path: Path) -> None:
    dataset = load_contrast(contrast_export(tmp_path / "set"))
    result = evaluate_contrast(
        dataset, RedMeansMasculine(), ContrastSettings(ks=(2, 4), batch_size=4)
    )
    summary = result["summary"]
    assert (summary["images"], summary["sources"], summary["queries"]) == (6, 3, 3)
    retrieval = summary["retrieval"]
    # The top 2 of every query are red (masculine): Bias@2 = 1 in both conventions.
    assert retrieval["bias@2"]["mean"] == pytest.approx(1.0)
    assert retrieval["bias_gensynth@2"]["mean"] == pytest.approx(1.0)
    # Top 4: three masculine, one feminine -> VisoGender (3 - 1) / 4, GenSynth (3 - 1) / 4.
    assert retrieval["bias@4"]["mean"] == pytest.approx(0.5)
    assert retrieval["bias_gensynth@4"]["mean"] == pytest.approx(0.5)
    assert retrieval["bias@4"]["sigma"] == pytest.approx(0.0)
    pairs = summary["pairs"]
    assert pairs["queries_with_pair"] == 3 and pairs["masculine_preferred"] == 1.0
    red = np.array([200, 60]) / np.linalg.norm([200, 60])
    blue = np.array([60, 200]) / np.linalg.norm([60, 200])
    assert pairs["mean_gap"] == pytest.approx(red[0] - blue[0], abs=1e-5)
    first = result["queries"][0]
    assert first["top"][:3] == ["0:masculine", "1:masculine", "2:masculine"]


def test_a_dataset_without_the_contrast_columns_is_refused(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"source_id": ["1"]}).save_to_disk(str(tmp_path / "d"))
    with pytest.raises(DataFormatError, match="'gender': a contrast set needs this column"):
        load_contrast(tmp_path / "d")


def test_hub_names() -> None:
    assert hub_name("hf:me/set") == "me/set"
    assert hub_name("hf:/tmp") == "/tmp"  # a folder laid out like a Hub repository
    assert hub_name("me/set") is None and hub_name("data/OP.tsv") is None
    with pytest.raises(ValueError, match="expected hf:USER/NAME"):
        hub_name("hf:not a repo")


@pytest.mark.slow
def test_evaluate_a_contrast_export_from_the_command_line(
    tmp_path: Path, tiny_clip_spec: str
) -> None:
    folder = contrast_export(tmp_path / "set", sources=4)
    result = runner.invoke(
        app, ["evaluate", "--data", str(folder), "--model", tiny_clip_spec, "--out",
              str(tmp_path / "res"), "--k", "2,4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [model_dir] = [p for p in (tmp_path / "res").iterdir() if p.is_dir()]
    benchmark = json.loads((model_dir / "benchmark.json").read_text())
    assert benchmark["task"] == "contrast" and benchmark["summary"]["queries"] == 4
    raw = [json.loads(line) for line in (model_dir / "raw_contrast.jsonl").read_text().splitlines()]
    assert len(raw) == 4 and {"score_masculine", "score_feminine"} <= set(raw[0])
    assert "## Pair preference" in (model_dir / "report.md").read_text()
    assert (model_dir / "plots" / "contrast_bias.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_evaluate_reads_a_hub_style_dataset(
    tmp_path: Path, tiny_clip_spec: str, official_oo: Path
) -> None:
    """`hf:` goes through datasets.load_dataset, here on a folder laid out like a Hub
    repository (what `publish --dry-run` writes) of an export of a TSV naming local files
    (by absolute paths): the images are embedded in the export and read from it."""
    from contrastkit.builders.publish import PublishConfig, publish
    from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv

    table = read_visogender_tsv(official_oo)
    photo = tmp_path / "photo.png"
    Image.new("RGB", (40, 40), (120, 80, 40)).save(photo)
    rows = [r.__class__(**{**r.__dict__, "url": str(photo)}) for r in table.rows[:20]]
    write_visogender_tsv(tmp_path / "oo.tsv", rows, table.context)
    exported = export_visogender(
        ExportVisoGenderConfig(files=(tmp_path / "oo.tsv",), out=tmp_path / "export")
    )
    # the local photo is embedded (the Hub copy carries it), named relative to the TSV
    assert set(exported.configs["OO"]["test"]["url"]) == {"photo.png"}
    assert exported.configs["OO"]["test"][0]["image"].size == (40, 40)
    publish(PublishConfig(tmp_path / "export", "me/oo", dry_run=True, tree=tmp_path / "tree"))
    photo.unlink()  # evaluate reads the image the export carries
    result = runner.invoke(
        app, ["evaluate", "--data", f"hf:{tmp_path / 'tree'}", "--model", tiny_clip_spec,
              "--out", str(tmp_path / "res"), "--task", "resolution"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "res" / "_data").iterdir())  # the local copy of the Hub data


@pytest.mark.slow
def test_evaluate_contrast_sets_from_python(tmp_path: Path, tiny_clip_spec: str) -> None:
    """Two contrast sets, one model: one report per data folder, from the Python API."""
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.job import EvaluateConfig, evaluate
    from contrastkit.evaluators.runner import EvalConfig

    first = contrast_export(tmp_path / "first", sources=4)
    second = contrast_export(tmp_path / "second", sources=2)
    result = evaluate(
        EvaluateConfig(
            data=(str(first), str(second)),
            models=(tiny_clip_spec,),
            out=tmp_path / "res",
            model=ModelConfig(device="cpu", batch_size=3),
            settings=EvalConfig(ks=(2, 4)),
        )
    )
    assert result.kind == "contrast" and result.comparison is None
    assert [e.data for e in result.evaluations] == [str(first), str(second)]
    assert [e.folder.name for e in result.evaluations] == ["first", "second"]
    one = result.evaluations[0]
    assert one.scored_images == 8 and one.summary["queries"] == 4
    assert set(one.summary["retrieval"]) >= {"bias@2", "bias@4", "bias_gensynth@4"}
    assert one.files["plot"].read_bytes()[:4] == b"\x89PNG"
    assert json.loads(one.files["benchmark"].read_text())["summary"]["ks"] == [2, 4]


@pytest.mark.slow
def test_contrast_sets_cannot_be_mixed_with_visogender_data(
    tmp_path: Path, tiny_clip_spec: str, official_oo: Path
) -> None:
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import EvaluateConfig, evaluate

    folder = contrast_export(tmp_path / "set")
    config = EvaluateConfig(
        data=(str(folder), str(official_oo)), models=(tiny_clip_spec,), out=tmp_path / "res"
    )
    with pytest.raises(ConfigError, match="mixes contrast sets"):
        evaluate(config)
    with pytest.raises(ConfigError, match="captioning model"):
        evaluate(
            EvaluateConfig(data=(str(folder),), models=("blip:some/model",), out=tmp_path / "r")
        )


def test_a_contrast_set_without_neutral_captions_is_a_data_error(tmp_path: Path) -> None:
    folder = contrast_export(tmp_path / "set", sources=1)
    saved = folder / "saved" / "contrast"
    data = datasets.load_from_disk(str(saved))["test"]
    data = data.map(lambda row: {"neutral_captions": []})
    datasets.DatasetDict({"test": data}).save_to_disk(str(tmp_path / "empty"))
    with pytest.raises(DataFormatError, match="no neutral captions") as info:
        load_contrast(tmp_path / "empty")
    assert info.value.field == "neutral_captions"


# --- Blocked scoring (issue 15, item 3) -------------------------------------------------

# Unit vectors whose products and sums are exact in float32: any summation order (BLAS
# kernel, block shape, device) gives the same similarities, so the blocked evaluation
# must reproduce the dense one bit for bit. Five distinct similarities (-1 .. 1 in halves)
# among 8 vectors make ties everywhere: in the rankings, at every cut-off K, in the pairs.
EXACT_VECTORS = np.array(
    [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1],
     [0.5, 0.5, 0.5, 0.5], [0.5, -0.5, 0.5, -0.5], [-0.5, 0.5, 0.5, 0.5], [0.5, 0.5, -0.5, -0.5]],
    dtype=np.float32,
)  # fmt: skip


class TableScorer:
    """Known embeddings by position: an image whose colour is (i % 256, i // 256, 0)
    embeds as ``images[i]``, the caption ``"query j"`` as ``texts[j]``."""

    spec = "known:table"

    def __init__(self, images: np.ndarray, texts: np.ndarray) -> None:
        self.images, self.texts = images, texts

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        codes = [np.asarray(i.convert("RGB"), dtype=np.int64)[0, 0] for i in images]
        out: np.ndarray = self.images[[int(c[0] + 256 * c[1]) for c in codes]]
        return out

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        out: np.ndarray = self.texts[[int(t.split()[-1]) for t in texts]]
        return out

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def table_contrast_set(sources: int, captions: int, seed: int = 0) -> datasets.Dataset:
    """A contrast set of solid-colour images (colour = row index for :class:`TableScorer`):
    most sources have both versions, every seventh only a masculine one; each source has
    one to three neutral captions drawn from ``captions`` shared ones, so some repeat
    across sources (a caption queries once, for the first source that has it)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[object]] = {name: [] for name in contrast_features()}
    for s in range(sources):
        genders = ("masculine",) if s % 7 == 3 else ("masculine", "feminine")
        neutral = [f"query {j}" for j in rng.choice(captions, rng.integers(1, 4), replace=False)]
        for gender in genders:
            index = len(rows["source_id"])
            image = Image.new("RGB", (4, 4), (index % 256, index // 256, 0))
            values = {
                "source_id": f"s{s}", "gender": gender, "image": image,
                "edit_id": f"{s}-{gender}", "method": "gensynth", "source_label": "masculine",
                "captions": ["x"], "neutral_captions": neutral, "original_captions": ["x"],
                "box": [0.0, 0.0, 4.0, 4.0], "p_real": 0.5, "p_gender": 0.9, "instruction": "x",
                "text_guidance_scale": 9.5, "image_guidance_scale": 1.5, "steps": 2,
                "seed": s, "donor": None,
            }  # fmt: skip
            for name in rows:
                rows[name].append(values[name])
    return datasets.Dataset.from_dict(rows, features=contrast_features())


@pytest.fixture(scope="module")
def tie_set() -> tuple[datasets.Dataset, TableScorer]:
    """36 sources (67 images), 27 distinct queries, embeddings from :data:`EXACT_VECTORS`;
    a third of the pairs have identical versions (a tied pair preference)."""
    dataset = table_contrast_set(sources=36, captions=30)
    rng = np.random.default_rng(1)
    choice = rng.integers(0, len(EXACT_VECTORS), len(dataset))
    sources = dataset["source_id"]
    for i in range(1, len(dataset)):
        if sources[i] == sources[i - 1] and i % 3 == 0:
            choice[i] = choice[i - 1]
    texts = EXACT_VECTORS[rng.integers(0, len(EXACT_VECTORS), 30)]
    return dataset, TableScorer(EXACT_VECTORS[choice], texts)


_DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(
            not __import__("torch").cuda.is_available(), reason="no CUDA device"
        ),
    ),
]


def assert_same_evaluation(got: dict, want: dict) -> None:
    """Same summary and records, in the same order, with the same keys; similarities, top-K
    ids, counts and pair statistics equal; metric values equal up to 1e-12 (relative).

    The tolerance is for metrics.retrieval_metrics_batch alone: the expectation over tied
    images sums a hypergeometric grid as wide as the widest row of the call, so a row
    scored together with others can differ from the same row scored alone in the last
    bit or two (seen: 0.15789473684210428 against ...426 for a GenSynth Bias@10)."""
    assert list(got) == list(want) == ["summary", "queries"]
    close = {"rel": 1e-12, "abs": 1e-15, "nan_ok": True}
    g, w = got["summary"], want["summary"]
    assert list(g) == list(w) and list(g["retrieval"]) == list(w["retrieval"])
    assert {k: g[k] for k in ("images", "sources", "queries", "ks", "pairs")} == {
        k: w[k] for k in ("images", "sources", "queries", "ks", "pairs")
    }
    for name, stats in w["retrieval"].items():
        assert list(g["retrieval"][name]) == list(stats)
        for key, value in stats.items():
            want_value = pytest.approx(value, **close) if isinstance(value, float) else value
            assert g["retrieval"][name][key] == want_value
    assert len(got["queries"]) == len(want["queries"])
    for mine, theirs in zip(got["queries"], want["queries"], strict=True):
        assert list(mine) == list(theirs)
        exact = ("source_id", "query", "score_masculine", "score_feminine", "top")
        assert {k: mine.get(k) for k in exact} == {k: theirs.get(k) for k in exact}
        numbers = [k for k in theirs if k not in exact]
        assert [mine[k] for k in numbers] == pytest.approx([theirs[k] for k in numbers], **close)


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("ks", [(1, 3, 10), (2,), (5, 200)])
@pytest.mark.parametrize("block", [1, 2, 5, 64, None])
def test_blocked_scoring_equals_the_dense_evaluation_with_ties(
    tie_set: tuple[datasets.Dataset, TableScorer],
    block: int | None,
    ks: tuple[int, ...],
    device: str,
) -> None:
    """Summary and records (values, order, top-K ids with ties broken by the lower index)
    are those of the dense per-query evaluation, for blocks of one query, of a few, larger
    than the whole set (64 > 27 queries) and the default; with K small (torch.topk's
    candidates re-sorted, rows whose tie crosses the candidates sorted in full) and K past
    the number of images (every image listed). One query per block is the dense loop's
    own metrics call: bit for bit the same output."""
    dataset, scorer = tie_set
    expected = dense_evaluate_contrast(dataset, scorer, ks)
    assert expected["summary"]["queries"] == 27
    assert expected["summary"]["pairs"]["queries_with_pair"] > 0
    assert 0.0 in [r.get("score_masculine", 1) - r.get("score_feminine", 0) for r in
                   expected["queries"]]  # fmt: skip
    result = evaluate_contrast(
        dataset, scorer, ContrastSettings(ks=ks, batch_size=8, block=block, device=device)
    )
    assert_same_evaluation(result, expected)
    if block == 1:
        assert json.dumps(result) == json.dumps(expected)


def test_metrics_are_computed_once_per_block_of_queries(
    tie_set: tuple[datasets.Dataset, TableScorer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays at block x images: every metrics call gets at most ``block`` rows of
    scores over all images, one call per block."""
    import contrastkit.evaluators.contrast as contrast

    shapes: list[tuple[int, ...]] = []
    real = contrast.retrieval_metrics_batch

    def spy(scores: np.ndarray, labels: np.ndarray, ks: Sequence[int]) -> dict:
        shapes.append(np.shape(scores))
        return real(scores, labels, ks)

    monkeypatch.setattr(contrast, "retrieval_metrics_batch", spy)
    dataset, scorer = tie_set
    result = evaluate_contrast(dataset, scorer, ContrastSettings(ks=(2,), block=5))
    assert result["summary"]["queries"] == 27
    assert shapes == [(5, len(dataset))] * 5 + [(2, len(dataset))]


def random_set() -> tuple[datasets.Dataset, TableScorer]:
    """Random unit embeddings in 16-d (no exact ties), 30 sources, 40 captions."""
    dataset = table_contrast_set(sources=30, captions=40, seed=2)
    rng = np.random.default_rng(3)
    images = rng.standard_normal((len(dataset), 16)).astype(np.float32)
    texts = rng.standard_normal((40, 16)).astype(np.float32)
    images /= np.linalg.norm(images, axis=1, keepdims=True)
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    return dataset, TableScorer(images, texts)


@pytest.mark.parametrize("device", _DEVICES)
def test_scores_do_not_depend_on_block_device_or_tf32(device: str) -> None:
    """Each similarity is the float64 dot product rounded to float32, whatever the block
    (float32 products would round by the kernel's shape) and the device, TF32 allowed or
    not: the whole output is the same for every block size."""
    import torch

    dataset, scorer = random_set()
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        runs = [
            evaluate_contrast(
                dataset, scorer, ContrastSettings(ks=(1, 5), block=block, device=device)
            )
            for block in (1, 3, 64, None)
        ]
    finally:
        torch.set_float32_matmul_precision(before)
    assert len({json.dumps(run) for run in runs}) == 1
    first = runs[0]["queries"][0]  # a caption of source 0, whose images are rows 0 and 1
    caption = int(first["query"].split()[-1])
    own = scorer.images[[0, 1]].astype(np.float64) @ scorer.texts[caption].astype(np.float64)
    assert first["source_id"] == "s0"
    assert (first["score_masculine"], first["score_feminine"]) == tuple(
        float(np.float32(value)) for value in own
    )


def test_blocked_scoring_matches_the_dense_evaluation_on_real_valued_embeddings() -> None:
    """Random unit embeddings (no exact ties): the dense float32 product and the rounded
    float64 one may differ in the last bit, so the scores agree to float32 precision and
    the rankings, top-K ids and pair decisions exactly."""
    dataset, scorer = random_set()
    expected = dense_evaluate_contrast(dataset, scorer, (1, 5))
    result = evaluate_contrast(dataset, scorer, ContrastSettings(ks=(1, 5), block=3))
    assert len(result["queries"]) == len(expected["queries"])
    for got, want in zip(result["queries"], expected["queries"], strict=True):
        assert got["top"] == want["top"] and list(got) == list(want)
        numbers = [name for name in want if isinstance(want[name], float)]
        assert [got[name] for name in numbers] == pytest.approx(
            [want[name] for name in numbers], rel=1e-6, abs=1e-6, nan_ok=True
        )
    assert result["summary"]["pairs"] == pytest.approx(expected["summary"]["pairs"], abs=1e-6)


def test_bad_block_or_device_is_a_config_error(
    tie_set: tuple[datasets.Dataset, TableScorer],
) -> None:
    import torch

    from contrastkit.errors import ConfigError

    dataset, scorer = tie_set
    with pytest.raises(ConfigError, match="block must be a positive number"):
        evaluate_contrast(dataset, scorer, ContrastSettings(block=0))
    with pytest.raises(ConfigError, match="not a torch device"):
        evaluate_contrast(dataset, scorer, ContrastSettings(device="gpu please"))
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            evaluate_contrast(dataset, scorer, ContrastSettings(device="cuda"))
