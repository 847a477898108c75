"""GenSynth Tab. 3: a build's original photos (all, and balanced) exported in the contrast
layout, evaluated beside the contrast set with bootstrap intervals, and compared by
`contrastkit report`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from typer.testing import CliRunner

from contrastkit.builders.export import (
    ExportContrastConfig,
    export_contrast_set,
    load_export,
    read_metadata,
)
from contrastkit.builders.manifest import CONTRAST_SET, MANIFEST, SOURCES, SUMMARY
from contrastkit.cli import app
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.contrast import query_intervals
from contrastkit.samples import photo_crops

datasets.disable_progress_bars()
runner = CliRunner()

#: Source labels of the synthetic build: 5 masculine, 3 feminine (as COCO, imbalanced).
LABELS = ("masculine", "feminine", "masculine", "masculine", "feminine", "masculine",
          "feminine", "masculine")  # fmt: skip
OBJECTS = ("skateboard", "kite", "laptop", "horse", "umbrella", "surfboard", "cake", "bus")


def synthetic_build(folder: Path) -> Path:
    """A finished GenSwap-style build folder with real JPEGs: per source its COCO-style
    photo (in ``coco/``, recorded with an absolute path as the edit stage does), one
    masculine and one feminine edit, the manifest, the contrast set and the summary."""
    for sub in ("coco", "edits"):
        (folder / sub).mkdir(parents=True)
    photos = photo_crops(folder / "coco", len(LABELS), size=(48, 40), seed=1)
    edits = photo_crops(folder / "edits", 2 * len(LABELS), size=(48, 40), seed=2)
    box = [2.0, 3.0, 30.0, 32.0]
    sources, manifest, contrast = [], [], []
    for n, (label, thing) in enumerate(zip(LABELS, OBJECTS, strict=True)):
        source = f"src-{n}"
        word = "man" if label == "masculine" else "woman"
        captions = [f"A {word} with a {thing}.", f"The {word} holds the {thing} in scene {n}."]
        sources.append({
            "source_id": source, "path": str(photos[n].resolve()), "width": 48, "height": 40,
            "box": box, "captions": captions, "label": label,
        })  # fmt: skip
        for g, target in enumerate(("masculine", "feminine")):
            image = edits[2 * n + g]
            edit_id = f"{source}-{target[0]}"
            manifest.append({
                "edit_id": edit_id, "source_id": source, "method": "genswap", "target": target,
                "source_label": label, "box": box, "seed": n, "editor": "synthetic",
                "path": str(image.relative_to(folder)), "donor": f"donor-{g}",
            })  # fmt: skip
            contrast.append({
                "source_id": source, "gender": target, "edit_id": edit_id,
                "image": str(image.relative_to(folder)), "source_image": str(photos[n]),
                "box": box, "captions": captions, "original_captions": captions,
                "method": "genswap", "p_real": None, "p_gender": None,
            })  # fmt: skip
    for name, records in ((SOURCES, sources), (MANIFEST, manifest), (CONTRAST_SET, contrast)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = {"genswap": {"selection": {"sources": len(LABELS)}, "no_face": 0,
                           "face_bank": "synthetic", "min_age": 20, "seed": 0,
                           "sources_kept": len(LABELS), "images": 2 * len(LABELS)}}  # fmt: skip
    (folder / SUMMARY).write_text(json.dumps(summary))
    return folder


@pytest.fixture
def build(tmp_path: Path) -> Path:
    return synthetic_build(tmp_path / "build")


def test_originals_export_one_row_per_source_photo(build: Path, tmp_path: Path) -> None:
    result = export_contrast_set(ExportContrastConfig(build, tmp_path / "orig", originals=True))
    data = load_export(tmp_path / "orig", "contrast")["test"]
    assert data.num_rows == len(LABELS)
    raw = data.cast_column("image", datasets.Image(decode=False))
    sources = [json.loads(line) for line in (build / SOURCES).read_text().splitlines()]
    for row, source in zip(raw, sources, strict=True):
        assert row["source_id"] == source["source_id"]
        assert data.features["gender"].int2str(row["gender"]) == source["label"]
        assert row["image"]["bytes"] == Path(source["path"]).read_bytes()  # the photo, unedited
        assert row["captions"] == source["captions"] and row["method"] == "original"
        assert row["edit_id"] is None
    assert raw[0]["neutral_captions"] == [
        "A person with a skateboard.", "The person holds the skateboard in scene 0."
    ]  # fmt: skip
    assert result.metadata["kind"] == "originals"
    assert result.metadata["counts"]["contrast"] == {"masculine": 5, "feminine": 3}
    card = (tmp_path / "orig" / "README.md").read_text()
    assert card.startswith("---\n") and "Original photos of a GenSwap contrast set" in card
    assert "5 masculine and 3 feminine" in card and "not apply" in card


def test_balanced_originals_keep_equal_counts_drawn_with_the_seed(
    build: Path, tmp_path: Path
) -> None:
    drawn = []
    for seed, name in ((0, "a"), (0, "b"), (7, "c")):
        config = ExportContrastConfig(build, tmp_path / name, originals=True, balanced=True,
                                      seed=seed)  # fmt: skip
        export_contrast_set(config)
        data = load_export(tmp_path / name, "contrast")["test"]
        genders = [data.features["gender"].int2str(g) for g in data["gender"]]
        assert genders.count("masculine") == genders.count("feminine") == 3
        # every feminine source is kept; the masculine ones are a draw
        assert {s for s, g in zip(data["source_id"], genders, strict=True) if g == "feminine"} == {
            "src-1", "src-4", "src-6"}  # fmt: skip
        drawn.append(data["source_id"])
    assert drawn[0] == drawn[1]  # the same seed draws the same photos
    metadata = read_metadata(tmp_path / "a")
    assert metadata["balanced"] is True and metadata["seed"] == 0
    assert metadata["labels_before_balancing"] == {"masculine": 5, "feminine": 3}
    card = (tmp_path / "a" / "README.md").read_text()
    assert "Balanced: 3 masculine and 3 feminine photos, drawn with seed 0" in card
    # seeds 0 and 7 draw different masculine sources from the 5 (checked, not assumed)
    assert drawn[0] != drawn[2]


def test_originals_options_are_checked(build: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="balanced: needs originals"):
        ExportContrastConfig(build, tmp_path / "o", balanced=True)
    with pytest.raises(ConfigError, match="seed"):
        ExportContrastConfig(build, tmp_path / "o", originals=True, seed=-1)
    missing = Path(json.loads((build / SOURCES).read_text().splitlines()[2])["path"])
    missing.unlink()
    with pytest.raises(DataFormatError, match="the photo of source 'src-2' is missing"):
        export_contrast_set(ExportContrastConfig(build, tmp_path / "o", originals=True))
    assert not (tmp_path / "o").exists()


def test_one_gender_only_cannot_be_balanced(build: Path, tmp_path: Path) -> None:
    lines = (build / SOURCES).read_text().replace('"feminine"', '"masculine"')
    (build / SOURCES).write_text(lines)
    with pytest.raises(DataFormatError, match="cannot balance"):
        export_contrast_set(
            ExportContrastConfig(build, tmp_path / "o", originals=True, balanced=True)
        )


def test_export_originals_from_the_command_line(build: Path, tmp_path: Path) -> None:
    out = tmp_path / "bal"
    result = runner.invoke(app, ["export", "contrast", str(build), "--out", str(out),
                                 "--originals", "--balanced", "--seed", "3"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "contrast/test: 6 rows" in result.output
    assert read_metadata(out)["counts"]["contrast"] == {"masculine": 3, "feminine": 3}
    result = runner.invoke(app, ["export", "contrast", str(build), "--out", str(out),
                                 "--balanced"])  # fmt: skip
    assert result.exit_code == 2 and "balanced" in result.output


def test_query_intervals_resample_queries() -> None:
    values = {"maxskew@2": [0.0, 1.0, 0.0, 1.0], "bias@2": [0.5] * 4, "NDKL": [1.0, 2.0]}
    intervals = query_intervals(values, 400, 0.9, seed=3)
    assert set(intervals) == {"maxskew@2", "bias@2"}  # only Bias@K and MaxSkew@K
    skew = intervals["maxskew@2"]
    assert 0.0 <= skew["low"] < 0.5 < skew["high"] <= 1.0
    assert (skew["level"], skew["resamples"]) == (0.9, 400)
    assert intervals["bias@2"]["low"] == intervals["bias@2"]["high"] == 0.5  # no spread
    assert query_intervals(values, 400, 0.9, seed=3) == intervals  # seeded
    one = query_intervals({"maxskew@2": [0.3]}, 10, 0.95, seed=0)["maxskew@2"]
    assert one["low"] != one["low"]  # nan: one query has no spread to show


@pytest.mark.slow
def test_tab3_original_balanced_and_contrast_side_by_side(
    build: Path, tmp_path: Path, tiny_clip_spec: str
) -> None:
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.job import EvaluateConfig, ReportConfig, compare_results, evaluate
    from contrastkit.evaluators.runner import EvalConfig

    sets = {"contrast": {}, "originals": {"originals": True},
            "balanced": {"originals": True, "balanced": True, "seed": 1}}  # fmt: skip
    for name, options in sets.items():
        export_contrast_set(ExportContrastConfig(build, tmp_path / name, **options))
    result = evaluate(EvaluateConfig(
        data=tuple(str(tmp_path / name) for name in sets), models=(tiny_clip_spec,),
        out=tmp_path / "res", model=ModelConfig(device="cpu", batch_size=4),
        settings=EvalConfig(ks=(2, 4), bootstrap=200, seed=5),
    ))  # fmt: skip
    by_name = {e.folder.name: e for e in result.evaluations}
    assert [by_name[n].scored_images for n in sets] == [16, 8, 6]
    for name, evaluation in by_name.items():
        summary = evaluation.summary
        assert summary["bootstrap"] == {"resamples": 200, "confidence": 0.95, "seed": 5,
                                        "over": "queries"}  # fmt: skip
        for metric in ("bias_gensynth@4", "maxskew@2", "maxskew@4"):
            stats = summary["retrieval"][metric]
            ci = stats["mean_ci"]
            assert ci["low"] <= stats["mean"] <= ci["high"] and ci["resamples"] == 200
        assert "mean_ci" not in summary["retrieval"]["NDKL"]
        pairs = summary["pairs"]
        report = evaluation.files["report"].read_text()
        if name == "contrast":
            assert pairs["applicable"] and pairs["queries_with_pair"] == summary["queries"] == 16
        else:
            assert not pairs["applicable"] and pairs["queries_with_pair"] == 0
            assert "Pair preference is not applicable" in report
            assert json.loads(evaluation.files["benchmark"].read_text())["dataset"]["kind"] == (
                "originals")  # fmt: skip
        assert "95% percentile bootstrap interval of the mean over queries" in report

    benchmarks = [by_name[n].files["benchmark"] for n in sets]
    comparison = compare_results(ReportConfig(results=tuple(benchmarks), out=tmp_path / "t3.md"))
    text = comparison.markdown
    assert text.startswith("# Original vs balanced vs contrast set (GenSynth Tab. 3)")
    rows = [line for line in text.splitlines() if line.startswith(("| contrast", "| orig",
                                                                   "| balanced"))]  # fmt: skip
    assert [row.split(" | ")[1] for row in rows] == [
        "GenSwap contrast set",
        "original photos",
        "original photos, balanced (seed 1)",
    ]
    for row, name in zip(rows, sets, strict=True):
        skew = by_name[name].summary["retrieval"]["maxskew@4"]
        ci = skew["mean_ci"]
        assert f"{skew['mean']:.2f} [{ci['low']:.2f}, {ci['high']:.2f}]" in row
    assert "| 16 | 16 |" in rows[0] and "| 6 | 12 |" in rows[2]  # images, queries
    assert "minus its MaxSkew@K on the contrast set" in text
    assert "## From the data" in text
    assert (tmp_path / "t3.md").read_text() == text
    assert [h["task"] for h in comparison.headlines] == ["contrast"] * 3
    assert "mean_ci" in comparison.headlines[1]["retrieval"]["maxskew@4"]

    # mixed with a VisoGender result: both tables; and from the command line
    viso = tmp_path / "viso.json"
    viso.write_text(json.dumps({"visogender_m_results": {
        "metadata": {"model_name": "m"},
        "retrieval_bias": {"context": "OO", "ks": [5], "bias@5": {"mean": 0.1, "sigma": 0.2}},
    }}))  # fmt: skip
    cli = runner.invoke(app, ["report", str(viso), *(str(b.parent) for b in benchmarks)])
    assert cli.exit_code == 0, cli.output
    assert "# VisoGender: models side by side" in cli.output
    assert "# Original vs balanced vs contrast set (GenSynth Tab. 3)" in cli.output
    cli = runner.invoke(app, ["report", *(str(b) for b in benchmarks), "--json"])
    assert cli.exit_code == 0 and [h["dataset"]["kind"] for h in json.loads(cli.output)] == [
        "genswap", "originals", "originals"]  # fmt: skip
    shutil.rmtree(tmp_path / "res")


class MeanColour:
    """Images embed as their mean (red, blue), texts as a direction set by the caption's
    length: a known scorer whose queries rank the photos differently."""

    spec = "known:colour"

    def encode_images(self, images: list[Any]) -> np.ndarray:
        rows = np.array([np.asarray(i, dtype=np.float32).mean(axis=(0, 1))[[0, 2]] for i in images])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        angles = np.array([len(t) % 7 for t in texts], dtype=np.float64) * np.pi / 12
        return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)

    def score(self, images: list[Any], texts: list[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def test_contrast_evaluation_intervals_follow_the_settings(build: Path, tmp_path: Path) -> None:
    from contrastkit.evaluators.contrast import ContrastSettings, evaluate_contrast, load_contrast

    export_contrast_set(ExportContrastConfig(build, tmp_path / "orig", originals=True))
    dataset = load_contrast(tmp_path / "orig")
    plain = evaluate_contrast(dataset, MeanColour(), ContrastSettings(ks=(2, 4)))["summary"]
    assert "bootstrap" not in plain and "mean_ci" not in plain["retrieval"]["maxskew@2"]
    assert plain["pairs"]["applicable"] is False and "not applicable" in plain["pairs"]["note"]
    result = evaluate_contrast(
        dataset, MeanColour(), ContrastSettings(ks=(2, 4), bootstrap=300, seed=4)
    )
    summary = result["summary"]
    per_query = {"maxskew@2": [q["maxskew@2"] for q in result["queries"]]}
    assert len(set(per_query["maxskew@2"])) > 1  # the queries differ: a real interval
    expected = query_intervals(per_query, 300, 0.95, seed=4, names=["maxskew@2"])
    ci = summary["retrieval"]["maxskew@2"]["mean_ci"]
    assert ci["low"] < summary["retrieval"]["maxskew@2"]["mean"] < ci["high"]
    assert ci == expected["maxskew@2"]
    with pytest.raises(ConfigError, match="bootstrap"):
        evaluate_contrast(dataset, MeanColour(), ContrastSettings(ks=(2,), bootstrap=-1))
    with pytest.raises(ConfigError, match="confidence"):
        evaluate_contrast(
            dataset, MeanColour(), ContrastSettings(ks=(2,), bootstrap=10, confidence=1.5)
        )


def test_pair_preference_gets_a_bootstrap_interval_over_its_queries(
    build: Path, tmp_path: Path
) -> None:
    """The share of queries preferring the masculine version gets the percentile
    bootstrap interval of the other contrast figures, over the queries with a pair, also
    when only pair preference is computed (issue 31)."""
    from contrastkit.evaluators.contrast import ContrastSettings, evaluate_contrast, load_contrast

    export_contrast_set(ExportContrastConfig(build, tmp_path / "set"))
    dataset = load_contrast(tmp_path / "set")
    for metrics in ("all", "pairs"):
        result = evaluate_contrast(
            dataset, MeanColour(), ContrastSettings(ks=(2,), bootstrap=300, seed=4, metrics=metrics)
        )
        pairs = result["summary"]["pairs"]
        preferred = [
            1.0 if q["score_masculine"] > q["score_feminine"]
            else 0.5 if q["score_masculine"] == q["score_feminine"] else 0.0
            for q in result["queries"]
        ]  # fmt: skip
        assert 0 < sum(preferred) < len(preferred)  # the queries differ: a real interval
        expected = query_intervals({"share": preferred}, 300, 0.95, seed=4, names=["share"])[
            "share"
        ]
        ci = pairs["masculine_preferred_ci"]
        assert ci == expected and ci["low"] < pairs["masculine_preferred"] < ci["high"]
        assert result["summary"]["bootstrap"]["resamples"] == 300
    plain = evaluate_contrast(dataset, MeanColour(), ContrastSettings(ks=(2,)))["summary"]
    assert "masculine_preferred_ci" not in plain["pairs"] and "bootstrap" not in plain
