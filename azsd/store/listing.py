"""Reading the sessions table, and the session-list index that keeps those reads cheap.

:class:`SessionListing` owns how a session row becomes a :class:`azsd.model.SessionInfo` (with its
archive mark and lineage from the side tables, or without them for a newer schema opened
read-only), the lookups :meth:`~SessionListing.get_session`, :meth:`~SessionListing.list_sessions`,
:meth:`~SessionListing.count_sessions` and :meth:`~SessionListing.session_names` (each session
marked `following` while a follow is active into it and not idle, read from ``azsd_follows`` at every
lookup, so its state says `running` only then), and the
:class:`azsd.store.cache.SessionIndex` they are served from: built by one query the first time, kept
by this Store's own writes (:meth:`~SessionListing._index_reread`, and the layers above that touch
``self._index``), dropped on a rollback or when another connection has committed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from azsd.errors import SessionNotFoundError
from azsd.model import Archived, SessionInfo
from azsd.store.cache import SessionIndex
from azsd.store.changes import ChangeLog, change_counter, hold, let_go
from azsd.store.core import StoreCore
from azsd.store.sqlite_errors import translate
from azsd.store.summaries import STATS_ABOVE, summary_hwm

__all__ = ["SessionListing"]

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
#: The columns of the sessions table itself that a SessionInfo shows (`sessions AS s`).
_BARE_COLUMNS: Final = "s.id, s.name, s.worktree, s.created, s.completed, s.duration_ms, s.cost_usd"
#: The archive marks and the lineage as `_SESSIONS` joins them (a lineage whose parent is gone is none).
_ARCHIVED: Final = "SELECT session_id FROM azsd_archive"
_LINEAGE: Final = "SELECT session_id, parent_id, fork_seq FROM azsd_lineage WHERE parent_id IS NOT NULL"
_NO_LINEAGE: Final = (None, None)
_SESSION_STATS: Final = """
    LEFT JOIN (
        SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) AS msgs,
               MAX(id) AS last_id
        FROM events GROUP BY session_id
    ) AS e ON e.session_id = s.id
"""


class SessionListing(StoreCore):
    """Session lookups and listings, served from the session index when it is current."""

    # The session list, kept by this Store's own writes; None until a listing needs it, and
    # again whenever it may be wrong (a rollback, another connection's commit).
    _index: SessionIndex | None = None
    _sessions: str = _SESSIONS
    #: The sessions the transaction under way touched (None: it may have touched any), filed for the
    #: readers of the file when it commits (:mod:`azsd.store.changes`).
    _touched: set[int] | None = None

    #: The change log of the file this Store holds open (azsd.store.changes), None when none.
    _log: ChangeLog | None = None
    _held_id: tuple[int, int] | None = None

    def _connect(self) -> None:
        super()._connect()
        self._touched = set()
        if self._file_id is not None and self._held_id is None:
            self._held_id, self._log = self._file_id, hold(self._file_id)
        if self.read_only and not (self._has_table("azsd_archive") and self._has_table("azsd_lineage")):
            self._sessions = _SESSIONS_BARE

    def close(self) -> None:
        if self._held_id is not None:
            let_go(self._held_id)
            self._held_id, self._log = None, None
        super().close()

    def _forget(self) -> None:
        super()._forget()
        self._index = None
        self._touched = None  # (a savepoint rolled back: what the transaction touched is not known)

    def _touch(self, session_id: int) -> None:
        """This transaction changes what a listing shows of `session_id` (its row, its counts)."""
        if self._touched is not None:
            self._touched.add(session_id)

    def _lose_index(self) -> None:
        """This transaction changes more than can be said session by session: the index goes, and
        the readers read the whole list again."""
        self._index = None
        self._touched = None

    def _committed(self) -> None:
        super()._committed()
        touched, self._touched = self._touched, set()
        held = self._held_id
        counter = change_counter(self.path, held) if self._log is not None and held is not None else None
        if self._log is not None and counter is not None:
            self._log.record(counter, None if touched is None else frozenset(touched))

    def get_session(self, session_id: int) -> SessionInfo:
        index = self._fresh_index(build=False)
        if index is not None:
            info = index.get(session_id)
            if info is None:
                raise SessionNotFoundError(session_id)
            return self._with_follows([info])[0]
        hwm = self._summary_hwm(self._conn) if self._conn is not None else None
        if hwm is None:  # no summaries (a newer schema read-only): count the events
            rows = self._query(
                f"SELECT {_SESSION_COLUMNS}, COALESCE(e.n, 0), COALESCE(e.msgs, 0) FROM {self._sessions} "
                "LEFT JOIN (SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) "
                "AS msgs FROM events WHERE session_id = ?) AS e ON e.session_id = s.id WHERE s.id = ?",
                (session_id, session_id),
            )
        else:  # its summary, and the rows above the summaries' mark (by id: a few, not the session's)
            rows = self._query(
                f"SELECT {_SESSION_COLUMNS}, COALESCE(m.events, 0) + COALESCE(e.n, 0), "
                f"COALESCE(m.messages, 0) + COALESCE(e.msgs, 0) FROM {self._sessions} "
                "LEFT JOIN azsd_summaries AS m ON m.session_id = s.id "
                "LEFT JOIN (SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) "
                "AS msgs FROM events WHERE id > ? AND +session_id = ?) AS e ON e.session_id = s.id "
                "WHERE s.id = ?",
                (hwm, session_id, session_id),
            )
        if not rows:
            raise SessionNotFoundError(session_id)
        return self._with_follows([_session_info(rows[0])])[0]

    def has_session(self, session_id: int) -> bool:
        return bool(self._query("SELECT 1 FROM sessions WHERE id = ?", (session_id,)))

    def session_identity(self, session_id: int) -> str:
        """What tells this session from a later one given the same number (AZUREAL reuses the
        highest number after a delete): its creation stamp and its first event's row id, which
        AUTOINCREMENT never hands out twice. SessionNotFoundError when there is no such session."""
        rows = self._query(
            "SELECT created, (SELECT id FROM events WHERE session_id = s.id ORDER BY seq LIMIT 1) "
            "FROM sessions AS s WHERE id = ?",
            (session_id,),
        )
        if not rows:
            raise SessionNotFoundError(session_id)
        created, first = rows[0]
        return f"{created}#{first or 0}"

    def list_sessions(
        self, worktree: str | None = None, *, limit: int = -1, offset: int = 0, archived: Archived = "include"
    ) -> list[SessionInfo]:
        """Sessions, latest activity first, those with no events last (spec §7 `list_sessions`).

        Served from the session index, which is built by one query the first time and then kept
        by this Store's writes (rebuilt when another connection has committed).
        """
        index = self._fresh_index(build=True)
        if index is None:
            return []
        return self._with_follows(index.page(worktree, limit, max(0, offset), archived))

    def count_sessions(self, worktree: str | None = None, *, archived: Archived = "include") -> int:
        index = self._fresh_index(build=True)
        return 0 if index is None else index.count(worktree, archived)

    def session_names(self) -> dict[int, str]:
        """Every session's display name (`name`, or `S{id}`)."""
        return {sid: name or f"S{sid}" for sid, name in self._query("SELECT id, name FROM sessions")}

    def _with_follows(self, infos: list[SessionInfo]) -> list[SessionInfo]:
        """`infos`, those a follow is active into marked `following`, unless every such follow is
        idle (not kept in the index: a follow starts, idles and ends in ``azsd_follows``, which the
        index does not watch)."""
        if not infos or (self.read_only and not self._has_table("azsd_follows")):
            return infos
        idle = self._follows_idle()
        rows = self._query(f"SELECT DISTINCT session_id FROM azsd_follows WHERE active AND NOT {idle}")
        followed = {sid for (sid,) in rows}
        if not followed:
            return infos
        return [msgspec.structs.replace(i, following=True) if i.id in followed else i for i in infos]

    def _follows_idle(self) -> str:
        """The SQL of an ``azsd_follows`` row's idle mark: its column, or 0 in a store opened
        read-only whose table is from before the column (only the writer brings it up to date)."""
        return self._follows_column("idle")

    def _follows_usage_from(self) -> str:
        """The SQL of an ``azsd_follows`` row's `usage_from` (0 where the column is not there yet)."""
        return self._follows_column("usage_from")

    def _follows_column(self, name: str) -> str:
        if self.read_only and all(r[1] != name for r in self._query("PRAGMA table_info(azsd_follows)")):
            return "0"
        return name

    # -- the session index (see azsd.store.cache.SessionIndex) ---------------------------------------

    def _fresh_index(self, *, build: bool) -> SessionIndex | None:
        """The session index if it is current (built now when `build`), else None."""
        conn = self._conn
        if conn is None or (self._index is None and not build):
            return None
        with translate(self.path):
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if self._index is not None and self._index.data_version == version:
                return self._index
            counter = change_counter(self.path, self._held_id) if self._held_id is not None else None
            if self._refreshed(conn, counter):
                assert self._index is not None
                self._index.data_version = version
                return self._index
            self._index = None
            if not build:
                return None
            with self.snapshot():
                infos, last_ids, archived = self._summarised(conn)
        self._index = SessionIndex(version, infos, last_ids, archived)
        self._index.counter = counter
        return self._index

    def _refreshed(self, conn: sqlite3.Connection, counter: int | None) -> bool:
        """Bring the index up to date with what this process's writer of the file committed since
        it was built, re-reading only the sessions those commits touched, when that is all that
        changed (:mod:`azsd.store.changes`); whether it could."""
        index = self._index
        if index is None or index.counter is None or counter is None or self._log is None:
            return False
        touched = self._log.since(index.counter, counter)
        hwm = self._summary_hwm(conn) if touched is not None else None
        if touched is None or hwm is None:
            return False
        with self.snapshot():
            ids = sorted(touched)
            newer = {sid: (n, msgs, last) for sid, n, msgs, last in conn.execute(STATS_ABOVE, (hwm,))}
            found: set[int] = set()
            for at in range(0, len(ids), 500):
                chosen = ids[at : at + 500]
                for row in conn.execute(
                    f"SELECT {_SESSION_COLUMNS}, COALESCE(m.events, 0), COALESCE(m.messages, 0), "
                    f"COALESCE(m.last_id, 0) FROM {self._sessions} "
                    "LEFT JOIN azsd_summaries AS m ON m.session_id = s.id "
                    f"WHERE s.id IN ({','.join('?' * len(chosen))})",
                    chosen,
                ):
                    extra = newer.get(row[0], (0, 0, 0))
                    info = _session_info((*row[:-3], row[-3] + extra[0], row[-2] + extra[1]))
                    index.upsert(info, max(row[-1], extra[2]))
                    found.add(row[0])
        for gone in touched - found:
            index.drop(gone)
        index.counter = counter
        return True

    def _summarised(
        self, conn: sqlite3.Connection
    ) -> tuple[dict[int, SessionInfo], dict[int, int], set[int]]:
        """Every session as the index holds it and its latest event id, by id, and the ids archived
        (not all of them sessions'): from ``azsd_summaries`` plus the rows above its mark (a few,
        usually: what AZUREAL appended since azsd last did), or, with no summaries (a newer schema
        read-only), by counting all the events.

        Fetching a value costs about half a microsecond a column of each row in Python's sqlite3, far
        more than SQLite's own work: the rows are read with the sessions' own columns and their counts
        only, and the archive marks and lineage (side tables, a few rows as a rule) on their own,
        rather than joined and fetched as three more columns of every row. Each row becomes its
        SessionInfo as it is read: no list of the rows (or of pairs) is kept alive, so the cyclic GC,
        which runs as container objects pile up, does not walk ten thousand of them."""
        hwm = self._summary_hwm(conn)
        newer: dict[int, tuple[int, int, int]] = {}
        if hwm is None:
            sql = (
                f"SELECT {_BARE_COLUMNS}, COALESCE(e.n, 0), COALESCE(e.msgs, 0), "
                f"COALESCE(e.last_id, 0) FROM sessions AS s {_SESSION_STATS}"
            )
        else:
            sql = (
                f"SELECT {_BARE_COLUMNS}, COALESCE(m.events, 0), COALESCE(m.messages, 0), "
                "COALESCE(m.last_id, 0) FROM sessions AS s "
                "LEFT JOIN azsd_summaries AS m ON m.session_id = s.id"
            )
            newer = {sid: (n, msgs, last) for sid, n, msgs, last in conn.execute(STATS_ABOVE, (hwm,))}
        archived: set[int] = set()
        lineage: dict[int, tuple[int, int | None]] = {}
        if self._sessions is _SESSIONS:  # (else a newer schema read-only, without the side tables)
            archived = {sid for (sid,) in conn.execute(_ARCHIVED)}
            lineage = {sid: (parent, fork_seq) for sid, parent, fork_seq in conn.execute(_LINEAGE)}
        infos: dict[int, SessionInfo] = {}
        last_ids: dict[int, int] = {}
        for row in conn.execute(sql):
            sid, name, worktree, created, completed, duration_ms, cost_usd, n, msgs, last = row
            if newer and sid in newer:
                extra = newer[sid]
                n, msgs, last = n + extra[0], msgs + extra[1], max(last, extra[2])
            parent, fork_seq = lineage.get(sid, _NO_LINEAGE) if lineage else _NO_LINEAGE
            infos[sid] = SessionInfo(  # as _session_info makes it (positional: the quicker)
                sid,
                name,
                worktree,
                created,
                n,
                msgs,
                None if completed is None else bool(completed),
                duration_ms,
                cost_usd,
                sid in archived,
                parent,
                fork_seq,
            )
            last_ids[sid] = last
        return infos, last_ids, archived

    def _summary_hwm(self, conn: sqlite3.Connection) -> int | None:
        """The summaries' mark, or None when there are none to read (not built, or no such table)."""
        if self.read_only and not self._has_table("azsd_summaries"):
            return None
        with translate(self.path):  # a locked file is StoreBusyError, as for every other query
            return summary_hwm(conn)

    def _index_reread(self, conn: sqlite3.Connection, session_id: int) -> None:
        """Bring one session's entry up to date after this Store changed its row."""
        self._touch(session_id)
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


def _require_session(conn: sqlite3.Connection, session_id: int) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise SessionNotFoundError(session_id)


def _session_info(row: Sequence[Any]) -> SessionInfo:
    sid, name, worktree, created, completed, duration_ms, cost_usd, archived, parent, fork_seq, n, msgs = row
    return SessionInfo(  # (in the order of its fields: positional arguments are the quicker)
        sid,
        name,
        worktree,
        created,
        n,
        msgs,
        None if completed is None else bool(completed),
        duration_ms,
        cost_usd,
        bool(archived),
        parent,
        fork_seq if parent is not None else None,
    )
