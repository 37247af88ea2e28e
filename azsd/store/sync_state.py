"""What a store keeps for sync (azsd.sync), in side tables of its own; AZUREAL's tables never change.

The tables are created the first time a store is pushed (:meth:`SyncState.sync_prepare`), never
when sync is off:

- ``azsd_sync_store``: the store's UUID and repository identity (key/value);
- ``azsd_sync_sessions``: each session's global UUID (``ON DELETE CASCADE``);
- ``azsd_sync_pulled``: the sessions `azs pull` copied from the database, and from which one.

Nothing is added to AZUREAL's tables, not even a trigger (DESIGN.md decision 5): a deleted session
is found by difference, the sessions the database holds alive for this store against those the file
still has (:meth:`SyncState.sync_session_rows`), whoever deleted it. (A first version had a trigger
``azsd_sync_tombstone`` on ``sessions``; opening a store drops it, see
:data:`azsd.store.schema.OBSOLETE_DDL`.)

The push cursor is not here: it lives in the database, committed with the rows it covers (see
azsd.sync.push). Everything a push reads comes from one snapshot (:meth:`StoreCore.snapshot`).
"""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from collections.abc import Sequence
from typing import Final, NamedTuple

from azsd.model import SessionInfo, SessionUsage
from azsd.store.migration import split_statements
from azsd.store.sessions import Sessions
from azsd.store.side_tables import SideTables

__all__ = [
    "SYNC_DDL",
    "PulledSession",
    "SyncCompaction",
    "SyncEvent",
    "SyncSession",
    "SyncState",
    "event_digest",
]

SYNC_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_sync_store (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS azsd_sync_sessions (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    uuid       TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS azsd_sync_pulled (
    session_id  INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    origin_uuid TEXT NOT NULL,
    ref         TEXT NOT NULL,
    pulled      TEXT NOT NULL DEFAULT (datetime('now'))
);
"""

#: Each synced session's row; `{idle}` is an ``azsd_follows`` row's idle mark
#: (:meth:`SessionListing._follows_idle`): an idle follow does not make its session running.
_SESSION_ROWS: Final = (
    "SELECT u.uuid, s.id, s.name, s.worktree, s.created, s.completed, s.duration_ms, s.cost_usd, "
    "a.session_id IS NOT NULL, pu.uuid, l.fork_seq, p.origin_uuid, "
    "EXISTS (SELECT 1 FROM azsd_follows f WHERE f.session_id = s.id AND f.active AND NOT {idle}) "
    "FROM azsd_sync_sessions u JOIN sessions s ON s.id = u.session_id "
    "LEFT JOIN azsd_archive a ON a.session_id = s.id "
    "LEFT JOIN azsd_lineage l ON l.session_id = s.id AND l.parent_id IS NOT NULL "
    "LEFT JOIN azsd_sync_sessions pu ON pu.session_id = l.parent_id "
    "LEFT JOIN azsd_sync_pulled p ON p.session_id = s.id ORDER BY s.id"
)


def event_digest(data: bytes | str) -> str:
    """The digest of an event's stored bytes (``md5``: a check that a row is the same, not a secret).

    >>> event_digest(b"x")
    '9dd4e461268c8034f5c8564e155c67a6'
    """
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return hashlib.md5(raw, usedforsecurity=False).hexdigest()


class SyncEvent(NamedTuple):
    """One `events` row as stored, with its session's global UUID."""

    id: int
    session_uuid: str
    seq: int
    kind: str
    data: bytes
    char_len: int


class SyncSession(NamedTuple):
    """A session as pushed: its row, badge, archive, lineage (as UUIDs) and usage. Not its counts:
    the database counts the events it holds itself, so reading this never scans `events`."""

    uuid: str
    id: int
    name: str
    worktree: str
    created: str
    state: str  # succeeded, failed, running or ended (the database says `new` while it has no events)
    completed: bool | None
    duration_ms: int | None
    cost_usd: float | None
    archived: bool
    parent_uuid: str | None
    fork_seq: int | None
    pulled_from: str | None
    usage: SessionUsage | None


class SyncCompaction(NamedTuple):
    id: int
    session_uuid: str
    after_seq: int
    summary: str
    created: str


class PulledSession(NamedTuple):
    """A session read from the database, to be copied into this store as a new one."""

    origin_uuid: str
    ref: str
    name: str
    worktree: str
    completed: bool | None
    duration_ms: int | None
    cost_usd: float | None
    events: Sequence[tuple[int, str, bytes, int]]  # seq, kind, data, char_len
    compactions: Sequence[tuple[int, str, str]]  # after_seq, summary, created
    #: The rows of the remote session not copied: unreadable, or not what they say (azsd.sync.remote).
    left_out: int = 0


class SyncState(Sessions, SideTables):
    """The store's side of sync: identity, session UUIDs, rows since a cursor, tombstones, pulls."""

    def sync_ready(self) -> bool:
        """Whether the sync tables exist and every session has its UUID (else :meth:`sync_prepare`)."""
        if not self._has_table("azsd_sync_sessions") or not self._has_table("azsd_sync_store"):
            return self._conn is None  # no file: nothing to prepare
        missing = self._scalar(
            "SELECT COUNT(*) FROM sessions WHERE id NOT IN (SELECT session_id FROM azsd_sync_sessions)",
            (),
            0,
        )
        has_uuid = self._scalar("SELECT 1 FROM azsd_sync_store WHERE key = 'store_uuid'")
        return not missing and bool(has_uuid)

    def sync_prepare(self, repository: str) -> str:
        """Create the sync tables, give the store and each session without one a UUID, record the
        repository identity; the store's UUID. (A write: the store's writer runs it.)"""
        with self.atomic() as conn:
            for statement in split_statements(SYNC_DDL):
                conn.execute(statement)
            conn.execute(
                "INSERT OR IGNORE INTO azsd_sync_store (key, value) VALUES ('store_uuid', ?)",
                (str(uuid.uuid4()),),
            )
            conn.execute(
                "INSERT INTO azsd_sync_store (key, value) VALUES ('repository', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (repository,),
            )
            missing = conn.execute(
                "SELECT id FROM sessions WHERE id NOT IN (SELECT session_id FROM azsd_sync_sessions)"
            ).fetchall()
            conn.executemany(
                "INSERT INTO azsd_sync_sessions (session_id, uuid) VALUES (?, ?)",
                [(sid, str(uuid.uuid4())) for (sid,) in missing],
            )
            row = conn.execute("SELECT value FROM azsd_sync_store WHERE key = 'store_uuid'").fetchone()
            return str(row[0])

    def sync_identity(self) -> tuple[str, str] | None:
        """The store's UUID and repository identity, once :meth:`sync_prepare` gave them."""
        if not self._has_table("azsd_sync_store"):
            return None
        values = dict(self._query("SELECT key, value FROM azsd_sync_store"))
        if "store_uuid" not in values:
            return None
        return values["store_uuid"], values.get("repository", "")

    def sync_data_version(self) -> int:
        """SQLite's `data_version`: it changes when another connection commits to the file."""
        return int(self._scalar("PRAGMA data_version", (), 0))

    def sync_max_event_id(self) -> int:
        """The highest `events.id` ever handed out (AUTOINCREMENT's mark: rows deleted since count)."""
        return int(
            self._scalar(
                "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0), "
                "COALESCE((SELECT MAX(id) FROM events), 0))",
                (),
                0,
            )
        )

    def sync_count_after(self, after_id: int) -> int:
        return int(self._scalar("SELECT COUNT(*) FROM events WHERE id > ?", (after_id,), 0))

    def sync_events_after(self, after_id: int, limit: int) -> list[SyncEvent]:
        """Rows with `events.id` > `after_id`, in id order, at most `limit`; it stops before the
        first row of a session without a UUID yet (created after the last prepare)."""
        rows = self._query(
            "SELECT e.id, u.uuid, e.seq, e.kind, e.data, e.char_len, "
            "EXISTS (SELECT 1 FROM sessions s WHERE s.id = e.session_id) FROM events e "
            "LEFT JOIN azsd_sync_sessions u ON u.session_id = e.session_id "
            "WHERE e.id > ? ORDER BY e.id LIMIT ?",
            (after_id, limit),
        )
        out: list[SyncEvent] = []
        for rid, suuid, seq, kind, data, char_len, alive in rows:
            if not alive:  # left behind by a delete without foreign keys: nobody's rows
                continue
            if suuid is None:
                break
            out.append(
                SyncEvent(rid, suuid, seq, kind, data.encode() if isinstance(data, str) else data, char_len)
            )
        return out

    def sync_session_rows(self) -> list[SyncSession]:
        """Every session that has a UUID, with what is pushed about it: one query over the sessions
        and the small side tables (never `events`), cheap enough for every push."""
        usage = self.usage_by_session()
        out = []
        for row in self._query(_SESSION_ROWS.format(idle=self._follows_idle())):
            uid, sid, name, worktree, created, completed, duration_ms, cost_usd = row[:8]
            archived, parent, fork_seq, pulled, following = row[8:]
            done = None if completed is None else bool(completed)
            state = ("succeeded" if done else "failed") if done is not None else "ended"
            if done is None and following:
                state = "running"
            out.append(
                SyncSession(
                    uid, sid, name, worktree, created, state, done, duration_ms, cost_usd,
                    bool(archived), parent, fork_seq if parent is not None else None, pulled,
                    usage.get(sid),
                )
            )  # fmt: skip
        return out

    def sync_compactions_after(self, after_id: int) -> list[SyncCompaction]:
        """Compactions with `id` > `after_id`, in id order; it stops before the first one of a session
        without a UUID yet (created after the last prepare), as :meth:`sync_events_after` does: the
        push cursor must never move past a compaction the database does not hold."""
        rows = self._query(
            "SELECT c.id, u.uuid, c.after_seq, c.summary, c.created, "
            "EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.session_id) FROM compactions c "
            "LEFT JOIN azsd_sync_sessions u ON u.session_id = c.session_id WHERE c.id > ? ORDER BY c.id",
            (after_id,),
        )
        out: list[SyncCompaction] = []
        for cid, suuid, after_seq, summary, created, alive in rows:
            if not alive:  # left behind by a delete without foreign keys
                continue
            if suuid is None:
                break
            out.append(SyncCompaction(cid, suuid, after_seq, summary, created))
        return out

    def sync_session_counts(self, upto: int) -> list[tuple[str, int, int]]:
        """Each session with a UUID: (UUID, its number, its events with `events.id` <= `upto`)."""
        return [
            (str(u), int(sid), int(n))
            for u, sid, n in self._query(
                "SELECT u.uuid, u.session_id, (SELECT COUNT(*) FROM events e "
                "WHERE e.session_id = u.session_id AND e.id <= ?) FROM azsd_sync_sessions u "
                "JOIN sessions s ON s.id = u.session_id ORDER BY u.session_id",
                (upto,),
            )
        ]

    def sync_events_of(self, session_uuid: str, upto: int) -> list[SyncEvent]:
        """A session's rows with `events.id` <= `upto`, in id order (what `azs sync verify` pushes again)."""
        rows = self._query(
            "SELECT e.id, u.uuid, e.seq, e.kind, e.data, e.char_len FROM azsd_sync_sessions u "
            "JOIN events e ON e.session_id = u.session_id WHERE u.uuid = ? AND e.id <= ? ORDER BY e.id",
            (session_uuid, upto),
        )
        return [
            SyncEvent(rid, suuid, seq, kind, data.encode() if isinstance(data, str) else data, char_len)
            for rid, suuid, seq, kind, data, char_len in rows
        ]

    def sync_event_digest(self, event_id: int) -> str | None:
        """The digest of the stored bytes of the `events` row `event_id` (None: no such row), which
        the database keeps for its cursor's row (see azsd.sync.push)."""
        rows = self._query("SELECT data FROM events WHERE id = ?", (event_id,))
        if not rows:
            return None
        return event_digest(rows[0][0])

    def sync_reincarnate(self) -> str:
        """Make this file a new incarnation: a new store UUID and a new UUID for every session, so that
        what it pushes from now on never lands on (or tombstones) the rows another file pushed; the
        new store UUID. (A write: the store's writer runs it.)"""
        with self.atomic() as conn:
            for statement in split_statements(SYNC_DDL):
                conn.execute(statement)
            old = conn.execute("SELECT value FROM azsd_sync_store WHERE key = 'store_uuid'").fetchone()
            new = str(uuid.uuid4())
            if old is not None:
                conn.execute(
                    "INSERT INTO azsd_sync_store (key, value) VALUES ('previous_store_uuid', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (old[0],),
                )
            conn.execute(
                "INSERT INTO azsd_sync_store (key, value) VALUES ('store_uuid', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (new,),
            )
            ids = [sid for (sid,) in conn.execute("SELECT session_id FROM azsd_sync_sessions")]
            conn.executemany(
                "UPDATE azsd_sync_sessions SET uuid = ? WHERE session_id = ?",
                [(str(uuid.uuid4()), sid) for sid in ids],
            )
        return new

    def sync_pulled(self, origin_uuid: str) -> list[int]:
        """The local sessions pulled from `origin_uuid` (a pull again makes another)."""
        if not self._has_table("azsd_sync_pulled"):
            return []
        return [
            r[0]
            for r in self._query(
                "SELECT session_id FROM azsd_sync_pulled WHERE origin_uuid = ?", (origin_uuid,)
            )
        ]

    def sync_insert_pulled(self, pulled: PulledSession) -> SessionInfo:
        """Copy a session read from the database into this store, as a new session: its events byte
        for byte (seqs kept), its compactions, its badge, and where it came from."""
        with self.atomic(create=True) as conn:  # all of it, or none of it
            info = self.create_session(pulled.name, pulled.worktree)
            for statement in split_statements(SYNC_DDL):
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                [
                    (info.id, seq, kind, sqlite3.Binary(data), char_len)
                    for seq, kind, data, char_len in pulled.events
                ],
            )
            conn.executemany(
                "INSERT INTO compactions (session_id, after_seq, summary, created) VALUES (?, ?, ?, ?)",
                [(info.id, after, summary, created) for after, summary, created in pulled.compactions],
            )
            completed = None if pulled.completed is None else int(pulled.completed)
            conn.execute(
                "UPDATE sessions SET completed = ?, duration_ms = ?, cost_usd = ? WHERE id = ?",
                (completed, pulled.duration_ms, pulled.cost_usd, info.id),
            )
            conn.execute(
                "INSERT INTO azsd_sync_pulled (session_id, origin_uuid, ref) VALUES (?, ?, ?)",
                (info.id, pulled.origin_uuid, pulled.ref),
            )
            self._lose_index()
            self._forget()
        return self.get_session(info.id)
