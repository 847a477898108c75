"""The report toolkit (issue 33): one number formatter, one cell escaper and one table
builder for every markdown report, so that a name with ``|`` or a line break stays in its
table cell, and the shared figure helpers are public names of their own module."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from contrastkit.evaluators.report.tables import format_interval, model_cell
from contrastkit.evaluators.tasks.visogender.benchmark import load_benchmark
from contrastkit.evaluators.tasks.visogender.report import comparison_markdown
from contrastkit.evaluators.tasks.zero_shot.report import disparity_markdown
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


@pytest.mark.parametrize(
    ("value", "options", "shown"),
    [
        (0.0004, {}, "< 0.001"),
        (0.0123, {}, "= 0.012"),
        (0.0123, {"coarse_from": 0.01}, "= 0.01"),  # a plot panel's title
        (0.0042, {"coarse_from": 0.01}, "= 0.004"),
        (None, {}, "–"),
        (float("nan"), {"missing": "n/a"}, "n/a"),  # never "= nan"
    ],
)
def test_one_p_value_formatter_for_the_reports_and_the_plots(
    value: float | None, options: dict[str, Any], shown: str
) -> None:
    from contrastkit.text import format_p

    assert format_p(value, **options) == shown


def test_an_empty_cell_is_one_space_wide() -> None:
    from contrastkit.text import table_row

    assert table_row(["images of men", "1,024", ""]) == "| images of men | 1,024 | |"


SRC = Path(__file__).parent.parent.parent / "src" / "contrastkit"
#: Where a markdown table's header rule may be spelled: the toolkit that builds them,
#: and (the one exception left) the dataset cards' jinja2 templates, whose tables are
#: laid out in the template itself (counts and the names of the card's own data).
TOOLKIT = {SRC / "text.py"} | {
    SRC / "data_cards" / "templates" / f"{kind}.md.j2"
    for kind in ("visogender", "stereotype", "contrast")
}


def test_every_markdown_table_header_comes_from_the_toolkit() -> None:
    """Issue 33: one table builder. A header rule (``|---``) spelled anywhere else is a
    hand-built table: build it with contrastkit.text (table_header / markdown_table)."""
    sources = [
        *SRC.rglob("*.py"),
        *SRC.rglob("*.j2"),
    ]
    assert len(sources) > 50
    found = [
        f"{path.relative_to(SRC)}:{number}"
        for path in sources
        if path not in TOOLKIT
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "|---" in line or "|:--" in line
    ]
    assert not found, f"hand-built markdown table headers: {found}"


def _f_string_rows(source: str) -> list[int]:
    """The lines of the f-strings in ``source`` that begin a markdown table row (``| ``)."""
    import ast

    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.JoinedStr)
        and node.values
        and isinstance(node.values[0], ast.Constant)
        and str(node.values[0].value).startswith("| ")
    ]


def test_every_markdown_table_row_comes_from_the_toolkit() -> None:
    """Issue 33: a row spelled as an f-string writes an empty cell its own way; rows are
    built by contrastkit.text (table_row / markdown_table)."""
    found = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in TOOLKIT
        for line in _f_string_rows(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"hand-built markdown table rows: {found}"
    assert _f_string_rows('x = f"| {a} | {b} |"\ny = f"a | {b}"\n') == [1]


def test_each_task_reads_its_own_benchmark_files_and_no_other(tmp_path: Path) -> None:
    """The contrast, stereotype and decisions readers share one way to find a
    ``benchmark.json`` (a file or an output folder): each reads its own task's file, gives
    ``None`` for another task's, and a missing file is an error naming it."""
    from contrastkit.errors import DataFormatError
    from contrastkit.evaluators.decisions import read_decisions_benchmark
    from contrastkit.evaluators.stereotype import read_stereotype_benchmark
    from contrastkit.evaluators.tasks.contrast_sets.scoring import read_contrast_benchmark

    contrast = _golden("evaluate_contrast.json", "/benchmark.json")
    stereotype = _golden("evaluate_stereotype.json", "tiny-vilt-<hash>/benchmark.json")
    for name, data in (("contrast", contrast), ("stereotype", stereotype)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "benchmark.json").write_text(json.dumps(data), encoding="utf-8")
    assert read_contrast_benchmark(tmp_path / "contrast") == contrast  # the folder
    assert read_contrast_benchmark(tmp_path / "stereotype" / "benchmark.json") is None
    assert read_stereotype_benchmark(tmp_path / "stereotype") == stereotype
    assert read_stereotype_benchmark(tmp_path / "contrast") is None
    assert read_decisions_benchmark(tmp_path / "contrast") is None
    for reader in (read_contrast_benchmark, read_stereotype_benchmark, read_decisions_benchmark):
        with pytest.raises(DataFormatError, match="no such benchmark file") as caught:
            reader(tmp_path / "nowhere")
        assert caught.value.path == str(tmp_path / "nowhere")


def test_a_figure_is_laid_out_once_for_both_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """save_formats runs the constrained layout once, not once per format, and the PNG
    is the one a save with the layout engine live writes (the SVG shares its layout)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    from contrastkit.evaluators.report.figures import new_figure, save_figure, save_formats

    def drawn() -> Any:
        figure, [axis] = new_figure(4, 3)
        axis.bar(["a long occupation name", "b"], [0.4, -0.2])
        axis.set_ylabel("a signed gap")
        figure.suptitle("a title over the axes")
        return figure

    live = tmp_path / "live.png"
    save_figure(drawn(), live)  # the engine live: the save lays the figure out itself
    runs = []
    execute = ConstrainedLayoutEngine.execute

    def counted(self: ConstrainedLayoutEngine, figure: Any) -> Any:
        runs.append(figure)
        return execute(self, figure)

    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", counted)
    figure = drawn()
    paths = save_formats(figure, tmp_path / "once")
    assert [p.name for p in paths] == ["once.png", "once.svg"]
    assert len(runs) == 1  # one layout for both formats (it was one per format)
    assert paths[0].read_bytes() == live.read_bytes()
    assert b"a long occupation name" in paths[1].read_bytes()  # SVG text kept as text
    save_formats(figure, tmp_path / "again")  # laid out already: no layout again
    assert len(runs) == 1 and (tmp_path / "again.png").read_bytes() == live.read_bytes()
