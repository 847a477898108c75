"""The two URL jobs called from Python with their configs (no command line): a loopback
server, real files, a real store; and the configs' validation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from contrastkit.curation.image_limits import ImageLimits
from contrastkit.curation.integrity import URLCheckJobConfig, check_dataset_urls
from contrastkit.curation.maintenance import MaintainConfig, RetirementPolicy, maintain
from contrastkit.curation.urls import CheckConfig, URLCheck
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.schema import Context, Gender
from contrastkit.store import ImageStore
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import LoopbackServer, jpeg_bytes, static

M, F = Gender.MASCULINE, Gender.FEMININE
NETWORK = CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0, total_timeout=5)


def photo(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (80, 80, 3), dtype=np.uint8)
    return jpeg_bytes(Image.fromarray(pixels))


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    routes = {f"/{n}.jpg": static(photo(n)) for n in range(1, 5)}
    routes["/gone.jpg"] = static(b"", "text/plain", 404)
    with LoopbackServer(routes) as running:
        yield running


def oo_file(server: LoopbackServer, path: Path, *routes: str) -> Path:
    genders = (M, M, F, F)
    rows = [make_row("doctor", genders[i % 4], n=i + 1, url=server.url(route))
            for i, route in enumerate(routes)]  # fmt: skip
    write_visogender_tsv(path, rows, Context.OO)
    return path


def test_check_dataset_urls_reads_checks_stores_and_writes_results(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = oo_file(server, tmp_path / "oo.tsv", "/1.jpg", "/2.jpg", "/gone.jpg", "/1.jpg")
    results = tmp_path / "out" / "results.jsonl"
    config = URLCheckJobConfig(
        files=(tsv,), network=NETWORK, store=tmp_path / "store", results=results
    )
    totals: list[int] = []
    seen: list[URLCheck] = []
    report = check_dataset_urls(config, on_start=totals.append, on_result=seen.append)

    distinct = {server.url(route) for route in ("/1.jpg", "/2.jpg", "/gone.jpg")}
    assert totals == [3] and sorted(r.url for r in seen) == sorted(distinct)
    assert report.files == [str(tsv)] and not report.ok
    assert report.status_counts() == {"ok": 3, "http_error": 1}
    assert [(g.kind, g.items) for g in report.duplicates] == [("exact", ("OO_1", "OO_4"))]
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(r["idx"], r["status"]) for r in lines] == [
        ("OO_1", "ok"), ("OO_2", "ok"), ("OO_3", "http_error"), ("OO_4", "ok")
    ]  # fmt: skip
    assert ImageStore(tmp_path / "store").sha_for_url(server.url("/2.jpg")) == lines[1]["sha256"]


def test_maintain_reads_the_files_itself_and_writes_the_default_report(
    server: LoopbackServer, tmp_path: Path
) -> None:
    tsv = oo_file(server, tmp_path / "oo.tsv", "/1.jpg", "/2.jpg", "/3.jpg", "/gone.jpg")
    config = MaintainConfig(files=(str(tsv),), db=tmp_path / "state" / "db.sqlite",  # type: ignore[arg-type]
                            network=NETWORK, per_cell=1)  # fmt: skip
    assert config.files == (tsv,) and config.report_path == tmp_path / "state" / (
        "maintenance_report.md"
    )
    totals: list[int] = []
    result = maintain(config, on_start=totals.append)
    assert totals == [4] and result.exit_code == 1
    assert [(r.ref.idx, r.status) for r in result.rows if not r.healthy] == [("OO_4", "http_error")]
    assert result.rewritten == [str(tsv)] and "http_error:404" in tsv.read_text()
    assert result.report_path == str(config.report_path)
    assert "Outcome: **degraded**" in config.report_path.read_text()


def test_two_files_sharing_a_row_id_is_a_data_error(server: LoopbackServer, tmp_path: Path) -> None:
    first = oo_file(server, tmp_path / "a.tsv", "/1.jpg")
    second = oo_file(server, tmp_path / "b.tsv", "/2.jpg")
    config = MaintainConfig(files=(first, second), db=tmp_path / "db.sqlite", network=NETWORK)
    before = sum(server.hits.values())
    with pytest.raises(DataFormatError, match="row ID OO_1 is also on") as caught:
        maintain(config)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(second), 2, "IDX")
    assert sum(server.hits.values()) == before and not (tmp_path / "db.sqlite").exists()


def test_a_state_database_of_a_newer_version_is_a_state_error(
    server: LoopbackServer, tmp_path: Path
) -> None:
    import sqlite3

    tsv = oo_file(server, tmp_path / "oo.tsv", "/1.jpg")
    db = tmp_path / "db.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    with pytest.raises(StateError, match="newer contrastkit"):
        maintain(MaintainConfig(files=(tsv,), db=db, network=NETWORK))


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: URLCheckJobConfig(files=()), "files"),
        (lambda: URLCheckJobConfig(files=3), "files"),  # type: ignore[arg-type]
        (lambda: URLCheckJobConfig(files=(Path("a.tsv"),), near_distance=65), "near_distance"),
        (lambda: URLCheckJobConfig(files=(Path("a.tsv"),), network="fast"), "network"),  # type: ignore[arg-type]
        (lambda: MaintainConfig(files=(Path("a.tsv"),), db=Path("s.db"), per_cell=0), "per_cell"),
        (lambda: MaintainConfig(files=(), db=Path("s.db")), "files"),
        (lambda: MaintainConfig(files=(Path("a.tsv"),), db=Path("a.tsv")), "db"),
        (lambda: MaintainConfig(files=(Path("a.tsv"),), db=Path("s.db"), near_distance=-2),
         "near_distance"),
        (lambda: RetirementPolicy(failures=0), "policy.failures"),
        (lambda: RetirementPolicy(days=-1), "policy.days"),
        (lambda: CheckConfig(concurrency=0), "concurrency"),
        (lambda: CheckConfig(read_timeout=0), "read_timeout"),
        (lambda: CheckConfig(retries=-1), "retries"),
        (lambda: CheckConfig(allowed_networks=("10.0.0.0/33",)), "allowed_networks"),
        (lambda: CheckConfig(resolve=(("images.example.org", "not-an-ip"),)), "resolve"),
        (lambda: CheckConfig(user_agent="a\r\nX-Injected: 1"), "user_agent"),
        (lambda: ImageLimits(max_bytes=0), "limits.max_bytes"),
    ],
)  # fmt: skip
def test_a_bad_config_value_is_a_config_error_naming_the_field(build: Any, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}: ") as caught:
        build()
    assert isinstance(caught.value, ValueError)  # except ValueError still catches it
