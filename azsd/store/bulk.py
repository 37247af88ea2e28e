"""Creating many sessions whole at once: an import of many small agent histories.

:class:`BulkSessions` owns :meth:`~BulkSessions.create_filled`: new sessions with all their events,
written by one statement per table for all of them (session rows, events, search index, context
groups, summaries, badges, usage and the message ids it counted, import records) in one transaction.
Created and filled a session at a time, each cost some forty statements and savepoints (about 1 ms of
bookkeeping for an OpenCode session of a dozen events, several times what reading and storing its
events cost); the rows are the same either way.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from azsd.events import Event
from azsd.model import ImportRecord, UsagePart
from azsd.store.rows import SessionRows, session_rows
from azsd.store.sessions import Sessions
from azsd.store.side_rows import (
    IMPORT_UPSERT,
    USAGE_INSERT,
    USAGE_KEYS_INSERT,
    key_digest,
    run_digest,
    usage_values,
)
from azsd.store.side_tables import SideTables
from azsd.store.summaries import STEP_ROWS
from azsd.store.summaries import catch_up as catch_up_summaries

__all__ = ["BulkSessions", "FilledSession"]


@dataclass(frozen=True)
class FilledSession:
    """A session to create with its events (already through :func:`azsd.compact.prepare_for_store`),
    or the rows they make (`rows`, made away from the store: :func:`azsd.store.rows.session_rows`),
    the usage of its run (stored under `usage_source`; parts without a time take `usage_at`, default
    now) and the import record that says where it came from (its `session_id` and `last_seq` are
    filled in)."""

    name: str
    worktree: str
    events: Sequence[Event]
    record: ImportRecord
    usage_source: str = ""
    usage: Sequence[UsagePart] = ()
    usage_at: float | None = None
    #: The turns its run held (None: one), and the API message ids it counted (claimed for it
    #: unless another run has them), as :meth:`~azsd.store.usage.UsageTables.record_usage` takes them.
    usage_turns: int | None = None
    usage_keys: Sequence[str] = ()
    #: The rows of `events`, when made already (`events` is then not read).
    rows: SessionRows | None = None


class BulkSessions(Sessions, SideTables):
    """Many new sessions, each with all its events, in one transaction."""

    def create_filled(self, sessions: Sequence[FilledSession]) -> list[int]:
        """Create `sessions` with numbers never used before, in order, each holding its events (seqs
        from 1) and badged as one append of them would badge it, their usage and import records
        stored; the new ids. Inside a caller's transaction, a savepoint of it."""
        if not sessions:
            return []
        now = time.time()
        made = [s.rows if s.rows is not None else session_rows([s.events], self._codec) for s in sessions]
        with self.atomic(create=True) as conn:
            first = self._next_id(conn)
            ids = list(range(first, first + len(sessions)))
            conn.executemany(
                "INSERT INTO sessions (id, name, worktree) VALUES (?, ?, ?)",
                [(sid, s.name, s.worktree) for sid, s in zip(ids, sessions, strict=True)],
            )
            self._set_hwm(conn, ids[-1])
            count = sum(len(rows.events) for rows in made)
            if count:
                conn.executemany(
                    "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                    [
                        (sid, seq, kind, payload, size)
                        for sid, rows in zip(ids, made, strict=True)
                        for seq, (kind, payload, size) in enumerate(rows.events, 1)
                    ],
                )
                last_id = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                self._fill_beside(conn, ids, made, last_id - count + 1, last_id)
            conn.executemany(
                "UPDATE sessions SET completed = ?, duration_ms = ?, cost_usd = ? WHERE id = ?",
                [(*rows.done, sid) for sid, rows in zip(ids, made, strict=True) if rows.done is not None],
            )  # a session with turn content and no `Complete` is running: the row's NULLs say so
            conn.executemany(
                USAGE_INSERT,
                [
                    row
                    for sid, s in zip(ids, sessions, strict=True)
                    if s.usage
                    for row in usage_values(
                        sid, s.usage_source, s.usage, {}, now if s.usage_at is None else s.usage_at,
                        s.usage_turns,
                    )
                ],
            )  # fmt: skip
            conn.executemany(
                USAGE_KEYS_INSERT,
                [
                    (key_digest(key), sid, run_digest(s.usage_source))
                    for sid, s in zip(ids, sessions, strict=True)
                    if s.usage
                    for key in s.usage_keys
                ],
            )
            conn.executemany(
                IMPORT_UPSERT,
                [
                    (s.record.source, sid, s.record.agent, s.record.size, len(rows.events))
                    for sid, s, rows in zip(ids, sessions, made, strict=True)
                ],
            )
            self._lose_index()  # the session list is read again, by one query, when next asked
        return ids

    def _fill_beside(
        self,
        conn: sqlite3.Connection,
        ids: Sequence[int],
        made: Sequence[SessionRows],
        first_id: int,
        last_id: int,
    ) -> None:
        """The search index, the context groups and the summaries of new sessions' rows, just
        inserted as ids `first_id` to `last_id`."""
        texts: list[tuple[int, str]] = []
        at = first_id
        for rows in made:
            texts += ((at + i, text) for i, text in rows.texts)
            at += len(rows.events)
        if self._unindexed is None:
            self._index_new_texts(conn, first_id, texts, last_id)
        else:  # in a transaction whose appends are indexed at its end: these with them
            found = dict(texts)
            self._unindexed += ((event_id, found.get(event_id)) for event_id in range(first_id, last_id + 1))
        self._context_new_groups(
            conn, [(sid, group) for sid, rows in zip(ids, made, strict=True) for group in rows.groups],
            first_id, last_id,
        )  # fmt: skip
        for _ in range(-(-(last_id - first_id + 1) // STEP_ROWS)):
            if not catch_up_summaries(conn):
                break
