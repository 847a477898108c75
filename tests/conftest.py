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
