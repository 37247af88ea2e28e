"""A verified copy of the store, taken with SQLite's online backup API.

:class:`Backup` owns :meth:`~Backup.backup`: one consistent snapshot written beside its destination
under a temporary name, checked with ``PRAGMA integrity_check``, and given its name only then, never
over an existing file. It needs nothing of the store but the open connection.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from azsd.errors import StoreError
from azsd.model import BackupInfo
from azsd.store.core import StoreCore
from azsd.store.pacing import PACING, Pacer
from azsd.store.sqlite_errors import translate

__all__ = ["MAX_RESTARTS", "ONE_STEP_S", "STEP_BYTES", "Backup"]

#: Bytes copied a step: a step holds the store's shared lock, and this much takes a few ms to copy.
STEP_BYTES: Final = 4 << 20
#: How many times the copy may start over (another program wrote to the store) before it is taken in
#: one step, when that step would be short enough, or given up.
MAX_RESTARTS: Final = 5
#: The longest that one step of the whole copy may take: a writer waits for it to commit, and AZUREAL
#: waits 5 s at most.
ONE_STEP_S: Final = 1.0


class Backup(StoreCore):
    """Copying the store to a verified backup file."""

    def backup(self, dest: Path) -> BackupInfo:
        """Copy the store to `dest` with SQLite's online backup API, then verify the copy.

        The copy is one consistent snapshot, written beside `dest` under a temporary name and renamed
        into place only once `PRAGMA integrity_check` says ok (see :func:`_copy` for how it shares
        the store with AZUREAL's writes). An existing `dest` is never overwritten.
        """
        conn = self._conn
        if conn is None:
            raise StoreError(f"{self.path} does not exist yet: there is nothing to back up")
        dest = Path(dest)
        if dest.exists():
            raise StoreError(f"{dest} already exists (a backup never overwrites a file)")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        except OSError as exc:
            raise StoreError(f"cannot write a backup to {dest.parent}: {exc.strerror or exc}") from None
        os.close(handle)
        part = Path(name)
        try:
            with translate(dest):
                target = sqlite3.connect(part, isolation_level=None)
            try:
                _copy(self.path, conn, target, self.between_chunks)
                with translate(dest):
                    check = [row[0] for row in target.execute("PRAGMA integrity_check")]
                    sessions = target.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
                    events = target.execute("SELECT COUNT(*) FROM events").fetchone()[0]
            finally:
                target.close()
            if check != ["ok"]:
                raise StoreError(f"the copy of {self.path} failed its integrity check: {'; '.join(check)}")
            _place(part, dest)
        finally:
            part.unlink(missing_ok=True)
        return BackupInfo(
            path=str(dest), bytes=dest.stat().st_size, sessions=sessions, events=events, integrity="ok"
        )


log = logging.getLogger("azsd.store")


class _Restarted(Exception):
    """The copy started over too often."""


def _copy(
    path: Path,
    conn: sqlite3.Connection,
    target: sqlite3.Connection,
    between: Callable[[], None] | None = None,
) -> None:
    """Copy the store on `conn` into `target` in steps of `STEP_BYTES`, without making its other
    writers fail.

    A step holds a shared lock on the store, which lets other writers take theirs and write but not
    commit, so each step is short, and the steps are paced as every long write is
    (:data:`~azsd.store.pacing.PACING`). A writer waiting to commit holds SQLite's pending lock,
    which refuses the next step: the copy then sleeps `long_gap_s`, longer than any sleep of the
    writer's busy handler, so that writer commits first. A write by another connection makes SQLite
    start the copy over (SQLite has no other way to keep the snapshot consistent in rollback-journal
    mode); after `MAX_RESTARTS` of them the copy is taken in one step when the steps so far say it
    takes at most `ONE_STEP_S` (a writer's commit waits that long, far inside AZUREAL's 5 s), else it
    is given up with a clear error rather than go on for ever or block the writers.
    """
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = max(1, STEP_BYTES // page_size)
    pacer = Pacer()
    restarts = copied = 0
    copying_s = 0.0
    last_remaining: int | None = None
    step_began = time.monotonic()

    def progress(status: int, remaining: int, total: int) -> None:
        nonlocal restarts, last_remaining, copied, copying_s, step_began
        if status not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):  # else it copied nothing
            copying_s += time.monotonic() - step_began
            copied += pages
        if last_remaining is not None and remaining > last_remaining:
            restarts += 1
            if restarts > MAX_RESTARTS:
                raise _Restarted
        last_remaining = remaining
        pacer.stepped()
        if pacer.full():
            pacer.release()
            pacer.pause()
            if between is not None:  # the writes queued behind the backup, on this connection: SQLite
                between()  # writes them into the copy too (no restart)
            pacer.begin()
        step_began = time.monotonic()

    pacer.begin()
    try:
        with translate(path):
            conn.backup(target, pages=pages, progress=progress, sleep=PACING.long_gap_s)
        return
    except _Restarted:
        pass
    total = int(conn.execute("PRAGMA page_count").fetchone()[0])
    if total * copying_s / max(1, copied) > ONE_STEP_S:  # what one step of it all would take
        raise StoreError(
            f"{path} was written to {restarts} times while it was being copied (another program is "
            "writing to it): try the backup again when it is quieter"
        )
    log.info("%s: copied in one step after %d restarts", path, restarts)
    with translate(path):
        conn.backup(target, sleep=PACING.long_gap_s)


def _place(part: Path, dest: Path) -> None:
    """Give the finished copy `part` its name `dest`, never replacing a file that took it meanwhile."""
    try:
        os.link(part, dest)  # fails when dest exists, unlike a rename
    except FileExistsError:
        raise StoreError(f"{dest} already exists (a backup never overwrites a file)") from None
    except OSError:  # a file system without hard links
        if dest.exists():
            raise StoreError(f"{dest} already exists (a backup never overwrites a file)") from None
        part.replace(dest)
