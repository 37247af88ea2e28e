"""The file's upkeep: its journal mode stays DELETE, and its size follows what it holds.

Another program may switch the store to WAL (which persists in the file; spec §1.2 says azsd must
never do it, and AZUREAL switches back on its next open). Its commits then go to the `-wal` file:
:meth:`Vacuum.keep_journal_mode` switches the store back to DELETE from the store's upkeep as soon as
SQLite lets it (once no other connection has the file open in WAL: azsd's readers let go of it
between reads meanwhile), and until then pages are versioned with the `-wal` file's stat too
(:meth:`~azsd.store.core.StoreCore.read_version`), so none is served stale.

Deleting rows (a session, pruned request keys, a reindex) leaves their pages on SQLite's free list;
the file does not shrink by itself. AZUREAL runs a full ``VACUUM`` after each session it deletes
(spec §7, errors ignored); azsd does the same work in steps, from the store's upkeep
(:meth:`Vacuum.vacuum_some`, called between requests):

- a store made by azsd has ``auto_vacuum = INCREMENTAL`` (set before its first table; a VACUUM,
  AZUREAL's too, keeps it), so free pages are given back with ``PRAGMA incremental_vacuum`` in short
  paced transactions (:mod:`azsd.store.chunks`), never one long hold;
- a store without it (made by AZUREAL, or by an azsd before this) is switched to it by one full
  ``VACUUM`` the first time it has much to give back, as AZUREAL would do after a delete, if what it
  holds is small enough to copy quickly (:data:`FULL_VACUUM_MAX_BYTES`); a bigger one is left as it
  is (and logged once).

Nothing is done while less than :data:`MIN_FREE_BYTES` are free (the next writes reuse them).
"""

from __future__ import annotations

import logging
import os
from typing import Final

from azsd.store.chunks import ChunkedWrite
from azsd.store.core import BUSY_TIMEOUT_S, StoreCore
from azsd.store.sqlite_errors import StoreBusyError, translate

__all__ = ["FULL_VACUUM_MAX_BYTES", "INCREMENTAL", "MIN_FREE_BYTES", "Vacuum"]

log = logging.getLogger("azsd.store")

#: ``PRAGMA auto_vacuum`` value of a store whose free pages are given back in steps.
INCREMENTAL: Final = 2
#: Free space below this is left for the next writes to reuse.
MIN_FREE_BYTES: Final = 4 * 1024 * 1024
#: The most live data a full VACUUM (the one-time switch to incremental) copies.
FULL_VACUUM_MAX_BYTES: Final = 64 * 1024 * 1024
#: Pages given back per step of an incremental vacuum (a step stays well under 50 ms).
_STEP_PAGES: Final = 256


class Vacuum(StoreCore):
    """The store's journal mode, and its free pages given back to the file system."""

    _too_big_logged = False
    _vacuuming = False  # an incremental vacuum started: it goes on until no page is free
    _wal_logged = False

    def keep_journal_mode(self) -> None:
        """Switch a store another program put in WAL back to DELETE, when SQLite lets it (not while
        another connection has the file open in WAL: then it is tried again at the next upkeep)."""
        conn = self._conn
        if conn is None or self.read_only or self.reader or conn.in_transaction:
            return
        if not os.path.exists(f"{self.path}-wal"):
            return
        waited = self._lock_wait_ms
        try:
            with translate(self.path):
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # sees the mode as it is
                if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                    return
                self.wait_for_locks(0)  # never wait for the other program here
                mode = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        except StoreBusyError:
            mode = "wal"
        finally:
            self.wait_for_locks(BUSY_TIMEOUT_S if waited is None else waited / 1000)
        if mode == "delete":
            log.warning("%s was switched to WAL by another program: switched it back to DELETE", self.path)
            self._wal_logged = False
        elif not self._wal_logged:
            log.warning("%s is in WAL mode (another program's doing); switching back later", self.path)
            self._wal_logged = True

    def free_bytes(self) -> tuple[int, int]:
        """The bytes on the free list and the file's bytes, as SQLite counts them."""
        conn = self._conn
        if conn is None:
            return 0, 0
        with translate(self.path):
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        return free * size, pages * size

    def vacuum_some(self) -> bool:
        """Give some free pages back when many are free (one paced chunk, or the one-time full
        VACUUM); whether more remains to give back."""
        conn = self._conn
        if conn is None or self.read_only or self.reader or conn.in_transaction:
            return False
        free, total = self.free_bytes()
        if free == 0 or (free < MIN_FREE_BYTES and not self._vacuuming):
            self._vacuuming = False
            return False
        with translate(self.path):
            mode = conn.execute("PRAGMA auto_vacuum").fetchone()[0]
        if mode == INCREMENTAL:
            self._vacuuming = True
            with ChunkedWrite(self) as chunks:
                first = chunks.pacer.chunks  # (the store's pacer: its count goes on across calls)
                while chunks.pacer.chunks == first:
                    with chunks.step() as step:
                        step.execute(f"PRAGMA incremental_vacuum({_STEP_PAGES})").fetchall()
                    if self.free_bytes()[0] == 0:
                        self._vacuuming = False
                        return False
            return True
        if total - free > FULL_VACUUM_MAX_BYTES:
            if not self._too_big_logged:
                log.info("%s: %d MB free, too big to VACUUM in the background", self.path, free >> 20)
                self._too_big_logged = True
            return False
        with translate(self.path):
            conn.execute(f"PRAGMA auto_vacuum = {INCREMENTAL}")
            conn.execute("VACUUM")
        self._forget()
        log.info("%s: vacuumed, %d MB given back", self.path, free >> 20)
        return False
