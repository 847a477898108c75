"""What a URL or a response means for a check: URL validation, the HTTP statuses worth
retrying, ``Retry-After`` and ``X-Robots-Tag`` opt-outs, and the two control-flow
exceptions that end (:class:`FinalStatus`) or retry (:class:`RetryableError`) a check."""

from __future__ import annotations

import email.utils
import ipaddress
from datetime import datetime, timezone

from multidict import CIMultiDictProxy
from yarl import URL

from contrastkit.curation.urls.status import Status

__all__ = [
    "MAX_HOST_LENGTH",
    "MAX_LABEL_LENGTH",
    "OPT_OUT_DIRECTIVES",
    "TRANSIENT_HTTP",
    "FinalStatus",
    "RetryableError",
    "host_name_problem",
    "opted_out",
    "retry_after",
    "validate_url",
]

TRANSIENT_HTTP = frozenset({408, 429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 524})
"""HTTP statuses worth retrying."""
OPT_OUT_DIRECTIVES = frozenset({"noai", "noimageai"})
"""``X-Robots-Tag`` directives that opt an image out of AI datasets."""
MAX_HOST_LENGTH = 253
"""Longest DNS name, in characters, without its final dot (RFC 1035)."""
MAX_LABEL_LENGTH = 63
"""Longest label of a DNS name (RFC 1035)."""


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
    """``url`` parsed, if it is an absolute http(s) URL with a host that an HTTP client
    can send: every URL the checker requests, given or redirected to, passes here first.

    Raises:
        FinalStatus: ``invalid_url`` with the reason.
    """
    if not url or url != url.strip() or any(ord(c) < 33 for c in url):
        raise FinalStatus(Status.INVALID_URL, "empty, or contains whitespace or control characters")
    try:
        parsed = URL(url)
        # IDNA-encode the host and decode it back: either raises on a bad one (an
        # "xn--" label that is not valid punycode fails only on the way back).
        parsed.raw_host  # noqa: B018
        parsed.host  # noqa: B018
    except Exception as exc:  # any failure of the parser on hostile text: not a URL
        raise FinalStatus(
            Status.INVALID_URL, f"cannot parse: {type(exc).__name__}: {exc}"
        ) from None
    if parsed.scheme not in ("http", "https"):
        raise FinalStatus(
            Status.INVALID_URL, f"scheme {parsed.scheme or '(none)'!r} is not http(s)"
        )
    if not parsed.host:
        raise FinalStatus(Status.INVALID_URL, "no host")
    for part, value in (("user name", parsed.user), ("password", parsed.password)):
        try:
            (value or "").encode("latin-1")  # what an HTTP client sends in Basic auth
        except UnicodeEncodeError:
            raise FinalStatus(
                Status.INVALID_URL, f"the {part} of the URL is not Latin-1 text"
            ) from None
    problem = host_name_problem(parsed.raw_host or "")
    if problem is not None:
        raise FinalStatus(Status.INVALID_URL, problem)
    return parsed


def host_name_problem(host: str) -> str | None:
    """Why ``host`` (as sent: IDNA-encoded) cannot be contacted safely, or None.

    What looks like an IP literal (a colon, or only digits and dots) must be one exactly,
    without a zone ID: the HTTP client connects to such a host without asking the
    resolver, so anything else (``[v1.fe80::1]``, ``127.1``, ``fe80::1%eth0``) would
    reach the operating system's name lookup unchecked. A name is at most 253 characters
    (one final dot aside) and each of its labels 1 to 63 (RFC 1035 2.3.4): a longer or
    empty label can never resolve, so the URL is invalid rather than its lookup failing.
    """
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in literal or literal.replace(".", "").isdigit():
        if "%" in literal:
            return f"IP address with a zone ID ({literal})"
        try:
            ipaddress.ip_address(literal)
        except ValueError:
            kind = "IPv6" if ":" in literal else "canonical IPv4"
            return f"{literal} is not a {kind} address"
        return None
    name = host[:-1] if host.endswith(".") else host
    if len(name) > MAX_HOST_LENGTH:
        return f"host name of {len(name)} characters (the limit is {MAX_HOST_LENGTH})"
    for label in name.split("."):
        if not label:
            return "host name with an empty label"
        if len(label) > MAX_LABEL_LENGTH:
            return f"host name label of {len(label)} characters (the limit is {MAX_LABEL_LENGTH})"
    return None


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
