"""A content-addressed image store shared by the URL checker, the evaluator and the exporter.

``contrastkit urls check --store DIR`` keeps the bytes of every image that decoded fully;
later stages read them back by URL without touching the network. The layout is plain
files a person can inspect::

    DIR/objects/ab/ab12...ef      the image bytes, named by their sha256 (64 hex digits)
    DIR/index.sqlite              url -> sha256, and sha256 -> format, width, height, phash

An object is written atomically (:func:`contrastkit.io.atomic_write_bytes`: a temporary
file in the same folder, fsynced, renamed into place), so a crash never leaves a partial
object under its final name; an object whose name exists is never rewritten (same name,
same bytes). Index updates are SQLite transactions. Several processes may add to one store
at once. A folder that cannot be written is a :class:`~contrastkit.errors.ResourceError`,
an index that is not a usable database a :class:`~contrastkit.errors.StateError`
(:func:`sqlite_errors`).

A run killed while writing an object leaves its temporary file behind
(``objects/ab/.<sha256>.<random>.tmp``; earlier versions of the store used
``objects/ab/.tmp-<random>``). The first :meth:`ImageStore.put` of each store instance
removes those temporary files that are older than :data:`STALE_TEMP_SECONDS` (one hour,
by modification time): a writer renames its temporary file into place within one
``put`` (one write and one fsync, well under a minute even for the largest image), so a
temporary file that old belongs to no running writer, and a file another process is
still writing is never removed. :meth:`ImageStore.remove_stale_temp_files` runs the same
sweep on demand.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from contrastkit.errors import ResourceError, StateError
from contrastkit.io import atomic_write_bytes, resource_error

__all__ = [
    "STALE_TEMP_SECONDS",
    "ImageInfo",
    "ImageMeta",
    "ImageStore",
    "default_image_store",
    "image_store_for",
    "sha256_hex",
    "sqlite_errors",
]

log = logging.getLogger("contrastkit.store")

STALE_TEMP_SECONDS = 3600.0
"""Age (seconds since last modification) from which a temporary file of the store is a
leftover of a killed run and is removed."""

#: Temporary files of object writes: ``io.atomic_path``'s ``.{sha256}.{random}.tmp`` and
#: the ``.tmp-{random}`` of earlier versions of the store.
_TEMP_NAME = re.compile(r"\.(?:[0-9a-f]{64}\.[A-Za-z0-9_]+\.tmp|tmp-[A-Za-z0-9_]+)")

#: Words of SQLite's messages that mean the machine, not the file's content, is at fault.
_ENVIRONMENT_WORDS = ("locked", "busy", "disk i/o", "disk is full", "readonly", "read-only",
                      "unable to open", "out of memory")  # fmt: skip

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    sha256 TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    width INTEGER NOT NULL,
    height INTEGER NOT NULL,
    phash TEXT NOT NULL,
    size INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS urls (
    url TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL REFERENCES objects(sha256),
    stored_at TEXT NOT NULL
);
"""


def default_image_store() -> Path:
    """The image store used when none is given for the bundled VisoGender sets (or when
    URLs are fetched): ``$XDG_CACHE_HOME/contrastkit/images``, or
    ``~/.cache/contrastkit/images`` when ``XDG_CACHE_HOME`` is not set. ``contrastkit
    evaluate --data visogender`` fetches the images into it; every later run
    (``export harness visogender`` too) reads them from there."""
    cache = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(cache).expanduser() / "contrastkit" / "images"


def image_store_for(
    store: str | os.PathLike[str] | None, *, bundled: bool, fetching: bool = False
) -> Path | None:
    """The image store a command reads URLs from (and fetches into), the one rule of
    ``evaluate``, ``export harness`` and every command that takes the bundled sets:
    ``store`` when one is given (``--store``); else :func:`default_image_store` when the
    data includes the bundled sets (``bundled``: :func:`contrastkit.tsv.is_bundled`) or
    URLs are fetched; else none."""
    if store is not None:
        return Path(store)
    return default_image_store() if bundled or fetching else None


@contextmanager
def sqlite_errors(path: str | os.PathLike[str], what: str) -> Iterator[None]:
    """Raise SQLite's errors about the database file ``path`` as contrastkit errors.

    ``database is locked``, disk I/O errors, a full disk, a read-only or unopenable file
    become :class:`~contrastkit.errors.ResourceError`; any other database error (not a
    database, a malformed file, tables of another schema) a
    :class:`~contrastkit.errors.StateError` saying the file is not a usable ``what``.
    SQLite's error is chained as the cause. Misuse of the ``sqlite3`` API (a bug) is left
    as it is.
    """
    try:
        yield
    except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
        raise
    except sqlite3.OperationalError as error:
        if any(word in str(error).lower() for word in _ENVIRONMENT_WORDS):
            raise ResourceError(f"{path}: cannot use the {what}: {error}") from error
        raise StateError(f"{path}: not a usable {what} ({error})") from error
    except sqlite3.DatabaseError as error:
        raise StateError(f"{path}: not a usable {what} ({error})") from error


def sha256_hex(data: bytes) -> str:
    """The lowercase hex sha256 of ``data``: the name of its object in the store."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class ImageMeta:
    """What the store records of an image besides its bytes (their digest and size it
    works out itself).

    Attributes:
        format: Pillow's format name (``JPEG``, ``PNG``, ``WEBP`` ...).
        width: Width in pixels.
        height: Height in pixels.
        phash: Perceptual hash (``imagehash.phash``) as 16 hex digits.
    """

    format: str
    width: int
    height: int
    phash: str


@dataclass(frozen=True)
class ImageInfo:
    """Fingerprint of an image that decoded fully, as the checker and the store record it.

    Attributes:
        sha256: Hex digest of the bytes; also the object's file name.
        format: Pillow's format name (``JPEG``, ``PNG``, ``WEBP`` ...).
        width: Width in pixels.
        height: Height in pixels.
        phash: Perceptual hash (``imagehash.phash``) as 16 hex digits.
        size: Size of the bytes.
    """

    sha256: str
    format: str
    width: int
    height: int
    phash: str
    size: int

    @property
    def meta(self) -> ImageMeta:
        """What :meth:`ImageStore.put` records of the image besides its bytes."""
        return ImageMeta(self.format, self.width, self.height, self.phash)


class ImageStore:
    """A folder of images named by the sha256 of their bytes, with a URL index.

    Args:
        root: The store's folder; created on first write.

    Example:
        >>> store = ImageStore(Path("build/images"))          # doctest: +SKIP
        >>> sha = store.sha_for_url("https://example.org/a.jpg")  # doctest: +SKIP
        >>> data = store.read(sha)                            # doctest: +SKIP
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._ready = False  # index set up by this instance (once, not on every put)
        self._swept = False  # stale temporary files removed (on the first put)
        self._setup = threading.Lock()

    # -- objects ---------------------------------------------------------------------------

    def path(self, sha256: str) -> Path:
        """Where the object named ``sha256`` lives (whether or not it exists yet)."""
        _check_digest(sha256)
        return self.root / "objects" / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        """Whether the object's bytes are in the store."""
        return self.path(sha256).is_file()

    def read(self, sha256: str) -> bytes:
        """The bytes of one object.

        Raises:
            KeyError: the store has no such object.
        """
        path = self.path(sha256)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"{self.root}: no image with sha256 {sha256}") from None

    def put(self, data: bytes, meta: ImageMeta, *, url: str | None = None) -> str:
        """Add an image with what was measured of it (and optionally the URL it came
        from); return its sha256.

        Adding bytes that are already stored only updates the URL index.

        Raises:
            ResourceError: the store's folder cannot be written (permissions, full disk).
            StateError: the index is not a usable database.
        """
        if not self._swept:
            with self._setup:
                if not self._swept:
                    self._swept = True
                    self.remove_stale_temp_files()
        digest = sha256_hex(data)
        target = self.path(digest)
        if not target.is_file():
            try:
                atomic_write_bytes(target, data)
            except OSError as error:
                raise resource_error(target, "an image of the store", error) from error
        with self._connect() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO objects VALUES (?, ?, ?, ?, ?, ?)",
                (digest, meta.format, meta.width, meta.height, meta.phash, len(data)),
            )
            if url is not None:
                conn.execute(
                    "INSERT INTO urls VALUES (?, ?, ?) ON CONFLICT(url) DO UPDATE SET "
                    "sha256 = excluded.sha256, stored_at = excluded.stored_at",
                    (url, digest, datetime.now(timezone.utc).isoformat(timespec="seconds")),
                )
        return digest

    def remove_stale_temp_files(self, older_than: float = STALE_TEMP_SECONDS) -> int:
        """Remove the temporary object files killed runs left, if older than
        ``older_than`` seconds (by modification time); return how many were removed.

        Only names of the store's own temporary files inside ``objects/??/`` are touched;
        a file that cannot be removed (a read-only store) is left and logged.
        """
        cutoff = time.time() - older_than
        removed = 0
        try:
            shards = [e.path for e in os.scandir(self.root / "objects")
                      if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]  # fmt: skip
        except (FileNotFoundError, NotADirectoryError):
            return 0
        except OSError as error:
            log.warning("%s: cannot look for stale temporary files: %s", self.root, error)
            return 0
        for shard in shards:
            try:
                with os.scandir(shard) as entries:
                    candidates = [Path(e.path) for e in entries if _TEMP_NAME.fullmatch(e.name)]
            except OSError as error:  # gone meanwhile, or unreadable
                log.warning("%s: cannot look for stale temporary files: %s", shard, error)
                continue
            for path in candidates:
                try:
                    info = path.lstat()
                    if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except FileNotFoundError:
                    continue  # renamed into place, or swept by another process, meanwhile
                except OSError as error:
                    log.warning("%s: cannot remove a stale temporary file: %s", path, error)
        if removed:
            log.info("%s: removed %d stale temporary file(s)", self.root, removed)
        return removed

    # -- index -----------------------------------------------------------------------------

    def sha_for_url(self, url: str) -> str | None:
        """The sha256 of the image last stored for ``url``, or None if it was never stored."""
        if not self._index.exists():
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT sha256 FROM urls WHERE url = ?", (url,)).fetchone()
        return None if row is None else str(row[0])

    def info(self, sha256: str) -> ImageInfo | None:
        """Format, size and perceptual hash of a stored object, or None."""
        if not self._index.exists():
            return None
        with self._connect() as conn:
            row = conn.execute(
                "SELECT sha256, format, width, height, phash, size FROM objects WHERE sha256 = ?",
                (sha256,),
            ).fetchone()
        return None if row is None else ImageInfo(*row)

    def urls(self) -> Iterator[tuple[str, str]]:
        """Every ``(url, sha256)`` pair in the index, sorted by URL."""
        if not self._index.exists():
            return
        with self._connect() as conn:
            yield from conn.execute("SELECT url, sha256 FROM urls ORDER BY url").fetchall()

    @property
    def _index(self) -> Path:
        return self.root / "index.sqlite"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise resource_error(self.root, "the image store", error) from error
        with (
            sqlite_errors(self._index, "image store index"),
            closing(sqlite3.connect(self._index, timeout=30)) as conn,
        ):
            if not self._ready:
                self._set_up(conn)
            with conn:
                yield conn

    def _set_up(self, conn: sqlite3.Connection) -> None:
        """WAL mode and tables, once per instance. Switching the journal mode does not
        wait for other connections (SQLite answers "locked" at once), so concurrent first
        uses, threads or processes, retry for up to 30 s."""
        with self._setup:
            if self._ready:
                return
            deadline = time.monotonic() + 30
            while True:
                try:
                    conn.execute("PRAGMA journal_mode=WAL")  # persistent in the file
                    conn.executescript(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            self._ready = True


def _check_digest(sha256: str) -> None:
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"not a lowercase hex sha256: {sha256!r}")
