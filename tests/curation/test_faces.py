"""Faces for GenSwap (GenSynth App. A.2): MTCNN on a real photo, the bank, the swap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from contrastkit.curation.faces import (
    Face,
    FaceDetector,
    face_in_box,
    parse_age,
    read_face_bank,
    swap_face,
)
from contrastkit.errors import DataFormatError
from contrastkit.samples import photo
from contrastkit.schema import Gender


@pytest.mark.slow
def test_mtcnn_finds_the_astronauts_face(face_detector: FaceDetector) -> None:
    faces = face_detector.detect(photo("astronaut"))
    assert len(faces) == 1 and faces[0].probability > 0.99
    assert np.allclose(faces[0].box, (181, 62, 268, 172), atol=4)
    assert face_in_box(faces, (18, 14, 368, 512)) == faces[0]
    assert face_in_box(faces, (300, 0, 512, 512)) is None
    assert face_detector.detect(Image.new("RGB", (200, 200), (90, 140, 200))) == []


def test_swap_changes_the_face_only() -> None:
    image = photo("astronaut")
    donor = photo("camera").crop((180, 100, 275, 210))
    box = Face((181.0, 62.2, 267.7, 172.1), 1.0).int_box(image.width, image.height)
    assert box == (181, 62, 268, 173)
    out = np.asarray(swap_face(image, box, donor)).astype(int)
    original = np.asarray(image).astype(int)
    outside = np.ones(original.shape[:2], dtype=bool)
    outside[62:173, 181:268] = False
    assert np.array_equal(out[outside], original[outside])
    centre = (slice(100, 140), slice(205, 245))
    assert np.abs(out[centre] - original[centre]).mean() > 10
    # The donor is grey: the swap takes the replaced face's colours (not grey).
    r, _, b = out[centre].reshape(-1, 3).mean(axis=0)
    assert r - b > 20


def test_parse_age() -> None:
    assert parse_age("34") == 34
    assert parse_age("20-29") == 20
    assert parse_age("more than 70") == 71
    assert parse_age("70+") == 70
    with pytest.raises(ValueError, match="unreadable age"):
        parse_age("adult")


def test_bank_keeps_adults_and_reads_fairface_labels(face_bank: Path) -> None:
    bank = read_face_bank(face_bank)
    assert bank.counts() == {"masculine": 1, "feminine": 2, "minors_skipped": 1}
    assert bank.faces[Gender.MASCULINE][0].path.name == "camera.png"
    with pytest.raises(DataFormatError, match="no masculine face aged 30"):
        read_face_bank(face_bank, min_age=30)


def test_bank_errors_name_line_and_field(face_bank: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bank.csv"
    bad.write_text("file,age,gender\nx.png,30-39,Female\n")
    with pytest.raises(DataFormatError) as info:
        read_face_bank(bad)
    assert (info.value.line, info.value.field) == (2, "file")
    bad.write_text(f"file,age,gender\n{face_bank.parent / 'camera.png'},30-39,person\n")
    with pytest.raises(DataFormatError) as info:
        read_face_bank(bad)
    assert (info.value.line, info.value.field) == (2, "gender")
    bad.write_text(f"file,age,gender\n{face_bank.parent / 'camera.png'},30-39,Male\n")
    with pytest.raises(DataFormatError, match="no feminine face"):
        read_face_bank(bad)
