"""``contrastkit evaluate --data visogender``: the official sets bundled as package data,
their images checked into the user's image store, rows without an image left out and
listed; the error that names every missing row; output folders that never collide.

The image store is pre-filled from a loopback mirror of a subset of the official URLs
(tests/loopback.py serves real JPEGs cut from a public-domain photo; some mirror paths
404). Every other official host is resolved to 127.0.0.1 (``--resolve``), so the fetches
the command makes fail at once on the loopback interface and nothing leaves the machine.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.curation.urls import CheckConfig, check_urls
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.data import (
    VISOGENDER_FILES,
    ImageLoader,
    load_items,
    visogender_files,
)
from contrastkit.evaluators.job import EvaluateConfig, default_image_store, evaluate
from contrastkit.evaluators.report.results import model_slug
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.schema import Context
from contrastkit.store import ImageMeta, ImageStore
from contrastkit.tiny.clip import tiny_open_clip
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv
from eval_data import grace_hopper, write_small_dataset
from loopback import LoopbackServer, jpeg_bytes, static

ROOT = Path(__file__).parents[2]
runner = CliRunner()
FAST = ["--bootstrap", "20", "--subsample-runs", "20", "--baseline-runs", "40"]
FAST_SETTINGS = EvalConfig(bootstrap=20, subsample_runs=20, baseline_runs=40)
#: Occupations whose official rows the mirror serves (all their rows, both contexts).
MIRRORED = ("doctor", "teacher")


def official_rows() -> list[Any]:
    return [row for path in visogender_files() for row in read_visogender_tsv(path).rows]


# -- the bundled files ------------------------------------------------------------------


def test_the_official_sets_are_package_data() -> None:
    op, oo = visogender_files()
    assert (op.name, oo.name) == VISOGENDER_FILES
    assert op.parent == ROOT / "src" / "contrastkit" / "data" / "visogender"
    # the upstream bytes: CRLF, no line break after the last row, the paper's row counts
    assert (op.stat().st_size, oo.stat().st_size) == (83_865, 39_359)
    assert not op.read_bytes().endswith(b"\n") and b"\r\n" in oo.read_bytes()
    assert len(read_visogender_tsv(op).rows) == 460 and len(read_visogender_tsv(oo).rows) == 230
    source = (op.parent / "SOURCE.md").read_text(encoding="utf-8")
    for fact in ("github.com/oxai/visogender", "CC BY 4.0", "not to be used for training",
                 "885dc3fc985c10751b144c8c03b2e15b906aaa72",
                 "ecf224b2d5c6dd9b113fef2a44ec1967c4cdaf1e"):  # fmt: skip
        assert fact in source, fact
    # every bundled file is matched by a package-data pattern, so the wheel carries it
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["contrastkit"]
    package = ROOT / "src" / "contrastkit"
    for path in (op, oo, op.parent / "SOURCE.md"):
        name = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name


def test_the_default_store_is_in_the_user_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert default_image_store() == Path("/somewhere/cache/contrastkit/images")
    config = EvaluateConfig(data=("visogender",), models=("open_clip:ViT-B-32/openai",), out="o")
    assert config.fetching and config.skipping
    assert config.image_store == Path("/somewhere/cache/contrastkit/images")
    plain = EvaluateConfig(data=("data.tsv",), models=("open_clip:ViT-B-32/openai",), out="o")
    assert not plain.fetching and not plain.skipping and plain.image_store is None


# -- a store pre-filled from a loopback mirror ----------------------------------------------


@dataclass
class Mirror:
    store: Path
    stored: set[str]  # IDX of the rows whose image the store holds
    not_found: set[str]  # IDX of the mirrored rows whose mirror path answered 404
    hosts: set[str]  # every host of the official URLs


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """The rows of :data:`MIRRORED` served by a loopback mirror (every 6th answers 404),
    checked with the real URL checker, and their images filed in a store under the
    official URLs: what a mirror of VisoGender gives a user."""
    rows = [row for row in official_rows() if row.occupation in MIRRORED]
    photo = grace_hopper()
    routes = {}
    official = {}
    not_found = set()
    for n, row in enumerate(rows):
        path = f"/visogender/{n}.jpg"
        official[path] = row
        if n % 6 == 5:
            not_found.add(row.idx)  # no route: the mirror answers 404
            continue
        crop = photo.crop((3 * n, 2 * n, 3 * n + 200, 2 * n + 240)).resize((80, 96))
        routes[path] = static(jpeg_bytes(crop))
    folder = tmp_path_factory.mktemp("mirror") / "store"
    store = ImageStore(folder)
    with LoopbackServer(routes) as server:
        checks = check_urls(
            [server.url(path) for path in official],
            CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0),
            store=store,
        )
    stored = set()
    for check in checks:
        row = official[urlparse(check.url).path]
        if check.ok:
            assert check.sha256 and check.format and check.width and check.height and check.phash
            meta = ImageMeta(check.format, check.width, check.height, check.phash)
            store.put(store.read(check.sha256), meta, url=row.url)
            stored.add(row.idx)
        else:
            assert check.http_status == 404
    assert stored and not_found and stored.isdisjoint(not_found)
    hosts = {urlparse(row.url).hostname or "" for row in official_rows()}
    yield Mirror(folder, stored, not_found, hosts)


def _offline(mirror: Mirror) -> list[str]:
    """Network options that send every official host to the loopback interface (nothing
    listens on its port 443: each fetch is refused at once) and allow it."""
    options = ["--allow-network", "127.0.0.0/8", "--retries", "0", "--timeout", "5"]
    for host in sorted(mirror.hosts):
        options += ["--resolve", f"{host}:127.0.0.1"]
    return options


@pytest.mark.slow
def test_visogender_in_one_command(tmp_path: Path, mirror: Mirror, tiny_clip_spec: str) -> None:
    out = tmp_path / "results"
    before = {url for url, _ in ImageStore(mirror.store).urls()}
    result = runner.invoke(
        app,
        ["evaluate", "--data", "visogender", "--model", tiny_clip_spec, "--store",
         str(mirror.store), "--out", str(out), *_offline(mirror), *FAST],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    total = 460 + 230
    left_out = total - len(mirror.stored)
    printed = " ".join(result.output.split())  # however the console wrapped it
    assert f"left out {left_out} rows without an image" in printed
    assert f"fetched 0 of the {left_out} image URLs missing from {mirror.store}" in printed
    # nothing failed was added to the store, and what it held was not fetched again
    assert {url for url, _ in ImageStore(mirror.store).urls()} == before

    folder = out / model_slug(tiny_clip_spec)
    ((_, results),) = json.loads((folder / "benchmark.json").read_text()).items()
    skipped = results["skipped_rows"]
    assert skipped["count"] == left_out == len(skipped["rows"])
    by_idx = {row["idx"]: row for row in skipped["rows"]}
    assert set(by_idx).isdisjoint(mirror.stored)  # every stored image was scored
    gone = sorted(mirror.not_found)[0]
    assert by_idx[gone]["reason"].startswith("connection_error when fetched")
    assert by_idx[gone]["url"].startswith("https://") and by_idx[gone]["line"] >= 2
    assert by_idx[gone]["source"] in VISOGENDER_FILES
    assert results["metadata"]["skip_missing"] is True
    # the data is named, not the installation's path
    assert results["metadata"]["data"] == [f"visogender:{n}" for n in VISOGENDER_FILES]
    # the usual results, on the stored rows only: both contexts, both occupations
    stored_op = sum(1 for idx in mirror.stored if idx.startswith("OP"))
    stored_oo = len(mirror.stored) - stored_op
    assert results["resolution_bias"]["two_person_images"]["n"] == stored_op
    assert results["resolution_bias"]["single_person_images"]["n"] == stored_oo
    assert set(results["resolution_bias"]["per_occupation"]) == set(MIRRORED)
    assert results["retrieval_bias"]["context"] in ("OP", "OO")
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert f"**{left_out} rows were left out**" in report
    assert f"## Rows left out ({left_out})" in report
    assert f"| {gone} |" in report and by_idx[gone]["url"] in report
    assert str(ROOT / "src") not in report
    assert (folder / "raw_resolution.jsonl").is_file()


def test_without_skip_missing_the_error_names_every_missing_row(mirror: Mirror) -> None:
    items = load_items(list(visogender_files()))
    loader = ImageLoader(mirror.store)
    with pytest.raises(DataFormatError) as info:
        loader.check(items)
    message = str(info.value)
    missing = [i for i in items if i.row.idx not in mirror.stored]
    assert message.startswith(f"{missing[0].source}:{missing[0].row.line}:")
    assert f"{len(missing)} rows have no image available" in message
    for item in missing[:5]:
        assert f"{item.row.idx} ({item.image_ref})" in message
    assert f"and {len(missing) - 5} more" in message
    assert "contrastkit urls check" in message and "--skip-missing" in message
    # a URL that failed when fetched: the advice does not say to fetch it again
    gone = next(i for i in items if i.row.idx in mirror.not_found)
    with pytest.raises(DataFormatError) as info:
        loader.check([gone], {gone.image_ref: "http_error:404 when fetched"})
    assert "http_error:404 when fetched" in str(info.value)
    assert "fetching it again will not help" in str(info.value)
    assert "urls check" not in str(info.value) and "--skip-missing" in str(info.value)
    # the stored rows alone are complete
    loader.check([i for i in items if i.row.idx in mirror.stored])
    # skip-missing without fetching: each row left out says why
    kept, skipped = loader.available(items)
    assert {i.row.idx for i in kept} == mirror.stored
    assert [row.idx for row in skipped] == [i.row.idx for i in missing]
    assert {row.reason for row in skipped} == {f"URL not in the image store {mirror.store}"}


def test_rows_flagged_by_urls_maintain(tmp_path: Path, mirror: Mirror) -> None:
    """A maintained TSV: ``retired`` and ``content_changed`` rows are left out under
    skip-missing even when the store still holds an image for their URL; a row flagged
    ``http_error:404`` whose image is stored is scored, one whose image is not is left
    out saying so."""
    table = read_visogender_tsv(visogender_files()[1])  # OO
    rows = [r for r in table.rows if r.occupation in MIRRORED]
    stored = [r for r in rows if r.idx in mirror.stored]
    missing = next(r for r in rows if r.idx in mirror.not_found)
    flagged = [
        replace(stored[0], error_codes="http_error:404; retired"),
        replace(stored[1], error_codes="content_changed"),
        replace(stored[2], error_codes="checked by hand; http_error:404"),
        replace(missing, error_codes="http_error:404"),
        *stored[3:],
    ]
    path = tmp_path / "maintained_OO.tsv"
    write_visogender_tsv(path, flagged, Context.OO)
    items = load_items([path])
    kept, skipped = ImageLoader(mirror.store).available(items)
    reasons = {row.idx: row.reason for row in skipped}
    assert reasons == {
        stored[0].idx: "flagged retired by `urls maintain`",
        stored[1].idx: "flagged content_changed by `urls maintain`",
        missing.idx: "flagged http_error:404 by `urls maintain`; not in the image store",
    }
    assert [i.row.idx for i in kept] == [stored[2].idx] + [r.idx for r in stored[3:]]
    # without skipping, the flagged row without an image is an error that does not
    # send the user to fetch it again
    with pytest.raises(DataFormatError, match="fetching it again will not help"):
        ImageLoader(mirror.store).check(items)


# -- output folders -------------------------------------------------------------------------


def test_model_slugs() -> None:
    # registry models and Hub ids keep their readable folder names
    assert model_slug("open_clip:ViT-B-32/openai") == "open_clip-ViT-B-32-openai"
    assert model_slug("blip:Salesforce/blip-image-captioning-large") == (
        "blip-Salesforce-blip-image-captioning-large"
    )
    # specs whose readable part drops something get a hash of the whole spec
    one, two = model_slug("open_clip:x1/ckpt/m"), model_slug("open_clip:x2/ckpt/m")
    assert one != two and one.startswith("open_clip-x1-ckpt-m-") and len(one.split("-")[-1]) == 8
    assert model_slug("open_clip:x1/ckpt/m") == one  # stable
    long = model_slug("hf-clip:org/" + "a" * 200)
    assert len(long) <= 64 + 9 and long != model_slug("hf-clip:org/" + "a" * 201)


@pytest.mark.slow
def test_specs_that_used_to_collide_write_to_different_folders(tmp_path: Path) -> None:
    data = write_small_dataset(tmp_path / "data")
    first = tiny_open_clip(tmp_path / "x1" / "ckpt", name="m", seed=1)
    second = tiny_open_clip(tmp_path / "x2" / "ckpt", name="m", seed=2)
    out = tmp_path / "results"
    result = evaluate(EvaluateConfig(
        data=(str(data["OP"]), str(data["OO"])), models=(first, second), out=out,
        settings=FAST_SETTINGS,
    ))  # fmt: skip
    folders = [entry.folder for entry in result.evaluations]
    assert folders[0] != folders[1]
    assert {f.name.rsplit("-", 1)[0] for f in folders} == {"open_clip-ckpt-m"}  # readable
    for spec, folder in zip((first, second), folders, strict=True):
        ((_, results),) = json.loads((folder / "benchmark.json").read_text()).items()
        assert results["metadata"]["model_name"] == spec  # each folder holds its model
        assert (folder / "report.md").is_file()
    assert result.comparison is not None
    comparison = result.comparison.read_text(encoding="utf-8")
    for spec, folder in zip((first, second), folders, strict=True):
        assert f"- `{spec}`: [{folder.name}/report.md]({folder.name}/report.md)" in comparison


def test_no_image_at_all_is_one_clear_error(tmp_path: Path) -> None:
    """An empty store and no fetching: nothing to score, said before any model loads (the
    spec names weights this machine does not have)."""
    (tmp_path / "store").mkdir()
    config = EvaluateConfig(
        data=("visogender",), models=("open_clip:ViT-B-32/openai",), out=tmp_path / "o",
        store=tmp_path / "store", fetch=False,
    )  # fmt: skip
    with pytest.raises(DataFormatError) as info:
        evaluate(config)
    message = str(info.value)
    assert "no row has its image available: all 690 were left out" in message
    assert "OP_1: URL not in the image store" in message and "--fetch" in message
    assert not (tmp_path / "o" / model_slug("open_clip:ViT-B-32/openai")).exists()
