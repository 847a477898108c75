"""Check that image URLs still serve a usable image: concurrent, bounded, safe.

Every URL ends with exactly one :class:`Status` (in the manner of img2dataset's
downloader, where every sample ends with a recorded status):

============================  =========================================================
``ok``                        the body decoded fully as an image within the size limits
``http_error``                the final response had a 4xx/5xx status (``http_status``)
``timeout``                   connect, read or total time limit, or the per-URL deadline,
                              exceeded
``dns_error``                 the host name does not resolve
``connection_error``          refused, reset, or a malformed HTTP exchange
``too_many_redirects``        more redirects than ``max_redirects`` (includes loops)
``not_an_image``              Pillow cannot identify or fully decode the body
``image_too_large``           body over ``max_bytes`` or canvas over ``max_pixels``
``image_too_small``           width or height under ``min_side``
``blocked_address``           the host is, or resolves to, an address that is not public
                              unicast: loopback, private, link-local, multicast, reserved,
                              unspecified, any IANA special-purpose range, or an IPv6 form
                              embedding such an IPv4 address
``invalid_url``               not an absolute http(s) URL, a host name that cannot exist
                              (a label over 63 characters, a name over 253), or a host
                              that looks like an IP address and is not exactly one
``opted_out``                 ``X-Robots-Tag: noai`` or ``noimageai``
============================  =========================================================

How the checks run:

- asyncio + aiohttp, with a global limit (``concurrency``) and a per-host limit
  (``per_host``); URLs are pulled lazily from the input, so memory does not grow with the
  number of URLs.
- Timeouts: connect, read (between bytes) and a total limit per request, and a deadline
  per URL (``url_deadline``, 120 s by default) over all its attempts, redirects and
  retry waits, so one slow host cannot hold a run for minutes per URL.
- Transient failures (HTTP 408, 429 and 5xx other than 501/505, timeouts, dropped
  connections) are retried up to ``retries`` times with exponential backoff and jitter;
  a 429 or 503 waits for its ``Retry-After`` (seconds or HTTP date) when it is no longer
  than ``max_retry_after``, and otherwise ends as ``http_error`` at once.
- Redirects are followed by hand, at most ``max_redirects``; each hop is validated again.
- Safety: the host of every connection (first request, every redirect, every new pooled
  connection) is resolved by contrastkit and each address checked *at connect time*,
  so DNS rebinding cannot slip a private address past the check; IP literals are checked
  before each request. IPv6 forms that embed an IPv4 address (IPv4-mapped, NAT64, 6to4
  ...) are judged as that IPv4 address; Teredo is refused. ``allow_private`` or
  ``allowed_networks`` relax this (tests serve from 127.0.0.1). Environment proxies are
  ignored. Logged URLs have their user info and credential-like query values redacted.
  ``SECURITY.md`` at the repository root states all of this as the checker's promise.

The modules: :mod:`~contrastkit.curation.urls.status` (:class:`Status`,
:class:`URLCheck`, :func:`redact_url`), :mod:`~contrastkit.curation.urls.config`
(:class:`CheckConfig`), :mod:`~contrastkit.curation.urls.addresses` (the address policy
and the guarded resolver), :mod:`~contrastkit.curation.urls.responses` (what a response
means) and :mod:`~contrastkit.curation.urls.checker` (:func:`check_urls`,
:func:`iter_checks`). The checker, and with it aiohttp, is loaded on first use of
:func:`check_urls` or :func:`iter_checks`, so the statuses and the config import fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contrastkit.curation.urls.config import DEFAULT_URL_DEADLINE, DEFAULT_USER_AGENT, CheckConfig
from contrastkit.curation.urls.status import Status, URLCheck, redact_url

if TYPE_CHECKING:
    from contrastkit.curation.urls.checker import check_urls, iter_checks

__all__ = [
    "DEFAULT_URL_DEADLINE",
    "DEFAULT_USER_AGENT",
    "CheckConfig",
    "Status",
    "URLCheck",
    "check_urls",
    "iter_checks",
    "redact_url",
]

_CHECKER_NAMES = frozenset({"check_urls", "iter_checks"})


def __getattr__(name: str) -> Any:
    """Load the checker (aiohttp) when :func:`check_urls` or :func:`iter_checks` is first used."""
    if name in _CHECKER_NAMES:
        from contrastkit.curation.urls import checker

        return getattr(checker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
