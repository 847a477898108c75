"""``contrastkit build stereoset`` (VLStereoSet Sec. 3.2), its probe set through ``urls
check`` / ``urls maintain``, and ``contrastkit export stereotype`` read back by
``load_probe_set``."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrastkit.builders.export import ExportStereotypeConfig, export_stereotype
from contrastkit.builders.stereoset import (
    PAPER_TABLE1,
    StereoSetConfig,
    attribute_term,
    build_stereoset,
)
from contrastkit.cli import app
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.probes import (
    ProbeRow,
    is_probe_set,
    load_probe_set,
    read_probes,
    write_probes,
)
from contrastkit.store import ImageStore
from loopback import LoopbackServer, static
from stereoset_data import BALANCED, COUNTS, expected_rows, make_probe_fixture, stereoset_json

runner = CliRunner()


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_probe_fixture(tmp_path_factory.mktemp("stereoset"))


def _build(fixture: tuple[Path, Path, Path], out: Path, **options: object) -> object:
    json_path, images, _ = fixture
    return build_stereoset(StereoSetConfig(stereoset=json_path, images=images, out=out,
                                           **options))  # type: ignore[arg-type]  # fmt: skip


def _expected(fixture: tuple[Path, Path, Path], out: Path) -> list[ProbeRow]:
    """The fixture's rows with their image paths as a build into ``out`` writes them:
    the table's names, of the copies in ``out``."""
    return expected_rows("images/")


def test_the_unbalanced_build_holds_every_verified_image(
    fixture: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "build"
    result = _build(fixture, out, balance=False)
    rows = read_probes(out / "probes.tsv")
    # the images are copied into the build folder, under the names the table gives
    assert rows == _expected(fixture, out)
    for row in rows:
        local = row.local_image()
        assert local is not None and local.parent.parent == out
        assert local.read_bytes() == (fixture[2].parent / row.image).read_bytes()
    report = json.loads((out / "build.json").read_text())
    assert report == result.report()  # type: ignore[attr-defined]
    before = report["counts"]["before_balancing"]
    assert {c: (v["stereotype"], v["anti-stereotype"]) for c, v in before.items()} == COUNTS
    assert report["counts"]["after_balancing"] == before
    assert report["paper_table1"] == dict(PAPER_TABLE1) == {
        "gender": 486, "profession": 206, "race": 322, "religion": 14, "overall": 1028}  # fmt: skip
    # the gender targets have Table 4 neutral forms; the others have none by default
    assert report["without_neutral"] == {"gender": 0, "profession": 4, "race": 3, "religion": 2}
    overall = report["table"][-1]
    assert overall == {"category": "overall", "stereotype": 9, "anti-stereotype": 7,
                       "images": 16, "before_balancing": 16, "without_neutral": 9,
                       "paper_table1": 1028}  # fmt: skip


def test_balancing_is_per_category_and_seeded(
    fixture: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    every = {row.id: row for row in _expected(fixture, tmp_path / "s0")}
    selections = set()
    for seed in range(6):
        _build(fixture, tmp_path / f"s{seed}", seed=seed)
        rows = read_probes(tmp_path / f"s{seed}" / "probes.tsv")
        counts = Counter((row.category, row.label) for row in rows)
        for category, total in BALANCED.items():
            assert counts[(category, "stereotype")] == counts[(category, "anti-stereotype")]
            assert counts[(category, "stereotype")] * 2 == total
        # the smaller group is kept whole; every kept row is an input row, in input order
        anti = {r.id for r in every.values() if r.label == "anti-stereotype"}
        assert anti <= {r.id for r in rows}
        assert all(every[r.id] == r for r in rows)
        assert [r.id for r in rows] == [i for i in every if i in {r.id for r in rows}]
        selections.add(tuple(r.id for r in rows))
    _build(fixture, tmp_path / "again", seed=3)
    assert (tmp_path / "again" / "probes.tsv").read_bytes() == (
        tmp_path / "s3" / "probes.tsv"
    ).read_bytes()
    assert len(selections) > 1  # the seed decides which stereotypical images are dropped


def test_a_neutral_terms_file_extends_the_defaults(
    fixture: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    terms = tmp_path / "neutral.tsv"
    terms.write_text("chess player\tplayer\nsoftware developer\tdeveloper\n", encoding="utf-8")
    result = _build(fixture, tmp_path / "out", balance=False, neutral_terms=terms)
    rows = {row.id: row for row in read_probes(tmp_path / "out" / "probes.tsv")}
    assert rows["p-chess-1"].neutral_captions() == (
        "The player was nerdy.", "The player was athletic.")  # fmt: skip
    assert rows["g-brother-1"].neutral_stereotype_caption == "My Sibling is a messy person at home."
    assert result.without_neutral == {  # type: ignore[attr-defined]
        "gender": 0, "profession": 0, "race": 3, "religion": 2}  # fmt: skip


def test_attribute_terms_are_recovered_at_the_blank() -> None:
    assert attribute_term("My sister is BLANK.", "My sister is caring.") == "caring"
    assert attribute_term("BLANK people live in Iceland.", "Reserved people live in Iceland") == (
        "Reserved"
    )
    assert attribute_term("The chess player was BLANK.", "The  chess player was very smart!") == (
        "very smart"
    )
    assert attribute_term("My sister is BLANK.", "Your sister is caring.") is None
    assert attribute_term("My sister is BLANK.", "My sister is .") is None


def _images_with(fixture: tuple[Path, Path, Path], tmp_path: Path, line: str) -> Path:
    text = fixture[1].read_text(encoding="utf-8")
    images = fixture[1].parent / f"images-{tmp_path.name}.tsv"  # beside the photos
    images.write_text(text + line + "\n", encoding="utf-8")
    return images


@pytest.mark.parametrize(
    ("line", "field", "reason"),
    [("nobody\timages/00.jpg\tstereotype\ta1\tx", "statement_id", "is not an intrasentence"),
     ("g-sister\timages/00.jpg\tneutral\ta1\tx", "label", "not one of stereotype"),
     ("g-sister\timages/99.jpg\tstereotype\ta1\tx", "image", "image file not found"),
     ("g-sister\timages/00.jpg\tstereotype\ta1\tx", "image",
      "listed for item 'g-sister' on line 2"),
     ("g-sister\tgopher://h/x.jpg\tstereotype\ta1\tx", "image", "bad URL"),
     ("g-sister\timages/00.jpg\tstereotype", "annotator", "expected 5 tab-separated fields")],
)  # fmt: skip
def test_a_bad_images_row_is_located_and_nothing_is_written(
    fixture: tuple[Path, Path, Path], tmp_path: Path, line: str, field: str, reason: str
) -> None:
    images = _images_with(fixture, tmp_path, line)
    out = tmp_path / "out"
    with pytest.raises(DataFormatError) as caught:
        build_stereoset(StereoSetConfig(stereoset=fixture[0], images=images, out=out))
    error = caught.value
    assert (error.path, error.line, error.field) == (str(images), 18, field)
    assert reason in error.reason
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [(lambda d: d["data"]["intrasentence"][1].update(bias_type="age"),
      "data.intrasentence[1] (id 'g-grandfather').bias_type", "unknown bias type 'age'"),
     (lambda d: d["data"]["intrasentence"][2]["sentences"].pop(1),
      "data.intrasentence[2] (id 'g-brother').sentences", "no 'unrelated' sentence"),
     (lambda d: d["data"].pop("intrasentence"), "data.intrasentence", "not StereoSet's layout")],
)  # fmt: skip
def test_a_bad_stereoset_file_is_located(
    fixture: tuple[Path, Path, Path], tmp_path: Path, change: object, field: str, reason: str
) -> None:
    document = stereoset_json()
    change(document)  # type: ignore[operator]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        build_stereoset(StereoSetConfig(stereoset=bad, images=fixture[1], out=tmp_path / "o"))
    assert (caught.value.path, caught.value.field) == (str(bad), field)
    assert reason in caught.value.reason
    assert not (tmp_path / "o").exists()


def test_an_item_that_does_not_line_up_is_an_error_only_when_used(
    fixture: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    document = stereoset_json()
    items = document["data"]["intrasentence"]  # type: ignore[index]
    items[0]["sentences"][0]["sentence"] = "Her aunt is rude."  # g-sister: used
    items[7]["sentences"][2]["sentence"] = "A mother is loving."  # g-unused: no image
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        build_stereoset(StereoSetConfig(stereoset=bad, images=fixture[1], out=tmp_path / "o"))
    assert (caught.value.path, caught.value.line) == (str(fixture[1]), 2)
    reason = caught.value.reason  # names the images row, then the StereoSet sentence
    assert f"{bad}: field" in reason and "(id 'g-sister').sentences[0].sentence" in reason
    assert "'Her aunt is rude.' does not line up with the context 'My sister is BLANK.'" in reason
    assert not (tmp_path / "o").exists()
    items[0]["sentences"][0]["sentence"] = "My sister is rude."
    bad.write_text(json.dumps(document), encoding="utf-8")
    result = build_stereoset(StereoSetConfig(stereoset=bad, images=fixture[1], out=tmp_path / "o"))
    assert result.unusable_items == ["g-unused"]
    assert json.loads((tmp_path / "o" / "build.json").read_text())[
        "stereoset_items_unusable"] == ["g-unused"]  # fmt: skip


def test_unknown_categories_are_config_errors(fixture: tuple[Path, Path, Path]) -> None:
    with pytest.raises(ConfigError, match="categories: unknown category 'age'"):
        StereoSetConfig(stereoset=fixture[0], images=fixture[1], out=Path("x"),
                        categories="gender,age")  # type: ignore[arg-type]  # fmt: skip


def test_the_command_prints_counts_beside_the_papers(
    fixture: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    json_path, images, _ = fixture
    out = tmp_path / "cli"
    args = ["build", "stereoset", "--stereoset", str(json_path), "--images", str(images),
            "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    cells = [[cell.strip() for cell in line.strip().strip("│").split("│")]
             for line in result.output.splitlines() if line.startswith("│")]  # fmt: skip
    table = {row[0]: row[1:] for row in cells}
    # stereotype, anti-stereotype, images, before balancing, no neutral form, paper
    assert table["gender"] == ["3", "3", "6", "7", "0", "486"]
    assert table["race"] == ["1", "1", "2", "3", "2", "322"]
    assert table["overall"] == ["7", "7", "14", "16", "8", "1028"]
    assert "14 images kept, balanced with seed 0." in result.output
    as_json = runner.invoke(app, [*args, "--no-balance", "--categories", "gender", "--json"])
    report = json.loads(as_json.output)
    assert report["rows"] == 7 and report["skipped_other_categories"] == 9
    assert report["parameters"]["balance"] is False
    missing = runner.invoke(app, ["build", "stereoset", "--stereoset", str(tmp_path / "no.json"),
                                  "--images", str(images), "--out", str(out)])  # fmt: skip
    assert missing.exit_code == 2 and "no.json" in missing.output


# ------------------------------------------------------------- URL checks and the export


@pytest.fixture(scope="module")
def web_set(
    fixture: tuple[Path, Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LoopbackServer, Path]]:
    """The fixture's probe set with its first six images served by a loopback server and
    the sixth URL gone (404); the other ten stay local files."""
    folder = fixture[2].parent
    rows = read_probes(fixture[2])
    routes = {f"/{n:02d}.jpg": static((folder / "images" / f"{n:02d}.jpg").read_bytes())
              for n in range(5)}  # fmt: skip
    routes["/gone.jpg"] = static(b"", "text/plain", 404)
    with LoopbackServer(routes) as server:
        web = [dataclasses.replace(row, image=server.url(f"/{n:02d}.jpg" if n < 5 else "/gone.jpg"))
               for n, row in enumerate(rows[:6])]  # fmt: skip
        path = tmp_path_factory.mktemp("web") / "web.tsv"
        write_probes(web + rows[6:], path)
        shutil.copytree(folder / "images", path.parent / "images")
        yield server, path


def test_urls_check_takes_a_probe_set_keyed_by_id(
    web_set: tuple[LoopbackServer, Path], tmp_path: Path
) -> None:
    server, probes = web_set
    store, results = tmp_path / "store", tmp_path / "checks.jsonl"
    out = runner.invoke(app, ["urls", "check", str(probes), "--allow-private", "--store",
                              str(store), "--results", str(results), "--json"])  # fmt: skip
    assert out.exit_code == 1, out.output  # one URL is gone
    report = json.loads(out.output)
    assert report["rows"] == 6 and report["status_counts"] == {"http_error": 1, "ok": 5}
    checked = [(r["idx"], r["line"], r["status"]) for r in report["results"]]
    assert checked == [("g-sister-1", 2, "ok"), ("g-sister-2", 3, "ok"), ("g-sister-3", 4, "ok"),
                       ("g-grandfather-1", 5, "ok"), ("g-grandfather-2", 6, "ok"),
                       ("g-grandfather-3", 7, "http_error")]  # fmt: skip
    assert ImageStore(store).sha_for_url(server.url("/00.jpg")) is not None

    # the export embeds URL images from the store and local files as they are
    rows = read_probes(probes)
    with pytest.raises(DataFormatError, match="has no image for this URL") as caught:
        export_stereotype(ExportStereotypeConfig(source=probes, out=tmp_path / "x", store=store))
    assert (caught.value.line, caught.value.field) == (7, "image")
    export = export_stereotype(ExportStereotypeConfig(
        source=probes, out=tmp_path / "export", store=store, checks=results,
        skip_missing=True))  # fmt: skip
    dataset = export.configs["stereotype"]["test"]
    assert dataset.num_rows == 15
    assert export.metadata["skipped_missing_images"] == {"stereotype": ["g-grandfather-3"]}
    back = load_probe_set(tmp_path / "export")
    assert back == [row for row in rows if row.id != "g-grandfather-3"]
    first = dataset.with_format("arrow")[0:1].column("image")[0].as_py()["bytes"]
    assert first == (probes.parent / "images" / "00.jpg").read_bytes()
    card = (tmp_path / "export" / "README.md").read_text()
    assert "| http_error | 1 |" in card and "| ok | 5 |" in card


def test_urls_maintain_records_a_probe_set_and_leaves_it_as_it_is(
    web_set: tuple[LoopbackServer, Path], tmp_path: Path
) -> None:
    _, probes = web_set
    before = probes.read_bytes()
    out = runner.invoke(app, ["urls", "maintain", str(probes), "--allow-private", "--db",
                              str(tmp_path / "state.sqlite"), "--report",
                              str(tmp_path / "report.md")])  # fmt: skip
    assert out.exit_code == 1, out.output  # degraded: one URL is gone
    assert probes.read_bytes() == before
    report = (tmp_path / "report.md").read_text()
    assert "g-grandfather-3" in report and "g-sister-1" not in report


def test_export_round_trip_and_card(fixture: tuple[Path, Path, Path], tmp_path: Path) -> None:
    build = tmp_path / "build"
    _build(fixture, build)
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", "stereotype", str(build), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "stereotype/test: 14 rows" in result.output
    rows = read_probes(build / "probes.tsv")
    back = load_probe_set(out)
    assert back == rows and is_probe_set(out)
    assert back[0].image_ref.startswith("dataset:") and back[0].dataset_split == "test"
    assert load_probe_set(out / "saved" / "stereotype") == rows
    card = (out / "README.md").read_text()
    assert "license: cc-by-sa-4.0" in card and "CC BY-SA 4.0" in card
    assert "| gender | 3 | 3 | 6 | 486 |" in card and "| overall | | | 14 | 1,028 |" in card
    assert "seed 0" in card and "gender 4 / 3" in card  # the balancing, from build.json
    assert "`public domain`: 14 image(s)" in card
    metadata = json.loads((out / "build_metadata.json").read_text())
    assert metadata["kind"] == "stereotype" and metadata["category_totals"]["race"] == 2
