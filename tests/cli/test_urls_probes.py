"""``contrastkit urls check`` on a stereotype probe set whose images are partly or wholly
local files: the local rows are not URL-checked, and the output says how many there are."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.probes import write_probes
from loopback import LoopbackServer, jpeg_bytes, static
from stereoset_data import expected_rows, make_probe_fixture

runner = CliRunner()


def photo(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (80, 80, 3), dtype=np.uint8)
    return jpeg_bytes(Image.fromarray(pixels))


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer({"/a.jpg": static(photo(1)), "/b.jpg": static(photo(2))}) as running:
        yield running


def test_local_probe_images_are_counted_as_not_checked(
    server: LoopbackServer, tmp_path: Path
) -> None:
    _, _, probes = make_probe_fixture(tmp_path)  # 16 rows, every image a local file

    result = runner.invoke(app, ["urls", "check", str(probes)])
    assert result.exit_code == 0, result.output
    assert "16 rows with a local image file, not URL-checked (probes.tsv: 16)" in result.output
    assert "no URLs to check" in result.output and "all URLs healthy" not in result.output
    assert "0 rows" not in result.output  # no empty status table
    report = json.loads(runner.invoke(app, ["urls", "check", str(probes), "--json"]).output)
    assert (report["rows"], report["urls"], report["ok"]) == (0, 0, True)
    assert report["local_rows"] == 16
    assert report["local_rows_by_file"] == {str(probes): 16}

    # two rows now point at URLs: those two are checked, the other 14 are not
    rows = expected_rows()
    rows[0] = replace(rows[0], image=server.url("/a.jpg"))
    rows[5] = replace(rows[5], image=server.url("/b.jpg"))
    mixed = tmp_path / "mixed.tsv"
    write_probes(rows, mixed)
    result = runner.invoke(app, ["urls", "check", str(mixed), str(probes), "--allow-private"])
    assert result.exit_code == 0, result.output
    assert "30 rows with a local image file, not URL-checked (mixed.tsv: 14; probes.tsv: 16)" in (
        " ".join(result.output.split())
    )
    assert "all URLs healthy" in result.output
    result = runner.invoke(
        app, ["urls", "check", str(mixed), str(probes), "--allow-private", "--json"]
    )
    report = json.loads(result.output)
    assert report["rows"] == 2 and report["status_counts"] == {"ok": 2}
    assert {r["idx"] for r in report["results"]} == {rows[0].id, rows[5].id}
    assert report["local_rows"] == 30
    assert report["local_rows_by_file"] == {str(mixed): 14, str(probes): 16}


def test_urls_maintain_counts_local_probe_rows_in_its_summary_json_and_report(
    server: LoopbackServer, tmp_path: Path
) -> None:
    rows = expected_rows()
    rows[0] = replace(rows[0], image=server.url("/a.jpg"))
    mixed = tmp_path / "mixed.tsv"
    write_probes(rows, mixed)
    make_probe_fixture(tmp_path)  # the local images the other rows point at
    report = tmp_path / "maintenance.md"
    args = ["urls", "maintain", str(mixed), "--db", str(tmp_path / "s.db")]
    args += ["--report", str(report), "--allow-private"]

    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert "15 rows with a local image file, not URL-checked (mixed.tsv: 15)" in shown
    assert "Rows with a local image file, not URL-checked: `" in report.read_text()
    assert f"`{mixed}`: 15" in report.read_text()

    data = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert data["status_counts"] == {"ok": 1}
    assert (data["local_rows"], data["local_rows_by_file"]) == (15, {str(mixed): 15})
