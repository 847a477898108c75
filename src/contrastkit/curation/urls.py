"""Check that image URLs still serve a usable image: concurrent, bounded, safe.

Every URL ends with exactly one :class:`Status` (in the manner of img2dataset's
downloader, where every sample ends with a recorded status):

============================  =========================================================
``ok``                        the body decoded fully as an image within the size limits
``http_error``                the final response had a 4xx/5xx status (``http_status``)
``timeout``                   connect, read or total time limit exceeded
``dns_error``                 the host name does not resolve
``connection_error``          refused, reset, or a malformed HTTP exchange
``too_many_redirects``        more redirects than ``max_redirects`` (includes loops)
``not_an_image``              Pillow cannot identify or fully decode the body
``image_too_large``           body over ``max_bytes`` or canvas over ``max_pixels``
``image_too_small``           width or height under ``min_side``
``blocked_address``           the host resolves to a loopback, private, link-local,
                              multicast, reserved or unspecified address
``invalid_url``               not an absolute http(s) URL
``opted_out``                 ``X-Robots-Tag: noai`` or ``noimageai``
============================  =========================================================

How the checks run:

- asyncio + aiohttp, with a global limit (``concurrency``) and a per-host limit
  (``per_host``); URLs are pulled lazily from the input, so memory does not grow with the
  number of URLs.
- Timeouts: connect, read (between bytes) and a total limit per request.
- Transient failures (HTTP 408, 429 and 5xx other than 501/505, timeouts, dropped
  connections) are retried up to ``retries`` times with exponential backoff and jitter;
  a 429 or 503 waits for its ``Retry-After`` (seconds or HTTP date) when it is no longer
  than ``max_retry_after``, and otherwise ends as ``http_error`` at once.
- Redirects are followed by hand, at most ``max_redirects``; each hop is validated again.
- Safety: the host of every connection (first request, every redirect, every new pooled
  connection) is resolved by contrastkit and each address checked *at connect time*,
  so DNS rebinding cannot slip a private address past the check. ``allow_private`` or
  ``allowed_networks`` relax this (tests serve from 127.0.0.1). Environment proxies are
  ignored. Logged URLs have their user info and credential-like query values redacted.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import logging
import random
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import aiohttp
import certifi
from aiohttp.abc import AbstractResolver, ResolveResult
from multidict import CIMultiDictProxy
from yarl import URL

from contrastkit import __version__
from contrastkit.curation.images import ImageLimits, ImageRejectedError, inspect_image
from contrastkit.store import ImageStore

__all__ = [
    "DEFAULT_USER_AGENT",
    "CheckConfig",
    "Status",
    "URLCheck",
    "check_urls",
    "iter_checks",
    "redact_url",
]

log = logging.getLogger("contrastkit.urls")

DEFAULT_USER_AGENT = f"contrastkit/{__version__} (dataset integrity check; +https://github.com/contrastkit/contrastkit)"
TRANSIENT_HTTP = frozenset({408, 429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 524})
"""HTTP statuses worth retrying."""
OPT_OUT_DIRECTIVES = frozenset({"noai", "noimageai"})
_SECRET_QUERY_KEYS = frozenset(
    {"token", "access_token", "key", "api_key", "apikey", "sig", "signature", "password",
     "secret", "auth", "x-amz-signature", "x-amz-credential", "x-goog-signature"}
)  # fmt: skip


class Status(str, Enum):
    """The one final status of a checked URL."""

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


@dataclass(frozen=True)
class CheckConfig:
    """How URLs are checked. Defaults suit a nightly run against public image hosts.

    Attributes:
        concurrency: Requests in flight at once, over all hosts.
        per_host: Requests in flight at once to one host.
        connect_timeout: Seconds to resolve and connect.
        read_timeout: Seconds allowed between received bytes.
        total_timeout: Seconds for one request from connect to last byte.
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
        resolve: Fixed host -> address mappings used instead of DNS (like
            ``curl --resolve``).
        honour_opt_out: Treat ``X-Robots-Tag: noai`` / ``noimageai`` as ``opted_out``.
    """

    concurrency: int = 64
    per_host: int = 16
    connect_timeout: float = 10.0
    read_timeout: float = 20.0
    total_timeout: float = 60.0
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
        if self.concurrency < 1 or self.per_host < 1:
            raise ValueError("concurrency and per_host must be at least 1")
        if min(self.connect_timeout, self.read_timeout, self.total_timeout) <= 0:
            raise ValueError("timeouts must be positive")
        if self.retries < 0 or self.max_redirects < 0 or self.backoff < 0:
            raise ValueError("retries, max_redirects and backoff cannot be negative")
        for network in self.allowed_networks:
            ipaddress.ip_network(network, strict=False)


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
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (status as its string)."""
        out = asdict(self)
        out["status"] = self.status.value
        return out


# -- safety ------------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """``url`` with user info removed and credential-like query values masked, for logs."""
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
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class BlockedAddressError(Exception):
    """A connection would go to an address that is not public."""


class DNSLookupError(Exception):
    """A host name did not resolve."""


class _AddressPolicy:
    def __init__(self, config: CheckConfig) -> None:
        self.allow_all = config.allow_private
        self.allowed = [ipaddress.ip_network(n, strict=False) for n in config.allowed_networks]
        self.fixed = {host.lower(): address for host, address in config.resolve}
        self.connect_timeout = config.connect_timeout

    def permitted(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if self.allow_all or any(ip in network for network in self.allowed):
            return True
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_global and not ip.is_multicast

    def permitted_host(self, host: str) -> bool:
        """False for an IP literal that is not allowed; names are checked when resolved."""
        try:
            ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
        except ValueError:
            return True
        return self.permitted(host.strip("[]"))

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address ``host`` resolves to, each checked; raise if any is blocked."""
        host = host.strip("[]")
        fixed = self.fixed.get(host.lower())
        try:
            addresses = [str(ipaddress.ip_address(fixed or host))]
        except ValueError:
            loop = asyncio.get_running_loop()
            try:
                infos = await asyncio.wait_for(
                    loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), self.connect_timeout
                )
            except (socket.gaierror, UnicodeError) as exc:
                raise DNSLookupError(f"{host}: {exc}") from None
            except asyncio.TimeoutError:
                raise DNSLookupError(f"{host}: lookup timed out") from None
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        blocked = [a for a in addresses if not self.permitted(a)]
        if blocked:
            raise BlockedAddressError(f"{host} resolves to non-public address {blocked[0]}")
        return addresses


class _GuardedResolver(AbstractResolver):
    """aiohttp resolver that checks every address a host name resolves to.

    aiohttp calls it for each new connection to a named host (never for IP literals,
    which :meth:`_Checker._fetch` checks itself before each request).
    """

    def __init__(self, policy: _AddressPolicy) -> None:
        self.policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self.policy.resolve(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


class _FinalStatus(Exception):  # noqa: N818 - control flow, not an error
    """Ends the check of one URL with a status."""

    def __init__(self, status: Status, detail: str, http_status: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.http_status = http_status


class _RetryableError(Exception):
    """A transient failure; ``wait`` overrides the backoff (Retry-After)."""

    def __init__(self, final: _FinalStatus, wait: float | None = None) -> None:
        super().__init__(final.detail)
        self.final = final
        self.wait = wait


def _validate(url: str) -> URL:
    if not url or url != url.strip() or any(ord(c) < 33 for c in url):
        raise _FinalStatus(
            Status.INVALID_URL, "empty, or contains whitespace or control characters"
        )
    try:
        parsed = URL(url)
        parsed.raw_host  # noqa: B018 - IDNA-encodes the host: raises on a bad one
    except (ValueError, UnicodeError, TypeError) as exc:
        raise _FinalStatus(Status.INVALID_URL, f"cannot parse: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise _FinalStatus(
            Status.INVALID_URL, f"scheme {parsed.scheme or '(none)'!r} is not http(s)"
        )
    if not parsed.host:
        raise _FinalStatus(Status.INVALID_URL, "no host")
    return parsed


def _opted_out(headers: CIMultiDictProxy[str]) -> str | None:
    for value in headers.getall("X-Robots-Tag", []):
        for directive in value.split(","):
            # "googlebot: noai" applies to a named agent; we honour every agent's opt-out.
            word = directive.rsplit(":", 1)[-1].strip().lower()
            if word in OPT_OUT_DIRECTIVES:
                return f"X-Robots-Tag: {value.strip()}"
    return None


def _retry_after(headers: CIMultiDictProxy[str]) -> float | None:
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


class _Checker:
    def __init__(
        self,
        config: CheckConfig,
        decoder: ThreadPoolExecutor,
        store: ImageStore | None,
    ) -> None:
        self.config = config
        self.decoder = decoder
        self.store = store
        self.policy = _AddressPolicy(config)
        self.hosts: dict[str, asyncio.Semaphore] = {}
        connector = aiohttp.TCPConnector(
            limit=config.concurrency,
            limit_per_host=config.per_host,
            resolver=_GuardedResolver(self.policy),
            ssl=ssl.create_default_context(cafile=certifi.where()),
            ttl_dns_cache=300,  # cached addresses were checked when they were resolved
        )
        self.session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=config.connect_timeout, sock_read=config.read_timeout
            ),
            headers={"User-Agent": config.user_agent, "Accept": "image/*,*/*;q=0.5"},
            trust_env=False,  # no environment proxies: the address check must see the target
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    def _host_slot(self, host: str) -> asyncio.Semaphore:
        slot = self.hosts.get(host)
        if slot is None:
            slot = self.hosts[host] = asyncio.Semaphore(self.config.per_host)
        return slot

    async def aclose(self) -> None:
        """Close every connection."""
        await self.session.close()

    async def check(self, url: str) -> URLCheck:
        started = time.monotonic()
        result = URLCheck(
            url=url,
            status=Status.OK,
            checked_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        attempt = 0
        while True:
            attempt += 1
            result.attempts = attempt
            try:
                body, final_url, http_status = await self._fetch(url)
                result.http_status = http_status
                if final_url != url:
                    result.final_url = redact_url(final_url)
                await self._inspect(body, url, result)
                break
            except _RetryableError as retry:
                if attempt > self.config.retries:
                    self._finish(result, retry.final)
                    break
                wait = retry.wait
                if wait is None:
                    wait = self.config.backoff * 2 ** (attempt - 1) * random.uniform(0.5, 1.5)
                log.debug("retrying %s in %.2fs: %s", redact_url(url), wait, retry.final.detail)
                await asyncio.sleep(wait)
            except _FinalStatus as final:
                self._finish(result, final)
                break
        result.elapsed = round(time.monotonic() - started, 4)
        log.debug("%s -> %s %s", redact_url(url), result.status.value, result.detail)
        return result

    @staticmethod
    def _finish(result: URLCheck, final: _FinalStatus) -> None:
        result.status = final.status
        result.detail = final.detail
        if final.http_status is not None:
            result.http_status = final.http_status

    async def _inspect(self, body: bytes, url: str, result: URLCheck) -> None:
        loop = asyncio.get_running_loop()
        try:
            info = await loop.run_in_executor(self.decoder, inspect_image, body, self.config.limits)
        except ImageRejectedError as exc:
            raise _FinalStatus(Status(exc.status), exc.detail) from None
        result.sha256, result.format = info.sha256, info.format
        result.width, result.height = info.width, info.height
        result.phash, result.size = info.phash, info.size
        if self.store is not None:
            store = self.store
            await loop.run_in_executor(
                self.decoder,
                lambda: store.put(
                    body,
                    format=info.format,
                    width=info.width,
                    height=info.height,
                    phash=info.phash,
                    url=url,
                ),
            )

    async def _fetch(self, url: str) -> tuple[bytes, str, int]:
        """Follow redirects by hand; return the final body, URL and status."""
        current = url
        for _hop in range(self.config.max_redirects + 1):
            target = _validate(current)
            host = target.host or ""
            if not self.policy.permitted_host(host):
                raise _FinalStatus(Status.BLOCKED_ADDRESS, f"{host} is a non-public address")
            async with self._host_slot(host):
                try:
                    outcome = await asyncio.wait_for(
                        self._request(target), self.config.total_timeout
                    )
                except asyncio.TimeoutError:
                    raise _RetryableError(
                        _FinalStatus(
                            Status.TIMEOUT,
                            f"no complete response within {self.config.total_timeout:g}s",
                        )
                    ) from None
            if isinstance(outcome, str):
                current = outcome
                continue
            return outcome[0], current, outcome[1]
        raise _FinalStatus(
            Status.TOO_MANY_REDIRECTS,
            f"more than {self.config.max_redirects} redirects (last: {redact_url(current)})",
        )

    async def _request(self, target: URL) -> str | tuple[bytes, int]:
        """One request: the next URL for a redirect, or (body, status)."""
        try:
            async with self.session.get(target, allow_redirects=False) as response:
                status = response.status
                if status in (301, 302, 303, 307, 308) and "Location" in response.headers:
                    try:
                        return str(target.join(URL(response.headers["Location"])))
                    except (ValueError, TypeError) as exc:
                        raise _FinalStatus(
                            Status.INVALID_URL, f"redirect to an unusable location: {exc}", status
                        ) from None
                if self.config.honour_opt_out:
                    opted = _opted_out(response.headers)
                    if opted is not None:
                        raise _FinalStatus(Status.OPTED_OUT, opted, status)
                if status >= 400:
                    final = _FinalStatus(Status.HTTP_ERROR, f"HTTP {status}", status)
                    if status in TRANSIENT_HTTP:
                        wait = _retry_after(response.headers)
                        if wait is not None and wait > self.config.max_retry_after:
                            final.detail += (
                                f"; Retry-After {wait:.0f}s exceeds the limit of "
                                f"{self.config.max_retry_after:g}s"
                            )
                            raise final
                        raise _RetryableError(final, wait)
                    raise final
                return await self._read_body(response), status
        except aiohttp.ConnectionTimeoutError:
            raise _RetryableError(
                _FinalStatus(
                    Status.TIMEOUT, f"connect timeout after {self.config.connect_timeout:g}s"
                )
            ) from None
        except (aiohttp.SocketTimeoutError, asyncio.TimeoutError):
            raise _RetryableError(
                _FinalStatus(
                    Status.TIMEOUT, f"read timeout: no data for {self.config.read_timeout:g}s"
                )
            ) from None
        except DNSLookupError as exc:
            raise _FinalStatus(Status.DNS_ERROR, str(exc)) from None
        except BlockedAddressError as exc:
            raise _FinalStatus(Status.BLOCKED_ADDRESS, str(exc)) from None
        except aiohttp.InvalidURL as exc:
            raise _FinalStatus(Status.INVALID_URL, f"unusable URL: {exc}") from None
        except aiohttp.ClientConnectorDNSError as exc:
            raise _FinalStatus(Status.DNS_ERROR, str(exc)) from None
        except aiohttp.ClientConnectorError as exc:
            raise _FinalStatus(Status.CONNECTION_ERROR, f"cannot connect: {exc}") from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                aiohttp.ClientPayloadError) as exc:  # fmt: skip
            raise _RetryableError(
                _FinalStatus(Status.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}")
            ) from None
        except aiohttp.ClientError as exc:
            raise _FinalStatus(Status.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}") from None

    async def _read_body(self, response: aiohttp.ClientResponse) -> bytes:
        cap = self.config.limits.max_bytes
        declared = response.content_length
        if declared is not None and declared > cap:
            raise _FinalStatus(
                Status.IMAGE_TOO_LARGE,
                f"Content-Length {declared} exceeds the limit of {cap} bytes",
                response.status,
            )
        chunks: list[bytes] = []
        received = 0
        async for chunk in response.content.iter_chunked(1 << 16):
            received += len(chunk)
            if received > cap:
                raise _FinalStatus(
                    Status.IMAGE_TOO_LARGE,
                    f"body exceeds the limit of {cap} bytes",
                    response.status,
                )
            chunks.append(chunk)
        return b"".join(chunks)


# -- many URLs ---------------------------------------------------------------------------


async def iter_checks(
    urls: Iterable[str],
    config: CheckConfig | None = None,
    *,
    store: ImageStore | None = None,
) -> AsyncIterator[URLCheck]:
    """Check ``urls`` concurrently, yielding each :class:`URLCheck` as it finishes.

    URLs are taken from ``urls`` lazily, a bounded number ahead of the workers, so a
    generator over millions of rows runs in constant memory. Results arrive in completion
    order. Pass each URL once (de-duplicate first).

    Args:
        urls: URLs to check.
        config: Limits, timeouts and safety settings; :class:`CheckConfig` defaults.
        store: If given, every ``ok`` image's bytes are added to it.
    """
    config = config or CheckConfig()
    source = iter(urls)
    results: asyncio.Queue[URLCheck | None] = asyncio.Queue(maxsize=config.concurrency * 2)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="contrastkit-decode") as decoder:
        checker = _Checker(config, decoder, store)
        try:

            async def worker() -> None:
                try:
                    for url in source:  # shared iterator: each URL goes to one worker
                        await results.put(await checker.check(url))
                finally:
                    await results.put(None)

            workers = [asyncio.create_task(worker()) for _ in range(config.concurrency)]
            try:
                running = len(workers)
                while running:
                    item = await results.get()
                    if item is None:
                        running -= 1
                    else:
                        yield item
                for task in workers:
                    task.result()  # re-raise an unexpected error from a worker
            finally:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
        finally:
            await checker.aclose()


def check_urls(
    urls: Iterable[str],
    config: CheckConfig | None = None,
    *,
    store: ImageStore | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
) -> list[URLCheck]:
    """Check ``urls`` (synchronous wrapper of :func:`iter_checks`).

    Args:
        urls: URLs to check; duplicates are checked once and reported once each.
        config: Limits, timeouts and safety settings.
        store: Content-addressed store that keeps every ``ok`` image.
        on_result: Called with each result as it finishes (progress bars, streaming).

    Returns:
        One :class:`URLCheck` per distinct URL, in input order.
    """
    unique = list(dict.fromkeys(urls))
    order = {url: i for i, url in enumerate(unique)}
    collected: list[URLCheck] = []

    async def run() -> None:
        async for result in iter_checks(unique, config, store=store):
            collected.append(result)
            if on_result is not None:
                on_result(result)

    asyncio.run(run())
    return sorted(collected, key=lambda r: order[r.url])
