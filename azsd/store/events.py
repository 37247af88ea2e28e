"""The event rows of a session: appending them, loading them, and the badge an append sets.

:class:`EventLog` owns the ``events`` table: :meth:`~EventLog.append_prepared` stores events (seq
computed inside the transaction, payloads compressed by the row codec, the search index, the session
index and the rendered context blocks kept in step, the completion badge set, spec §2.5), and
:meth:`~EventLog._load` reads a seq range back through the process-wide row cache
(:data:`azsd.store.cache.ROWS`), skipping rows that cannot be decoded, for
:meth:`~EventLog.load_events`, :meth:`~EventLog.load_json` and the layers above. :func:`completion_of`
and :func:`_badge_after` say what a batch of events means for the badge.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from azsd.compact import char_len, prepare_for_store
from azsd.context import may_be_injected, strip_injected_context_indexed
from azsd.events import (
    AssistantText,
    Command,
    Complete,
    Event,
    EventDecodeError,
    Init,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_events,
    encode_event,
    event_kind,
)
from azsd.model import AppendResult, LoadResult, StoredEvent
from azsd.search import search_text
from azsd.store.cache import ROWS, CachedRow
from azsd.store.chunks import ChunkedWrite
from azsd.store.codec import CodecError
from azsd.store.fts_stale import StaleEntries
from azsd.store.listing import SessionListing, _require_session
from azsd.store.rendered import ContextTable
from azsd.store.sqlite_errors import translate
from azsd.store.summaries import STEP_ROWS, count_appended
from azsd.store.summaries import catch_up as catch_up_summaries

__all__ = ["EventLog", "completion_of"]

log = logging.getLogger("azsd.store")

_RUNNING_KINDS: Final = (Init, UserMessage, Command, Plan, AssistantText, ToolCall, ToolResult)
#: `append_prepared` puts the rows of an append up to this size in the row cache (a live turn's
#: events, a line's or a few: read again soon); a bulk append (an ingest, a follow catching up, a
#: client's batch) does not churn it.
_CACHE_APPENDS_UP_TO: Final = 32
_MESSAGE_KINDS: Final = (UserMessage, AssistantText)
_RANGE: Final = (
    "SELECT seq, kind, data FROM events WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ?"
)


class EventLog(StaleEntries, ContextTable, SessionListing):
    """Appending and loading a session's events."""

    #: `PRAGMA data_version` when :meth:`catch_up_some` last found nothing to catch up.
    _caught_up_at: int | None = None
    #: Within :meth:`upkeep_deferred`: the rows appended whose summaries are not counted yet, and
    #: those not indexed for search yet (`(id, search text or None)`; some may have been rolled back
    #: since).
    _summaries_behind: int | None = None
    _unindexed: list[tuple[int, str | None]] | None = None

    @contextmanager
    def upkeep_deferred(self) -> Iterator[None]:
        """Inside a caller's transaction of many appends (an import's small files), the summaries
        counted and the search index fed once at its end, rather than at every append: a statement
        less per file, and one flush of FTS5's pending terms instead of one per append's savepoint
        (together a fifth of an import's time). Until then the summaries are only behind, which
        readers make up for (:mod:`azsd.store.summaries`), and nothing searches in between."""
        with self.atomic() as conn:
            mark = self._search_hwm(conn)
            caught_up = mark == conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        self._summaries_behind, self._unindexed = 0, []
        try:
            yield
            behind, unindexed = self._summaries_behind, self._unindexed
        finally:
            self._summaries_behind = self._unindexed = None
        if not behind and not unindexed:
            return
        with self.atomic() as conn:
            for _ in range(-(-behind // STEP_ROWS)):
                if not catch_up_summaries(conn):
                    break
            self._index_survivors(conn, unindexed, caught_up)

    def _index_survivors(
        self, conn: sqlite3.Connection, appended: list[tuple[int, str | None]], caught_up: bool
    ) -> None:
        """Index the rows of `appended` that are still there (a savepoint rolled back took some, and
        a later append may have taken their ids again: its row is the later one of that id). When
        the index was caught up as the transaction began, every row is indexed now (the others of
        the transaction were as they were stored), and the mark moves to the last; else as each
        append would have left it (:meth:`~azsd.store.fts.SearchIndex._index_rows`)."""
        if not appended:
            return
        low, high = min(i for i, _ in appended), max(i for i, _ in appended)
        found = conn.execute("SELECT id FROM events WHERE id BETWEEN ? AND ?", (low, high))
        there = {row[0] for row in found}
        latest = sorted({event_id: text for event_id, text in appended if event_id in there}.items())
        texts = [(event_id, text) for event_id, text in latest if text is not None]
        if not caught_up:
            if latest:
                self._index_new_texts(conn, latest[0][0], texts, latest[-1][0])
            return
        conn.executemany("INSERT INTO azsd_search (rowid, text) VALUES (?, ?)", texts)
        self._set_search_hwm(conn, conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])

    def append_events(self, session_id: int, events: Iterable[Event]) -> AppendResult:
        """Compact and store events after the session's last one (spec §2.5), in one transaction."""
        return self.append_prepared(session_id, prepare_for_store(events))

    def append_prepared(
        self, session_id: int, events: Sequence[Event], *, completion: bool = True
    ) -> AppendResult:
        """Store events that already went through :func:`azsd.compact.prepare_for_store`.

        `seq` is computed inside the transaction, so concurrent writers never collide. Completion:
        the last `Complete` sets the badge; otherwise new turn content resets it to running
        (`completion=False` leaves that to a later :meth:`set_completion`, for an append made in parts).
        """
        with self.atomic() as conn:
            _require_session(conn, session_id)
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            jsons = [encode_event(event) for event in events]
            payloads = self._codec.encode_many(jsons)
            conn.executemany(
                "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                [
                    (session_id, seq + offset, event_kind(event), payload, char_len(event))
                    for offset, (event, payload) in enumerate(zip(events, payloads, strict=True))
                ],
            )
            if events:
                last_id = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                if self._unindexed is None:
                    self._index_new(conn, last_id - len(events) + 1, events, last_id)
                else:
                    first_id = last_id - len(events) + 1
                    self._unindexed += ((first_id + i, search_text(event)) for i, event in enumerate(events))
                self._context_new(conn, session_id, seq, events, last_id - len(events) + 1)
                messages = sum(1 for event in events if isinstance(event, _MESSAGE_KINDS))
                if self._summaries_behind is None:
                    count_appended(conn, session_id, last_id - len(events) + 1, last_id, messages)
                else:
                    self._summaries_behind += len(events)
                self._touch(session_id)
                if self._index is not None:
                    self._index.add_events(session_id, len(events), messages, last_id)
            if completion:
                self._set_completion(conn, session_id, *completion_of(events))
        if len(events) <= _CACHE_APPENDS_UP_TO:
            # a page of them sends `jsons` as is; unread, they wait apart (a big follow reads none of them)
            ROWS.put_many(map(CachedRow, payloads, jsons, events), fresh=True)
        stored = [
            StoredEvent(seq + i, event, json)
            for i, (event, json) in enumerate(zip(events, jsons, strict=True))
        ]
        return AppendResult(session_id, stored)

    def set_completion(self, session_id: int, last_complete: Complete | None, running: bool) -> None:
        """The badge after appended events whose :func:`completion_of` is `(last_complete, running)`."""
        if last_complete is not None or running:
            with self.atomic() as conn:
                self._set_completion(conn, session_id, last_complete, running)

    def _set_completion(
        self, conn: sqlite3.Connection, session_id: int, last_complete: Complete | None, running: bool
    ) -> None:
        self._touch(session_id)
        if last_complete is not None:
            conn.execute(
                "UPDATE sessions SET completed = ?, duration_ms = ?, cost_usd = ? WHERE id = ?",
                (
                    1 if last_complete.success else 0,
                    last_complete.duration_ms,
                    last_complete.cost_usd,
                    session_id,
                ),
            )
        elif running:
            changed = conn.execute(
                "UPDATE sessions SET completed = NULL, duration_ms = NULL, cost_usd = NULL WHERE id = ? "
                "AND (completed IS NOT NULL OR duration_ms IS NOT NULL OR cost_usd IS NOT NULL)",
                (session_id,),
            ).rowcount
            if not changed:
                return  # running already: its row is left as it is (no page of it written again)
        else:
            return
        self._index_reread(conn, session_id)

    def load_events(
        self, session_id: int, from_seq: int = 1, to_seq: int | None = None, *, limit: int = -1
    ) -> LoadResult:
        """Events with `from_seq <= seq <= to_seq`, in order, injected context stripped (§4.4).

        Rows that cannot be decompressed or decoded are skipped and counted in `skipped`.
        """
        seqs, events, _, skipped = self._load(session_id, from_seq, to_seq, limit)
        kept = [StoredEvent(seqs[i], e) for i, e in strip_injected_context_indexed(events)]
        return LoadResult(kept, skipped)

    def load_json(
        self, session_id: int, from_seq: int = 1, to_seq: int | None = None, *, limit: int = -1
    ) -> tuple[list[tuple[int, str, str]], int]:
        """As :meth:`load_events`, each event as `(seq, kind, its serde JSON)`; and the rows skipped.

        The JSON is `encode_event` of the event as loaded, as a page of `GetEvents` carries it.
        """
        rows = self._query(_RANGE, (session_id, from_seq, to_seq if to_seq is not None else 2**63 - 1, limit))
        return self._json_of(session_id, rows)

    def page_json(
        self, session_id: int, from_seq: int, count: int
    ) -> tuple[list[tuple[int, str, str]], int, bool]:
        """A page of `GetEvents` in one query: the events with `from_seq <= seq < from_seq + count` as
        :meth:`load_json` gives them, the rows skipped, and whether the session goes on after it."""
        last = from_seq + count - 1
        rows = self._query(_RANGE, (session_id, from_seq, 2**63 - 1, count + 1))
        inside = rows if not rows or rows[-1][0] <= last else [row for row in rows if row[0] <= last]
        page, skipped = self._json_of(session_id, inside)
        return page, skipped, len(inside) < len(rows)

    def _json_of(
        self, session_id: int, rows: list[tuple[int, str, bytes]]
    ) -> tuple[list[tuple[int, str, str]], int]:
        cached = ROWS.get_many([data for _, _, data in rows])
        if all(row is not None and row.wire is not None for row in cached):  # a page read before
            found = [row.event for row in cached]  # type: ignore[union-attr]
            if not any(isinstance(e, UserMessage) and may_be_injected(e.content) for e in found):
                page = [  # nothing to strip (most pages): the rows' JSON as it is
                    (seq, type(event).__name__, row.wire)  # type: ignore[union-attr]  # event_kind, inlined
                    for (seq, _, _), event, row in zip(rows, found, cached, strict=True)
                ]
                return page, 0  # type: ignore[return-value]  # every wire is known
        seqs, events, loaded, skipped = self._decoded(session_id, rows, cached)
        out = []
        for i, event in strip_injected_context_indexed(events):
            if event is events[i]:
                row = loaded[i]
                if row.wire is None:
                    row.wire = encode_event(event).decode()
                out.append((seqs[i], event_kind(event), row.wire))
            else:  # a prompt stripped of injected context: not what the row holds
                out.append((seqs[i], event_kind(event), encode_event(event).decode()))
        return out, skipped

    def _load(
        self, session_id: int, from_seq: int, to_seq: int | None, limit: int
    ) -> tuple[list[int], list[Event], list[CachedRow], int]:
        """The readable rows of a seq range, decoded (through the row cache), and how many were not.

        The rows the cache does not hold decoded are decompressed and decoded in batches
        (:meth:`RowCodec.decode_many`, :func:`decode_events`): a cold context of 10 000 events was
        mostly one Python call per row for each step.
        """
        rows = self._query(_RANGE, (session_id, from_seq, to_seq if to_seq is not None else 2**63 - 1, limit))
        return self._decoded(session_id, rows, ROWS.get_many([data for _, _, data in rows]))

    def _decoded(
        self, session_id: int, rows: list[tuple[int, str, bytes]], cached: list[CachedRow | None]
    ) -> tuple[list[int], list[Event], list[CachedRow], int]:
        """:meth:`_load` of rows already read, with what the row cache holds of them (`cached`)."""
        fresh = [i for i, row in enumerate(cached) if row is None]
        for i, json in zip(fresh, self._codec.decode_many([rows[i][2] for i in fresh]), strict=True):
            if isinstance(json, CodecError):
                log.debug("%s: S%d seq %d unreadable: %s", self.path, session_id, rows[i][0], json)
            else:
                cached[i] = CachedRow(rows[i][2], json)
        undecoded = [i for i, row in enumerate(cached) if row is not None and row.event is None]
        found = decode_events([(rows[i][1], cached[i].json) for i in undecoded])  # type: ignore[union-attr]
        for i, event in zip(undecoded, found, strict=True):
            row = cached[i]
            assert row is not None
            if not isinstance(event, EventDecodeError):
                row.decoded(event)
            elif row.event is None:  # (else another thread decoded it meanwhile, and let its JSON go)
                log.debug("%s: S%d seq %d unreadable: %s", self.path, session_id, rows[i][0], event)
                cached[i] = None
        seqs: list[int] = []
        events: list[Event] = []
        used: list[CachedRow] = []
        for (seq, _, _), row in zip(rows, cached, strict=True):
            if row is not None:
                seqs.append(seq)
                events.append(row.event)  # type: ignore[arg-type]  # decoded above
                used.append(row)
        ROWS.put_many(cached[i] for i in fresh if cached[i] is not None)  # type: ignore[misc]
        return seqs, events, used, len(rows) - len(used)

    def _forget(self) -> None:
        super()._forget()
        self._caught_up_at = None  # (a reopened file's connection counts its versions afresh)

    def catch_up_some(self) -> bool:
        """One chunk (~150 ms, :mod:`azsd.store.chunks`) of catching up what is kept beside the
        events (the summaries, the search index, the rendered context blocks, and the index's
        entries of rows gone: :mod:`azsd.store.fts_stale`) with rows written by others (AZUREAL) or
        before an upgrade; whether more remains. Cheap when nothing was committed by
        another connection since the last call that found everything caught up."""
        conn = self._conn
        if conn is None or self.read_only or self.reader or conn.in_transaction:
            return False
        with translate(self.path):
            version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._caught_up_at:
            return False
        more = True
        with ChunkedWrite(self) as chunks:
            first = chunks.pacer.chunks
            while more and chunks.pacer.chunks == first:
                with chunks.step() as conn:
                    more = (  # the summaries first: cheap, and every listing reads what they lack
                        catch_up_summaries(conn)
                        or self._search_step(conn)
                        or self._context_step(conn)
                        or self._stale_step(conn)
                    )
        if not more:
            self._caught_up_at = version
        return more

    def max_seq(self, session_id: int) -> int:
        return int(self._scalar("SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,), 0))


def completion_of(events: Iterable[Event]) -> tuple[Complete | None, bool]:
    """What appending `events` means for the badge: their last `Complete`, and whether any of them
    is new turn content (which, without a `Complete`, marks the session running)."""
    last_complete = None
    running = False
    for event in events:
        if isinstance(event, Complete):
            last_complete = event
        elif isinstance(event, _RUNNING_KINDS):
            running = True
    return last_complete, running


def _badge_after(events: Iterable[Event]) -> tuple[Complete | None, bool]:
    """The badge at the end of `events`, read in order: the last `Complete`, unless turn content
    follows it (then running), as :func:`completion_of` gives it for an append."""
    last_complete = None
    running = False
    for event in events:
        if isinstance(event, Complete):
            last_complete, running = event, False
        elif isinstance(event, _RUNNING_KINDS):
            last_complete, running = None, True
    return last_complete, running
