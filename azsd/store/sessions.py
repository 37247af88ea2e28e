"""Changing sessions: creating, renaming, deleting, forking, archiving, the badge and the agent uuid.

:class:`Sessions` owns the writes to the ``sessions`` row and its side tables ``azsd_lineage`` and
``azsd_archive``: session numbers are never reused (a high-water mark in ``meta`` remembers deleted
ones, DESIGN decision 1); a delete takes the session's events out of the search index first and may
take its forks along; a fork copies a prefix of the events as stored (in short chunks that the same
fork asked again finishes), with the compactions they cover, and records its lineage. Each write
keeps the session index of :mod:`azsd.store.listing` in step, or drops it when it cannot say what changed.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Final

from azsd.errors import BadRequestError, SessionNotFoundError
from azsd.events import Complete
from azsd.model import SessionInfo
from azsd.store.chunks import ChunkedWrite
from azsd.store.events import EventLog, _badge_after
from azsd.store.listing import _require_session
from azsd.store.schema import HWM_KEY

__all__ = ["FORK_ROWS", "Sessions"]

#: Rows a step of a fork copies (a step stays well under a chunk's 200 ms).
FORK_ROWS: Final = 1000
#: The ``meta`` key (with the fork's id after it) of a fork not yet whole: "<parent>:<at_seq>".
_FORKING: Final = "azsd_forking:"

#: Copies a session's usage rows into the ledger before it is deleted (azsd.store.usage).
_KEEP_REMOVED_USAGE: Final = """\
INSERT INTO azsd_usage_removed (session_id, name, worktree, removed, source, model, slot, first_at, last_at,
    input, output, cache_read, cache_write, reasoning, cost_usd, cost_source, turns)
SELECT u.session_id, s.name, s.worktree, ?1, u.source, u.model, u.slot, u.first_at, u.last_at, u.input,
    u.output, u.cache_read, u.cache_write, u.reasoning, u.cost_usd, u.cost_source, u.turns
FROM azsd_usage AS u JOIN sessions AS s ON s.id = u.session_id WHERE u.session_id = ?2"""


class Sessions(EventLog):
    """Creating and changing sessions, and their lineage."""

    def create_session(self, name: str | None = None, worktree: str = "") -> SessionInfo:
        """Create a session with a number never used before in this store (DESIGN decision 1)."""
        with self.atomic(create=True) as conn:
            new_id = self._next_id(conn)
            conn.execute(
                "INSERT INTO sessions (id, name, worktree) VALUES (?, ?, ?)", (new_id, name or "", worktree)
            )
            self._set_hwm(conn, new_id)
            self._index_reread(conn, new_id)
        return self.get_session(new_id)

    @staticmethod
    def _next_id(conn: sqlite3.Connection) -> int:
        """Above both the highest id and the high-water mark of deleted ones (never a reused number)."""
        row = conn.execute(
            "SELECT MAX(COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?), 0), "
            "COALESCE((SELECT MAX(id) FROM sessions), 0)) + 1",
            (HWM_KEY,),
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _set_hwm(conn: sqlite3.Connection, value: int) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
            "SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
            (HWM_KEY, str(value)),
        )

    def rename_session(self, session_id: int, name: str) -> None:
        with self.atomic() as conn:
            if conn.execute("UPDATE sessions SET name = ? WHERE id = ?", (name, session_id)).rowcount == 0:
                raise SessionNotFoundError(session_id)
            self._index_reread(conn, session_id)

    def rename_worktree(self, old: str, new: str) -> int:
        """Move every session of branch `old` to `new`; returns how many moved."""
        if self._conn is None:
            return 0
        with self.atomic() as conn:
            self._lose_index()
            return conn.execute("UPDATE sessions SET worktree = ? WHERE worktree = ?", (new, old)).rowcount

    def delete_session(self, session_id: int, *, with_forks: bool = False) -> list[int]:
        """Delete a session and everything that references it (events, compactions, side tables).

        Its forks are kept, no longer linked to it, unless `with_forks` (then they go too, and
        their forks). Returns the ids deleted, the session's first.
        """
        if self._conn is None:
            raise SessionNotFoundError(session_id)
        with self.atomic() as conn:
            _require_session(conn, session_id)
            doomed = [session_id]
            if with_forks:
                doomed += [
                    row[0]
                    for row in conn.execute(
                        "WITH RECURSIVE forks(id) AS ("
                        "SELECT session_id FROM azsd_lineage WHERE parent_id = ?1 UNION "
                        "SELECT l.session_id FROM azsd_lineage AS l JOIN forks ON l.parent_id = forks.id) "
                        "SELECT id FROM forks WHERE id != ?1 ORDER BY id",
                        (session_id,),
                    )
                ]
            unlinked: list[int] = []  # forks kept, no longer linked to what is deleted
            for sid in doomed:
                unlinked += [
                    r[0]
                    for r in conn.execute("SELECT session_id FROM azsd_lineage WHERE parent_id = ?", (sid,))
                ]
                self._unindex(conn, sid)
                conn.execute(_KEEP_REMOVED_USAGE, (time.time(), sid))
                conn.execute(
                    "INSERT OR IGNORE INTO azsd_usage_removed_claims (key, session_id) "
                    "SELECT key, session_id FROM azsd_usage_claims WHERE session_id = ?",
                    (sid,),
                )
                conn.execute("DELETE FROM azsd_lineage WHERE parent_id = ?", (sid,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
                self._touch(sid)
                if self._index is not None:
                    self._index.drop(sid)
            self._set_hwm(conn, max(doomed))
            for fork in set(unlinked) - set(doomed):
                self._index_reread(conn, fork)  # (its lineage changed)
        return doomed

    def forks_of(self, session_id: int) -> list[int]:
        """The sessions forked from `session_id` (directly), in order."""
        if self.read_only and not self._has_table("azsd_lineage"):
            return []
        return [
            row[0]
            for row in self._query(
                "SELECT session_id FROM azsd_lineage WHERE parent_id = ? ORDER BY session_id", (session_id,)
            )
        ]

    def set_lineage(self, session_id: int, parent_id: int, fork_seq: int) -> None:
        """Record that `session_id` was spawned from `parent_id` after its event `fork_seq` (an
        imported agent's own lineage, e.g. an OpenCode sub-session); a recorded one is kept."""
        with self.atomic() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO azsd_lineage (session_id, parent_id, fork_seq) VALUES (?, ?, ?)",
                (session_id, parent_id, fork_seq),
            )
            self._lose_index()

    def fork_session(self, session_id: int, at_seq: int, name: str | None = None) -> SessionInfo:
        """A new session holding copies of events 1..`at_seq` of `session_id` (seqs kept).

        The rows are copied as they are stored (the same bytes), `FORK_ROWS` a step in short chunks
        (:mod:`azsd.store.chunks`), then the compactions they cover; the badge is recomputed from the
        copies; the lineage is recorded last. The original is not touched. Until the fork is whole,
        a ``meta`` row names it unfinished: the same fork asked again finishes that one.
        """
        if self._conn is None:
            raise SessionNotFoundError(session_id)
        badge: tuple[Complete | None, bool] = (None, False)
        with ChunkedWrite(self) as chunks:
            with chunks.step() as conn:
                new_id, copied = self._start_fork(conn, session_id, at_seq, name)
            while copied < at_seq:
                upto = min(at_seq, copied + FORK_ROWS)
                with chunks.step() as conn:
                    badge = self._copy_rows(conn, session_id, new_id, copied + 1, upto, badge)
                copied = upto
            with chunks.step() as conn:
                conn.execute(
                    "INSERT INTO compactions (session_id, after_seq, summary, created) SELECT ?, after_seq, "
                    "summary, created FROM compactions WHERE session_id = ? AND after_seq <= ? ORDER BY id",
                    (new_id, session_id, at_seq),
                )
                conn.execute(
                    "INSERT INTO azsd_lineage (session_id, parent_id, fork_seq) VALUES (?, ?, ?)",
                    (new_id, session_id, at_seq),
                )
                self._set_completion(conn, new_id, *badge)
                conn.execute("DELETE FROM meta WHERE key = ?", (_FORKING + str(new_id),))
                self._lose_index()
        return self.get_session(new_id)

    def _start_fork(
        self, conn: sqlite3.Connection, session_id: int, at_seq: int, name: str | None
    ) -> tuple[int, int]:
        """The fork's session (new, or the unfinished one of the same fork) and the seq copied up to."""
        parent = conn.execute("SELECT name, worktree FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if parent is None:
            raise SessionNotFoundError(session_id)
        last = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        if not 1 <= at_seq <= last:
            raise BadRequestError(
                f"S{session_id} has no event at seq {at_seq} (a fork point is 1 to {last})"
                if last
                else f"S{session_id} has no events to fork"
            )
        for key, value in conn.execute("SELECT key, value FROM meta WHERE key LIKE ?", (_FORKING + "%",)):
            fork_id = int(key[len(_FORKING) :])
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (fork_id,)).fetchone():
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))  # deleted meanwhile
            elif value == f"{session_id}:{at_seq}":
                copied = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (fork_id,)
                ).fetchone()[0]
                return fork_id, int(copied)
        new_id = self._next_id(conn)
        fork_name = name if name is not None else f"{parent[0] or f'S{session_id}'} (fork at {at_seq})"
        conn.execute(
            "INSERT INTO sessions (id, name, worktree) VALUES (?, ?, ?)", (new_id, fork_name, parent[1])
        )
        self._set_hwm(conn, new_id)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)", (_FORKING + str(new_id), f"{session_id}:{at_seq}")
        )
        self._lose_index()
        return new_id, 0

    def _copy_rows(
        self,
        conn: sqlite3.Connection,
        session_id: int,
        new_id: int,
        first: int,
        last: int,
        badge: tuple[Complete | None, bool],
    ) -> tuple[Complete | None, bool]:
        """Copy the rows `first..last` of a fork, index them, and return the badge after them
        (`badge`: the one before)."""
        before = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) SELECT ?, seq, kind, data, char_len "
            "FROM events WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq",
            (new_id, session_id, first, last),
        )
        seqs, events, _, _ = self._load(new_id, first, last, -1)  # decoded once, for the index and badge
        self._index_copies(conn, new_id, seqs, events)
        self._context_copies(conn, new_id, seqs, events, before)
        after = _badge_after(events)
        return after if after != (None, False) else badge

    def set_archived(self, session_id: int, archived: bool) -> None:
        """Archive a session (hidden from listings unless asked for) or bring it back."""
        if self._conn is None:
            raise SessionNotFoundError(session_id)
        with self.atomic() as conn:
            _require_session(conn, session_id)
            if archived:
                conn.execute("INSERT OR IGNORE INTO azsd_archive (session_id) VALUES (?)", (session_id,))
            else:
                conn.execute("DELETE FROM azsd_archive WHERE session_id = ?", (session_id,))
            self._index_reread(conn, session_id)

    def mark_completed(self, session_id: int, success: bool, duration_ms: int, cost_usd: float) -> None:
        """Set the completion badge of a session."""
        with self.atomic() as conn:
            updated = conn.execute(
                "UPDATE sessions SET completed = ?, duration_ms = ?, cost_usd = ? WHERE id = ?",
                (1 if success else 0, duration_ms, cost_usd, session_id),
            ).rowcount
            if updated == 0:
                raise SessionNotFoundError(session_id)
            self._index_reread(conn, session_id)

    # -- the agent session id of a running turn (spec §4.1, §8) -------------------------------------

    def set_session_uuid(self, session_id: int, uuid: str) -> None:
        """Record the agent session id of a running turn (orphan recovery, spec §4.1)."""
        with self.atomic() as conn:
            if (
                conn.execute(
                    "UPDATE sessions SET last_claude_uuid = ? WHERE id = ?", (uuid, session_id)
                ).rowcount
                == 0
            ):
                raise SessionNotFoundError(session_id)

    def clear_session_uuid(self, session_id: int) -> None:
        self.set_session_uuid(session_id, "")

    def sessions_with_uuid(self) -> list[tuple[int, str, str]]:
        """`(id, worktree, uuid)` of sessions whose last turn may still need ingesting."""
        return [
            tuple(r)
            for r in self._query(
                "SELECT id, worktree, last_claude_uuid FROM sessions WHERE last_claude_uuid != '' ORDER BY id"
            )
        ]
