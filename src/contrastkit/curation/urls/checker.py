"""The checker: fetch each URL (redirects by hand, retries with backoff), decide on its
one :class:`~contrastkit.curation.urls.status.Status`, and run many URLs concurrently
(:func:`iter_checks`, :func:`check_urls`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Protocol

import aiohttp
import certifi
from yarl import URL

from contrastkit.curation.images import ImageRejectedError, inspect_image
from contrastkit.curation.urls.addresses import (
    ALLOW_HINT,
    AddressPolicy,
    BlockedAddressError,
    DNSLookupError,
    GuardedResolver,
)
from contrastkit.curation.urls.config import CheckConfig
from contrastkit.curation.urls.responses import (
    TRANSIENT_HTTP,
    FinalStatus,
    RetryableError,
    opted_out,
    retry_after,
    validate_url,
)
from contrastkit.curation.urls.status import Status, URLCheck, redact_url
from contrastkit.store import ImageInfo, ImageStore

__all__ = ["ImageSink", "check_urls", "iter_checks"]

log = logging.getLogger("contrastkit.urls")


class ImageSink(Protocol):
    """Where the checker keeps each ``ok`` image when not in an :class:`ImageStore`
    (a Ray task holds them for its driver: :mod:`~contrastkit.curation.urls.distributed`)."""

    def keep(self, data: bytes, info: ImageInfo, url: str) -> None:
        """Keep the bytes ``data`` of the image at ``url``, fingerprinted as ``info``."""


class _StoreSink:
    """An :class:`ImageStore` as an :class:`ImageSink`."""

    def __init__(self, store: ImageStore) -> None:
        self.store = store

    def keep(self, data: bytes, info: ImageInfo, url: str) -> None:
        self.store.put(data, info.meta, url=url)


def _as_sink(store: ImageStore | ImageSink | None) -> ImageSink | None:
    return _StoreSink(store) if isinstance(store, ImageStore) else store


class _Checker:
    """One aiohttp session and the per-host limits; :meth:`check` checks one URL."""

    def __init__(
        self, config: CheckConfig, decoder: ThreadPoolExecutor, sink: ImageSink | None
    ) -> None:
        self.config = config
        self.decoder = decoder
        self.sink = sink
        self.policy = AddressPolicy(config)
        self.hosts: dict[str, asyncio.Semaphore] = {}
        connector = aiohttp.TCPConnector(
            limit=config.concurrency,
            limit_per_host=config.per_host,
            resolver=GuardedResolver(self.policy),
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
        """Check one URL, retrying transient failures; always returns its result."""
        started = time.monotonic()
        clock = _Deadline(self.config.url_deadline)
        result = URLCheck(
            url=url,
            status=Status.OK,
            checked_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        attempt = 0
        last: FinalStatus | None = None  # the latest transient failure
        while True:
            attempt += 1
            result.attempts = attempt
            try:
                body, final_url, http_status = await self._fetch(url, clock)
                result.http_status = http_status
                if final_url != url:
                    result.final_url = redact_url(final_url)
                await self._inspect(body, url, result)
                break
            except RetryableError as retry:
                last = retry.final
                if attempt > self.config.retries:
                    self._finish(result, retry.final)
                    break
                wait = retry.wait
                if wait is None:
                    wait = self.config.backoff * 2 ** (attempt - 1) * random.uniform(0.5, 1.5)
                if wait >= clock.remaining():
                    kind = "Retry-After" if retry.wait is not None else "retry"
                    self._finish(result, clock.expired(
                        attempt, retry.final, f"; the {kind} wait of {wait:.3g}s would pass it"
                    ))  # fmt: skip
                    break
                log.debug("retrying %s in %.2fs: %s", redact_url(url), wait, retry.final.detail)
                await asyncio.sleep(wait)
            except _DeadlineReached:
                self._finish(result, clock.expired(attempt, last))
                break
            except FinalStatus as final:
                self._finish(result, final)
                break
        result.elapsed = round(time.monotonic() - started, 4)
        log.debug("%s -> %s %s", redact_url(url), result.status.value, result.detail)
        return result

    @staticmethod
    def _finish(result: URLCheck, final: FinalStatus) -> None:
        result.status = final.status
        result.detail = final.detail
        if final.http_status is not None:
            result.http_status = final.http_status

    async def _inspect(self, body: bytes, url: str, result: URLCheck) -> None:
        loop = asyncio.get_running_loop()
        try:
            info = await loop.run_in_executor(self.decoder, inspect_image, body, self.config.limits)
        except ImageRejectedError as exc:
            raise FinalStatus(Status(exc.status), exc.detail) from None
        result.sha256, result.format = info.sha256, info.format
        result.width, result.height = info.width, info.height
        result.phash, result.size = info.phash, info.size
        if self.sink is not None:
            await loop.run_in_executor(self.decoder, self.sink.keep, body, info, url)

    async def _fetch(self, url: str, clock: _Deadline) -> tuple[bytes, str, int]:
        """Follow redirects by hand; return the final body, URL and status.

        Raises:
            _DeadlineReached: the per-URL deadline passed during a request.
        """
        current = url
        for _hop in range(self.config.max_redirects + 1):
            target = validate_url(current)
            host = target.host or ""
            refused = self.policy.host_refusal(host)
            if refused is not None:
                raise FinalStatus(
                    Status.BLOCKED_ADDRESS,
                    f"{host} is a non-public address ({refused}); {ALLOW_HINT}",
                )
            with clock.paused():  # waiting for a free slot of a busy host is not its fault
                slot = self._host_slot(host)
                await slot.acquire()
            try:
                limit = min(self.config.total_timeout, clock.remaining())
                if limit <= 0:
                    raise _DeadlineReached
                try:
                    outcome = await asyncio.wait_for(self._request(target), limit)
                except asyncio.TimeoutError:
                    if limit < self.config.total_timeout:
                        raise _DeadlineReached from None
                    raise RetryableError(
                        FinalStatus(Status.TIMEOUT, f"no complete response within {limit:g}s")
                    ) from None
            finally:
                slot.release()
            if isinstance(outcome, str):
                current = outcome
                continue
            return outcome[0], current, outcome[1]
        raise FinalStatus(
            Status.TOO_MANY_REDIRECTS,
            f"more than {self.config.max_redirects} redirects (last: {redact_url(current)})",
        )

    async def _request(self, target: URL) -> str | tuple[bytes, int]:
        """One request: the next URL for a redirect, or (body, status)."""
        try:
            async with self.session.get(target, allow_redirects=False) as response:
                return await self._outcome(target, response)
        except _REQUEST_ERRORS as exc:
            raise _request_failure(exc, self.config) from None

    async def _outcome(
        self, target: URL, response: aiohttp.ClientResponse
    ) -> str | tuple[bytes, int]:
        """What a response says: the next URL of a redirect, or (body, status); an opt-out
        or an HTTP error raises its final (or retryable) status."""
        config = self.config
        status = response.status
        if status in (301, 302, 303, 307, 308) and "Location" in response.headers:
            try:
                return str(target.join(URL(response.headers["Location"])))
            except Exception as exc:  # any failure of the URL parser on hostile text
                raise FinalStatus(
                    Status.INVALID_URL, f"redirect to an unusable location: {exc}", status
                ) from None
        if config.honour_opt_out and (opted := opted_out(response.headers)):
            raise FinalStatus(Status.OPTED_OUT, opted, status)
        if status >= 400:
            final = FinalStatus(Status.HTTP_ERROR, f"HTTP {status}", status)
            if status not in TRANSIENT_HTTP:
                raise final
            wait = retry_after(response.headers)
            if wait is not None and wait > config.max_retry_after:
                final.detail += (f"; Retry-After {wait:.0f}s exceeds the limit of "
                                 f"{config.max_retry_after:g}s")  # fmt: skip
                raise final
            raise RetryableError(final, wait)
        return await self._read_body(response), status

    async def _read_body(self, response: aiohttp.ClientResponse) -> bytes:
        cap = self.config.limits.max_bytes
        declared = response.content_length
        if declared is not None and declared > cap:
            raise FinalStatus(
                Status.IMAGE_TOO_LARGE,
                f"Content-Length {declared} exceeds the limit of {cap} bytes",
                response.status,
            )
        chunks: list[bytes] = []
        received = 0
        async for chunk in response.content.iter_chunked(1 << 16):
            received += len(chunk)
            if received > cap:
                raise FinalStatus(
                    Status.IMAGE_TOO_LARGE,
                    f"body exceeds the limit of {cap} bytes",
                    response.status,
                )
            chunks.append(chunk)
        return b"".join(chunks)


#: What a request can raise that ends (or retries) its check: :func:`_request_failure`.
_REQUEST_ERRORS = (
    aiohttp.ClientError,
    asyncio.TimeoutError,
    DNSLookupError,
    BlockedAddressError,
    UnicodeEncodeError,
)


def _request_failure(exc: Exception, config: CheckConfig) -> FinalStatus | RetryableError:
    """The status a request that raised ``exc`` ends with (timeouts and dropped
    connections are retried); the first matching kind, most specific first."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        detail = f"connect timeout after {config.connect_timeout:g}s"
        return RetryableError(FinalStatus(Status.TIMEOUT, detail))
    if isinstance(exc, (aiohttp.SocketTimeoutError, asyncio.TimeoutError)):
        detail = f"read timeout: no data for {config.read_timeout:g}s"
        return RetryableError(FinalStatus(Status.TIMEOUT, detail))
    if isinstance(exc, DNSLookupError):
        return FinalStatus(Status.DNS_ERROR, str(exc))
    if isinstance(exc, BlockedAddressError):
        return FinalStatus(Status.BLOCKED_ADDRESS, str(exc))
    if isinstance(exc, aiohttp.InvalidURL):
        return FinalStatus(Status.INVALID_URL, f"unusable URL: {exc}")
    if isinstance(exc, UnicodeEncodeError):  # a part of the request the URL gives is not text
        return FinalStatus(Status.INVALID_URL, f"cannot be sent: {exc}")
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return FinalStatus(Status.DNS_ERROR, str(exc))
    if isinstance(exc, aiohttp.ClientConnectorError):
        return FinalStatus(Status.CONNECTION_ERROR, f"cannot connect: {exc}")
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                        aiohttp.ClientPayloadError)):  # fmt: skip
        detail = f"{type(exc).__name__}: {exc}"
        return RetryableError(FinalStatus(Status.CONNECTION_ERROR, detail))
    return FinalStatus(Status.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}")


class _DeadlineReached(Exception):  # noqa: N818 - control flow, not an error
    """The per-URL deadline passed during a request."""


class _Deadline:
    """The per-URL deadline (``url_deadline``) of one check: a monotonic end time that
    time spent waiting for a per-host slot pushes back."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (negative once passed)."""
        return self.end - time.monotonic()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Time spent inside the block does not count."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.end += time.monotonic() - started

    def expired(self, attempts: int, last: FinalStatus | None, why: str = "") -> FinalStatus:
        """The ``timeout`` a URL ends with when its deadline is reached."""
        detail = f"per-URL deadline of {self.seconds:g}s reached after {attempts} attempt(s)"
        detail += why
        if last is not None:
            detail += f" (last: {last.detail})"
        return FinalStatus(Status.TIMEOUT, detail, None if last is None else last.http_status)


# -- many URLs ---------------------------------------------------------------------------


async def iter_checks(
    urls: Iterable[str],
    config: CheckConfig | None = None,
    *,
    store: ImageStore | ImageSink | None = None,
) -> AsyncIterator[URLCheck]:
    """Check ``urls`` concurrently, yielding each :class:`URLCheck` as it finishes.

    URLs are taken from ``urls`` lazily, a bounded number ahead of the workers, so a
    generator over millions of rows runs in constant memory. Results arrive in completion
    order. Pass each URL once (de-duplicate first).

    Args:
        urls: URLs to check.
        config: Limits, timeouts and safety settings; :class:`CheckConfig` defaults.
        store: If given, every ``ok`` image's bytes are added to it (or, for an
            :class:`ImageSink`, given to it).

    Raises:
        ResourceError: the store cannot be written (raised as soon as it happens; the
            other checks are cancelled).
    """
    config = config or CheckConfig()
    source = iter(urls)
    results: asyncio.Queue[URLCheck | None] = asyncio.Queue(maxsize=config.concurrency * 2)
    failures: list[BaseException] = []
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="contrastkit-decode") as decoder:
        checker = _Checker(config, decoder, _as_sink(store))

        async def worker() -> None:
            try:
                for url in source:  # shared iterator: each URL goes to one worker
                    await results.put(await checker.check(url))
            except Exception as error:  # a full store, a bug: stop everything, raise it
                failures.append(error)
            finally:
                await results.put(None)

        workers = [asyncio.create_task(worker()) for _ in range(config.concurrency)]
        try:
            running = len(workers)
            while running:
                item = await results.get()
                if item is not None:
                    yield item
                    continue
                running -= 1
                if failures:
                    raise failures[0]
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await checker.aclose()


def check_urls(
    urls: Iterable[str],
    config: CheckConfig | None = None,
    *,
    store: ImageStore | ImageSink | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
) -> list[URLCheck]:
    """Check ``urls`` (synchronous wrapper of :func:`iter_checks`).

    Args:
        urls: URLs to check; duplicates are checked once and reported once each.
        config: Limits, timeouts and safety settings.
        store: Content-addressed store that keeps every ``ok`` image (or an
            :class:`ImageSink` given each).
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
