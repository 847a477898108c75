"""The report toolkit (issue 33): one number formatter, one cell escaper and one table
builder for every markdown report, so that a name with ``|`` or a line break stays in its
table cell, and the shared figure helpers are public names of their own module."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from contrastkit.evaluators.report import comparison_markdown, load_benchmark
from contrastkit.evaluators.report.tables import format_interval, model_cell
from contrastkit.evaluators.zero_shot.report import disparity_markdown
from contrastkit.models.paper_models import PaperModel, markdown_table
from contrastkit.text import escape_cell, format_number, table_header

GOLDEN = Path(__file__).parent.parent / "golden"
AWKWARD = "tie|knot\nbow"  # a pipe would split the cell, a line break would end the row
ESCAPED = "tie\\|knot bow"


def _golden(name: str, suffix: str) -> dict[str, Any]:
    files = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    [key] = [k for k in files if k.endswith(suffix)]
    return copy.deepcopy(files[key])


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _columns(row: str) -> int:
    return row.replace("\\|", "").count("|") - 1


def test_a_cell_escapes_pipes_and_flattens_line_breaks() -> None:
    assert escape_cell(AWKWARD) == ESCAPED
    assert escape_cell("a\r\nb\rc") == "a b c"
    assert escape_cell(3) == "3"


@pytest.mark.parametrize(
    ("value", "options", "text"),
    [
        (0.825, {}, "0.82"),  # the reports' 2 places
        (0.1, {"digits": 3, "sign": True}, "+0.100"),  # the audit's and contrast's 3, signed
        (None, {}, "–"),
        (float("nan"), {"missing": "n/a"}, "n/a"),
        (7, {}, "7"),  # a count stays a count
    ],
)
def test_one_number_formatter_with_the_reports_options(
    value: Any, options: dict[str, Any], text: str
) -> None:
    assert format_number(value, **options) == text


def test_table_headers_say_which_columns_are_numbers() -> None:
    assert table_header(["model", "mean"], "lr") == ["| model | mean |", "|---|---:|"]
    assert table_header(["a", "b"]) == ["| a | b |", "|---|---|"]
    with pytest.raises(ValueError, match="does not fit 2 columns"):
        table_header(["a", "b"], "l")


def test_a_model_name_with_a_pipe_and_a_line_break_stays_in_its_comparison_cell(
    tmp_path: Path,
) -> None:
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(_golden("evaluate_visogender.json", "/benchmark.json")))
    _, results = load_benchmark(path)
    results["metadata"]["model_name"] = AWKWARD
    marked = " (random weights)"  # a tiny test model
    assert model_cell(results) == AWKWARD + marked  # escaping is the table's job
    text = comparison_markdown([results])
    rows = _table_rows(text)
    named = [row for row in rows if "knot" in row]
    assert len(named) == 4  # resolution, retrieval, and the two query subjects of Tab. 5
    assert all(row.startswith(f"| {ESCAPED}{marked} |") for row in named)
    assert not any(line.startswith("bow (random weights) |") for line in text.splitlines())
    header, _, first = rows[:3]
    assert _columns(first) == _columns(header)


def test_a_zero_shot_concept_with_a_line_break_stays_in_its_row() -> None:
    results = _golden("evaluate_zero-shot_vg.json", "/disparity.json")
    name = results["concepts"][0]["concept"]
    results["concepts"][0]["concept"] = AWKWARD
    text = disparity_markdown(results)
    assert f"| {ESCAPED} |" in text and name not in text
    assert not any(line.startswith("bow") for line in text.splitlines())


def test_the_models_page_note_with_a_line_break_stays_in_its_row() -> None:
    model = PaperModel(name="m", tables=("2",), kind="dual", spec="hf-hub:x/y", note=AWKWARD)
    rows = _table_rows(markdown_table((model,)))
    assert len(rows) == 3 and rows[-1].endswith(f"| {ESCAPED} |")


def test_an_interval_cell_keeps_its_two_places() -> None:
    cell = format_interval({"x": 0.5, "x_ci": {"low": 0.25, "high": 0.75}}, "x")
    assert cell == "0.50 [0.25, 0.75]"
    assert format_interval({}, "x") == "–"
