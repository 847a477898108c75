"""URL integrity of whole datasets: check every row's URL, group duplicates across files.

This is what ``contrastkit urls check`` runs: :func:`check_dataset_urls` with a
:class:`URLCheckJobConfig`. Each distinct URL is fetched once
(:mod:`contrastkit.curation.urls`); every row gets its URL's result; duplicates are
reported as groups of row IDs across all files, by URL (``exact``, ``canonical``) and by
content (``same_bytes``, ``near_duplicate``), because the same photo under two occupations
or two gender cells breaks the benchmark.

Besides official-format VisoGender TSVs, the files may be stereotype probe sets
(:mod:`contrastkit.probes`, ``.tsv`` / ``.jsonl``): their rows are keyed by ``id`` and their
``image`` column is checked like VisoGender's URL column (:class:`ProbeTable`). Rows whose
image is a local file are not URLs and are left out of the checks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

from contrastkit.config import require
from contrastkit.curation.dedup import (
    NEAR_DUPLICATE_MAX_DISTANCE,
    DuplicateGroup,
    find_content_duplicates,
    find_duplicates,
)
from contrastkit.curation.urls import CheckConfig, URLCheck, check_urls, redact_url
from contrastkit.curation.urls.distributed import require_ray
from contrastkit.curation.urls.status import CheckRecord
from contrastkit.curation.validation import RowRef
from contrastkit.errors import ConfigError
from contrastkit.io import atomic_write_text, check_writable, resource_error
from contrastkit.schema import VisoGenderTable
from contrastkit.store import ImageStore

__all__ = [
    "CheckedRow",
    "CheckedRowRecord",
    "DuplicateRecord",
    "IntegrityRecord",
    "IntegrityReport",
    "ProbeTable",
    "Table",
    "TableCheckSettings",
    "TableRow",
    "URLCheckJobConfig",
    "check_dataset_urls",
    "check_tables",
    "distinct_urls",
    "duplicate_groups",
    "read_table",
    "read_tables",
]


@dataclass(frozen=True)
class TableRow:
    """What the URL checks need of a row: its ID, line and image URL."""

    idx: str
    line: int | None
    url: str


@dataclass(frozen=True)
class ProbeTable:
    """The http(s) image rows of a stereotype probe set (:mod:`contrastkit.probes`), keyed
    by ``id``; ``local`` counts the rows whose image is a local file (not checked)."""

    path: Path
    rows: tuple[TableRow, ...]
    local: int = 0

    @classmethod
    def read(cls, path: Path) -> ProbeTable:
        """Read and check a probe file (:func:`contrastkit.probes.read_probes`)."""
        from contrastkit.probes import read_probes

        probes = read_probes(path)
        rows = tuple(TableRow(row.id, row.line, row.image) for row in probes if row.has_url)
        return cls(Path(path), rows, len(probes) - len(rows))


Table = VisoGenderTable | ProbeTable
"""A table whose rows' URLs can be checked."""

ENGINES = ("local", "ray")
Engine = Literal["local", "ray"]


def check_near_distance(value: int, field: str = "near_distance") -> None:
    """The perceptual-hash distance of a config: -1 (off) to 64 bits."""
    require(-1 <= value <= 64, field, f"must be -1 (off) to 64 bits, not {value}")


def as_paths(files: object) -> tuple[Path, ...]:
    """A config's ``files`` as a tuple of paths (one path, or any iterable of paths)."""
    if isinstance(files, str | PathLike):
        return (Path(files),)
    if not isinstance(files, Iterable):
        raise ConfigError(f"files: expected paths, not {files!r}")
    return tuple(Path(path) for path in files)


@dataclass(frozen=True)
class URLCheckJobConfig:
    """What ``contrastkit urls check`` does, for :func:`check_dataset_urls`.

    Attributes:
        files: Official-format OP and/or OO TSVs, or stereotype probe sets (strings are
            taken as paths).
        network: How URLs are fetched (:class:`~contrastkit.curation.urls.CheckConfig`).
        store: Keep every image that decodes in this content-addressed store
            (:class:`~contrastkit.store.ImageStore`); None keeps nothing.
        near_distance: Largest perceptual-hash distance (bits of 64) of a near-duplicate;
            -1 turns near-duplicate search off.
        results: Also write one JSON line per row (status, detail, hashes) to this file,
            atomically; None writes none.
        engine: Where the checks run: ``"local"`` (this process) or ``"ray"`` (Ray tasks
            grouped by host, :mod:`~contrastkit.curation.urls.distributed`; the store and
            the results are still written by this process only). Same report either way.
        ray_address: With ``engine="ray"``: the cluster to connect to (``auto``,
            ``ray://head:10001``); None starts a local Ray instance for the run and stops
            it afterwards.

    Raises:
        ConfigError: no files, a value out of range, an unknown engine, or engine
            ``"ray"`` without Ray installed, naming the field.
    """

    files: tuple[Path, ...]
    network: CheckConfig = field(default_factory=CheckConfig)
    store: Path | None = None
    near_distance: int = NEAR_DUPLICATE_MAX_DISTANCE
    results: Path | None = None
    engine: Engine = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", as_paths(self.files))
        require(bool(self.files), "files", "needs at least one TSV")
        require(isinstance(self.network, CheckConfig), "network", "must be a CheckConfig")
        check_near_distance(self.near_distance)
        require(self.engine in ENGINES, "engine",
                f"must be one of {', '.join(ENGINES)}, not {self.engine!r}")  # fmt: skip
        if self.engine == "ray":
            require_ray("engine")
        elif self.ray_address is not None:
            raise ConfigError('ray_address: only used with engine "ray"')
        require(self.ray_address is None or bool(self.ray_address.strip()), "ray_address",
                "must be a Ray address (e.g. auto, ray://head:10001), not empty")  # fmt: skip
        for name in ("store", "results"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value))


class CheckedRowRecord(CheckRecord):
    """A :class:`CheckedRow` as JSON: the row's IDX, file and line, then its URL's check."""

    idx: str
    file: str
    line: int | None


class DuplicateRecord(TypedDict):
    """A group of rows that share an image: how it was found, its key (a URL redacted),
    the rows' IDX."""

    kind: str
    key: str
    rows: list[str]


class IntegrityRecord(TypedDict):
    """An :class:`IntegrityReport` as JSON (:meth:`IntegrityReport.to_dict`)."""

    files: list[str]
    started_at: str
    finished_at: str
    rows: int
    local_rows: int
    local_rows_by_file: dict[str, int]
    urls: int
    status_counts: dict[str, int]
    ok: bool
    duplicates: list[DuplicateRecord]
    results: list[CheckedRowRecord]


@dataclass(frozen=True)
class CheckedRow:
    """One dataset row and the check of its URL."""

    ref: RowRef
    result: URLCheck

    def to_dict(self) -> CheckedRowRecord:
        """The row's IDX, file and line, then its URL's check (:meth:`URLCheck.to_dict`)."""
        return {
            "idx": self.ref.idx,
            "file": self.ref.path,
            "line": self.ref.line,
            **self.result.to_dict(),
        }


@dataclass
class IntegrityReport:
    """Results of ``urls check`` over one or more files.

    Attributes:
        files: The files checked.
        rows: Every row with its URL's result, in file order.
        duplicates: Groups of row IDs that share an image (see :func:`duplicate_groups`).
        started_at, finished_at: ISO 8601 UTC times of the run.
        local: Rows whose image is a local file, per probe-set file that has any
            (:class:`ProbeTable`): they are not in ``rows`` and were not checked.
    """

    files: list[str]
    rows: list[CheckedRow]
    duplicates: list[DuplicateGroup[str]] = field(default_factory=list)
    started_at: str = ""
    finished_at: str = ""
    local: dict[str, int] = field(default_factory=dict)

    @property
    def local_rows(self) -> int:
        """Rows with a local image file, left out of the URL checks."""
        return sum(self.local.values())

    def status_counts(self) -> Counter[str]:
        """Rows per status (a URL used by two rows counts twice)."""
        return Counter(row.result.status.value for row in self.rows)

    @property
    def failed(self) -> list[CheckedRow]:
        return [row for row in self.rows if not row.result.ok]

    @property
    def ok(self) -> bool:
        """Every URL is a usable image and no two rows share an image."""
        return not self.failed and not self.duplicates

    def to_dict(self) -> IntegrityRecord:
        """JSON-ready: counts, every row's result, duplicate groups. ``rows`` counts the
        rows checked; ``local_rows`` those with a local image file, not checked
        (``local_rows_by_file``: per file that has any)."""
        return {
            "files": self.files,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "rows": len(self.rows),
            "local_rows": self.local_rows,
            "local_rows_by_file": dict(self.local),
            "urls": len({row.result.url for row in self.rows}),
            "status_counts": dict(sorted(self.status_counts().items())),
            "ok": self.ok,
            "duplicates": [
                {"kind": g.kind, "key": _shown_key(g), "rows": list(g.items)}
                for g in self.duplicates
            ],
            "results": [row.to_dict() for row in self.rows],
        }


def _shown_key(group: DuplicateGroup[str]) -> str:
    return redact_url(group.key) if group.kind in ("exact", "canonical") else group.key


def duplicate_groups(
    rows: Sequence[CheckedRow], *, max_distance: int = NEAR_DUPLICATE_MAX_DISTANCE
) -> list[DuplicateGroup[str]]:
    """Groups of row IDs that point at one image.

    ``exact`` (same URL) and ``canonical`` (same resource at another size or through a
    proxy; :func:`~contrastkit.curation.dedup.canonical_url`) come from the URLs;
    ``same_bytes`` (different URLs, identical files) and ``near_duplicate`` (perceptual
    hashes within ``max_distance`` bits) from the fetched images of ``ok`` rows.
    """
    groups = find_duplicates((row.ref.idx, row.result.url) for row in rows)
    by_url: dict[str, list[str]] = {}
    fingerprints: list[tuple[str, str, str]] = []
    for row in rows:
        result = row.result
        if result.ok and result.sha256 and result.phash:
            if result.url not in by_url:
                fingerprints.append((result.url, result.sha256, result.phash))
            by_url.setdefault(result.url, []).append(row.ref.idx)
    for group in find_content_duplicates(fingerprints, max_distance=max_distance):
        ids = tuple(idx for url in group.items for idx in by_url[url])
        groups.append(DuplicateGroup(group.kind, group.key, ids))
    return groups


@dataclass(frozen=True)
class TableCheckSettings:
    """How :func:`check_tables` checks: the settings a URL check job passes along.

    Attributes:
        network: Checker settings (:class:`~contrastkit.curation.urls.CheckConfig`).
        near_distance: Near-duplicate pHash threshold (bits of 64; -1: no near-duplicate
            search).
        engine: ``"local"`` or ``"ray"`` (see :class:`URLCheckJobConfig`).
        ray_address: The Ray cluster of engine ``"ray"``; None starts a local one.
    """

    network: CheckConfig = field(default_factory=CheckConfig)
    near_distance: int = NEAR_DUPLICATE_MAX_DISTANCE
    engine: Engine = "local"
    ray_address: str | None = None


def check_tables(
    tables: Sequence[Table],
    settings: TableCheckSettings | None = None,
    *,
    store: ImageStore | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
) -> IntegrityReport:
    """Check the URL of every row of ``tables`` and group duplicates.

    Args:
        tables: Parsed official-format TSVs (:func:`contrastkit.tsv.read_visogender_tsv`)
            or probe sets (:class:`ProbeTable`).
        settings: The checker settings, near-duplicate threshold and engine (default:
            :class:`TableCheckSettings`).
        store: Keep every ``ok`` image in this content-addressed store.
        on_result: Called once per distinct URL as its check finishes.
    """
    settings = settings or TableCheckSettings()
    started = _now()
    refs = [
        (RowRef(str(table.path), row.line, row.idx), row.url)
        for table in tables
        for row in table.rows
        if not is_local_image(row.url)
    ]
    urls = (url for _, url in refs)
    if settings.engine == "ray":
        from contrastkit.curation.urls.distributed import RayTasks, check_urls_ray

        spread = RayTasks(address=settings.ray_address)
        checked = check_urls_ray(urls, settings.network, store=store, on_result=on_result,
                                 spread=spread)  # fmt: skip
    else:
        checked = check_urls(urls, settings.network, store=store, on_result=on_result)
    results = {r.url: r for r in checked}
    rows = [CheckedRow(ref, results[url]) for ref, url in refs]
    return IntegrityReport(
        files=[str(table.path) for table in tables],
        rows=rows,
        duplicates=duplicate_groups(rows, max_distance=settings.near_distance),
        started_at=started,
        finished_at=_now(),
        local={str(table.path): local for table in tables if (local := local_rows(table))},
    )


def is_local_image(reference: str) -> bool:
    """Whether a row's image reference names a local file (a path, relative or absolute,
    or a ``file://`` URL) rather than a URL to check: it has no scheme, the ``file``
    scheme, or a drive letter (``C:\\images\\a.jpg``). Anything with another scheme,
    ``htp://`` included, is a URL (and an ``invalid_url`` when not http(s))."""
    scheme = urlsplit(reference.strip()).scheme.lower()
    return scheme in ("", "file") or len(scheme) == 1


def local_rows(table: Table) -> int:
    """How many rows of ``table`` have a local image file (not URL-checked)."""
    if isinstance(table, ProbeTable):
        return table.local
    return sum(is_local_image(row.url) for row in table.rows)


def read_table(path: Path) -> Table:
    """One file's rows with their URLs, as its dataset kind reads them
    (:func:`contrastkit.kinds.detect_kind`): a probe set when its header says so, else an
    official-format VisoGender TSV."""
    from contrastkit.kinds import detect_kind

    table: Table = detect_kind(path).read_url_table(Path(path))
    return table


def read_tables(paths: Sequence[Path]) -> list[Table]:
    """Parse every file first, so a malformed one stops the run before any request.

    Raises:
        DataFormatError: a file is neither an official-format TSV nor a probe set (file,
            line, field).
        FileNotFoundError: a file does not exist.
    """
    return [read_table(path) for path in paths]


def distinct_urls(tables: Sequence[Table]) -> int:
    """How many different URLs the rows of ``tables`` have (what a check fetches)."""
    return len({row.url for table in tables for row in table.rows if not is_local_image(row.url)})


def check_dataset_urls(
    config: URLCheckJobConfig,
    *,
    on_start: Callable[[int], Any] | None = None,
    on_result: Callable[[URLCheck], Any] | None = None,
) -> IntegrityReport:
    """Check every URL of the dataset's TSVs: reachable, safe, and a fully decodable image.

    The job behind ``contrastkit urls check``: read every file (so a malformed one stops
    the run before any request), check that the store and the results file can be
    written, fetch each distinct URL once, group rows that share an image, and write the
    results file.

    Args:
        config: The files, the network settings and the outputs.
        on_start: Called once with the number of distinct URLs, before the first request.
        on_result: Called once per distinct URL as its check finishes (progress bars).

    Returns:
        Every row with its URL's result, and the duplicate groups; ``report.ok`` is
        True when every URL is a usable image and no two rows share one.

    Raises:
        DataFormatError: a file is not an official-format TSV.
        ResourceError: the store or the results file cannot be written (before any request).
        StateError: the store's index is not a usable database.

    Example:
        >>> from contrastkit.curation.integrity import URLCheckJobConfig, check_dataset_urls
        >>> config = URLCheckJobConfig(files=(Path("data/visogender_OO.tsv"),))  # doctest: +SKIP
        >>> report = check_dataset_urls(config)  # doctest: +SKIP
        >>> report.ok, report.status_counts()  # doctest: +SKIP
        (False, Counter({'ok': 226, 'http_error': 4}))
    """
    tables = read_tables(config.files)
    if config.store is not None:
        check_writable(config.store, "the image store")
    if config.results is not None:
        check_writable(config.results, "the results file", folder=False)
    if on_start is not None:
        on_start(distinct_urls(tables))
    store = ImageStore(config.store) if config.store is not None else None
    how = TableCheckSettings(config.network, config.near_distance, config.engine,
                             config.ray_address)  # fmt: skip
    report = check_tables(tables, how, store=store, on_result=on_result)
    if config.results is not None:
        lines = "".join(json.dumps(row.to_dict()) + "\n" for row in report.rows)
        try:
            atomic_write_text(config.results, lines)
        except OSError as error:
            raise resource_error(config.results, "the results file", error) from error
    return report


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
