"""Find rows that point at the same image.

Two kinds of duplicate can be found from the URLs alone:

* **exact**: the same URL string (surrounding spaces ignored);
* **canonical**: the same image resource reached through different URLs, such as one
  CDN image requested at two sizes. :func:`canonical_url` maps every URL to a key that
  is equal for such variants.

Two more need the images (``contrastkit urls check`` fetches them) and are found by
:func:`find_content_duplicates`:

* **same_bytes**: different URLs serving byte-identical files (equal sha256);
* **near_duplicate**: different files whose 64-bit perceptual hashes differ in at most
  :data:`NEAR_DUPLICATE_MAX_DISTANCE` bits: the same photo resized, re-encoded or lightly
  recompressed.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DROPPED_QUERY_PARAMS",
    "NEAR_DUPLICATE_MAX_DISTANCE",
    "DuplicateGroup",
    "canonical_url",
    "find_content_duplicates",
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


NEAR_DUPLICATE_MAX_DISTANCE = 8
"""Largest Hamming distance between two 64-bit pHashes (``imagehash.phash``) still called
a near-duplicate. Resized and re-encoded copies of a photo land at 0-4 bits; unrelated
photos average about 32 (half the bits), and fewer than one pair in 10^9 of independent
hashes comes within 8. Raise it to catch crops and colour edits, at the cost of false
matches between near-identical studio shots."""


def find_content_duplicates(
    items: Iterable[tuple[T, str, str]],
    *,
    max_distance: int = NEAR_DUPLICATE_MAX_DISTANCE,
) -> list[DuplicateGroup[T]]:
    """Group items whose images are the same file or the same picture.

    Args:
        items: triples of (any item, e.g. a row ID; sha256 of its image; its perceptual
            hash as 16 hex digits). Only items whose image was fetched belong here.
        max_distance: Largest pHash Hamming distance of a near-duplicate; negative turns
            near-duplicate search off.

    Returns:
        ``same_bytes`` groups (one sha256, two or more items; key: the sha256) and
        ``near_duplicate`` groups (two or more *different* files linked by chains of
        pHash distances <= ``max_distance``; key: the smallest pHash in the group), in
        order of first appearance. Comparison is all pairs, vectorised: 20,000 images
        take about a second.
    """
    by_sha: dict[str, list[T]] = defaultdict(list)
    phash_of: dict[str, str] = {}
    for item, sha, phash in items:
        by_sha[sha].append(item)
        phash_of.setdefault(sha, phash)
    groups: list[DuplicateGroup[T]] = [
        DuplicateGroup("same_bytes", sha, tuple(found))
        for sha, found in by_sha.items()
        if len(found) > 1
    ]
    if max_distance < 0 or len(by_sha) < 2:
        return groups
    import numpy as np  # here, not at the top: the URL functions and the constants need none

    shas = list(by_sha)
    hashes = np.array([int(phash_of[sha], 16) for sha in shas], dtype=np.uint64)
    parent = list(range(len(shas)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(shas) - 1):
        distances = _popcount(hashes[i + 1 :] ^ hashes[i])
        for j in np.flatnonzero(distances <= max_distance):
            a, b = root(i), root(i + 1 + int(j))
            if a != b:
                parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(shas)):
        members[root(i)].append(i)
    for indices in members.values():
        if len(indices) > 1:
            key = min(phash_of[shas[i]] for i in indices)
            found = tuple(item for i in indices for item in by_sha[shas[i]])
            groups.append(DuplicateGroup("near_duplicate", key, found))
    return groups


def _popcount(values: np.ndarray) -> np.ndarray:
    """Set bits per uint64 element (``np.bitwise_count`` on NumPy 2, a table before)."""
    import numpy as np

    bitwise_count = getattr(np, "bitwise_count", None)
    if bitwise_count is not None:
        return np.asarray(bitwise_count(values))
    return np.asarray(_byte_bits()[values.view(np.uint8).reshape(-1, 8)].sum(axis=1))


@functools.cache
def _byte_bits() -> np.ndarray:
    """Set bits of every byte value (the table behind :func:`_popcount` on NumPy 1)."""
    import numpy as np

    return np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
