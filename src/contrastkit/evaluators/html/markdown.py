"""The markdown the reports write, as HTML: the subset :mod:`contrastkit.text` and the
report modules produce (headings, pipe tables, bullet lists, block quotes, paragraphs,
inline code, bold, italics, links and images), every text HTML-escaped.

An image (``![title](plots/x.png)``) is handed to a callback that returns its HTML (the
HTML report inlines the SVG version of the plot), so the page needs no PNG.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

__all__ = ["markdown_html"]

_INLINE = re.compile(
    r"`([^`]+)`|\*\*(.+?)\*\*|\*(.+?)\*|!\[([^\]]*)\]\(([^)]+)\)|\[([^\]]+)\]\(([^)]+)\)"
)
_ALIGN = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")

ImageHTML = Callable[[str, str], str]
"""``(title, target) -> HTML`` of a markdown image."""


def _no_image(title: str, target: str) -> str:
    return f"<em>{html.escape(title)}</em>"


def _inline(text: str, image: ImageHTML, link: Callable[[str], str | None]) -> str:
    """One line's inline markup as HTML."""
    out: list[str] = []
    last = 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        last = match.end()
        code, bold, italic, alt, src, label, target = match.groups()
        if code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{_inline(bold, image, link)}</strong>")
        elif italic is not None:
            out.append(f"<em>{_inline(italic, image, link)}</em>")
        elif src is not None:
            out.append(image(alt, src))
        else:
            href = link(target)
            inner = _inline(label, image, link)
            out.append(f'<a href="{html.escape(href)}">{inner}</a>' if href else inner)
    out.append(html.escape(text[last:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", body)]


def _table(lines: list[str], inline: Callable[[str], str]) -> str:
    header = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:]]
    head = "".join(f'<th scope="col">{inline(cell)}</th>' for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{inline(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return (
        f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _block(lines: list[str], inline: Callable[[str], str]) -> str:
    """One block (lines without a blank one between them) as HTML."""
    first = lines[0]
    if first.startswith("#"):
        level = min(len(first) - len(first.lstrip("#")) + 1, 6)  # h1 is the page's title
        rest = "".join(_block(lines[1:], inline)) if len(lines) > 1 else ""
        return f"<h{level}>{inline(first.lstrip('#').strip())}</h{level}>{rest}"
    if len(lines) > 1 and first.lstrip().startswith("|") and _ALIGN.match(lines[1].strip()):
        return _table(lines, inline)
    if first.startswith(">"):
        inner = " ".join(line.lstrip(">").strip() for line in lines)
        return f"<blockquote><p>{inline(inner)}</p></blockquote>"
    if re.match(r"^\s*[-*] ", first):
        items: list[str] = []
        for line in lines:
            if re.match(r"^\s*[-*] ", line):
                items.append(re.sub(r"^\s*[-*] ", "", line))
            elif items:
                items[-1] += " " + line.strip()
        return "<ul>" + "".join(f"<li>{inline(item)}</li>" for item in items) + "</ul>"
    if first.startswith("```"):
        code = "\n".join(line for line in lines[1:] if not line.startswith("```"))
        return f"<pre><code>{html.escape(code)}</code></pre>"
    return f"<p>{inline(' '.join(line.strip() for line in lines))}</p>"


def markdown_html(
    text: str,
    *,
    image: ImageHTML = _no_image,
    link: Callable[[str], str | None] = lambda target: None,
) -> str:
    """``text`` (a report's markdown) as HTML.

    Args:
        text: the markdown.
        image: the HTML of an image, from its title and target (default: its title).
        link: the address a link's target gets in the HTML, or ``None`` to keep its text
            only (default: every link becomes its text: a report's links name files
            beside the markdown, which the HTML report does not copy).
    """

    def inline(line: str) -> str:
        return _inline(line, image, link)

    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return "\n".join(_block(lines, inline) for lines in blocks if lines)
