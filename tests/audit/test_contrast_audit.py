"""Auditing a contrast-set export: each source photo in both genders with the same
captions, so nothing in the captions can tell the genders apart."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from PIL import Image

from contrastkit.audit import AuditConfig, audit
from contrastkit.audit.data import load_audit_data
from contrastkit.builders.export import contrast_features
from contrastkit.curation.gender_words import neutralize

datasets.disable_progress_bars()


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
