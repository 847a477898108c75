"""What a URL or a response means for a check: URL validation, the HTTP statuses worth
retrying, ``Retry-After`` and ``X-Robots-Tag`` opt-outs, and the two control-flow
exceptions that end (:class:`FinalStatus`) or retry (:class:`RetryableError`) a check."""

from __future__ import annotations

import email.utils
from datetime import datetime, timezone

from multidict import CIMultiDictProxy
from yarl import URL

from contrastkit.curation.urls.status import Status

__all__ = [
    "OPT_OUT_DIRECTIVES",
    "TRANSIENT_HTTP",
    "FinalStatus",
    "RetryableError",
    "opted_out",
    "retry_after",
    "validate_url",
]

TRANSIENT_HTTP = frozenset({408, 429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 524})
"""HTTP statuses worth retrying."""
OPT_OUT_DIRECTIVES = frozenset({"noai", "noimageai"})
"""``X-Robots-Tag`` directives that opt an image out of AI datasets."""


class FinalStatus(Exception):  # noqa: N818 - control flow, not an error
    """Ends the check of one URL with a status (never raised to the checker's caller)."""

    def __init__(self, status: Status, detail: str, http_status: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.http_status = http_status


class RetryableError(Exception):
    """A transient failure: ``final`` if no retry is left; ``wait`` overrides the backoff
    (``Retry-After``)."""

    def __init__(self, final: FinalStatus, wait: float | None = None) -> None:
        super().__init__(final.detail)
        self.final = final
        self.wait = wait


def validate_url(url: str) -> URL:
    """``url`` parsed, if it is an absolute http(s) URL with a host.

    Raises:
        FinalStatus: ``invalid_url`` with the reason.
    """
    if not url or url != url.strip() or any(ord(c) < 33 for c in url):
        raise FinalStatus(Status.INVALID_URL, "empty, or contains whitespace or control characters")
    try:
        parsed = URL(url)
        parsed.raw_host  # noqa: B018 - IDNA-encodes the host: raises on a bad one
    except (ValueError, UnicodeError, TypeError) as exc:
        raise FinalStatus(Status.INVALID_URL, f"cannot parse: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise FinalStatus(
            Status.INVALID_URL, f"scheme {parsed.scheme or '(none)'!r} is not http(s)"
        )
    if not parsed.host:
        raise FinalStatus(Status.INVALID_URL, "no host")
    return parsed


def opted_out(headers: CIMultiDictProxy[str]) -> str | None:
    """The ``X-Robots-Tag`` value that opts the image out, or None."""
    for value in headers.getall("X-Robots-Tag", []):
        for directive in value.split(","):
            # "googlebot: noai" applies to a named agent; we honour every agent's opt-out.
            word = directive.rsplit(":", 1)[-1].strip().lower()
            if word in OPT_OUT_DIRECTIVES:
                return f"X-Robots-Tag: {value.strip()}"
    return None


def retry_after(headers: CIMultiDictProxy[str]) -> float | None:
    """Seconds the server asks to wait (``Retry-After``: seconds or an HTTP date), or None."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
