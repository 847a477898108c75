"""What a URL check records: its one final :class:`Status` and the :class:`URLCheck`,
and :func:`redact_url`, which every URL goes through before it is logged or reported."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TypedDict
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["CheckRecord", "Status", "URLCheck", "redact_url"]

_SECRET_QUERY_KEYS = frozenset(
    {"token", "access_token", "key", "api_key", "apikey", "sig", "signature", "password",
     "secret", "auth", "x-amz-signature", "x-amz-credential", "x-goog-signature"}
)  # fmt: skip


class Status(str, Enum):
    """The one final status of a checked URL (the table in :mod:`contrastkit.curation.urls`)."""

    OK = "ok"
    HTTP_ERROR = "http_error"
    TIMEOUT = "timeout"
    DNS_ERROR = "dns_error"
    CONNECTION_ERROR = "connection_error"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    NOT_AN_IMAGE = "not_an_image"
    IMAGE_TOO_LARGE = "image_too_large"
    IMAGE_TOO_SMALL = "image_too_small"
    BLOCKED_ADDRESS = "blocked_address"
    INVALID_URL = "invalid_url"
    OPTED_OUT = "opted_out"

    def __str__(self) -> str:
        return self.value


class CheckRecord(TypedDict):
    """A :class:`URLCheck` as JSON (:meth:`URLCheck.to_dict`): its fields, the status as
    its string, the URLs redacted."""

    url: str
    status: str
    detail: str
    http_status: int | None
    final_url: str | None
    attempts: int
    elapsed: float
    checked_at: str
    sha256: str | None
    format: str | None
    width: int | None
    height: int | None
    phash: str | None
    size: int | None


@dataclass
class URLCheck:
    """The recorded outcome of one URL.

    Attributes:
        url: The URL as given.
        status: Its one final status.
        detail: Human-readable reason (empty when ``ok``); URLs in it are redacted.
        http_status: Status code of the last response, if any.
        final_url: Where the redirects ended (redacted), if anywhere else.
        attempts: Requests made, counting retries.
        elapsed: Seconds from the first attempt to the final status.
        checked_at: ISO 8601 UTC time of the check.
        sha256, format, width, height, phash, size: The image's fingerprint, when ``ok``.
    """

    url: str
    status: Status
    detail: str = ""
    http_status: int | None = None
    final_url: str | None = None
    attempts: int = 0
    elapsed: float = 0.0
    checked_at: str = ""
    sha256: str | None = None
    format: str | None = None
    width: int | None = None
    height: int | None = None
    phash: str | None = None
    size: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the URL served a usable image."""
        return self.status is Status.OK

    def to_dict(self) -> CheckRecord:
        """JSON-ready dict (status as its string), the URLs redacted (:func:`redact_url`):
        what ``urls check --json`` prints and ``--results`` writes."""
        return {
            "url": redact_url(self.url),
            "status": self.status.value,
            "detail": self.detail,
            "http_status": self.http_status,
            "final_url": None if self.final_url is None else redact_url(self.final_url),
            "attempts": self.attempts,
            "elapsed": self.elapsed,
            "checked_at": self.checked_at,
            "sha256": self.sha256,
            "format": self.format,
            "width": self.width,
            "height": self.height,
            "phash": self.phash,
            "size": self.size,
        }


def redact_url(url: str) -> str:
    """``url`` with user info removed and credential-like query values masked, for logs,
    reports and results files; a URL without either comes back exactly as given."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() in _SECRET_QUERY_KEYS for key, _ in pairs):
            query = urlencode(
                [(k, "***" if k.lower() in _SECRET_QUERY_KEYS else v) for k, v in pairs]
            )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
