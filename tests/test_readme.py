"""The README's Python API tour runs as written, offline."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _tour() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API") :]
    after = section[section.index("A tour that runs offline") :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match is not None, "the README's Python API section has a tour"
    return match.group(1)


def test_the_python_api_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_tour(), "README.md (Python API tour)", "exec"), {"__name__": "tour"})
    assert "per_cell: must be at least 1, not 0" in out.getvalue()
    assert (tmp_path / "build" / "export-hub" / "README.md").is_file()
    assert any((tmp_path / "build" / "example").iterdir())
