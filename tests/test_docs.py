"""docs/differences.md backs every line with a test: each test it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_every_test_named_on_the_differences_page_exists() -> None:
    page = (ROOT / "docs" / "differences.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(test_\w+)`", page))
    assert len(named) > 20
    defined = {
        match
        for path in (ROOT / "tests").rglob("test_*.py")
        for match in re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M)
    }
    assert sorted(named - defined) == []
    for filename in set(re.findall(r"`(test_\w+\.py)`", page)):
        assert list((ROOT / "tests").rglob(filename)), filename
