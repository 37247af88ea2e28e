"""One azsd writes a store file: the lock a daemon's writer of a store holds while the file is open.

Two daemons with different state (or runtime) dirs used to write the same store, each sure it was
the only writer (decision 9 of DESIGN.md says the lock is tied to the file). The lock is a ``flock``
on a file beside the store file itself, its links followed (``sessions.azs.azsd-lock``), so a root
whose ``.azureal`` or whose store is a symbolic link to another's takes the same lock. It is never a
lock on the store file: SQLite's own locks there are ``fcntl`` locks, which a second open file of
the store in this process would drop when closed. AZUREAL knows nothing of it and opens the file as
before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Final

from azsd.errors import StoreError
from azsd.files import lock_holder, take_lock

__all__ = ["WRITER_LOCK_SUFFIX", "take_writer_lock", "writer_lock_path"]

#: What the lock file of a store's writer adds to the store file's name.
WRITER_LOCK_SUFFIX: Final = ".azsd-lock"


def writer_lock_path(path: Path) -> Path:
    """The writer lock file of the store file `path`: beside the file itself, its links followed."""
    real = Path(os.path.realpath(path))
    return real.with_name(real.name + WRITER_LOCK_SUFFIX)


def take_writer_lock(path: Path) -> IO[str]:
    """Take the writer lock of the store file `path` (its directory must exist), held until the
    returned file is closed; :class:`StoreError` naming the holder when another azsd holds it."""
    lock = writer_lock_path(path)
    try:
        handle = take_lock(lock)
    except OSError as exc:
        raise StoreError(f"cannot take the writer lock {lock}: {exc.strerror or exc}") from None
    if handle is None:
        raise StoreError(
            f"{path} is written by another azsd (pid {lock_holder(lock)}, lock {lock}): one daemon "
            "writes a store file; stop the other one, or use it (its runtime dir)"
        )
    return handle
