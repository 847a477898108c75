"""Shared fixtures: the official VisoGender files and small files written for a test."""

from __future__ import annotations

from pathlib import Path

import pytest

OFFICIAL = Path(__file__).parent / "data" / "visogender_official"
OFFICIAL_OP = OFFICIAL / "OP_Visogender_11012024.tsv"
OFFICIAL_OO = OFFICIAL / "OO_Visogender_10052025.tsv"
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture
def official_op() -> Path:
    """The official VisoGender OP annotations (460 rows, CRLF, no final newline)."""
    return OFFICIAL_OP


@pytest.fixture
def official_oo() -> Path:
    """The official VisoGender OO annotations (230 rows, CRLF, no final newline)."""
    return OFFICIAL_OO


@pytest.fixture(scope="session")
def coco_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A COCO-format folder of shipped public-domain photos (see tests/coco_fixture.py).
    Session-scoped: tests must not write into it."""
    from coco_fixture import write_coco

    return write_coco(tmp_path_factory.mktemp("coco"))


@pytest.fixture(scope="session")
def tiny_editor_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny InstructPix2Pix pipeline (random weights; see tests/tiny_editor.py)."""
    from tiny_editor import tiny_instruct_pix2pix

    return tiny_instruct_pix2pix(tmp_path_factory.mktemp("tiny_ip2p"))
