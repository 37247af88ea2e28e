"""Files written all or nothing, and agent files read without surprises.

:func:`atomic_write` is the one atomic-write helper of azsd and its client; :func:`take_lock` its one
lock file (the daemon's single-instance lock, a store's writer lock). :func:`open_regular`
opens a file azsd is asked to read (an agent's JSONL) so that nothing can hang or loop: it never
blocks in ``open`` (a FIFO) and refuses anything but a regular file, naming what it is (a FIFO,
``/dev/zero``, a directory).

A reader sees either the old file or the whole new one, never a part, and after a power loss the
new file is there with its bytes: the data goes to a temporary file beside the target, is fsynced,
renamed over the target, and the directory is fsynced so that the rename itself is durable.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
>>> write_atomic(path, b"hello")
>>> path.read_bytes()
b'hello'
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO, Final

__all__ = ["atomic_write", "lock_holder", "open_regular", "take_lock", "write_atomic"]

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


@contextmanager
def atomic_write(path: Path, *, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file to write that replaces `path` when the block ends, with permissions `mode`
    (whatever the umask), or by default those of any new file (0666 less the umask).

    Nothing changes at `path` when the block raises; the temporary file is removed.
    """
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666), "wb") as out:
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data`, all or nothing (see :func:`atomic_write`)."""
    with atomic_write(path, mode=mode) as out:
        out.write(data)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (a file system that cannot sync a directory is let be)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def open_regular(path: Path, *, nofollow: bool = False) -> BinaryIO:
    """`path` opened for reading, if it is a regular file.

    Raises OSError (its `strerror` says what the path is instead, e.g. ``a FIFO (named pipe), not a
    regular file``). With `nofollow`, a symbolic link is refused too.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if nofollow and exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symbolic link, not a regular file", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise OSError(errno.EINVAL, f"{kind}, not a regular file", str(path))
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def take_lock(path: Path) -> IO[str] | None:
    """An exclusive lock on `path` (created if need be), with this process's pid written in it, held
    until the returned file is closed (or the process ends); None when another open file of it
    holds the lock (:func:`lock_holder` then names that process).

    A BSD ``flock``, not an ``fcntl`` lock: it belongs to the open file, so closing any other file
    of the same path in this process does not drop it, and two opens in one process exclude each
    other as two processes do.
    """
    handle = open(path, "a+", encoding="ascii")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        if exc.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            raise
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def lock_holder(path: Path) -> str:
    """The pid written in a lock file of :func:`take_lock` ("unknown" when there is none)."""
    try:
        return Path(path).read_text(encoding="ascii", errors="replace").strip() or "unknown"
    except OSError:
        return "unknown"
