"""``--html`` of ``contrastkit evaluate`` and ``contrastkit report``: the offline HTML
report of what was evaluated or compared (:mod:`contrastkit.evaluators.html`)."""

from __future__ import annotations

from pathlib import Path

from contrastkit.cli.common import console, plain

__all__ = ["compared_results", "html_report"]


def compared_results(results: list[Path], html: bool) -> tuple[Path, ...]:
    """The results the side-by-side tables take: with ``--html``, not the dataset audits
    given too (the HTML report gives each its own page and gallery; the tables compare
    models)."""
    if not html:
        return tuple(results)
    from contrastkit.evaluators.html.gallery_audit import audit_file

    return tuple(path for path in results if audit_file(path) is None)


def html_report(results: list[Path], out: Path, as_json: bool, store: Path | None) -> None:
    """``--html``: write the HTML report of ``results`` into ``out`` (image URLs read
    from ``store``), say where."""
    from contrastkit.evaluators.html import HtmlReportConfig, write_html_report

    config = HtmlReportConfig(results=tuple(results), out=out, store=store)
    report = write_html_report(config)
    if not as_json:
        console.print(plain(f"HTML report: {report.index}"), highlight=False)
