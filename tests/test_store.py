"""The content-addressed image store: objects by sha256, the URL index, no partial files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from contrastkit.store import ImageInfo, ImageMeta, ImageStore


def test_put_names_the_object_by_its_sha256_and_indexes_the_url(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store")
    data = b"\x89PNG not really but bytes are bytes"
    sha = store.put(
        data, ImageMeta(format="PNG", width=3, height=2, phash="0" * 16), url="http://a/x.png"
    )

    assert sha == hashlib.sha256(data).hexdigest()
    assert store.path(sha) == tmp_path / "store" / "objects" / sha[:2] / sha
    assert store.read(sha) == data
    assert store.sha_for_url("http://a/x.png") == sha
    assert store.info(sha) == ImageInfo(sha, "PNG", 3, 2, "0" * 16, len(data))
    assert list(store.urls()) == [("http://a/x.png", sha)]


def test_same_bytes_under_two_urls_are_stored_once(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    first = store.put(
        b"abc", ImageMeta(format="JPEG", width=1, height=1, phash="f" * 16), url="http://a/1"
    )
    second = store.put(
        b"abc", ImageMeta(format="JPEG", width=1, height=1, phash="f" * 16), url="http://b/2"
    )
    assert first == second
    assert [p.name for p in (tmp_path / "objects").rglob("*") if p.is_file()] == [first]
    assert store.sha_for_url("http://b/2") == first


def test_a_url_points_at_its_latest_image(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    store.put(b"old", ImageMeta(format="PNG", width=1, height=1, phash="0" * 16), url="http://a/x")
    new = store.put(
        b"new", ImageMeta(format="PNG", width=1, height=1, phash="1" * 16), url="http://a/x"
    )
    assert store.sha_for_url("http://a/x") == new


def test_unknown_urls_and_objects(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "never-written")
    assert store.sha_for_url("http://a/x") is None
    assert store.info("0" * 64) is None
    with pytest.raises(KeyError, match="no image with sha256"):
        store.read("0" * 64)
    with pytest.raises(ValueError, match="not a lowercase hex sha256"):
        store.path("../../etc/passwd")
    assert not (tmp_path / "never-written").exists()


@pytest.mark.slow
def test_concurrent_first_writes_to_a_new_store(tmp_path: Path) -> None:
    """The checker stores images from several threads at once, starting on an empty store:
    the threads' first writes meet while the index is being set up."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    for attempt in range(20):
        store = ImageStore(tmp_path / f"store{attempt}")
        start = threading.Barrier(8)

        def put(n: int, store: ImageStore = store, start: threading.Barrier = start) -> str:
            start.wait()
            data = f"image {n}".encode()
            return store.put(data, ImageMeta(format="PNG", width=1, height=1, phash="0" * 16),
                             url=f"http://a/{n}")  # fmt: skip

        with ThreadPoolExecutor(max_workers=8) as pool:
            shas = list(pool.map(put, range(8)))
        assert len(set(shas)) == 8
        assert [store.sha_for_url(f"http://a/{n}") for n in range(8)] == shas


def test_a_store_folder_that_cannot_be_written_is_a_resource_error(tmp_path: Path) -> None:
    from contrastkit.errors import ResourceError

    (tmp_path / "store").write_text("a file where the store's folder should be")
    store = ImageStore(tmp_path / "store")
    with pytest.raises(ResourceError, match="cannot write an image of the store") as caught:
        store.put(b"abc", ImageMeta(format="PNG", width=1, height=1, phash="0" * 16))
    assert isinstance(caught.value.__cause__, OSError)


def test_an_index_that_is_not_a_database_is_a_state_error(tmp_path: Path) -> None:
    from contrastkit.errors import StateError

    (tmp_path / "index.sqlite").write_bytes(b"not a database " * 100)
    with pytest.raises(StateError, match="not a usable image store index") as caught:
        ImageStore(tmp_path).put(b"abc", ImageMeta(format="PNG", width=1, height=1, phash="0" * 16))
    assert caught.value.__cause__ is not None


def test_sqlite_errors_names_locks_and_broken_files_and_leaves_bugs_alone(tmp_path: Path) -> None:
    import sqlite3

    from contrastkit.errors import ResourceError, StateError
    from contrastkit.store import sqlite_errors

    db = tmp_path / "state.sqlite"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ResourceError, match="database is locked"), sqlite_errors(db, "db"):
            sqlite3.connect(db, timeout=0).execute("SELECT * FROM t").fetchall()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with pytest.raises(StateError, match="not a usable db"), sqlite_errors(db, "db"):
        sqlite3.connect(db).execute("INSERT INTO t VALUES (1, 2)")  # another schema
    closed = sqlite3.connect(db)
    closed.close()
    with pytest.raises(sqlite3.ProgrammingError), sqlite_errors(db, "db"):
        closed.execute("SELECT 1")  # misuse of the API is a bug, not the user's problem


def _age(path: Path, seconds: float) -> None:
    import os
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_temp_files_of_killed_runs_are_removed_on_the_first_put(tmp_path: Path) -> None:
    from contrastkit.store import STALE_TEMP_SECONDS

    store = ImageStore(tmp_path)
    kept = store.put(b"kept", ImageMeta(format="PNG", width=1, height=1, phash="0" * 16))
    shard = store.path(kept).parent
    stale = [shard / f".{kept}.k3x_9q2a.tmp", shard / ".tmp-abc123_x"]  # now and before
    fresh = shard / f".{'e' * 64}.a1b2c3d4.tmp"  # a writer of another process, right now
    others = [shard / ".notes", shard / "readme.tmp", tmp_path / ".tmp-outside-objects"]
    for path in [*stale, fresh, *others]:
        path.write_bytes(b"partial")
    for path in [*stale, *others]:
        _age(path, STALE_TEMP_SECONDS + 60)
    _age(fresh, STALE_TEMP_SECONDS - 60)

    reopened = ImageStore(tmp_path)
    reopened.put(b"new", ImageMeta(format="PNG", width=1, height=1, phash="1" * 16))
    assert [p.exists() for p in stale] == [False, False]
    assert fresh.exists() and all(p.exists() for p in others)
    assert reopened.read(kept) == b"kept"

    again = shard / ".tmp-later"
    again.write_bytes(b"partial")
    _age(again, STALE_TEMP_SECONDS + 60)
    reopened.put(b"newer", ImageMeta(format="PNG", width=1, height=1, phash="2" * 16))
    assert again.exists()  # one sweep per store instance, not one per put
    assert reopened.remove_stale_temp_files() == 1 and not again.exists()
    assert reopened.remove_stale_temp_files(older_than=0) == 1 and not fresh.exists()


def test_a_store_without_objects_has_nothing_to_sweep(tmp_path: Path) -> None:
    assert ImageStore(tmp_path / "absent").remove_stale_temp_files() == 0
    (tmp_path / "file").write_text("not a store")
    assert ImageStore(tmp_path / "file").remove_stale_temp_files() == 0


def test_the_temp_file_of_a_writer_killed_mid_put_is_swept(tmp_path: Path) -> None:
    """SIGKILL a process while it writes an object: its temporary file stays behind, the
    store never shows a partial object, and the next writer removes the file once stale."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from contrastkit.store import STALE_TEMP_SECONDS

    script = f"""
import os, time
from contrastkit.store import ImageMeta, ImageStore
def hang(fd):  # the bytes are written; the kill comes before fsync and rename
    print("writing", flush=True)
    time.sleep(60)
os.fsync = hang
ImageStore({str(tmp_path)!r}).put(b"x" * 100_000, ImageMeta(format="PNG", width=1, height=1,
                                  phash="0" * 16))
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "writing\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    sha = hashlib.sha256(b"x" * 100_000).hexdigest()
    [left] = list((tmp_path / "objects" / sha[:2]).iterdir())
    assert left.name.startswith(f".{sha}.") and left.name.endswith(".tmp")
    store = ImageStore(tmp_path)
    assert not store.has(sha)
    store.put(b"y", ImageMeta(format="PNG", width=1, height=1, phash="0" * 16))
    assert left.exists()  # not an hour old: it could still be a running writer's
    then = time.time() - STALE_TEMP_SECONDS - 1
    os.utime(left, (then, then))
    ImageStore(tmp_path).put(b"z", ImageMeta(format="PNG", width=1, height=1, phash="0" * 16))
    assert not left.exists()
