"""How URLs are checked: :class:`CheckConfig` and its defaults.

Light on purpose (no aiohttp, no imaging library): the command line builds its options
from these defaults without loading the checker.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from contrastkit import __version__
from contrastkit.config import require
from contrastkit.curation.image_limits import ImageLimits
from contrastkit.errors import ConfigError

__all__ = ["DEFAULT_URL_DEADLINE", "DEFAULT_USER_AGENT", "CheckConfig"]

DEFAULT_USER_AGENT = f"contrastkit/{__version__} (dataset integrity check; +https://github.com/contrastkit/contrastkit)"

DEFAULT_URL_DEADLINE = 120.0
"""Seconds one URL may take over all its attempts, redirects and waits (twice the default
total timeout of one request)."""


@dataclass(frozen=True)
class CheckConfig:
    """How URLs are checked. Defaults suit a nightly run against public image hosts.

    Attributes:
        concurrency: Requests in flight at once, over all hosts.
        per_host: Requests in flight at once to one host.
        connect_timeout: Seconds to resolve and connect.
        read_timeout: Seconds allowed between received bytes.
        total_timeout: Seconds for one request from connect to last byte.
        url_deadline: Seconds one URL may take in all: every attempt, redirect, backoff
            and ``Retry-After`` wait counts against it (time spent waiting for a free
            per-host slot does not). When it is reached, or a wait would pass it, the URL
            ends ``timeout`` with a detail naming the deadline. It also caps a single
            request when it is shorter than ``total_timeout``.
        retries: Extra attempts after a transient failure.
        backoff: Base delay in seconds; attempt ``i`` waits ``backoff * 2**(i-1)``,
            jittered by +-50%.
        max_retry_after: Longest ``Retry-After`` honoured, in seconds.
        max_redirects: Redirects followed before ``too_many_redirects``.
        limits: Byte, pixel and minimum-side limits of the image.
        user_agent: The User-Agent header sent.
        allow_private: Allow every address (loopback, private ...): for tests and
            intranet mirrors only.
        allowed_networks: Networks (CIDR) allowed although they are not public.
        resolve: Fixed host -> IP address mappings used instead of DNS (like
            ``curl --resolve``).
        honour_opt_out: Treat ``X-Robots-Tag: noai`` / ``noimageai`` as ``opted_out``.

    Raises:
        ConfigError: a value that cannot work, naming the field (a limit below 1, a
            negative timeout, a network that is not CIDR, an address that is not an IP).
    """

    concurrency: int = 64
    per_host: int = 16
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
    url_deadline: float = DEFAULT_URL_DEADLINE
    retries: int = 2
    backoff: float = 0.5
    max_retry_after: float = 30.0
    max_redirects: int = 5
    limits: ImageLimits = field(default_factory=ImageLimits)
    user_agent: str = DEFAULT_USER_AGENT
    allow_private: bool = False
    allowed_networks: tuple[str, ...] = ()
    resolve: tuple[tuple[str, str], ...] = ()
    honour_opt_out: bool = True

    def __post_init__(self) -> None:
        for name in ("concurrency", "per_host"):
            value = getattr(self, name)
            require(value >= 1, name, f"must be at least 1, not {value}")
        for name in ("connect_timeout", "read_timeout", "total_timeout", "url_deadline"):
            value = getattr(self, name)
            require(value > 0, name, f"must be a positive number of seconds, not {value}")
        for name in ("retries", "max_redirects", "backoff", "max_retry_after"):
            value = getattr(self, name)
            require(value >= 0, name, f"cannot be negative ({value})")
        require(
            bool(self.user_agent) and not any(ord(c) < 32 for c in self.user_agent),
            "user_agent",
            "must be a non-empty header value without control characters",
        )
        for network in self.allowed_networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError as error:
                raise ConfigError(f"allowed_networks: {network!r} is not a CIDR network") from error
        for host, address in self.resolve:
            require(bool(host.strip("[]")), "resolve", f"empty host in {(host, address)!r}")
            try:
                ipaddress.ip_address(address.strip("[]"))
            except ValueError as error:
                raise ConfigError(
                    f"resolve: {address!r} (for {host!r}) is not an IP address"
                ) from error
