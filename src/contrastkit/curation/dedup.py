"""Find rows that point at the same image.

Two kinds of duplicate can be found from the URLs alone:

* **exact**: the same URL string (surrounding spaces ignored);
* **canonical**: the same image resource reached through different URLs, such as one
  CDN image requested at two sizes. :func:`canonical_url` maps every URL to a key that
  is equal for such variants.

(Duplicates by content, same bytes or a perceptual-hash match, need the images and are
found by ``contrastkit urls check``.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "DROPPED_QUERY_PARAMS",
    "DuplicateGroup",
    "canonical_url",
    "find_duplicates",
]

#: Query parameters that choose a rendition (size, crop, quality, format, lazy loading)
#: or track a visit, and never which image is served. They are removed from the key.
#: ``q`` is deliberately kept: on some hosts (Google's thumbnail server) it *is* the image.
DROPPED_QUERY_PARAMS = frozenset(
    {
        # size and crop
        "w", "h", "width", "height", "dpr", "fit", "crop", "resize", "size", "scale",
        "maxwidth", "maxheight", "max_width", "max_height", "sz", "rect",
        # quality and encoding
        "auto", "cs", "fm", "format", "quality", "compress", "lossless", "strip",
        # lazy loading and cache busting
        "lazy", "loading", "cb",
        # CDN library tags
        "ixlib", "ixid",
        # tracking
        "usqp", "fbclid", "gclid",
    }
)  # fmt: skip

_TRACKING_PREFIXES = ("utm_",)
# WordPress / Jetpack image proxies: i0.wp.com/<host>/<path> serves <host>/<path>.
_WP_PROXY = re.compile(r"^i[0-9]\.wp\.com$")
# WordPress rendition suffixes: name-1024x575.jpg, name-scaled.jpg.
_WP_SIZE_SUFFIX = re.compile(r"-(?:\d+x\d+|scaled)(?=\.[A-Za-z0-9]+$)")
# Flickr size suffixes: <id>_<secret>_b.jpg, see flickr.com/services/api/misc.urls.html.
_FLICKR_SIZE_SUFFIX = re.compile(r"(/\d+_[0-9a-f]+)_(?:[sqtmnzcbhkoSQTMNZCBHKO]|3k|4k|5k|6k)(?=\.)")
# Flags Jetpack adds to proxied images; they say how the proxy fetches the original.
_WP_PROXY_FLAGS = frozenset({"ssl", "zoom", "strip", "quality"})
_FLICKR_HOST = re.compile(r"(^|\.)(static)?flickr\.com$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_url(url: str) -> str:
    """A key that is equal for URLs that serve the same image at different renditions.

    Rules, applied in order:

    1. the scheme and host are lower-cased, ``www.`` and default ports are dropped, and
       ``http`` and ``https`` are treated alike;
    2. WordPress/Jetpack proxies (``i0.wp.com/<host>/<path>``) are unwrapped, and their
       fetch flags (``ssl``, ``zoom``, ...) dropped;
    3. the fragment is dropped, and so are query parameters in
       :data:`DROPPED_QUERY_PARAMS` and ``utm_*`` tracking ones; the rest are sorted;
    4. the path is percent-decoded, and rendition suffixes are removed where the host
       is known to use them: WordPress ``-1024x575`` / ``-scaled`` before the extension
       (paths under ``/wp-content/``), Flickr size letters (``_b``, ``_z``, ...) after the
       photo secret (``*.flickr.com`` / ``*.staticflickr.com``).

    The key is for comparison only; it is not always a fetchable URL. Values that do not
    parse as URLs are returned stripped, unchanged otherwise.

    >>> canonical_url("https://images.pexels.com/photos/1/pexels-photo-1.jpeg?w=600&auto=compress")
    'images.pexels.com/photos/1/pexels-photo-1.jpeg'
    """
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return text
    host = parts.hostname.lower()
    path = unquote(parts.path) or "/"
    dropped: frozenset[str] = DROPPED_QUERY_PARAMS
    if _WP_PROXY.match(host) and path.count("/") >= 2:
        inner_host, _, inner_path = path.lstrip("/").partition("/")
        host, path = inner_host.lower(), "/" + inner_path
        dropped = DROPPED_QUERY_PARAMS | _WP_PROXY_FLAGS
    host = host.removeprefix("www.")
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    if "/wp-content/" in path:
        path = _WP_SIZE_SUFFIX.sub("", path)
    if _FLICKR_HOST.search(host):
        path = _FLICKR_SIZE_SUFFIX.sub(r"\1", path)
    kept = sorted(
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() not in dropped and not key.lower().startswith(_TRACKING_PREFIXES)
    )
    query = urlencode(kept)
    return urlunsplit(("", host, path, query, "")).lstrip("/")


T = TypeVar("T")


@dataclass(frozen=True)
class DuplicateGroup(Generic[T]):
    """Items that share a key, in input order."""

    kind: str
    key: str
    items: tuple[T, ...]


def find_duplicates(
    items: Iterable[tuple[T, str]],
    *,
    canonical: bool = True,
) -> list[DuplicateGroup[T]]:
    """Group items by URL.

    Args:
        items: pairs of (any item, e.g. a row reference; its URL).
        canonical: also group items whose URLs differ but share :func:`canonical_url`.

    Returns:
        ``exact`` groups (same stripped URL) and, when asked, ``canonical`` groups (same
        canonical key, at least two distinct URLs), each with two or more items, in order
        of first appearance. An item in an exact group appears in a canonical group too
        only when its key is shared with a different URL.
    """
    by_url: dict[str, list[T]] = defaultdict(list)
    by_key: dict[str, list[tuple[T, str]]] = defaultdict(list)
    for item, url in items:
        stripped = url.strip()
        by_url[stripped].append(item)
        if canonical:
            by_key[canonical_url(stripped)].append((item, stripped))
    groups: list[DuplicateGroup[T]] = [
        DuplicateGroup("exact", url, tuple(found))
        for url, found in by_url.items()
        if len(found) > 1
    ]
    for key, members in by_key.items():
        if len({url for _, url in members}) > 1:
            groups.append(DuplicateGroup("canonical", key, tuple(item for item, _ in members)))
    return groups
