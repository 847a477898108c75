"""The HTML report job: read the results (the readers ``contrastkit report`` uses), write
the comparison, render the pages from the templates shipped as package data, copy the
stylesheet and script beside them."""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

from contrastkit.config import require
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.evaluation import as_strings
from contrastkit.evaluators.html.cards import Entry, Gallery
from contrastkit.evaluators.html.galleries import (
    Drawing,
    contrast_gallery,
    decisions_gallery,
    short_model,
    stereotype_gallery,
    visogender_gallery,
)
from contrastkit.evaluators.html.gallery_audit import audit_entry, audit_file, audit_gallery
from contrastkit.evaluators.html.gallery_retrieval import visogender_retrieval_gallery
from contrastkit.evaluators.html.markdown import markdown_html
from contrastkit.evaluators.html.thumbs import Thumbnailer
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.store import default_image_store
from contrastkit.text import MISSING, UNDEFINED, format_number

__all__ = ["MIN_ITEMS", "HtmlReport", "HtmlReportConfig", "write_html_report"]

MIN_ITEMS = 30
"""A result over fewer items than this (queries, sources, images, resolution cases) is
flagged "few items": its intervals are wide and its figures move with a handful of
items."""

ASSETS = ("report.css", "report.js")
"""The stylesheet and script every page loads from ``assets/``."""


@dataclass(frozen=True)
class HtmlReportConfig:
    """What :func:`write_html_report` does, as one value (strings are taken as paths).

    Attributes:
        results: ``benchmark.json`` files, or the model folders ``evaluate`` wrote.
        out: the report's folder (created; pages in it are replaced).
        per_page: cards shown at a time in a gallery (the pager shows the rest).
        max_cards: the most cards a gallery keeps (its default order's first ones).
        thumb_size: the longest side of a thumbnail, in pixels.
        store: the image store VisoGender URLs are read from (``None``: the default
            store, :func:`contrastkit.store.default_image_store`, where evaluating the
            bundled sets fetched them, if it exists).

    Raises:
        ConfigError: no results, or a size that is not positive.
    """

    results: tuple[Path, ...]
    out: Path
    per_page: int = 48
    max_cards: int = 480
    thumb_size: int = 160
    store: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(map(Path, as_strings(self.results, "results"))))
        object.__setattr__(self, "out", Path(self.out))
        if self.store is not None:
            object.__setattr__(self, "store", Path(self.store))
        require(bool(self.results), "results", "give at least one benchmark.json or folder")
        for name in ("per_page", "max_cards", "thumb_size"):
            value = getattr(self, name)
            require(
                isinstance(value, int) and not isinstance(value, bool) and value > 0,
                name,
                f"a positive whole number, not {value!r}",
            )


@dataclass(frozen=True)
class HtmlReport:
    """What :func:`write_html_report` wrote.

    Attributes:
        out: the report's folder.
        index: its ``index.html``.
        pages: every page, the index first.
        cards: the cards of each gallery, by gallery page name.
        thumbnails: thumbnails written (images already there are not counted).
    """

    out: Path
    index: Path
    pages: tuple[Path, ...]
    cards: Mapping[str, int]
    thumbnails: int


def _entries(paths: Sequence[Path]) -> list[Entry]:
    from contrastkit.evaluators.report.results import benchmark_file
    from contrastkit.evaluators.tasks.registry import read_result
    from contrastkit.results.base import Result

    entries = []
    taken: set[str] = set()
    for path in paths:
        audit = audit_file(path)
        if audit is not None:
            entries.append(audit_entry(audit, taken))
            continue
        task, results = read_result(path)
        try:
            folder = benchmark_file(path).parent
        except DataFormatError:  # a harness_results.json (or its folder)
            folder = path.parent if path.is_file() else path
        headline = task.function("headline")(results)
        if isinstance(results, Result):  # a protocol task's typed result: its JSON here
            results = results.to_json()
        model = str(headline.get("model") or results.get("model") or folder.name)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{task.name}-{folder.name}").strip("-")
        while slug in taken:
            slug += "-2"
        taken.add(slug)
        entries.append(Entry(task.name, model, folder, results, headline, slug))
    return entries


def item_count(entry: Entry) -> int | None:
    """How many items the result is over: queries, sources, images or resolution cases
    (``None`` when the result does not say)."""
    for name in ("queries", "sources", "images"):
        value = entry.headline.get(name)
        if isinstance(value, int):
            return value
    metadata = entry.results.get("metadata") or {}
    for name in ("n_resolution_cases", "rows"):
        value = metadata.get(name)
        if isinstance(value, int):
            return value
    return None


def flags(entry: Entry) -> list[dict[str, str]]:
    """The warnings a page shows about a result: random weights, too few items."""
    found = []
    if entry.random_weights:
        note = entry.results.get("weights_note") or entry.headline.get("weights_note")
        found.append(
            {
                "kind": "random",
                "label": "random weights",
                "text": str(
                    note
                    or f"{entry.model} has random weights: these figures "
                    "are a pipeline check, not a measurement."
                ),
            }
        )
    n = item_count(entry)
    if n is not None and n < MIN_ITEMS:
        found.append(
            {
                "kind": "few",
                "label": f"few items (n = {n})",
                "text": f"{entry.model}: {n} items, fewer than {MIN_ITEMS}: the "
                "figures move with a handful of items and the intervals are wide.",
            }
        )
    return found


def headline_figures(headline: Mapping[str, Any], limit: int = 12) -> list[dict[str, str]]:
    """The headline's figures: ``name``, ``value`` and ``interval`` (``[low, high]``, or
    :data:`~contrastkit.text.MISSING` where the run computed none). A figure is a number
    ``x`` with its sibling ``x_ci``, or a node with a ``mean`` (and its ``mean_ci``); a
    result without any interval shows its means and its fractional numbers instead."""
    with_ci: list[dict[str, str]] = []
    without: list[dict[str, str]] = []

    def row(name: str, value: Any, ci: Any) -> None:
        if isinstance(ci, Mapping):
            interval = f"[{_fmt(ci.get('low'))}, {_fmt(ci.get('high'))}]"
            with_ci.append({"name": name, "value": _fmt(value), "interval": interval})
        else:
            without.append({"name": name, "value": _fmt(value), "interval": MISSING})

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, value in node.items():
            if str(key).endswith("_ci") or key in ("random_weights", "n", "sigma"):
                continue
            if isinstance(value, Mapping) and "mean" in value:
                row(f"{prefix}{key} (mean)", value.get("mean"), value.get("mean_ci"))
            elif isinstance(value, Mapping):
                walk(value, f"{prefix}{key} · ")
            elif isinstance(value, float) or (value is None and f"{key}_ci" in node):
                row(f"{prefix}{key}", value, node.get(f"{key}_ci"))

    walk(headline, "")
    return (with_ci or without)[:limit]


def _fmt(value: Any) -> str:
    return format_number(value, 3, missing=UNDEFINED)


def inline_svg(folder: Path, title: str, target: str) -> str:
    """The SVG version of the plot ``target`` (a PNG beside a markdown report) as inline
    markup, or a line saying it was not found."""
    path = (folder / target).with_suffix(".svg")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f'<p class="missing">Plot {html.escape(target)} not found.</p>'
    start = text.find("<svg")
    if start < 0:
        return f'<p class="missing">Plot {html.escape(target)} is not an SVG.</p>'
    label = html.escape(title or path.stem, quote=True)
    svg = text[start:].replace("<svg", f'<svg role="img" aria-label="{label}"', 1)
    return f'<figure class="plot">{svg}<figcaption>{html.escape(title)}</figcaption></figure>'


def write_html_report(config: HtmlReportConfig) -> HtmlReport:
    """Write the HTML report of the results ``config`` names into ``config.out``.

    Raises:
        ResourceError: ``out`` cannot be written (checked before anything is read).
        DataFormatError: a missing or malformed results file.
    """
    from contrastkit.evaluators.job import ReportConfig, compare_results
    from contrastkit.text import template_environment

    out = config.out
    check_writable(out, "the HTML report")
    entries = _entries(config.results)
    out.mkdir(parents=True, exist_ok=True)
    benchmarks = tuple(p for p in config.results if audit_file(p) is None)
    comparison = (
        compare_results(ReportConfig(results=benchmarks, out=out / "comparison.md")).markdown
        if benchmarks
        else "No evaluation result to compare: the report shows audits only."
    )
    thumbs = Thumbnailer(out, config.thumb_size)
    store = config.store
    if store is None and default_image_store().is_dir():
        store = default_image_store()
    found = galleries(entries, Drawing(thumbs, config.max_cards, store))
    environment = template_environment(__package__ or "", "templates", html=True)
    nav = [{"href": "index.html", "label": "Overview"}]
    nav += [{"href": f"{g.slug}.html", "label": g.title.split(":")[0]} for g in found]
    nav += [
        {"href": f"result-{e.slug}.html", "label": f"{e.task}: {short_model(e.model)}"}
        for e in entries
    ]
    common = {"nav": nav}
    pages: list[Path] = []

    def render(name: str, template: str, **values: Any) -> None:
        page = environment.get_template(template).render(**common, here=name, **values)
        atomic_write_text(out / name, page)
        pages.append(out / name)

    render(
        "index.html",
        "index.html.j2",
        title="contrastkit report",
        comparison=markdown_html(comparison, image=partial(inline_svg, out)),
        entries=[_entry_view(e) for e in entries],
        flags=_grouped_flags(entries),
        galleries=[
            {"href": f"{g.slug}.html", "title": g.title, "cards": len(g.cards), "total": g.total}
            for g in found
        ],
    )
    for entry in entries:
        report = entry.folder / ("audit.md" if entry.task == "audit" else "report.md")
        text = report.read_text(encoding="utf-8") if report.is_file() else ""
        says_random = "random weights" in text.lower()  # the report's own note shows it
        render(
            f"result-{entry.slug}.html",
            "result.html.j2",
            title=f"{entry.task}: {entry.model}",
            entry=_entry_view(entry),
            flags=[f for f in flags(entry) if f["kind"] != "random" or not says_random],
            body=_result_body(entry.folder, text),
        )
    for gallery in found:
        render(
            f"{gallery.slug}.html",
            "gallery.html.j2",
            title=gallery.title,
            gallery=gallery,
            per_page=config.per_page,
            flags=_grouped_flags(gallery.entries),
        )
    assets = out / "assets"
    assets.mkdir(exist_ok=True)
    for name in ASSETS:
        source = resources.files(__package__ or "") / "templates" / name
        with resources.as_file(source) as file:
            shutil.copyfile(file, assets / name)
    return HtmlReport(
        out, out / "index.html", tuple(pages), {g.slug: len(g.cards) for g in found}, thumbs.written
    )


def galleries(entries: Sequence[Entry], drawing: Drawing) -> list[Gallery]:
    """Every gallery the results give, in the order: contrast sets, VisoGender (pronoun
    resolution, then retrieval), decision probes, stereotype probes, audits' clusters."""
    found = [
        build(entries, drawing)
        for build in (
            contrast_gallery,
            visogender_gallery,
            visogender_retrieval_gallery,
            decisions_gallery,
            stereotype_gallery,
            audit_gallery,
        )
    ]
    return [gallery for gallery in found if gallery is not None]


def _result_body(folder: Path, markdown: str) -> str:
    """A result's ``report.md`` as HTML, its plots inline as SVG, and after it every
    other plot of its ``plots/`` folder the markdown names only in words."""
    inlined: set[str] = set()

    def image(title: str, target: str) -> str:
        inlined.add(Path(target).stem)
        return inline_svg(folder, title, target)

    body = markdown_html(_drop_title(markdown), image=image)
    rest = sorted(p for p in (folder / "plots").glob("*.svg") if p.stem not in inlined)
    if rest:
        body += "\n<h2>Figures</h2>\n" + "\n".join(
            inline_svg(folder, p.stem.replace("_", " "), f"plots/{p.name}") for p in rest
        )
    return body


def _grouped_flags(entries: Sequence[Entry]) -> list[dict[str, str]]:
    """One warning per kind for the index, naming every result it concerns."""
    kinds: dict[str, list[str]] = {}
    for entry in entries:
        for flag in flags(entry):
            kinds.setdefault(flag["kind"], []).append(f"{entry.task}: {short_model(entry.model)}")
    text = {
        "random": (
            "random weights",
            "their figures are a pipeline check, not a measurement of any real model",
        ),
        "few": (
            "few items",
            f"fewer than {MIN_ITEMS} items: their figures move with a handful "
            "of items and their intervals are wide",
        ),
    }
    return [
        {"kind": kind, "label": text[kind][0], "text": f"{'; '.join(names)}: {text[kind][1]}."}
        for kind, names in kinds.items()
    ]


def _drop_title(markdown: str) -> str:
    """The markdown without its first ``# `` title (the page has its own)."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("# "):
        return "\n".join(lines[1:])
    return markdown


class _EntryView(TypedDict):
    """What the pages show of one result: its task, model (and short name), page, flags,
    headline figures and how many items it is over."""

    task: str
    model: str
    short: str
    href: str
    flags: list[dict[str, str]]
    figures: list[dict[str, str]]
    n: int | None


def _entry_view(entry: Entry) -> _EntryView:
    return {
        "task": entry.task,
        "model": entry.model,
        "short": short_model(entry.model),
        "href": f"result-{entry.slug}.html",
        "flags": flags(entry),
        "figures": headline_figures(entry.headline),
        "n": item_count(entry),
    }
