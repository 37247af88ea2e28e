"""Entries of the search index whose rows are gone: found, and removed, in the background.

The index is contentless and keyed by ``events.id`` (:mod:`azsd.store.fts`). When AZUREAL deletes a
session, its rows go (ON DELETE CASCADE) and their entries stay: a search never returns them (it
joins ``events``), but BM25 counts them, so rankings drift from those of an index built afresh
(902 stale entries of 1 854 in one store; 5 of 10 words ranked otherwise). A contentless FTS5 index
can only forget an entry given its text (SQLite 3.43's ``contentless_delete`` is newer than many
SQLites in use, and than the one AZUREAL bundles), and that text went with the row. So:

- **finding** them: whenever the number of event rows ever deleted
  (:data:`~azsd.store.schema.DELETED_ROWS`: the ids AUTOINCREMENT handed out less the rows left; a
  session number AZUREAL reused does not hide a delete) is not what the last sweep covered (kept
  in ``meta``, so a store reopened unchanged is not swept again), :class:`StaleEntries` sweeps the
  index's ``docsize`` table for rowids without a row, a range of :data:`SWEEP_IDS` ids a step;
- **removing** them: when a sweep finds any, a second index, ``azsd_search_next``, is built beside
  the first from the rows, :data:`~azsd.store.fts.CATCH_UP_ROWS` ids a step (rows appended meanwhile
  are above its mark, and are built in too; a delete by azsd takes its rows out of both), and once
  it holds every row it replaces the first, in one transaction. Searches use the first meanwhile.

Each step is one step of the background catch-up (:meth:`azsd.store.events.EventLog.catch_up_some`),
in its short chunks. :meth:`StaleEntries.stale_entries` counts them for `azs doctor`.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Final

from azsd.store.fts import NEXT_INDEX, SearchIndex
from azsd.store.schema import DELETED_ROWS, SEARCH_NEXT_HWM_KEY, SEARCH_SWEPT_KEY
from azsd.store.sqlite_errors import translate

__all__ = ["SWEEP_IDS", "StaleEntries"]

log = logging.getLogger("azsd.store")

#: Index rowids a step of the sweep looks up (a few ms at a million entries).
SWEEP_IDS: Final = 20_000
_STALE_IN: Final = (
    "SELECT COUNT(*) FROM azsd_search_docsize AS d WHERE d.rowid > ? AND d.rowid <= ? "
    "AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.id = d.rowid)"
)


class StaleEntries(SearchIndex):
    """The background sweep of the search index for entries of vanished rows, and their removal."""

    _deleted_seen: int | None = None  # how many event rows had been deleted, at the last look
    _sweep_from: int | None = None  # where the sweep in progress goes on, None: no sweep
    _sweep_found = 0
    _sweep_deleted = 0  # the rows ever deleted when the sweep in progress began

    def _forget(self) -> None:
        super()._forget()
        self._deleted_seen = None  # (the file may be another: look again)
        self._sweep_from = None

    def _stale_step(self, conn: sqlite3.Connection) -> bool:
        """One step of finding or removing stale entries (in a write transaction); whether there
        was one to take."""
        if self._next_index_exists(conn):
            return self._rebuild_step(conn)
        if self._sweep_from is not None:
            return self._sweep_step(conn)
        deleted = conn.execute(DELETED_ROWS).fetchone()[0]
        seen = self._deleted_seen
        if seen is None:  # the first look since the file was opened: what the last sweep covered
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (SEARCH_SWEPT_KEY,)).fetchone()
            seen = None if row is None else int(row[0])
        self._deleted_seen = deleted
        if seen is None or deleted != seen:
            self._sweep_from, self._sweep_found, self._sweep_deleted = 0, 0, deleted
            return True
        return False

    def _sweep_step(self, conn: sqlite3.Connection) -> bool:
        start = self._sweep_from or 0
        top = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM azsd_search_docsize").fetchone()[0]
        self._sweep_found += conn.execute(_STALE_IN, (start, start + SWEEP_IDS)).fetchone()[0]
        self._sweep_from = start + SWEEP_IDS
        if self._sweep_from < top:
            return True
        self._sweep_from = None
        if not self._sweep_found:
            self._set_meta(conn, SEARCH_SWEPT_KEY, self._sweep_deleted)
        else:
            log.info(
                "%s: %d search index entries of rows deleted by another program: rebuilding the "
                "index beside it, in the background",
                self.path,
                self._sweep_found,
            )
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'azsd_search'").fetchone()[0]
            conn.execute(sql.replace("azsd_search", NEXT_INDEX, 1))
            self._set_meta(conn, SEARCH_NEXT_HWM_KEY, 0)
        return True

    def _rebuild_step(self, conn: sqlite3.Connection) -> bool:
        """Build the next index a step further, or, once it holds every row, put it in place."""
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (SEARCH_NEXT_HWM_KEY,)).fetchone()
        mark = int(row[0]) if row else 0
        top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        if mark < top:
            upto = self._index_range(conn, NEXT_INDEX, mark, top)
            self._set_meta(conn, SEARCH_NEXT_HWM_KEY, upto)
            return True
        conn.execute("DROP TABLE azsd_search")
        conn.execute(f"ALTER TABLE {NEXT_INDEX} RENAME TO azsd_search")
        conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_NEXT_HWM_KEY,))
        self._set_search_hwm(conn, top)
        self._set_meta(conn, SEARCH_SWEPT_KEY, conn.execute(DELETED_ROWS).fetchone()[0])
        log.info("%s: the search index was rebuilt without the entries of deleted rows", self.path)
        return True

    def _set_meta(self, conn: sqlite3.Connection, key: str, value: int) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, str(value)),
        )

    def stale_entries(self) -> int:
        """How many entries of the search index have no row any more (a range of ids a statement)."""
        conn = self._conn
        if conn is None or not self._has_table("azsd_search_docsize"):
            return 0
        with translate(self.path):
            top = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM azsd_search_docsize").fetchone()[0]
            return sum(
                conn.execute(_STALE_IN, (start, start + SWEEP_IDS)).fetchone()[0]
                for start in range(0, top, SWEEP_IDS)
            )
