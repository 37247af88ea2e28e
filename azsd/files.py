"""Files written all or nothing: the one atomic-write helper of azsd and its client.

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
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "write_atomic"]


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
