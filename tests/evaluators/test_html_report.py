"""The offline HTML report (``contrastkit report RESULTS --html OUT``): pages written from
the fixtures' results, every image a local WebP thumbnail with alt text or a placeholder
saying why it is missing, nothing fetched from outside the folder, galleries capped; and
in a real browser (the system's Chromium driven by Playwright; skipped with the reason
where either is absent): no console error, no request leaving the folder, every image
decodes, sorting and filtering reorder the cards, the index is not blank."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from contrastkit.errors import ConfigError
from contrastkit.evaluators.html import HtmlReportConfig, write_html_report
from eval_data import write_small_dataset
from html_report_data import evaluated, invoke

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
DOCS_SCREENSHOT = Path(__file__).parents[2] / "docs" / "assets" / "html-report.png"
DOCS_GALLERY_SCREENSHOT = DOCS_SCREENSHOT.with_name("html-report-gallery.png")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    return evaluated(tmp_path_factory.mktemp("html-results"))


@pytest.fixture(scope="module")
def site(results: dict[str, list[Path]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report"
    folders = [p for found in results.values() for p in found]
    invoke("report", *folders, "--html", out)
    return out


def _images(page: str) -> list[dict[str, str]]:
    return [dict(re.findall(r'(\w+)="([^"]*)"', tag)) for tag in re.findall(r"<img\b[^>]*>", page)]


# -- the files ------------------------------------------------------------------------
def test_the_report_has_an_index_a_page_per_result_and_a_gallery_per_task(
    site: Path, results: dict[str, list[Path]]
) -> None:
    names = {p.name for p in site.glob("*.html")}
    assert {"index.html", "gallery-contrast.html", "gallery-visogender.html",
            "gallery-visogender-retrieval.html", "gallery-decisions.html",
            "gallery-stereotype.html"} <= names  # fmt: skip
    assert len([n for n in names if n.startswith("result-")]) == 4
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "random weights" in index and "few items" in index
    assert "<svg" in index  # the comparison plot, inline
    assert re.search(r"\[-?\d\.\d{3}, -?\d\.\d{3}\]", index)  # headline intervals
    for page in site.glob("result-*.html"):
        text = page.read_text(encoding="utf-8")
        assert "random weights" in text.lower(), page.name
        assert "<img" not in text, page.name  # no PNG: every plot is inline SVG
    tasks = {"vg": "visogender", "contrast": "contrast", "stereo": "stereotype",
             "decisions": "decisions"}  # fmt: skip
    for name, found in results.items():
        for folder in found:  # every plot of every result is on its page
            page = site / f"result-{tasks[name]}-{folder.name}.html"
            plots = list((folder / "plots").glob("*.svg"))
            assert plots and page.read_text(encoding="utf-8").count("<svg") == len(plots)


def test_every_image_is_a_local_webp_thumbnail_with_alt_text(site: Path) -> None:
    seen = 0
    for page in site.glob("*.html"):
        text = page.read_text(encoding="utf-8")
        # relative addresses only: the folder works moved, zipped and sent
        assert not re.search(r'(src|href)="(https?:|file:|/)', text), page.name
        for image in _images(text):
            assert image.get("alt"), (page.name, image)
            path = site / image["src"]
            assert path.suffix == ".webp" and path.is_file(), image["src"]
            with Image.open(path) as thumb:
                assert thumb.format == "WEBP" and max(thumb.size) <= 160
            seen += 1
    assert seen > 40
    contrast = (site / "gallery-contrast.html").read_text(encoding="utf-8")
    assert re.search(r'alt="Source \d+, masculine version; open_clip:\S+: score -?\d', contrast)
    # what each neutral query retrieved first, with its gender label
    assert re.search(r'alt="Retrieved 1 by open_clip:\S+: source \d, (masculine|feminine) version"',
                     contrast)  # fmt: skip


def test_evaluate_html_writes_the_report_of_what_it_evaluated(
    results: dict[str, list[Path]],
) -> None:
    [folder] = results["contrast"]
    site = folder.parents[1] / "site-evaluate"
    assert {p.name for p in site.glob("*.html")} == {
        "index.html",
        "gallery-contrast.html",
        f"result-contrast-{folder.name}.html",
    }
    assert len(list((site / "thumbs").glob("*.webp"))) == 10  # 5 sources, two versions


def test_contrast_cards_come_largest_gap_first(site: Path, results: dict[str, list[Path]]) -> None:
    [folder] = results["contrast"]
    raw = [json.loads(line) for line in (folder / "raw_contrast.jsonl").read_text().splitlines()]
    gaps = {r["source_id"]: abs(r["score_masculine"] - r["score_feminine"]) for r in raw}
    page = (site / "gallery-contrast.html").read_text(encoding="utf-8")
    shown = re.findall(r'<h2 class="card-title">Source (\d+)</h2>', page)
    assert shown == sorted(gaps, key=lambda s: -gaps[s])


def test_visogender_cards_show_candidates_choices_and_misresolutions(site: Path) -> None:
    page = (site / "gallery-visogender.html").read_text(encoding="utf-8")
    assert "Candidates: The doctor and his patient / The doctor and her patient" in page
    assert "misresolved" in page and re.search(r"chose (his|her|their), right: (his|her)", page)


def _retrieved(page: str) -> dict[str, list[tuple[str, str]]]:
    """``(image idx, perceived gender)`` of each retrieval card's strip, best first, by
    card title."""
    found = {}
    for card in page.split('<li class="card"')[1:]:
        title = re.search(r'<h2 class="card-title">([^<]*)</h2>', card)
        alts = re.findall(r"image (\w+), perceived (\w+), score", card)
        found[title.group(1) if title else ""] = alts
    return found


def test_visogender_retrieval_cards_show_each_querys_top_k_with_perceived_gender(
    results: dict[str, list[Path]], tmp_path: Path
) -> None:
    """Each occupation query's card shows the images the model scored highest for it
    (raw_retrieval.jsonl), best first, K the run's largest cut-off, each with its label."""
    [folder] = results["vg"]
    copy = tmp_path / "result"
    shutil.copytree(folder, copy)
    benchmark = json.loads((copy / "benchmark.json").read_text())
    [inner] = benchmark.values()
    inner["metadata"]["ks"] = [1, 3]  # a top 3 out of each occupation's 4 or 8 images
    (copy / "benchmark.json").write_text(json.dumps(benchmark))
    report = write_html_report(HtmlReportConfig(results=(copy,), out=tmp_path / "site"))
    page = (report.out / "gallery-visogender-retrieval.html").read_text(encoding="utf-8")
    raw = [json.loads(line) for line in (copy / "raw_retrieval.jsonl").read_text().splitlines()]
    queries: dict[str, list[dict[str, Any]]] = {}
    for record in raw:
        queries.setdefault(f"{record['occupation']} ({record['context']})", []).append(record)
    shown = _retrieved(page)
    assert set(shown) == set(queries) and report.cards["gallery-visogender-retrieval"] == 4
    for title, records in queries.items():
        best = sorted(records, key=lambda r: -r["score"])[:3]
        assert shown[title] == [(r["idx"], r["label"]) for r in best], title
        assert len(records) > 3
    assert "Query: The doctor and their patient" in page
    assert re.search(r"top 3</th><td>\d masculine, \d feminine \(of 8 images", page)
    assert page.count('class="placeholder"') == 0 and len(_images(page)) == 12


def test_a_missing_image_gets_a_placeholder_saying_so(
    results: dict[str, list[Path]], tmp_path: Path
) -> None:
    [folder] = results["stereo"]
    benchmark = json.loads((folder / "benchmark.json").read_text())
    probes = Path(benchmark["data"][0]).parent
    moved = tmp_path / "probes"
    shutil.copytree(probes, moved)
    (moved / "images" / "00.jpg").unlink()
    copy = tmp_path / "result"
    shutil.copytree(folder, copy)
    benchmark["data"] = [str(moved / Path(benchmark["data"][0]).name)]
    (copy / "benchmark.json").write_text(json.dumps(benchmark))
    report = write_html_report(HtmlReportConfig(results=(copy,), out=tmp_path / "site"))
    page = (report.out / "gallery-stereotype.html").read_text(encoding="utf-8")
    assert page.count('class="placeholder"') == 1
    assert "image not available" in page and "00.jpg" in page
    assert len(_images(page)) == report.cards["gallery-stereotype"] - 1


def test_visogender_urls_are_read_from_the_image_store(
    results: dict[str, list[Path]], tmp_path: Path
) -> None:
    """Rows that name URLs show the store's copy; a URL the store lacks is a placeholder
    saying so."""
    from contrastkit.store import ImageMeta, ImageStore

    def url(name: str) -> str:
        return f"https://images.example.org/{name}"

    data = write_small_dataset(tmp_path / "data", url_for=lambda n, path: url(path.name))
    store = ImageStore(tmp_path / "store")
    images = sorted((tmp_path / "data").glob("img_*.png"))
    for path in images[1:]:  # img_000.png is never fetched
        with Image.open(path) as image:
            meta = ImageMeta(format="PNG", width=image.width, height=image.height,
                             phash="0" * 16)  # fmt: skip
        store.put(path.read_bytes(), meta, url=url(path.name))
    [folder] = results["vg"]
    copy = tmp_path / "result"
    shutil.copytree(folder, copy)
    benchmark = json.loads((copy / "benchmark.json").read_text())
    [inner] = benchmark.values()
    inner["metadata"]["data"] = [str(data["OP"]), str(data["OO"])]
    (copy / "benchmark.json").write_text(json.dumps(benchmark))
    raw = copy / "raw_resolution.jsonl"
    records = [json.loads(line) for line in raw.read_text().splitlines()]
    for record in records:  # the keys a run on the URL rows writes
        record["key"] = record["key"].replace(record["image"], url(record["image"]), 1)
    raw.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = write_html_report(
        HtmlReportConfig(results=(copy,), out=tmp_path / "site", store=tmp_path / "store")
    )
    page = (report.out / "gallery-visogender.html").read_text(encoding="utf-8")
    assert report.cards["gallery-visogender"] == len(images)
    assert len(_images(page)) == len(images) - 1
    assert page.count('class="placeholder"') == 1 and "not in the image store" in page


def test_flipped_and_refused_decisions_are_cards(
    results: dict[str, list[Path]], tmp_path: Path
) -> None:
    [folder] = results["decisions"]
    copy = tmp_path / "result"
    shutil.copytree(folder, copy)
    flipped = {"key": "k1", "model": "m", "mode": "generate", "source": "0",
               "family": "occupation", "question": "lawyer/paralegal", "order": 0,
               "masculine": {"outcome": "choice", "option": 0, "text": "A"},
               "feminine": {"outcome": "choice", "option": 1, "text": "B"}}  # fmt: skip
    refused = {**flipped, "key": "k2", "source": "1", "family": "salary", "question": "salary",
               "masculine": {"outcome": "number", "value": 55000.0, "text": "55000"},
               "feminine": {"outcome": "refusal", "text": "I'm sorry"}}  # fmt: skip
    same = {**flipped, "key": "k3", "feminine": flipped["masculine"]}
    with (copy / "raw_decisions.jsonl").open("w") as handle:
        for record in (flipped, refused, same):
            handle.write(json.dumps(record) + "\n")
    report = write_html_report(HtmlReportConfig(results=(copy,), out=tmp_path / "site"))
    assert report.cards["gallery-decisions"] == 2
    page = (report.out / "gallery-decisions.html").read_text(encoding="utf-8")
    assert "lawyer (masculine-stereotyped option)" in page
    assert "paralegal (feminine-stereotyped option)" in page
    assert "refused: &#34;I&#39;m sorry&#34;" in page or 'refused: "I\'m sorry"' in page
    assert "refused one version" in page


def test_a_gallery_keeps_at_most_max_cards(results: dict[str, list[Path]], tmp_path: Path) -> None:
    report = write_html_report(
        HtmlReportConfig(results=tuple(results["contrast"]), out=tmp_path / "s", max_cards=2)
    )
    assert report.cards == {"gallery-contrast": 2}
    page = (report.out / "gallery-contrast.html").read_text(encoding="utf-8")
    assert "Showing the first 2 of 5 cards" in page


@pytest.mark.parametrize("field", ["per_page", "max_cards", "thumb_size"])
def test_sizes_must_be_positive(field: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=field):
        HtmlReportConfig(results=(tmp_path,), out=tmp_path, **{field: 0})  # type: ignore[arg-type]


# -- in a browser ---------------------------------------------------------------------
def _browser() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    return sync_playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_playwright = _browser()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def _open(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """A page showing ``path``, the console errors and the requests leaving its folder."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(120_000)  # a busy CI machine
    errors: list[str] = []
    outside: list[str] = []
    folder = path.parent.as_uri() + "/"
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:
        if r.request.url.startswith(folder):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, errors, outside


def test_every_page_loads_offline_without_errors_and_its_images_decode(
    site: Path, browser: Any
) -> None:
    for path in sorted(site.glob("*.html")):
        page, errors, outside = _open(browser, path)
        page.evaluate("""() => document.querySelectorAll('.card').forEach(c => c.hidden = false)""")
        page.evaluate(
            """() => document.querySelectorAll('img').forEach(i => i.loading = 'eager')"""
        )
        page.wait_for_function("() => [...document.images].every(i => i.complete)")
        broken = page.evaluate(
            "() => [...document.images].filter(i => i.naturalWidth === 0).map(i => i.src)"
        )
        assert not errors, (path.name, errors)
        assert not outside, (path.name, outside)
        assert not broken, (path.name, broken)
        page.close()


def _titles(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        ".card:not([hidden]) .card-title", "nodes => nodes.map(n => n.textContent)"
    )


def test_sorting_and_filtering_change_the_cards_shown_from_the_keyboard(
    site: Path, browser: Any, results: dict[str, list[Path]]
) -> None:
    [folder] = results["contrast"]
    raw = [json.loads(line) for line in (folder / "raw_contrast.jsonl").read_text().splitlines()]
    signed = {r["source_id"]: r["score_masculine"] - r["score_feminine"] for r in raw}
    page, errors, _ = _open(browser, site / "gallery-contrast.html")
    first = _titles(page)
    assert len(first) == 5
    page.select_option("#sort", "source:asc")
    assert _titles(page) == [f"Source {n}" for n in range(5)] != first
    # From the keyboard alone: Tab reaches the sort order, the arrow keys change it.
    page.focus("h1")
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "sort":
            break
    page.keyboard.press("ArrowUp")  # source id -> feminine version higher first
    assert page.input_value("#sort") == "signed:asc"
    assert _titles(page) == [f"Source {s}" for s in sorted(signed, key=signed.__getitem__)]
    page.keyboard.press("Tab")  # group, mark, then the search box
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.type("scene 3")
    assert _titles(page) == ["Source 3"]
    assert "1 to 1 of 1" in page.inner_text("#status")
    page.close()
    page, _, _ = _open(browser, site / "gallery-visogender.html")
    everything = _titles(page)
    page.select_option("#group", "doctor")
    doctors = _titles(page)
    assert doctors and len(doctors) < len(everything)
    assert all("doctor" in title for title in doctors)
    assert not errors
    page.close()


def test_paging_shows_per_page_cards_at_a_time(results: dict[str, list[Path]],
                                               tmp_path: Path, browser: Any) -> None:  # fmt: skip
    report = write_html_report(
        HtmlReportConfig(results=tuple(results["vg"]), out=tmp_path / "s", per_page=10)
    )
    page, errors, _ = _open(browser, report.out / "gallery-visogender.html")
    one = _titles(page)
    assert len(one) == 10 and "Page 1 of 3" in page.inner_text("#pager")
    page.click("#next")
    two = _titles(page)
    assert len(two) == 10 and not set(one) & set(two)
    assert not errors
    page.close()


def test_the_index_is_not_blank(site: Path, browser: Any, tmp_path: Path) -> None:
    page, _, _ = _open(browser, site / "index.html")
    shot = tmp_path / "index.png"
    page.screenshot(path=str(shot))
    page.close()
    with Image.open(shot) as image:
        colours = image.convert("L").getcolors(maxcolors=1 << 16)
    assert colours is not None and len(colours) > 20


@pytest.mark.slow
@pytest.mark.xdist_group("tiny_quickstart")
def test_the_quickstarts_report_opens_in_a_browser(
    browser: Any, tmp_path: Path, tiny_quickstart: Path
) -> None:
    """The quickstart's own HTML report (tiny models), as the docs show it (the session's
    ``contrastkit quickstart --out build/quickstart --tiny``, tests/conftest.py): every page
    loads offline, every image decodes. With CONTRASTKIT_UPDATE_SCREENSHOTS=1 the index's
    and the gallery's screenshots become the docs' figures."""
    site = tiny_quickstart / "build" / "quickstart" / "report"
    shots = {}
    for name in ("index", "gallery-contrast"):
        page, errors, outside = _open(browser, site / f"{name}.html")
        page.wait_for_function("() => [...document.images].every(i => i.complete)")
        assert not errors and not outside, (name, errors, outside)
        assert page.evaluate("() => [...document.images].every(i => i.naturalWidth > 0)")
        shots[name] = tmp_path / f"{name}.png"
        page.screenshot(path=str(shots[name]))
        page.close()
    if os.environ.get("CONTRASTKIT_UPDATE_SCREENSHOTS") == "1":
        DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shots["index"], DOCS_SCREENSHOT)
        shutil.copyfile(shots["gallery-contrast"], DOCS_GALLERY_SCREENSHOT)
    for figure in (DOCS_SCREENSHOT, DOCS_GALLERY_SCREENSHOT):
        assert figure.read_bytes()[:4] == b"\x89PNG" and figure.stat().st_size < 400_000


def test_the_zero_shot_analysis_refuses_html(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from contrastkit.cli import app

    result = CliRunner().invoke(app, [
        "evaluate", "--task", "zero-shot-disparity", "--data", str(tmp_path), "--model", "x",
        "--html", str(tmp_path / "site"),
    ])  # fmt: skip
    assert result.exit_code == 2
    assert "--html: the zero-shot analysis has no HTML report" in result.output
    assert not (tmp_path / "site").exists()


# -- the audit's context clusters -----------------------------------------------------
@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An audit of the shipped COCO sample (its HTML report too) and of a contrast set."""
    from contrast_data import contrast_export
    from contrastkit.samples import write_coco

    tmp = tmp_path_factory.mktemp("audits")
    coco = write_coco(tmp / "coco")
    invoke("audit", coco, "--out", tmp / "audit-coco", "--only", "composition,clusters",
           "--clusters", "3", "--html", tmp / "site")  # fmt: skip
    contrast = contrast_export(tmp / "contrast", sources=3)
    invoke("audit", contrast, "--out", tmp / "audit-contrast", "--only", "composition,clusters")
    return {"coco": coco, "audit-coco": tmp / "audit-coco", "site": tmp / "site",
            "audit-contrast": tmp / "audit-contrast"}  # fmt: skip


def test_the_audit_lists_each_clusters_first_members(audits: dict[str, Path]) -> None:
    from contrastkit.audit.clusters import ClusterSettings, context_clusters

    section = json.loads((audits["audit-coco"] / "audit.json").read_text())["clusters"]
    listed = [m for row in section["clusters"] for m in row["members"]]
    assert sum(row["size"] for row in section["clusters"]) == section["images"] == len(listed)
    for member in listed:  # a file inside the audited folder, named relative to it
        assert (audits["coco"] / member["file"]).is_file() and not Path(
            member["file"]
        ).is_absolute()
        assert member["label"] in ("masculine", "feminine")
    # bounded: at most members_per_cluster, the first in data order; size counts all
    found = context_clusters(
        [["A person in a kitchen."]] * 6, ["masculine", "feminine"] * 3,
        ClusterSettings(clusters=1, members=2), [{"image": str(n), "file": None} for n in range(6)],
    )  # fmt: skip
    assert found["members_per_cluster"] == 2
    [row] = found["clusters"]
    assert row["size"] == 6 and [m["image"] for m in row["members"]] == ["0", "1"]
    assert [m["label"] for m in row["members"]] == ["masculine", "feminine"]


def test_the_audit_gallery_shows_each_clusters_images(audits: dict[str, Path]) -> None:
    report = json.loads((audits["audit-coco"] / "audit.json").read_text())
    page = (audits["site"] / "gallery-audit-clusters.html").read_text(encoding="utf-8")
    cards = page.split('<li class="card"')[1:]
    assert len(cards) == report["clusters"]["M"]
    for row in report["clusters"]["clusters"]:
        [card] = [c for c in cards if f">Cluster {row['cluster']}:" in c]
        alts = re.findall(r'alt="Image (\w+) \((\w+)\), cluster (\d+) ', card)
        assert alts == [(m["image"], m["label"], str(row["cluster"])) for m in row["members"]]
        assert f"{row['factor_pp']:+.1f} pp" in card
    assert 'class="placeholder"' not in page
    assert len(_images(page)) == report["clusters"]["images"]
    assert {p.name for p in audits["site"].glob("*.html")} == {
        "index.html",
        "gallery-audit-clusters.html",
        "result-audit-audit-coco.html",
    }


def test_audits_and_evaluations_share_one_report(
    audits: dict[str, Path], results: dict[str, list[Path]], tmp_path: Path
) -> None:
    """A contrast set's members are read from its dataset; the audit is left out of the
    models' comparison and has its own page."""
    [folder] = results["vg"]
    audit = audits["audit-contrast"] / "audit.json"
    report = write_html_report(HtmlReportConfig(results=(folder, audit), out=tmp_path / "site"))
    page = (report.out / "gallery-audit-clusters.html").read_text(encoding="utf-8")
    assert re.findall(r'alt="Image (\d):masculine \(masculine\)', page) == ["0", "1", "2"]
    assert 'class="placeholder"' not in page and len(_images(page)) == 6
    assert report.cards["gallery-visogender-retrieval"] == 4
    index = (report.out / "index.html").read_text(encoding="utf-8")
    assert "audit: contrast" in index and "open_clip" in index
    result = (report.out / "result-audit-audit-contrast.html").read_text(encoding="utf-8")
    assert "<svg" in result  # the audit's plots, inline


def test_a_member_file_outside_the_audited_folder_is_never_read(
    audits: dict[str, Path], tmp_path: Path
) -> None:
    copy = tmp_path / "audit"
    shutil.copytree(audits["audit-coco"], copy)
    coco = tmp_path / "coco"
    shutil.copytree(audits["coco"], coco)
    report = json.loads((copy / "audit.json").read_text())
    first = report["clusters"]["clusters"][0]["members"][0]
    shutil.copyfile(coco / first["file"], tmp_path / "outside.jpg")  # a real image, beside it
    report["data"] = str(coco)
    first["file"] = "../outside.jpg"
    (copy / "audit.json").write_text(json.dumps(report))
    site = write_html_report(HtmlReportConfig(results=(copy,), out=tmp_path / "site")).out
    page = (site / "gallery-audit-clusters.html").read_text(encoding="utf-8")
    assert page.count('class="placeholder"') == 1 and "outside the data" in page
    assert len(_images(page)) == report["clusters"]["images"] - 1


def test_the_audit_report_opens_offline_and_sorts(audits: dict[str, Path], browser: Any) -> None:
    for path in sorted(audits["site"].glob("*.html")):
        page, errors, outside = _open(browser, path)
        page.wait_for_function("() => [...document.images].every(i => i.complete)")
        assert not errors and not outside, (path.name, errors, outside)
        assert page.evaluate("() => [...document.images].every(i => i.naturalWidth > 0)")
        page.close()
    page, errors, _ = _open(browser, audits["site"] / "gallery-audit-clusters.html")
    first = _titles(page)
    page.select_option("#sort", "cluster:asc")
    numbers = [int(re.match(r"Cluster (\d+)", t).group(1)) for t in _titles(page)]  # type: ignore[union-attr]
    assert numbers == sorted(numbers) and len(numbers) == len(first)
    page.select_option("#mark", "women over-represented")
    assert 0 < len(_titles(page)) < len(first)
    assert not errors
    page.close()
