"""The reports' markdown as HTML (the HTML report's result pages): tables, notes, lists
and plots as the report modules write them, and every text escaped, so a model or file
name cannot inject markup into a page."""

from __future__ import annotations

from contrastkit.evaluators.html.markdown import markdown_html
from contrastkit.text import markdown_table


def test_a_report_table_becomes_an_html_table_with_escaped_cells() -> None:
    table = "\n".join(markdown_table(["model", "bias@2"], [["<b>x</b> | y", "-0.25"]], align="lr"))
    html = markdown_html(table)
    assert html.startswith('<div class="table-wrap"><table>')
    assert '<th scope="col">model</th>' in html
    assert "<td>&lt;b&gt;x&lt;/b&gt; | y</td><td>-0.25</td>" in html


def test_notes_lists_headings_and_inline_markup() -> None:
    text = (
        "# Title\n\n## Section <script>\n\n"
        "> **Random weights.** m has random weights.\n\n"
        "- one `code <x>`\n- two *it*\n  continued\n\nA [link](plots/a.svg) here."
    )
    html = markdown_html(text)
    assert "<h2>Title</h2>" in html and "<h3>Section &lt;script&gt;</h3>" in html
    assert "<blockquote><p><strong>Random weights.</strong> m has random weights." in html
    assert "<li>one <code>code &lt;x&gt;</code></li><li>two <em>it</em> continued</li>" in html
    assert "<p>A link here.</p>" in html  # links to files beside the markdown: text only
    assert "<script>" not in html


def test_an_image_is_what_the_callback_makes_of_it() -> None:
    seen = []

    def image(title: str, target: str) -> str:
        seen.append((title, target))
        return "<svg></svg>"

    html = markdown_html("![bias plot](plots/contrast_bias.png)", image=image)
    assert seen == [("bias plot", "plots/contrast_bias.png")] and "<svg></svg>" in html
