"""Auditing a contrast-set export: each source photo in both genders with the same
captions, so nothing in the captions can tell the genders apart."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.audit import AuditConfig, audit
from contrastkit.audit.data import load_audit_data
from contrastkit.builders.export import contrast_features
from contrastkit.cli import app
from contrastkit.gender_words import neutralize

datasets.disable_progress_bars()
runner = CliRunner()


def _contrast_export(folder: Path, captions: list[tuple[str, str, list[str]]]) -> Path:
    """An export folder holding, for each labelled planted image, a masculine and a
    feminine version with the source's neutral captions."""
    rows: dict[str, list[object]] = {name: [] for name in contrast_features()}
    sources = [(label, texts) for label, _, texts in captions if label != "undefined"]
    for number, (label, texts) in enumerate(sources):
        for gender in ("masculine", "feminine"):
            values = {
                "source_id": str(number), "gender": gender,
                "image": Image.new("RGB", (8, 8), (number % 255, 0, 0)),
                "edit_id": f"{number}-{gender}", "method": "gensynth", "source_label": label,
                "captions": texts, "neutral_captions": [neutralize(t) for t in texts],
                "original_captions": texts, "box": [0.0, 0.0, 8.0, 8.0], "p_real": 0.5,
                "p_gender": 0.9, "instruction": "x", "text_guidance_scale": 9.5,
                "image_guidance_scale": 1.5, "steps": 2, "seed": number, "donor": None,
            }  # fmt: skip
            for name in rows:
                rows[name].append(values[name])
    data = datasets.Dataset.from_dict(rows, features=contrast_features())
    datasets.DatasetDict({"test": data}).save_to_disk(str(folder / "saved" / "contrast"))
    return folder


def test_a_contrast_set_shows_no_context_skew(planted, tmp_path: Path) -> None:
    export = _contrast_export(tmp_path / "export", planted(masculine=30, feminine=20))
    data = load_audit_data(export)
    assert data.format == "contrast" and data.label_source == "gender column"
    assert len(data.images) == 100 and data.images[0].group_key == data.images[1].group_key
    result = audit(AuditConfig(data=export, out=tmp_path / "out", clusters=3, resamples=200))
    report = json.loads(result.json_path.read_text(encoding="utf-8"))
    assert report["format"] == "contrast"
    assert report["composition"]["counts"] == {"masculine": 50, "feminine": 50, "undefined": 0}
    # both versions of a source have the same features, so they share every cluster
    assert all(row["factor_pp"] == 0.0 for row in report["clusters"]["clusters"])
    assert all(row["masculine"] == row["feminine"] for row in report["clusters"]["clusters"])
    # TF-IDF retrieves both versions of every other source tied: no gender lean at all
    tfidf = report["baselines"]["models"]["tfidf"]["original"]
    assert tfidf["bias@5"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert tfidf["bias@10"]["mean"] == pytest.approx(0.0, abs=1e-12)
    # each source's distinct neutral captions are the queries, once per source
    assert report["baselines"]["queries"] == sum(
        len(set(image.neutral_captions)) for image in data.images[::2]
    )
    assert "gender column" in result.markdown_path.read_text(encoding="utf-8")


def test_the_caption_classifier_splits_a_contrast_set_by_source_photo(
    planted, tmp_path: Path
) -> None:
    """A source's masculine and feminine versions share their neutral captions: split
    image by image, the held-out version was scored by its twin's opposite label in
    training (AUC 0.38 here, 0.000 on smaller sets). Split by source, nothing in the
    captions tells the versions apart and the AUC is chance, exactly."""
    export = _contrast_export(tmp_path / "export", planted(masculine=30, feminine=20))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["audit", str(export), "--out", str(out), "--only", "classifier",
              "--resamples", "100"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    found = json.loads((out / "audit.json").read_text(encoding="utf-8"))["caption_classifier"]
    assert found["auc"] == 0.5 and found["interval"] == [0.5, 0.5]
    assert found["test"] == {"masculine": 15, "feminine": 15}  # 15 whole sources of 50
    assert found["split"] == {"grouped": True, "train_groups": 35, "test_groups": 15}
    assert "held-out AUC 0.500 [0.500, 0.500] (0.5 is chance) (split by source photo)" in (
        result.output
    )
    text = (out / "audit.md").read_text(encoding="utf-8")
    assert "held-out AUC: **0.500**" in text
    assert "split by source photo" in text and "15 held out" in text


def test_a_small_contrast_set_reports_no_auc_instead_of_a_misleading_one(
    planted, tmp_path: Path
) -> None:
    """5 sources hold out 2 of each gender: the AUC of so few says nothing (it was 0.125
    here), so the console, audit.md and audit.json say so instead of a number."""
    export = _contrast_export(tmp_path / "export", planted(masculine=3, feminine=2))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["audit", str(export), "--out", str(out), "--only", "classifier",
              "--resamples", "100"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    found = report["caption_classifier"]
    assert found["auc"] is None and found["interval"] is None
    assert found["test"] == {"masculine": 2, "feminine": 2}
    assert found["min_test_per_label"] == 10
    assert "too few held-out images to read an AUC: 2 masculine, 2 feminine" in found["too_small"]
    assert "held-out AUC not reported (split by source photo): too few held-out" in result.output
    text = (out / "audit.md").read_text(encoding="utf-8")
    assert "held-out AUC: **not reported**" in text
    assert "Too few held-out images to read this AUC" in text
    for shown in (result.output, text):
        assert "0.000" not in shown and "0.125" not in shown
