"""URL checks spread over Ray tasks: ``urls check --engine ray``.

The URLs are grouped by host (the host of the URL as written), and each group runs as a
sequence of Ray tasks, one chunk of URLs at a time, each chunk checked by the ordinary
checker (:func:`~contrastkit.curation.urls.check_urls`). A host belongs to exactly one
group and a group has at most one task in flight, so the per-host limit (``per_host``) and
the retry/backoff behaviour hold as in a local run; ``concurrency`` applies per task.

Tasks never write anything: a task returns its results and, when the driver keeps a
store, the bytes of every ``ok`` image. The driver adds them to the
:class:`~contrastkit.store.ImageStore` (files and its SQLite index) itself, so there is a
single writer, and the results are returned in input order: the report, the statuses and
the store end up as with the local engine. At most ``chunk_size`` images per group are
held in memory at once.

Ray is an optional dependency (``pip install "contrastkit[ray]"``), imported only when a
run starts. The session and install check are shared with the other Ray jobs
(:mod:`contrastkit.distributed`) and re-exported here.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

from contrastkit.curation.urls.config import CheckConfig
from contrastkit.curation.urls.status import URLCheck
from contrastkit.distributed import (
    LOCAL_NUM_CPUS,
    RAY_INSTALL_HINT,
    ray_session,
    require_ray,
)
from contrastkit.errors import ConfigError

if TYPE_CHECKING:
    from contrastkit.store import ImageInfo, ImageMeta, ImageStore

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "LOCAL_NUM_CPUS",
    "RAY_INSTALL_HINT",
    "RayTasks",
    "check_urls_ray",
    "group_by_host",
    "host_of",
    "ray_session",
    "require_ray",
]

DEFAULT_CHUNK_SIZE = 256
"""URLs per Ray task: bounds the images a task holds before the driver stores them."""

log = logging.getLogger("contrastkit.urls")


def host_of(url: str) -> str:
    """The lower-case host of ``url`` ("" when it has none or cannot be parsed)."""
    try:
        return (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""


def group_by_host(urls: Iterable[str], groups: int) -> list[list[str]]:
    """Split distinct ``urls`` into at most ``groups`` lists, each host in exactly one.

    Hosts are assigned largest first to the least loaded group (ties broken by a stable
    hash of the host), so the split is deterministic; URLs keep their input order within
    a group. Empty groups are dropped.
    """
    by_host: dict[str, list[str]] = {}
    for url in dict.fromkeys(urls):
        by_host.setdefault(host_of(url), []).append(url)
    count = max(1, min(groups, len(by_host)))
    loads = [0] * count
    group_of: dict[str, int] = {}
    for host in sorted(by_host, key=lambda h: (-len(by_host[h]), _stable_hash(h))):
        index = min(range(count), key=lambda i: (loads[i], i))
        group_of[host] = index
        loads[index] += len(by_host[host])
    out: list[list[str]] = [[] for _ in range(count)]
    for url in dict.fromkeys(u for urls_ in by_host.values() for u in urls_):
        out[group_of[host_of(url)]].append(url)
    return [group for group in out if group]


def _stable_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class _KeptImage(TypedDict):
    """What the store needs besides an image's bytes: what was measured of it, its URL."""

    meta: ImageMeta
    url: str


@dataclass
class _Kept:
    """What the checker would have written to the store, held for the driver (an
    :class:`~contrastkit.curation.urls.checker.ImageSink`)."""

    images: dict[str, tuple[bytes, _KeptImage]] = field(default_factory=dict)

    def keep(self, data: bytes, info: ImageInfo, url: str) -> None:
        self.images[url] = (data, {"meta": info.meta, "url": url})


Checked = list[tuple[URLCheck, bytes | None, _KeptImage | None]]


def _check_chunk(urls: list[str], config: CheckConfig, keep_images: bool) -> Checked:
    """One Ray task: check ``urls``; return each result with its image when kept."""
    from contrastkit.curation.urls.checker import check_urls

    kept = _Kept() if keep_images else None
    results = check_urls(urls, config, store=kept)
    out: Checked = []
    for result in results:
        image = kept.images.get(result.url) if kept is not None else None
        out.append((result, *image) if image is not None else (result, None, None))
    return out


@dataclass(frozen=True)
class RayTasks:
    """How :func:`check_urls_ray` spreads the checks over Ray.

    Attributes:
        address: Ray cluster to use; None starts (and afterwards stops) a local instance.
        tasks: Host groups run in parallel; default twice the cluster's CPUs.
        chunk_size: URLs per task (a group's chunks run one after another).
    """

    address: str | None = None
    tasks: int | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE


def check_urls_ray(
    urls: Iterable[str],
    config: CheckConfig | None = None,
    *,
    store: ImageStore | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
    spread: RayTasks | None = None,
) -> list[URLCheck]:
    """:func:`~contrastkit.curation.urls.check_urls` on Ray: same arguments, same results.

    Args:
        urls: URLs to check; duplicates are checked once.
        config: Checker settings, shipped to every task.
        store: Keep every ``ok`` image here; written by this (the driver) process only.
        on_result: Called in this process with each result as its chunk comes back.
        spread: The Ray cluster, the host groups run in parallel and the URLs per task
            (default: :class:`RayTasks`).

    Returns:
        One :class:`URLCheck` per distinct URL, in input order.

    Raises:
        ConfigError: Ray is not installed, or ``chunk_size`` / ``tasks`` below 1.
        ResourceError, StateError: the store cannot be written.
    """
    config = config or CheckConfig()
    spread = spread or RayTasks()
    tasks, chunk_size = spread.tasks, spread.chunk_size
    if chunk_size < 1:
        raise ConfigError(f"chunk_size: must be at least 1, not {chunk_size}")
    if tasks is not None and tasks < 1:
        raise ConfigError(f"tasks: must be at least 1, not {tasks}")
    unique = list(dict.fromkeys(urls))
    order = {url: i for i, url in enumerate(unique)}
    collected: list[URLCheck] = []
    if not unique:
        return collected
    with ray_session(spread.address) as ray:
        if tasks is None:
            tasks = max(1, 2 * int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(num_cpus=1, max_retries=0)(_check_chunk)
        config_ref = ray.put(config)
        keep = store is not None
        pending: dict[Any, Iterator[list[str]]] = {}

        def submit(chunks: Iterator[list[str]]) -> None:
            chunk = next(chunks, None)
            if chunk is not None:
                pending[remote.remote(chunk, config_ref, keep)] = chunks

        for group in group_by_host(unique, tasks):
            submit(_chunked(group, chunk_size))
        log.debug("ray: %d URLs in %d host groups", len(unique), len(pending))
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    chunks = pending.pop(ref)
                    checked: Checked = ray.get(ref)
                    submit(chunks)  # the group's next chunk, before this one is stored
                    for result, data, meta in checked:
                        if store is not None and data is not None and meta is not None:
                            store.put(data, meta["meta"], url=meta["url"])
                        collected.append(result)
                        if on_result is not None:
                            on_result(result)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
    return sorted(collected, key=lambda r: order[r.url])


def _chunked(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
