"""Fixtures shared by the export, publishing and harness tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from contrastkit.builders.harness import HarnessExportConfig, export_harness
from contrastkit.curation.integrity import TableCheckSettings, check_tables
from contrastkit.curation.urls import CheckConfig
from contrastkit.schema import Context, Gender
from contrastkit.store import ImageStore
from contrastkit.tsv import read_visogender_tsv
from contrastkit.tsv import write_visogender_tsv as write_tsv
from eval_data import write_small_dataset
from factories import make_row, photo
from loopback import LoopbackServer, static

M, F = Gender.MASCULINE, Gender.FEMININE
CELLS_OP = ((M, M), (M, F), (F, M), (F, F))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path, Path]]:
    """OP (2 occupations x 4 cells) and OO (2 x 2) TSVs, their images in a store, and the
    `urls check --results` file of that check."""
    folder = tmp_path_factory.mktemp("export")
    routes = {f"/{n}.jpg": static(photo(n)) for n in range(12)}
    with LoopbackServer(routes) as server:
        occupations = list(enumerate(("doctor", "teacher")))
        op = [make_row(occ, a, b, n=i * 4 + j, url=server.url(f"/{i * 4 + j}.jpg"))
              for i, occ in occupations for j, (a, b) in enumerate(CELLS_OP)]  # fmt: skip
        oo = [make_row(occ, g, n=i * 2 + j, url=server.url(f"/{8 + i * 2 + j}.jpg"))
              for i, occ in occupations for j, g in enumerate((M, F))]  # fmt: skip
        write_tsv(folder / "op.tsv", op, Context.OP)
        write_tsv(folder / "oo.tsv", oo, Context.OO)
        store = ImageStore(folder / "store")
        tables = [read_visogender_tsv(folder / "op.tsv"), read_visogender_tsv(folder / "oo.tsv")]
        report = check_tables(
            tables, TableCheckSettings(CheckConfig(allow_private=True)), store=store
        )
    results = folder / "checks.jsonl"
    results.write_text("".join(json.dumps(row.to_dict()) + "\n" for row in report.rows))
    yield folder / "op.tsv", folder / "oo.tsv", folder / "store", results


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_small_dataset(tmp_path_factory.mktemp("visogender"))


@pytest.fixture(scope="module")
def vlmeval(small: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exports") / "vlmeval"
    export_harness(
        HarnessExportConfig(source=(small["OP"], small["OO"]), format="vlmevalkit", out=out, seed=3)
    )
    return out


@pytest.fixture(scope="module")
def lmms(small: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exports") / "lmms"
    export_harness(
        HarnessExportConfig(source=(small["OP"], small["OO"]), format="lmms-eval", out=out, seed=3)
    )
    return out
