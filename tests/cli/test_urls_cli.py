"""``contrastkit urls check`` as a person runs it: tables, JSON, results file, exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.schema import Context, Gender
from contrastkit.store import ImageStore
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, jpeg_bytes, static

runner = CliRunner()
M, F = Gender.MASCULINE, Gender.FEMININE


def photo(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (80, 80, 3), dtype=np.uint8)
    return jpeg_bytes(Image.fromarray(pixels))


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    routes = {
        "/a.jpg": static(photo(1)),
        "/b.jpg": static(photo(2)),
        "/copy-of-a.jpg": static(photo(1)),
        "/gone.jpg": static(b"", "text/plain", 404),
    }
    with LoopbackServer(routes) as running:
        yield running


def write_tables(server: LoopbackServer, folder: Path, *paths: str) -> tuple[Path, Path]:
    """An OO file with the first two paths and an OP file with the rest."""
    oo = [make_row("doctor", g, n=i, url=server.url(p))
          for i, (g, p) in enumerate(zip((M, F), paths[:2], strict=True), 1)]  # fmt: skip
    op = [make_row("doctor", M, F, n=i, url=server.url(p)) for i, p in enumerate(paths[2:], 1)]
    write_visogender_tsv(folder / "oo.tsv", oo, Context.OO)
    write_visogender_tsv(folder / "op.tsv", op, Context.OP)
    return folder / "oo.tsv", folder / "op.tsv"


def test_healthy_files_exit_0_and_fill_the_store(server: LoopbackServer, tmp_path: Path) -> None:
    oo, _ = write_tables(server, tmp_path, "/a.jpg", "/b.jpg")
    store = tmp_path / "store"
    result = runner.invoke(
        app, ["urls", "check", str(oo), "--allow-private", "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    assert "all URLs healthy" in result.output
    assert ImageStore(store).sha_for_url(server.url("/a.jpg")) is not None


def test_failures_and_duplicates_across_files_exit_1(
    server: LoopbackServer, tmp_path: Path
) -> None:
    oo, op = write_tables(server, tmp_path, "/a.jpg", "/gone.jpg", "/copy-of-a.jpg", "/b.jpg")
    results = tmp_path / "results.jsonl"
    result = runner.invoke(
        app,
        ["urls", "check", str(oo), str(op), "--allow-private", "--json", "--results", str(results)],
    )
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["status_counts"] == {"http_error": 1, "ok": 3}
    assert report["duplicates"] == [
        {"kind": "same_bytes", "key": report["duplicates"][0]["key"], "rows": ["OO_1", "OP_1"]}
    ]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["idx"], r["status"], r["line"]) for r in lines] == [
        ("OO_1", "ok", 2), ("OO_2", "http_error", 3), ("OP_1", "ok", 2), ("OP_2", "ok", 3)
    ]  # fmt: skip

    table = runner.invoke(app, ["urls", "check", str(oo), str(op), "--allow-private"])
    assert table.exit_code == 1
    assert "Failed rows (1)" in table.output and "OO_2" in table.output
    assert "same_bytes" in table.output and "problems found" in table.output


def test_private_addresses_are_refused_by_default(server: LoopbackServer, tmp_path: Path) -> None:
    oo, _ = write_tables(server, tmp_path, "/a.jpg", "/b.jpg")
    result = runner.invoke(app, ["urls", "check", str(oo), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output)["status_counts"] == {"blocked_address": 2}


def test_bad_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("not\ta visogender\tfile\n")
    result = runner.invoke(app, ["urls", "check", str(bad)])
    assert result.exit_code == 2 and "bad.tsv" in result.output
    resolve = runner.invoke(app, ["urls", "check", str(bad), "--resolve", "nocolon"])
    assert resolve.exit_code == 2 and "expected HOST:ADDRESS" in resolve.output


def test_a_bad_network_option_exits_2_naming_it(server: LoopbackServer, tmp_path: Path) -> None:
    oo, _ = write_tables(server, tmp_path, "/a.jpg", "/b.jpg")
    result = runner.invoke(app, ["urls", "check", str(oo), "--allow-network", "intranet"])
    assert result.exit_code == 2
    assert "allowed_networks: 'intranet' is not a CIDR network" in result.output


def test_urls_and_details_are_printed_as_text_not_markup(
    server: LoopbackServer, tmp_path: Path
) -> None:
    oo, _ = write_tables(server, tmp_path, "/a.jpg", "/[bold]x[/bold].jpg")
    result = runner.invoke(
        app, ["urls", "check", str(oo), "--allow-private"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 1, result.output
    assert "/[bold]x[/bold].jpg" in result.output


def test_maintain_reports_an_unwritable_report_before_any_request(
    server: LoopbackServer, tmp_path: Path
) -> None:
    oo, _ = write_tables(server, tmp_path, "/a.jpg", "/b.jpg")
    (tmp_path / "taken").write_text("a file where a folder should be")
    before = sum(server.hits.values())
    report = tmp_path / "taken" / "r.md"
    args = ["urls", "maintain", str(oo), "--db", str(tmp_path / "s.db"), "--report", str(report)]
    result = runner.invoke(app, [*args, "--allow-private"])
    assert result.exit_code == 2
    assert "environment error:" in result.output and "cannot write the maintenance report" in (
        result.output
    )
    assert sum(server.hits.values()) == before


@pytest.mark.parametrize(
    ("options", "status"),
    [(["--min-side", "100"], "image_too_small"), (["--max-bytes", "100"], "image_too_large"),
     (["--max-pixels", "100"], "image_too_large"), (["--max-redirects", "0"], "ok")],
)  # fmt: skip
def test_network_and_image_options_reach_the_checker(
    server: LoopbackServer, tmp_path: Path, options: list[str], status: str
) -> None:
    oo, _ = write_tables(server, tmp_path, "/a.jpg", "/b.jpg")
    agent = f"contrastkit-cli-test/{status}"
    args = ["urls", "check", str(oo), "--json", "--allow-private", "--user-agent", agent]
    result = runner.invoke(app, [*args, *options])
    assert json.loads(result.output)["status_counts"] == {status: 2}
    assert agent in server.user_agents
