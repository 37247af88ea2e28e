"""The full-text search index over stored events (side table ``azsd_search``, FTS5), and searching it.

:class:`SearchIndex` owns the index's upkeep, keyed by ``events.id`` and marked by a high-water mark
in ``meta`` (:data:`azsd.store.schema.SEARCH_HWM_KEY`): rows an append has just inserted are indexed
in the same transaction (:meth:`~SearchIndex._index_new`), even while other rows wait; rows written
by AZUREAL, or before an upgrade, are caught up in the background and before a search
(:meth:`~SearchIndex._catch_up`, which skips the rows indexed already); a
deleted session's rows are taken out (:meth:`~SearchIndex._unindex`, the index is contentless);
:meth:`~SearchIndex.reindex_search` rebuilds it (the catch-up and the rebuild commit in short chunks).
:meth:`~SearchIndex.search` runs an FTS5 query and returns snippets (the text of an event is
:func:`azsd.search.search_text`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from azsd.errors import BadRequestError, StoreError
from azsd.events import Event, EventDecodeError, decode_event
from azsd.model import SearchResult
from azsd.search import SEARCHABLE_KINDS, literal_match, make_snippet, search_text
from azsd.store.chunks import ChunkedWrite
from azsd.store.codec import CodecError
from azsd.store.core import StoreCore
from azsd.store.schema import SEARCH_HWM_KEY, SEARCH_NEXT_HWM_KEY
from azsd.store.sqlite_errors import translate

__all__ = ["CATCH_UP_ROWS", "NEXT_INDEX", "SearchIndex"]

log = logging.getLogger("azsd.store")

_SEARCHABLE: Final = ", ".join(f"'{kind}'" for kind in SEARCHABLE_KINDS)
#: Event ids a step of the catch-up indexes (a step stays well under a chunk's 150 ms).
CATCH_UP_ROWS: Final = 250
#: The index built beside `azsd_search` to replace it (:mod:`azsd.store.fts_stale`).
NEXT_INDEX: Final = "azsd_search_next"
#: Ranked rows a search reads at a time (more when a search asks for more hits): plain-text searches
#: and a fork's copies skip some, so a search may need more rows than hits.
_PAGE_ROWS: Final = 200


class Found(list[SearchResult]):
    """Search results, and whether every candidate was looked at (`complete`: False when the
    search's time ran out first)."""

    complete: bool = True


class SearchIndex(StoreCore):
    """Full-text search over the store's events, with the upkeep of its index."""

    def _search_hwm(self, conn: sqlite3.Connection) -> int | None:
        """The highest event id the index has seen; None when this version of it never indexed any."""
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (SEARCH_HWM_KEY,)).fetchone()
        return int(row[0]) if row else None

    def _set_search_hwm(self, conn: sqlite3.Connection, value: int) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (SEARCH_HWM_KEY, str(value)),
        )

    def _index_new(
        self, conn: sqlite3.Connection, first_id: int, events: Sequence[Event], last_id: int
    ) -> None:
        """Index events just inserted as rows `first_id`, `first_id + 1`, …"""
        self._index_rows(conn, [(first_id + offset, event) for offset, event in enumerate(events)], last_id)

    def _index_copies(
        self, conn: sqlite3.Connection, session_id: int, seqs: Sequence[int], events: Sequence[Event]
    ) -> None:
        """Index the rows just copied into `session_id` (a fork), `events` being them decoded, by seq."""
        if not seqs:
            return
        ids = dict(
            conn.execute(
                "SELECT seq, id FROM events WHERE session_id = ? AND seq >= ? AND seq <= ?",
                (session_id, min(seqs), max(seqs)),
            ).fetchall()
        )
        rows = [(ids[seq], event) for seq, event in zip(seqs, events, strict=True)]
        self._index_rows(conn, rows, max(ids.values()))

    def _index_rows(self, conn: sqlite3.Connection, rows: Sequence[tuple[int, Event]], last_id: int) -> None:
        """Index rows azsd just inserted (`(id, event)`, ids ascending, the last `last_id`), in its
        transaction (:meth:`_index_new_texts`)."""
        if rows:
            texts = [(event_id, text) for event_id, event in rows if (text := search_text(event)) is not None]
            self._index_new_texts(conn, rows[0][0], texts, last_id)

    def _index_new_texts(
        self, conn: sqlite3.Connection, first_id: int, texts: Sequence[tuple[int, str]], last_id: int
    ) -> None:
        """Index the search `texts` (`(id, text)`, ids ascending) of rows azsd just inserted, ids
        `first_id` to `last_id`, in its transaction, even while rows of others wait below them for the
        catch-up (which skips the rows indexed already): a big ingest never waits for AZUREAL's rows
        to be indexed. The mark moves to `last_id` when no row between it and these waits. Nothing is
        indexed while the index has no mark and rows are below these (the catch-up then starts it
        afresh, these rows too)."""
        mark = self._search_hwm(conn)
        if mark is None:  # never indexed: only a store without earlier rows starts its index here
            if conn.execute("SELECT 1 FROM events WHERE id < ? LIMIT 1", (first_id,)).fetchone():
                return
            mark = 0
        conn.executemany("INSERT INTO azsd_search (rowid, text) VALUES (?, ?)", texts)
        waiting = conn.execute(
            "SELECT 1 FROM events WHERE id > ? AND id < ? LIMIT 1", (mark, first_id)
        ).fetchone()
        if waiting is None:
            self._set_search_hwm(conn, last_id)

    def _indexed_texts(self, rows: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, str]]:
        """`(event id, text)` of stored rows the index holds text for (unreadable rows have none)."""
        for event_id, data in rows:
            try:
                text = search_text(decode_event(self._codec.decode(data)))
            except (CodecError, EventDecodeError):
                continue
            if text is not None:
                yield event_id, text

    def _catch_up(self) -> None:
        """Index the event rows the index has not seen (written by AZUREAL, or before an upgrade).

        `CATCH_UP_ROWS` ids a step (:meth:`_search_step`), committed in short chunks
        (:mod:`azsd.store.chunks`), the mark moving with each: an interrupted catch-up goes on from
        where it stopped.
        """
        if self._conn is None or self.read_only:
            return
        with ChunkedWrite(self) as chunks:
            while True:
                with chunks.step() as conn:
                    if not self._search_step(conn):
                        break

    def _search_step(self, conn: sqlite3.Connection) -> bool:
        """Index the next `CATCH_UP_ROWS` ids above the mark, if any (in a write transaction);
        whether there were any."""
        mark = self._search_hwm(conn)
        hwm = mark or 0
        top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        if hwm >= top:
            return False
        if mark is None:  # never indexed, or by another version of search_text: start afresh
            conn.execute("INSERT INTO azsd_search (azsd_search) VALUES ('delete-all')")
        if hwm + CATCH_UP_ROWS >= top or hwm % (40 * CATCH_UP_ROWS) < CATCH_UP_ROWS:
            log.info("%s: indexing events %d to %d for search", self.path, hwm + 1, top)
        self._set_search_hwm(conn, self._index_range(conn, "azsd_search", hwm, top))
        return True

    def _index_range(self, conn: sqlite3.Connection, table: str, mark: int, top: int) -> int:
        """Index into `table` the searchable rows with ids above `mark`, `CATCH_UP_ROWS` of them at
        most and none above `top`, but those it holds already (azsd indexed them as it appended
        them); the id indexed up to."""
        upto = min(top, mark + CATCH_UP_ROWS)
        rows = conn.execute(
            f"SELECT id, data FROM events WHERE id > ? AND id <= ? AND kind IN ({_SEARCHABLE}) "
            f"AND id NOT IN (SELECT rowid FROM {table}_docsize WHERE rowid > ? AND rowid <= ?) ORDER BY id",
            (mark, upto, mark, upto),
        )
        conn.executemany(f"INSERT INTO {table} (rowid, text) VALUES (?, ?)", self._indexed_texts(rows))
        return int(upto)

    def _next_index_exists(self, conn: sqlite3.Connection) -> bool:
        """Whether an index is being built to replace this one (:mod:`azsd.store.fts_stale`)."""
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (NEXT_INDEX,)).fetchone()
        return found is not None

    def search_pending(self) -> int:
        """How many event rows wait to be indexed (0 for a store without an index to keep)."""
        conn = self._conn
        if conn is None or (self.read_only and not self._has_table("azsd_search")):
            return 0
        with translate(self.path):
            mark = self._search_hwm(conn) or 0
            return int(conn.execute("SELECT COUNT(*) FROM events WHERE id > ?", (mark,)).fetchone()[0])

    def _unindex(self, conn: sqlite3.Connection, session_id: int) -> None:
        """Take a session's indexed events out of the index, and out of the one being built to
        replace it (a contentless index needs their text)."""
        if not self._unindex_from(conn, "azsd_search", self._search_hwm(conn) or 0, session_id):
            log.warning("%s: search index out of step, rebuilt at the next search", self.path)
            conn.execute("INSERT INTO azsd_search (azsd_search) VALUES ('delete-all')")
            conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_HWM_KEY,))
        if self._next_index_exists(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (SEARCH_NEXT_HWM_KEY,)).fetchone()
            if not self._unindex_from(conn, NEXT_INDEX, int(row[0]) if row else 0, session_id):
                self._drop_next_index(conn)

    def _unindex_from(self, conn: sqlite3.Connection, table: str, mark: int, session_id: int) -> bool:
        """Take a session's rows out of the index `table`; False when it does not hold what it should
        (a row under its `mark` with text and no entry: a restore, a hand edit), and is not to be
        trusted. The rows it holds are those in its ``docsize`` table."""
        rows = conn.execute(
            f"SELECT id, data FROM events WHERE session_id = ? AND kind IN ({_SEARCHABLE}) AND (id <= ? "
            f"OR id IN (SELECT rowid FROM {table}_docsize))",
            (session_id, mark),
        ).fetchall()
        held = {
            row[0]
            for row in conn.execute(
                f"SELECT rowid FROM {table}_docsize WHERE rowid IN "
                "(SELECT id FROM events WHERE session_id = ?)",
                (session_id,),
            )
        }
        texts = list(self._indexed_texts(rows))
        if any(event_id not in held for event_id, _ in texts):
            return False
        try:
            conn.executemany(f"INSERT INTO {table} ({table}, rowid, text) VALUES ('delete', ?, ?)", texts)
        except sqlite3.DatabaseError as exc:
            log.warning("%s: %s out of step: %s", self.path, table, exc)
            return False
        return True

    def _drop_next_index(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"DROP TABLE IF EXISTS {NEXT_INDEX}")
        conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_NEXT_HWM_KEY,))

    def reindex_search(self) -> int:
        """Rebuild the search index from the event rows; returns how many events it holds."""
        if self._conn is None:
            return 0
        with self.atomic() as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_HWM_KEY,))
            self._drop_next_index(conn)
        self._catch_up()  # in chunks; run again (by a search), it goes on where it stopped
        return int(
            self._scalar(
                f"SELECT COUNT(*) FROM events WHERE kind IN ({_SEARCHABLE}) AND id IN "
                "(SELECT rowid FROM azsd_search_docsize)",
                default=0,
            )
        )

    def search(
        self,
        query: str,
        *,
        worktrees: Sequence[str] | None = None,
        sessions: Sequence[int] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 50,
        literal: Sequence[str] | None = None,
        budget_s: float | None = None,
    ) -> Found:
        """Events matching the FTS5 `query`, best first, each with a snippet of where it matched; with
        `literal`, only those whose text holds each of those words as written (in any case). With
        `budget_s`, the ranked candidates are looked at for that long at most: what was found by then
        is the answer, marked not `complete` (a search never outlasts the one who asked).

        The same event at the same seq in several sessions (a fork's copies) is one result, the
        others' sessions in its `also_in`. A query FTS5 cannot parse raises ValueError saying so.
        """
        if self._conn is None:
            return Found()
        self._catch_up()
        where = ["azsd_search MATCH ?"]
        params: list[Any] = [query]
        for column, values in (("s.worktree", worktrees), ("e.session_id", sessions), ("e.kind", kinds)):
            if values is not None:
                where.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        sql = (
            "SELECT e.session_id, e.seq, e.kind, bm25(azsd_search) AS rank, e.data "
            "FROM azsd_search JOIN events AS e ON e.id = azsd_search.rowid "
            "JOIN sessions AS s ON s.id = e.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY rank, e.session_id, e.seq LIMIT ? OFFSET ?"
        )
        conn, page = self._conn, max(2 * limit, _PAGE_ROWS)

        def pages() -> Iterator[Any]:  # the ranked rows, a page at a time, as far as they are read
            offset = 0
            while True:
                rows = conn.execute(sql, (*params, page, offset)).fetchall()
                yield from rows
                if len(rows) < page:
                    return
                offset += page

        try:
            deadline = None if budget_s is None else time.monotonic() + budget_s
            return self._results(pages(), query, limit, literal, deadline)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode == sqlite3.SQLITE_ERROR and "no such table" not in str(exc):  # the query
                raise BadRequestError(
                    f"cannot search for {query!r}: {exc} (FTS5 query syntax: quote a phrase with "
                    '"…"; AND, OR, NOT and NEAR are operators; or search the text as written without --fts)'
                ) from None
            raise StoreError(f"{self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from None

    def _results(
        self,
        rows: Iterable[Any],
        query: str,
        limit: int,
        literal: Sequence[str] | None,
        deadline: float | None = None,
    ) -> Found:
        """The first `limit` distinct hits of the ranked `rows` (read only as far as needed, and
        until `deadline`)."""
        results = Found()
        first: dict[tuple[int, bytes], SearchResult] = {}  # (seq, data): the hit that shows it
        for session_id, seq, kind, rank, data in rows:
            if deadline is not None and time.monotonic() > deadline:
                results.complete = False
                break
            copy = first.get((seq, data))
            if copy is not None:
                if session_id != copy.session_id:
                    copy.also_in.append(session_id)
                continue
            try:
                json = self._codec.decode(data)
                text = search_text(decode_event(json)) or ""
            except (CodecError, EventDecodeError):
                continue
            if literal is not None and not literal_match(text, literal):
                continue
            if len(results) == limit:
                break
            snippet, highlights = make_snippet(text, query, literal=literal)
            result = SearchResult(
                session_id=session_id, seq=seq, kind=kind, rank=float(rank), snippet=snippet,
                highlights=highlights, json=json.decode(), also_in=[],
            )  # fmt: skip
            first[seq, data] = result
            results.append(result)
        return results
