"""The offline HTML report (``contrastkit report RESULTS... --html OUT``, ``evaluate
--html OUT``): a folder of static pages that opens from ``file://`` with no network, no
server and no CDN, and still works zipped and sent.

* ``index.html``: the models side by side (the tables of ``contrastkit report``, its
  plots as inline SVG), each result's headline figures with their intervals, each
  flagged where the run used random weights or too few items;
* ``result-<task>-<model>.html``: one result's report (its ``report.md`` with its plots
  inline as SVG);
* ``gallery-<task>.html``: the evidence (:mod:`.galleries`), sortable, filterable and
  paged by a little plain JavaScript (``assets/report.js``), WebP thumbnails of a fixed
  small size in ``thumbs/``, at most :attr:`HtmlReportConfig.max_cards` cards a gallery.

Example:
    >>> from contrastkit.evaluators.html import HtmlReportConfig, write_html_report
    >>> report = write_html_report(HtmlReportConfig(  # doctest: +SKIP
    ...     results=("results/open_clip-ViT-B-32-openai",), out="report"))
    >>> report.index  # doctest: +SKIP
    PosixPath('report/index.html')
"""

from __future__ import annotations

from contrastkit.evaluators.html.site import (
    MIN_ITEMS,
    HtmlReport,
    HtmlReportConfig,
    write_html_report,
)

__all__ = ["MIN_ITEMS", "HtmlReport", "HtmlReportConfig", "write_html_report"]
