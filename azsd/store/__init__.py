"""The `.azs` session store: the only code in azsd that touches sqlite3.

A :class:`Store` is one connection to ``<root>/.azureal/sessions.azs`` in AZUREAL's v3 format
(spec/store-format.md), owned by one thread. Opening a root never creates the file; creating the
first session does. Writes run in ``BEGIN IMMEDIATE`` transactions; :meth:`Store.atomic` groups many
of them into one commit (nested calls become savepoints).

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> with Store.open(root) as store:
...     s = store.create_session(worktree="main")
...     store.append_events(s.id, [UserMessage(content="hi")]).inserted
1
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Self

from azsd.compact import char_len, prepare_for_store
from azsd.context import ContextPayload, render_event, strip_injected_context_indexed
from azsd.errors import (
    NotAStoreError,
    ReadOnlyStoreError,
    SessionNotFoundError,
    StoreError,
    StoreFullError,
)
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
    decode_event,
    encode_event,
    event_kind,
)
from azsd.model import (
    AppendResult,
    Archived,
    BackupInfo,
    Compaction,
    FollowRecord,
    ImportRecord,
    LoadResult,
    SearchResult,
    SessionInfo,
    SessionUsage,
    StoredEvent,
    Usage,
)
from azsd.search import SEARCHABLE_KINDS, make_snippet, search_text
from azsd.store.cache import ROWS, CachedRow, SessionIndex
from azsd.store.codec import CodecError, RowCodec
from azsd.store.schema import (
    AZSD_DDL,
    AZUREAL_DDL,
    DROPPED_COLUMNS,
    HWM_KEY,
    REQUIRED_OBJECTS,
    SCHEMA_VERSION,
    SEARCH_HWM_KEY,
)

__all__ = ["BUSY_TIMEOUT_S", "STORE_DIR", "STORE_FILE", "Store", "completion_of", "store_path"]

log = logging.getLogger("azsd.store")

STORE_DIR: Final = ".azureal"
STORE_FILE: Final = "sessions.azs"
#: rusqlite's default, which AZUREAL runs with.
BUSY_TIMEOUT_S: Final = 5.0

_RUNNING_KINDS: Final = (Init, UserMessage, Command, Plan, AssistantText, ToolCall, ToolResult)
_SESSION_COLUMNS: Final = (
    "s.id, s.name, s.worktree, s.created, s.completed, s.duration_ms, s.cost_usd, "
    "a.session_id IS NOT NULL, l.parent_id, l.fork_seq"
)
#: Sessions with their archive mark and lineage (side tables; a lineage whose parent is gone is none).
_SESSIONS: Final = (
    "sessions AS s LEFT JOIN azsd_archive AS a ON a.session_id = s.id "
    "LEFT JOIN azsd_lineage AS l ON l.session_id = s.id AND l.parent_id IS NOT NULL"
)
#: The same for a store opened read-only whose (newer) schema may lack azsd's side tables.
_SESSIONS_BARE: Final = (
    "sessions AS s LEFT JOIN (SELECT NULL AS session_id) AS a ON 0 "
    "LEFT JOIN (SELECT NULL AS parent_id, NULL AS fork_seq) AS l ON 0"
)
#: Ids a query names in one `IN (…)` list (SQLite allows 32 766 parameters); more read everything.
_IN_LIST_MAX: Final = 1000
_SEARCHABLE: Final = ", ".join(f"'{kind}'" for kind in SEARCHABLE_KINDS)
#: `append_prepared` puts the rows of an append up to this size in the row cache (a live turn's
#: events, read again soon); a bulk ingest does not flood it.
_CACHE_APPENDS_UP_TO: Final = 2000
_MESSAGE_KINDS: Final = (UserMessage, AssistantText)
_SESSION_STATS: Final = """
    LEFT JOIN (
        SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) AS msgs,
               MAX(id) AS last_id
        FROM events GROUP BY session_id
    ) AS e ON e.session_id = s.id
"""


def store_path(root: Path) -> Path:
    """Where the store of the worktree `root` lives."""
    return Path(root) / STORE_DIR / STORE_FILE


class Store:
    """One `.azs` file, opened lazily: absent until the first session is created."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = store_path(self.root)
        self.read_only = False
        self.schema_version: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._codec = RowCodec()
        self._depth = 0
        # The session list, kept by this Store's own writes; None until a listing needs it, and
        # again whenever it may be wrong (a rollback, another connection's commit).
        self._index: SessionIndex | None = None
        self._sessions = _SESSIONS
        if self.path.exists():
            self._connect()

    @classmethod
    def open(cls, root: Path) -> Self:
        """Open the store of `root`; the file is not created until a session is."""
        return cls(root)

    @property
    def exists(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        self._index = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connection and schema ----------------------------------------------------------------

    def _connect(self) -> None:
        uri = f"{self.path.as_uri()}?mode=rwc"
        conn = sqlite3.connect(
            uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            version = _read_schema_version(conn)
        except sqlite3.DatabaseError:
            conn.close()
            raise NotAStoreError(self.path) from None
        if version is not None and version > SCHEMA_VERSION:
            conn.close()
            ro = f"{self.path.as_uri()}?mode=ro"
            conn = sqlite3.connect(
                ro, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self.read_only = True
            log.warning(
                "%s has schema_version %d (newer than %d): opened read-only",
                self.path,
                version,
                SCHEMA_VERSION,
            )
        else:
            with _translate(self.path):
                mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
                if str(mode).lower() != "delete":
                    conn.close()
                    raise StoreError(f"{self.path}: cannot switch journal mode to DELETE (it is {mode})")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
        self._conn = conn
        if not self.read_only:
            with _translate(self.path):
                self._migrate()
        elif not (self._has_table("azsd_archive") and self._has_table("azsd_lineage")):
            self._sessions = _SESSIONS_BARE
        self.schema_version = version if self.read_only else SCHEMA_VERSION

    def _migrate(self) -> None:
        """Run AZUREAL's DDL and v3 migration (spec §1.4) when the file is not already v3."""
        conn = self._require()
        if _is_current(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            had_index = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'azsd_search'").fetchone()
            for statement in _statements(AZUREAL_DDL + AZSD_DDL):
                conn.execute(statement)
            if not had_index:  # a new, empty index: whatever mark a meta row holds is not about it
                conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_HWM_KEY,))
            columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
            if "last_claude_uuid" not in columns:
                conn.execute("ALTER TABLE sessions ADD COLUMN last_claude_uuid TEXT NOT NULL DEFAULT ''")
            for column in DROPPED_COLUMNS:
                if column in columns:
                    conn.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
            conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _require(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    def _writer(self, *, create: bool = False) -> sqlite3.Connection:
        if self.read_only:
            raise ReadOnlyStoreError(
                f"{self.path} has schema_version {self.schema_version}, newer than the {SCHEMA_VERSION} "
                "this azsd understands: it is open read-only (upgrade azsd to write to it)"
            )
        if self._conn is None:
            if not create:
                raise StoreError(f"{self.path} does not exist yet (create a session first)")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._connect()
        return self._require()

    @contextmanager
    def atomic(self, *, create: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction (`BEGIN IMMEDIATE`), or a savepoint inside an enclosing one."""
        conn = self._writer(create=create)
        depth = self._depth
        with _translate(self.path):
            conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT azsd_{depth}")
            self._depth += 1
            try:
                yield conn
            except BaseException:
                self._depth = depth
                self._index = None  # it may hold what is being rolled back
                if depth == 0:
                    conn.execute("ROLLBACK")
                else:
                    conn.execute(f"ROLLBACK TO azsd_{depth}")
                    conn.execute(f"RELEASE azsd_{depth}")
                raise
            self._depth = depth
            try:
                conn.execute("COMMIT" if depth == 0 else f"RELEASE azsd_{depth}")
            except sqlite3.Error:
                self._index = None
                if depth == 0 and conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        if self._conn is None:
            return []
        with _translate(self.path):
            return self._conn.execute(sql, params).fetchall()

    def _scalar(self, sql: str, params: Sequence[Any] = (), default: Any = None) -> Any:
        rows = self._query(sql, params)
        return rows[0][0] if rows and rows[0][0] is not None else default

    # -- sessions -----------------------------------------------------------------------------

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

    def next_session_number(self) -> int:
        """The number the next `create_session` will use."""
        if self._conn is None:
            return 1
        with _translate(self.path):
            return self._next_id(self._conn)

    def get_session(self, session_id: int) -> SessionInfo:
        index = self._fresh_index(build=False)
        if index is not None:
            info = index.get(session_id)
            if info is None:
                raise SessionNotFoundError(session_id)
            return info
        rows = self._query(
            f"SELECT {_SESSION_COLUMNS}, COALESCE(e.n, 0), COALESCE(e.msgs, 0) FROM {self._sessions} "
            "LEFT JOIN (SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) "
            "AS msgs FROM events WHERE session_id = ?) AS e ON e.session_id = s.id WHERE s.id = ?",
            (session_id, session_id),
        )
        if not rows:
            raise SessionNotFoundError(session_id)
        return _session_info(rows[0])

    def has_session(self, session_id: int) -> bool:
        return bool(self._query("SELECT 1 FROM sessions WHERE id = ?", (session_id,)))

    def list_sessions(
        self, worktree: str | None = None, *, limit: int = -1, offset: int = 0, archived: Archived = "include"
    ) -> list[SessionInfo]:
        """Sessions, latest activity first, those with no events last (spec §7 `list_sessions`).

        Served from the session index, which is built by one query the first time and then kept
        by this Store's writes (rebuilt when another connection has committed).
        """
        index = self._fresh_index(build=True)
        return [] if index is None else index.page(worktree, limit, max(0, offset), archived)

    def count_sessions(self, worktree: str | None = None, *, archived: Archived = "include") -> int:
        index = self._fresh_index(build=True)
        return 0 if index is None else index.count(worktree, archived)

    def session_names(self) -> dict[int, str]:
        """Every session's display name (`name`, or `S{id}`)."""
        return {sid: name or f"S{sid}" for sid, name in self._query("SELECT id, name FROM sessions")}

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
            self._index = None
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
            for sid in doomed:
                self._unindex(conn, sid)
                conn.execute("DELETE FROM azsd_lineage WHERE parent_id = ?", (sid,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
                if self._index is not None:
                    self._index.drop(sid)
            self._set_hwm(conn, max(doomed))
            if not with_forks and self._index is not None:
                self._index = None  # the forks' lineage changed
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

    def fork_session(self, session_id: int, at_seq: int, name: str | None = None) -> SessionInfo:
        """A new session holding copies of events 1..`at_seq` of `session_id` (seqs kept).

        The rows are copied as they are stored (the same bytes), with the compactions they cover;
        the badge is recomputed from the copies; the lineage is recorded. The original is not touched.
        """
        if self._conn is None:
            raise SessionNotFoundError(session_id)
        with self.atomic() as conn:
            parent = conn.execute(
                "SELECT name, worktree FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if parent is None:
                raise SessionNotFoundError(session_id)
            last = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            if not 1 <= at_seq <= last:
                raise ValueError(
                    f"S{session_id} has no event at seq {at_seq} (a fork point is 1 to {last})"
                    if last
                    else f"S{session_id} has no events to fork"
                )
            indexed = self._search_current(conn)
            new_id = self._next_id(conn)
            fork_name = name if name is not None else f"{parent[0] or f'S{session_id}'} (fork at {at_seq})"
            conn.execute(
                "INSERT INTO sessions (id, name, worktree) VALUES (?, ?, ?)", (new_id, fork_name, parent[1])
            )
            self._set_hwm(conn, new_id)
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, data, char_len) "
                "SELECT ?, seq, kind, data, char_len FROM events "
                "WHERE session_id = ? AND seq <= ? ORDER BY seq",
                (new_id, session_id, at_seq),
            )
            conn.execute(
                "INSERT INTO compactions (session_id, after_seq, summary, created) SELECT ?, after_seq, "
                "summary, created FROM compactions WHERE session_id = ? AND after_seq <= ? ORDER BY id",
                (new_id, session_id, at_seq),
            )
            conn.execute(
                "INSERT INTO azsd_lineage (session_id, parent_id, fork_seq) VALUES (?, ?, ?)",
                (new_id, session_id, at_seq),
            )
            seqs, events, _, _ = self._load(new_id, 1, None, -1)  # decoded once, for the index and the badge
            if indexed:
                ids = dict(
                    conn.execute("SELECT seq, id FROM events WHERE session_id = ?", (new_id,)).fetchall()
                )
                conn.executemany(
                    "INSERT INTO azsd_search (rowid, text) VALUES (?, ?)",
                    [
                        (ids[seq], text)
                        for seq, event in zip(seqs, events, strict=True)
                        if (text := search_text(event))
                    ],
                )
                self._set_search_hwm(conn, conn.execute("SELECT MAX(id) FROM events").fetchone()[0])
            self._set_completion(conn, new_id, *_badge_after(events))
            self._index = None
        return self.get_session(new_id)

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

    def vacuum(self) -> None:
        """Give the space of deleted sessions back to the file system (AZUREAL does this after a delete)."""
        with _translate(self.path):
            self._writer().execute("VACUUM")

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

    # -- the session index (see azsd.store.cache.SessionIndex) ---------------------------------------

    def _fresh_index(self, *, build: bool) -> SessionIndex | None:
        """The session index if it is current (built now when `build`), else None."""
        conn = self._conn
        if conn is None or (self._index is None and not build):
            return None
        with _translate(self.path):
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if self._index is not None and self._index.data_version == version:
                return self._index
            self._index = None
            if not build:
                return None
            rows = conn.execute(
                f"SELECT {_SESSION_COLUMNS}, COALESCE(e.n, 0), COALESCE(e.msgs, 0), "
                f"COALESCE(e.last_id, 0) FROM {self._sessions} {_SESSION_STATS}"
            ).fetchall()
        self._index = SessionIndex(version, ((_session_info(row[:-1]), row[-1]) for row in rows))
        return self._index

    def _index_reread(self, conn: sqlite3.Connection, session_id: int) -> None:
        """Bring one session's entry up to date after this Store changed its row."""
        index = self._index
        if index is None:
            return
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM {self._sessions} WHERE s.id = ?", (session_id,)
        ).fetchone()
        if row is None:
            index.drop(session_id)
            return
        known = index.get(session_id)
        if known is None:  # new: no events yet
            index.upsert(_session_info((*row, 0, 0)), 0)
            return
        info = _session_info((*row, known.event_count, known.message_count))
        index.upsert(info, index.last_id(session_id))

    # -- events -------------------------------------------------------------------------------

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
            indexed = self._search_current(conn)
            conn.executemany(
                "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                [
                    (session_id, seq + offset, event_kind(event), payload, char_len(event))
                    for offset, (event, payload) in enumerate(zip(events, payloads, strict=True))
                ],
            )
            if events:
                last_id = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
                if indexed:
                    self._index_new(conn, last_id - len(events) + 1, events, last_id)
                if self._index is not None:
                    messages = sum(1 for event in events if isinstance(event, _MESSAGE_KINDS))
                    self._index.add_events(session_id, len(events), messages, last_id)
            if completion:
                self._set_completion(conn, session_id, *completion_of(events))
        if len(events) <= _CACHE_APPENDS_UP_TO:
            ROWS.put_many(map(CachedRow, payloads, jsons))
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
            conn.execute(
                "UPDATE sessions SET completed = NULL, duration_ms = NULL, cost_usd = NULL WHERE id = ?",
                (session_id,),
            )
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
        seqs, events, rows, skipped = self._load(session_id, from_seq, to_seq, limit)
        out = []
        for i, event in strip_injected_context_indexed(events):
            if event is events[i]:
                row = rows[i]
                if row.wire is None:
                    row.wire = encode_event(event).decode()
                out.append((seqs[i], event_kind(event), row.wire))
            else:  # a prompt stripped of injected context: not what the row holds
                out.append((seqs[i], event_kind(event), encode_event(event).decode()))
        return out, skipped

    def _load(
        self, session_id: int, from_seq: int, to_seq: int | None, limit: int
    ) -> tuple[list[int], list[Event], list[CachedRow], int]:
        """The readable rows of a seq range, decoded (through the row cache), and how many were not."""
        rows = self._query(
            "SELECT seq, data FROM events WHERE session_id = ? AND seq >= ? AND seq <= ? "
            "ORDER BY seq LIMIT ?",
            (session_id, from_seq, to_seq if to_seq is not None else 2**63 - 1, limit),
        )
        seqs: list[int] = []
        events: list[Event] = []
        used: list[CachedRow] = []
        fresh: list[CachedRow] = []
        skipped = 0
        for (seq, data), row in zip(rows, ROWS.get_many([data for _, data in rows]), strict=True):
            try:
                if row is None:
                    row = CachedRow(data, self._codec.decode(data))
                    fresh.append(row)
                event = row.event
                if event is None:
                    event = row.event = decode_event(row.json)
            except (CodecError, EventDecodeError) as exc:
                skipped += 1
                log.debug("%s: S%d seq %d unreadable: %s", self.path, session_id, seq, exc)
                continue
            seqs.append(seq)
            events.append(event)
            used.append(row)
        ROWS.put_many(row for row in fresh if row.event is not None)
        return seqs, events, used, skipped

    def count_events(self, session_id: int, kinds: Iterable[str] | None = None) -> int:
        if kinds is None:
            return int(self._scalar("SELECT COUNT(*) FROM events WHERE session_id = ?", (session_id,), 0))
        wanted = list(kinds)
        marks = ", ".join("?" * len(wanted))
        return int(
            self._scalar(
                f"SELECT COUNT(*) FROM events WHERE session_id = ? AND kind IN ({marks})",
                (session_id, *wanted),
                0,
            )
        )

    def message_count(self, session_id: int) -> int:
        return self.count_events(session_id, ("UserMessage", "AssistantText"))

    def max_seq(self, session_id: int) -> int:
        return int(self._scalar("SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,), 0))

    # -- full-text search (side tables azsd_search + azsd_search_fts; see azsd.search) ---------

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

    def _search_current(self, conn: sqlite3.Connection) -> bool:
        """Whether the index holds every event row (else new rows wait for :meth:`_catch_up`)."""
        top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        return bool((self._search_hwm(conn) or 0) == top)

    def _index_new(
        self, conn: sqlite3.Connection, first_id: int, events: Sequence[Event], last_id: int
    ) -> None:
        """Index events just inserted as rows `first_id`, `first_id + 1`, …"""
        rows = [
            (first_id + offset, text)
            for offset, event in enumerate(events)
            if (text := search_text(event)) is not None
        ]
        conn.executemany("INSERT INTO azsd_search (rowid, text) VALUES (?, ?)", rows)
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
        """Index the event rows the index has not seen (written by AZUREAL, or before an upgrade)."""
        if self._conn is None or self.read_only:
            return
        with self.atomic() as conn:
            mark = self._search_hwm(conn)
            hwm = mark or 0
            top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
            if hwm >= top:
                return
            if mark is None:  # never indexed, or by another version of search_text: start afresh
                conn.execute("INSERT INTO azsd_search (azsd_search) VALUES ('delete-all')")
            log.info("%s: indexing events %d to %d for search", self.path, hwm + 1, top)
            rows = conn.execute(
                f"SELECT id, data FROM events WHERE id > ? AND kind IN ({_SEARCHABLE}) ORDER BY id", (hwm,)
            )
            conn.executemany("INSERT INTO azsd_search (rowid, text) VALUES (?, ?)", self._indexed_texts(rows))
            self._set_search_hwm(conn, top)

    def _unindex(self, conn: sqlite3.Connection, session_id: int) -> None:
        """Take a session's indexed events out of the index (a contentless index needs their text)."""
        hwm = self._search_hwm(conn) or 0
        rows = conn.execute(
            f"SELECT id, data FROM events WHERE session_id = ? AND id <= ? AND kind IN ({_SEARCHABLE})",
            (session_id, hwm),
        ).fetchall()
        try:
            conn.executemany(
                "INSERT INTO azsd_search (azsd_search, rowid, text) VALUES ('delete', ?, ?)",
                self._indexed_texts(rows),
            )
        except sqlite3.DatabaseError as exc:  # the index does not hold what it should: start it afresh
            log.warning("%s: search index out of step (%s), rebuilt at the next search", self.path, exc)
            conn.execute("INSERT INTO azsd_search (azsd_search) VALUES ('delete-all')")
            conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_HWM_KEY,))

    def reindex_search(self) -> int:
        """Rebuild the search index from the event rows; returns how many events it holds."""
        if self._conn is None:
            return 0
        with self.atomic() as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_HWM_KEY,))
            self._catch_up()
            count = conn.execute(
                f"SELECT COUNT(*) FROM events WHERE kind IN ({_SEARCHABLE}) AND id IN "
                "(SELECT rowid FROM azsd_search_docsize)"
            ).fetchone()[0]
        return int(count)

    def search(
        self,
        query: str,
        *,
        worktrees: Sequence[str] | None = None,
        sessions: Sequence[int] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 50,
    ) -> list[SearchResult]:
        """Events matching the FTS5 `query`, best first, each with a snippet of where it matched.

        A query FTS5 cannot parse raises ValueError saying so (nothing is searched).
        """
        if self._conn is None:
            return []
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
            f"WHERE {' AND '.join(where)} ORDER BY rank, e.session_id DESC, e.seq LIMIT ?"
        )
        try:
            rows = self._conn.execute(sql, (*params, limit)).fetchall()
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode == sqlite3.SQLITE_ERROR and "no such table" not in str(exc):  # the query
                raise ValueError(
                    f"cannot search for {query!r}: {exc} (FTS5 query syntax: quote a phrase with "
                    '"…"; AND, OR, NOT and NEAR are operators; or search the words literally with --words)'
                ) from None
            raise StoreError(f"{self.path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from None
        results = []
        for session_id, seq, kind, rank, data in rows:
            try:
                json = self._codec.decode(data)
                text = search_text(decode_event(json)) or ""
            except (CodecError, EventDecodeError):
                continue
            snippet, highlights = make_snippet(text, query)
            results.append(
                SearchResult(
                    session_id=session_id, seq=seq, kind=kind, rank=float(rank), snippet=snippet,
                    highlights=highlights, json=json.decode(),
                )
            )  # fmt: skip
        return results

    # -- token usage (side table azsd_usage) --------------------------------------------------

    def record_usage(self, session_id: int, source: str, usage: Usage, cost_usd: float | None) -> None:
        """Set the usage of one turn (`source`: the agent run's id or file): replaced, never added."""
        with self.atomic() as conn:
            _require_session(conn, session_id)
            conn.execute(
                "INSERT INTO azsd_usage (session_id, source, input, output, cache_read, cache_write, "
                "reasoning, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, source) DO "
                "UPDATE SET input = excluded.input, output = excluded.output, "
                "cache_read = excluded.cache_read, cache_write = excluded.cache_write, "
                "reasoning = excluded.reasoning, "
                "cost_usd = excluded.cost_usd, updated = datetime('now')",
                (
                    session_id,
                    source,
                    usage.input,
                    usage.output,
                    usage.cache_read,
                    usage.cache_write,
                    usage.reasoning,
                    cost_usd,
                ),
            )

    def session_usage(self, session_id: int) -> SessionUsage:
        """The session's usage and cost, summed over its turns."""
        return self.usage_by_session([session_id]).get(session_id, SessionUsage(Usage(), 0.0, 0))

    def usage_by_session(self, sessions: Sequence[int] | None = None) -> dict[int, SessionUsage]:
        """The usage of every session that has any (of `sessions`, when given), in one query."""
        if self.read_only and not self._has_table("azsd_usage"):  # a newer schema may lack it
            return {}
        where, params = "", []
        if sessions is not None and len(sessions) <= _IN_LIST_MAX:
            params = list(sessions)
            where = f"WHERE session_id IN ({', '.join('?' * len(params))})"
        rows = self._query(
            "SELECT session_id, SUM(input), SUM(output), SUM(cache_read), SUM(cache_write), SUM(reasoning), "
            f"COALESCE(SUM(cost_usd), 0.0), COUNT(*) FROM azsd_usage {where} GROUP BY session_id",
            params,
        )
        return {
            sid: SessionUsage(
                Usage(input=i, output=o, cache_read=cr, cache_write=cw, reasoning=r), float(cost), turns
            )
            for sid, i, o, cr, cw, r, cost, turns in rows
        }

    # -- imported histories (side table azsd_imports) -------------------------------------------

    def get_import(self, source: str) -> ImportRecord | None:
        """The session `source` (an agent history file) was imported into, if it was."""
        rows = self._query(
            "SELECT source, session_id, agent, size, last_seq FROM azsd_imports WHERE source = ?", (source,)
        )
        if not rows:
            return None
        src, sid, agent, size, last_seq = rows[0]
        return ImportRecord(source=src, session_id=sid, agent=agent, size=size, last_seq=last_seq)

    def record_import(self, record: ImportRecord) -> None:
        """Remember that `record.source`, `record.size` bytes of it, is in `record.session_id`."""
        with self.atomic() as conn:
            _require_session(conn, record.session_id)
            conn.execute(
                "INSERT INTO azsd_imports (source, session_id, agent, size, last_seq) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (source) DO UPDATE SET session_id = excluded.session_id, "
                "agent = excluded.agent, size = excluded.size, last_seq = excluded.last_seq, "
                "imported = datetime('now')",
                (record.source, record.session_id, record.agent, record.size, record.last_seq),
            )

    # -- backup --------------------------------------------------------------------------------

    def backup(self, dest: Path) -> BackupInfo:
        """Copy the store to `dest` with SQLite's online backup API, then verify the copy.

        The copy is one consistent snapshot (taken in one step, so writes wait for it rather than
        restart it), written beside `dest` under a temporary name and renamed into place only once
        `PRAGMA integrity_check` says ok. An existing `dest` is never overwritten.
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
            with _translate(dest):
                target = sqlite3.connect(part, isolation_level=None)
            try:
                with _translate(self.path):
                    conn.backup(target)
                with _translate(dest):
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

    # -- followed files (side table azsd_follows) -----------------------------------------------

    def save_follow(self, record: FollowRecord) -> None:
        """Insert or update a follow's position (call inside the transaction that stored its events)."""
        with self.atomic() as conn:
            _require_session(conn, record.session_id)
            conn.execute(
                "INSERT INTO azsd_follows (session_id, path, format, offset, inode, lines, skipped, active, "
                "writer_pid, ended) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, path) DO UPDATE SET format = excluded.format, "
                "offset = excluded.offset, inode = excluded.inode, lines = excluded.lines, "
                "skipped = excluded.skipped, active = excluded.active, writer_pid = excluded.writer_pid, "
                "ended = excluded.ended, last_activity = datetime('now')",
                (
                    record.session_id,
                    record.path,
                    record.format,
                    record.offset,
                    record.inode,
                    record.lines,
                    record.skipped,
                    int(record.active),
                    record.writer_pid,
                    record.ended,
                ),
            )

    def follows(self, *, active_only: bool = False) -> list[FollowRecord]:
        """The follows this store records (optionally only those still running)."""
        return self._follow_rows("?1 = 0 OR active = 1", (int(active_only),))

    def get_follow(self, session_id: int, path: str) -> FollowRecord | None:
        rows = self._follow_rows("session_id = ?1 AND path = ?2", (session_id, path))
        return rows[0] if rows else None

    def _follow_rows(self, where: str, params: Sequence[Any]) -> list[FollowRecord]:
        if self.read_only and not self._has_table("azsd_follows"):  # a newer schema may lack it
            return []
        rows = self._query(
            "SELECT session_id, path, format, offset, inode, lines, skipped, active, writer_pid, "
            f"started, last_activity, ended FROM azsd_follows WHERE {where} ORDER BY started, path",
            params,
        )
        return [
            FollowRecord(
                session_id=r[0], path=r[1], format=r[2], offset=r[3], inode=r[4], lines=r[5], skipped=r[6],
                active=bool(r[7]), writer_pid=r[8], started=r[9], last_activity=r[10], ended=r[11],
            )
            for r in rows
        ]  # fmt: skip

    def _has_table(self, name: str) -> bool:
        return bool(self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    # -- compaction and context (spec §5, §6) -------------------------------------------------

    def store_compaction(self, session_id: int, after_seq: int, summary: str) -> None:
        with self.atomic() as conn:
            _require_session(conn, session_id)
            conn.execute(
                "INSERT INTO compactions (session_id, after_seq, summary) VALUES (?, ?, ?)",
                (session_id, after_seq, summary),
            )

    def latest_compaction(self, session_id: int) -> Compaction | None:
        rows = self._query(
            "SELECT after_seq, summary FROM compactions WHERE session_id = ? "
            "ORDER BY after_seq DESC, id DESC LIMIT 1",
            (session_id,),
        )
        return Compaction(rows[0][0], rows[0][1]) if rows else None

    def first_seq_since_compaction(self, session_id: int) -> int:
        """The first seq the latest compaction does not cover (1 without one)."""
        latest = self.latest_compaction(session_id)
        return latest.after_seq + 1 if latest else 1

    def total_chars_since_compaction(self, session_id: int) -> int:
        first = self.first_seq_since_compaction(session_id)
        return int(
            self._scalar(
                "SELECT SUM(char_len) FROM events WHERE session_id = ? AND seq >= ?", (session_id, first), 0
            )
        )

    def compaction_boundary(self, session_id: int, from_seq: int, keep: int) -> int | None:
        """The seq to compact through so that the newest `keep` prompts stay raw, or None."""
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        seqs = [
            r[0]
            for r in self._query(
                "SELECT seq FROM events WHERE session_id = ? AND kind = 'UserMessage' AND seq >= ? "
                "ORDER BY seq DESC",
                (session_id, from_seq),
            )
        ]
        return None if len(seqs) <= keep else int(seqs[keep - 1]) - 1

    def build_context(self, session_id: int) -> ContextPayload | None:
        """The latest summary and the events after it, or None for a session with neither."""
        latest = self.latest_compaction(session_id)
        _, loaded, rows, _ = self._load(session_id, latest.after_seq + 1 if latest else 1, None, -1)
        events: list[Event] = []
        rendered: list[str | None] = []
        for i, event in strip_injected_context_indexed(loaded):
            events.append(event)
            if event is not loaded[i]:  # a prompt stripped of injected context: not what the row holds
                rendered.append(render_event(event))
                continue
            row = rows[i]
            if not row.rendered_known:
                row.rendered, row.rendered_known = render_event(event), True
            rendered.append(row.rendered)
        if not events and latest is None:
            return None
        return ContextPayload(latest.summary if latest else None, events, rendered)


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


def _require_session(conn: sqlite3.Connection, session_id: int) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise SessionNotFoundError(session_id)


def _session_info(row: Sequence[Any]) -> SessionInfo:
    sid, name, worktree, created, completed, duration_ms, cost_usd, archived, parent, fork_seq, n, msgs = row
    return SessionInfo(
        id=sid,
        name=name,
        worktree=worktree,
        created=created,
        event_count=n,
        message_count=msgs,
        completed=None if completed is None else bool(completed),
        duration_ms=duration_ms,
        cost_usd=cost_usd,
        archived=bool(archived),
        parent=parent,
        fork_seq=fork_seq if parent is not None else None,
    )


def _read_schema_version(conn: sqlite3.Connection) -> int | None:
    """The file's `schema_version`, or None for a file without AZUREAL's tables yet."""
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if not has_meta:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise sqlite3.DatabaseError(f"schema_version {row[0]!r} is not a number") from None


def _is_current(conn: sqlite3.Connection) -> bool:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if not REQUIRED_OBJECTS <= tables:
        return False
    columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    if "last_claude_uuid" not in columns or columns & set(DROPPED_COLUMNS):
        return False
    return _read_schema_version(conn) == SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    """The statements of an SQL script (a trigger's body keeps its own semicolons)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    return statements


@contextmanager
def _translate(path: Path) -> Iterator[None]:
    """Turn sqlite3 errors into the azsd tree, naming the store."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "full" in str(exc):
            raise StoreFullError(f"{path}: {exc} (nothing was written)") from None
        raise StoreError(f"{path}: {exc}") from None
    except sqlite3.IntegrityError as exc:
        raise StoreError(f"{path}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise NotAStoreError(path) from None
        raise StoreError(f"{path}: {exc}") from None
