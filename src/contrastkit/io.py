"""Writing files safely: atomic replacement, and checking up front that outputs can be
written at all.

Every file contrastkit writes goes through :func:`atomic_write` (or its bytes / text
forms): a temporary file in the same folder, flushed and fsynced, renamed into place, so
readers only ever see the old or the new file and a crash leaves at most a
``.{name}.*.tmp`` file behind. :func:`check_writable` turns an output that cannot be
written (read-only folder, full disk, a file where a folder should be) into a
:class:`~contrastkit.errors.ResourceError` before a long job starts.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from contrastkit.errors import ResourceError, StateError

__all__ = [
    "atomic_path",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_writable",
    "exchange_paths",
    "exclusive_lock",
    "resource_error",
    "shared_lock",
    "staging_folder",
]


def resource_error(path: str | Path, what: str, error: OSError) -> ResourceError:
    """A :class:`ResourceError` naming ``path`` and the system's reason, ``error`` chained
    by the caller (``raise resource_error(...) from error``)."""
    reason = error.strerror or str(error)
    if error.errno == errno.ENOSPC:
        reason = "no space left on the device"
    elif error.errno in (errno.EACCES, errno.EPERM):
        reason = "permission denied"
    elif error.errno == errno.EROFS:
        reason = "read-only file system"
    return ResourceError(f"{path}: cannot write {what}: {reason}")


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def exchange_paths(first: str | Path, second: str | Path) -> bool:
    """Swap the files at two paths of one file system in one atomic step (Linux
    ``renameat2(RENAME_EXCHANGE)``, kernel 3.15+ and most local file systems). Return
    False, changing nothing, where that is not available (another system, an old C
    library or kernel, a file system without it).

    What was at ``second`` is then at ``first``, so a writer can look at exactly what it
    replaced, and put it back, instead of checking a moment before the replace.

    Raises:
        OSError: the swap is available but failed (a missing file, permissions).
    """
    import ctypes

    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    done = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
                     _RENAME_EXCHANGE)  # fmt: skip
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


@functools.cache
def _renameat2() -> Any:
    """The C library's ``renameat2``, looked up once; ``None`` where there is none."""
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]  # fmt: skip
    return function


@contextmanager
def atomic_path(
    path: str | Path, *, commit: Callable[[Path, Path], None] | None = None
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends without an error the
    file written there is fsynced and renamed onto ``path``, else it is removed.

    For writers that want a file name (``figure.savefig(tmp)``); the temporary name keeps
    ``path``'s suffix so such writers pick the right format. A replaced file keeps its
    permission bits; a new one gets the umask's defaults.

    ``commit(tmp, path)``, when given, puts the fsynced temporary file in place instead of
    the plain rename (e.g. a compare-and-swap with :func:`exchange_paths`); whatever it
    leaves at ``tmp`` is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}",
                                    dir=path.parent)  # fmt: skip
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if path.exists():
            tmp.chmod(path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            tmp.chmod(0o666 & ~umask)
        yield tmp
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        if commit is None:
            tmp.replace(path)
        else:
            commit(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if commit is not None:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(handle)`` on a temporary binary file and rename it onto ``path``."""
    with atomic_path(path) as tmp, tmp.open("wb") as handle:
        write(handle)
        handle.flush()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, line ends as given) atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def check_writable(path: str | Path, what: str, *, folder: bool = True) -> Path:
    """Make sure ``path`` can be written before long work starts; return it.

    ``folder=True``: ``path`` is an output folder; it is created if missing and a 4 KiB
    probe file is written, fsynced and removed inside it. ``folder=False``: ``path`` is an
    output file; its folder is checked the same way and the file, if it exists, must be
    a writable file (it is not touched).

    Raises:
        ResourceError: permission denied, read-only file system, no space left, or a file
            where a folder should be — naming ``path`` and ``what`` it was for.
    """
    path = Path(path)
    target = path if folder else path.parent
    try:
        if target.exists() and not target.is_dir():
            raise ResourceError(f"{target}: cannot write {what}: it is a file, not a folder")
        target.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".contrastkit-probe-", dir=target)
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
            Path(probe).unlink(missing_ok=True)
        if not folder and path.exists():
            if path.is_dir():
                raise ResourceError(f"{path}: cannot write {what}: it is a folder")
            if not os.access(path, os.W_OK):
                raise PermissionError(errno.EACCES, "permission denied", str(path))
    except ResourceError:
        raise
    except OSError as error:
        raise resource_error(path, what, error) from error
    return path


@contextmanager
def exclusive_lock(lock_path: str | Path, what: str, run: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` for the block: one run at a time. The
    file records the holder (``pid@host since time``) for the message a second run gets.

    Args:
        lock_path: the lock file (created if missing; never deleted).
        what: what the lock guards, for messages (a path).
        run: the kind of run that takes it (``contrastkit build gensynth``).

    Raises:
        StateError: another run holds the lock (the message names it).
        ResourceError: the lock file cannot be created or opened.
    """
    lock_path = Path(lock_path)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = lock_path.open("a+")
    except OSError as error:
        raise resource_error(lock_path, f"the lock of {what}", error) from error
    with handle:
        busy = f"{what}: another `{run}` run holds {lock_path}"
        _flock_now(handle, fcntl.LOCK_EX, lambda holder: f"{busy} ({holder})")
        try:
            handle.seek(0)
            handle.truncate()
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
            handle.write(f"pid {os.getpid()}@{socket.gethostname()} since {stamp}")
            handle.flush()
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def shared_lock(lock_path: str | Path, what: str, reader: str) -> Iterator[None]:
    """Hold a shared ``flock`` on ``lock_path`` for the block: readers (an export) run
    side by side, never while a writer holds :func:`exclusive_lock` on it, and a writer
    that starts meanwhile is refused (by its own lock). No lock file, no writer has ever
    run there: nothing to hold. The file is opened read-only and never written.

    Raises:
        StateError: a writer holds the lock now (the message names it and ``reader``).
        ResourceError: the lock file exists but cannot be opened.
    """
    lock_path = Path(lock_path)
    try:
        handle = lock_path.open("rb")
    except FileNotFoundError:
        yield
        return
    except OSError as error:
        raise resource_error(lock_path, f"the lock of {what}", error) from error
    with handle:
        _flock_now(handle, fcntl.LOCK_SH, lambda holder: (
            f"{what}: a run is writing it ({holder}, holding {lock_path}); "
            f"{reader} when it has finished"
        ))  # fmt: skip
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _flock_now(handle: IO[Any], operation: int, message: Callable[[str], str]) -> None:
    """``flock(handle, operation)`` without waiting; when another process holds a
    conflicting lock, a :class:`StateError` of ``message(holder)``, the holder being what
    the exclusive holder wrote in the file (``pid N@host since ...``)."""
    try:
        fcntl.flock(handle.fileno(), operation | fcntl.LOCK_NB)
    except BlockingIOError as error:
        handle.seek(0)
        data = handle.read()
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        raise StateError(message(text.strip() or "another process")) from error


def staging_folder(parent: str | Path, prefix: str) -> Path:
    """A new, uniquely named folder in ``parent`` to build an output in before it is
    renamed into place, with the permissions of any folder the user makes there
    (``0o777`` less the umask), not ``mkdtemp``'s private ``0o700``: the output is the
    user's to share."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    return folder
