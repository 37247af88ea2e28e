"""Giving freed space back: the file's size follows what it holds.

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
from typing import Final

from azsd.store.chunks import ChunkedWrite
from azsd.store.core import StoreCore, _translate

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
    """The store's free pages, given back to the file system."""

    _too_big_logged = False
    _vacuuming = False  # an incremental vacuum started: it goes on until no page is free

    def free_bytes(self) -> tuple[int, int]:
        """The bytes on the free list and the file's bytes, as SQLite counts them."""
        conn = self._conn
        if conn is None:
            return 0, 0
        with _translate(self.path):
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
        with _translate(self.path):
            mode = conn.execute("PRAGMA auto_vacuum").fetchone()[0]
        if mode == INCREMENTAL:
            self._vacuuming = True
            with ChunkedWrite(self) as chunks:
                while chunks.pacer.chunks == 0:
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
        with _translate(self.path):
            conn.execute(f"PRAGMA auto_vacuum = {INCREMENTAL}")
            conn.execute("VACUUM")
        self._forget()
        log.info("%s: vacuumed, %d MB given back", self.path, free >> 20)
        return False
