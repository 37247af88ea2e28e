"""Creating many sessions whole at once: an import of many small agent histories.

:class:`BulkSessions` owns :meth:`~BulkSessions.create_filled`: new sessions with all their events,
written by one statement per table for all of them (session rows, events, search index, context
groups, summaries, badges, usage and the message ids it counted, import records) in one transaction.
Created and filled a session at a time, each cost some forty statements and savepoints (about 1 ms of
bookkeeping for an OpenCode session of a dozen events, several times what reading and storing its
events cost); the rows are the same either way.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from azsd.compact import char_len
from azsd.events import Event, encode_event, event_kind
from azsd.model import ImportRecord, UsagePart
from azsd.store.events import completion_of
from azsd.store.sessions import Sessions
from azsd.store.side_rows import IMPORT_UPSERT, USAGE_INSERT, USAGE_KEYS_INSERT, usage_values
from azsd.store.side_tables import SideTables
from azsd.store.summaries import catch_up as catch_up_summaries

__all__ = ["BulkSessions", "FilledSession"]


@dataclass(frozen=True)
class FilledSession:
    """A session to create with its events (already through :func:`azsd.compact.prepare_for_store`),
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


class BulkSessions(Sessions, SideTables):
    """Many new sessions, each with all its events, in one transaction."""

    def create_filled(self, sessions: Sequence[FilledSession]) -> list[int]:
        """Create `sessions` with numbers never used before, in order, each holding its events (seqs
        from 1) and badged as one append of them would badge it, their usage and import records
        stored; the new ids. Inside a caller's transaction, a savepoint of it."""
        if not sessions:
            return []
        now = time.time()
        with self.atomic(create=True) as conn:
            first = self._next_id(conn)
            ids = list(range(first, first + len(sessions)))
            conn.executemany(
                "INSERT INTO sessions (id, name, worktree) VALUES (?, ?, ?)",
                [(sid, s.name, s.worktree) for sid, s in zip(ids, sessions, strict=True)],
            )
            self._set_hwm(conn, ids[-1])
            events = [event for s in sessions for event in s.events]
            if events:
                jsons = [encode_event(event) for event in events]
                conn.executemany(
                    "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                    [
                        (sid, seq, event_kind(event), payload, char_len(event))
                        for sid, event, seq, payload in zip(
                            (sid for sid, s in zip(ids, sessions, strict=True) for _ in s.events),
                            events,
                            (seq for s in sessions for seq in range(1, len(s.events) + 1)),
                            self._codec.encode_many(jsons),
                            strict=True,
                        )
                    ],
                )
                last_id = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                first_id = last_id - len(events) + 1
                self._index_new(conn, first_id, events, last_id)
                self._context_new_sessions(
                    conn, [(sid, s.events) for sid, s in zip(ids, sessions, strict=True)], first_id
                )
                catch_up_summaries(conn)
            badges = [(sid, completion_of(s.events)[0]) for sid, s in zip(ids, sessions, strict=True)]
            conn.executemany(
                "UPDATE sessions SET completed = ?, duration_ms = ?, cost_usd = ? WHERE id = ?",
                [
                    (1 if done.success else 0, done.duration_ms, done.cost_usd, sid)
                    for sid, done in badges
                    if done is not None
                ],
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
                    (key, sid, s.usage_source)
                    for sid, s in zip(ids, sessions, strict=True)
                    if s.usage
                    for key in s.usage_keys
                ],
            )
            conn.executemany(
                IMPORT_UPSERT,
                [
                    (s.record.source, sid, s.record.agent, s.record.size, len(s.events))
                    for sid, s in zip(ids, sessions, strict=True)
                ],
            )
            self._index = None  # the session list is read again, by one query, when next asked
        return ids
