"""What azsd's writer of each store file changed, commit by commit, for the readers beside it.

A store's reader keeps a session index (:class:`~azsd.store.cache.SessionIndex`) and must not
answer from it once another connection committed. SQLite says *that* something was committed
(``PRAGMA data_version``) but not what. The writer of the same process knows what it changed: the
sessions each of its transactions touched. It files them here under the file change counter that
its commit left in the database header (bytes 24–27, raised by every write transaction in
rollback-journal mode, the mode azsd keeps its stores in). A reader whose index was built at
counter ``c`` and that finds the file at ``d`` re-reads only the sessions filed under ``c+1`` to
``d``, when every one of those commits is filed here; a commit that is not (AZUREAL's, or one this
process cannot account for) makes it read the whole list again, as before.

A wrong entry can only cost a re-read, never a stale listing: a commit whose counter the writer
could not be sure of is filed as touching everything (None), and an entry filed under a counter
another program's commit took leaves the writer's own commit missing, which is a gap.

>>> log = ChangeLog()
>>> log.record(7, frozenset({3})); log.record(8, frozenset({4, 5}))
>>> sorted(log.since(6, 8)), log.since(5, 8), log.since(8, 8)
([3, 4, 5], None, set())
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Final

__all__ = ["ChangeLog", "change_counter", "hold", "let_go"]

#: Commits remembered per store file (a reader that fell further behind reads the list again).
KEPT: Final = 4096


class ChangeLog:
    """The sessions each commit touched, by the file change counter after it (None: any)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, frozenset[int] | None] = OrderedDict()

    def record(self, counter: int, touched: frozenset[int] | None) -> None:
        """File a commit (a second one under the same counter, a commit that wrote nothing, adds)."""
        with self._lock:
            if counter in self._entries:
                earlier = self._entries[counter]
                touched = None if earlier is None or touched is None else earlier | touched
            self._entries[counter] = touched
            self._entries.move_to_end(counter)
            while len(self._entries) > KEPT:
                self._entries.popitem(last=False)

    def since(self, start: int, end: int) -> set[int] | None:
        """The sessions the commits after counter `start` up to `end` touched, or None when one of
        them is not filed or touched any session (then read everything again)."""
        if end < start:
            return None
        found: set[int] = set()
        with self._lock:
            for counter in range(start + 1, end + 1):
                touched = self._entries.get(counter)
                if touched is None:
                    return None
                found |= touched
        return found


#: Each open store file's log, and how many Stores of the process hold the file open. A file's inode
#: number is not given to another file while it is open, so a log lives exactly as long as some
#: Store holds its file: the next file that gets the same inode starts with an empty log.
_LOGS: dict[tuple[int, int], tuple[ChangeLog, int]] = {}
_LOGS_LOCK = threading.Lock()


def hold(file_id: tuple[int, int]) -> ChangeLog:
    """A Store opened the file `file_id` (device, inode): its change log, shared by the process."""
    with _LOGS_LOCK:
        log, holders = _LOGS.get(file_id, (ChangeLog(), 0))
        _LOGS[file_id] = (log, holders + 1)
        return log


def let_go(file_id: tuple[int, int]) -> None:
    """A Store closed the file `file_id`; the last one to close it forgets its log."""
    with _LOGS_LOCK:
        log, holders = _LOGS.get(file_id, (ChangeLog(), 1))
        if holders <= 1:
            _LOGS.pop(file_id, None)
        else:
            _LOGS[file_id] = (log, holders - 1)


def change_counter(path: Path, file_id: tuple[int, int]) -> int | None:
    """The file change counter in the database header of the store file `file_id` at `path`, or
    None when it cannot be told (WAL mode, where commits go to the ``-wal`` file and leave the
    header be; no descriptor of the file found).

    It is read through a descriptor SQLite itself holds open (found in ``/proc/self/fd``), never
    through one of ours: closing any descriptor of a file drops every POSIX lock the process holds
    on it, SQLite's included (SQLite's documentation warns of exactly this)."""
    if os.path.exists(f"{path}-wal"):
        return None
    fd = _sqlite_fd(file_id)
    if fd is None:
        return None
    try:
        header = os.pread(fd, 4, 24)
        if _identity(os.fstat(fd)) != file_id:  # (closed and taken by another file meanwhile)
            _FDS.pop(file_id, None)
            return None
    except OSError:
        _FDS.pop(file_id, None)
        return None
    return int.from_bytes(header, "big") if len(header) == 4 else None


#: A descriptor SQLite holds open on each store file, as last found.
_FDS: dict[tuple[int, int], int] = {}


def _sqlite_fd(file_id: tuple[int, int]) -> int | None:
    fd = _FDS.get(file_id)
    if fd is not None:
        try:
            if _identity(os.fstat(fd)) == file_id:
                return fd
        except OSError:
            pass
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in names:
        try:
            if _identity(os.stat(f"/proc/self/fd/{name}")) == file_id:
                _FDS[file_id] = int(name)
                return int(name)
        except (OSError, ValueError):
            continue
    return None


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino
