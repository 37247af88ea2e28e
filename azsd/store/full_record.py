"""The full record: what each agent itself wrote, kept beside AZUREAL's compact events.

AZUREAL's ``events`` keep a session compact by design (spec §4: a Bash call's last lines, a Write's
``_lines``/``_purpose``, no file contents). Agents delete their own histories (Claude Code after 30
days), so azsd keeps the bytes it read as well: for each import record (``azsd_imports``: a
history file, an Aider run) the bytes the session holds of it, in the order they were written,
compressed in chunks of about :data:`CHUNK_BYTES` (``azsd_full``), each linked to the events its
bytes made (``first_seq`` to ``last_seq``). ``azsd_full_sources`` says how much of each source is
kept (``covered``), and whether it is kept at all (``dropped``: pruned, or gone before it was read).

AZUREAL ignores both tables: the compact ``events`` stay exactly as the spec says. Reads are bounded
like event rows: a chunk says its size, and none is decompressed past :data:`MAX_CHUNK_BYTES`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import zstandard

from azsd.store.codec import CodecError
from azsd.store.events import EventLog
from azsd.store.listing import _require_session
from azsd.store.sqlite_errors import translate

__all__ = [
    "CHUNK_BYTES",
    "DROPPED_GONE",
    "DROPPED_PRUNED",
    "FullChunk",
    "FullCost",
    "FullGap",
    "FullRecord",
]

#: Bytes of source in one chunk before a new one begins (an append is cut to fit).
CHUNK_BYTES: Final = 1 << 20
#: The most one stored chunk may expand to (a bigger frame is another program's row, not ours).
MAX_CHUNK_BYTES: Final = 2 * CHUNK_BYTES
#: zstd level of a chunk: catching up runs in the background, so it may take its time for a
#: smaller file (bench/storage.py measures the bytes per source byte).
FULL_LEVEL: Final = 12
#: `azsd_full_sources.dropped`: kept; pruned (never read again); the source was gone before it was read.
DROPPED_PRUNED: Final = 1
DROPPED_GONE: Final = 2


#: The sessions with a full record whose last activity (latest turn, else creation) is before ?.
_LAST_ACTIVE_BEFORE: Final = """\
SELECT s.id FROM sessions s
WHERE s.id IN (SELECT DISTINCT session_id FROM azsd_full)
AND COALESCE(
    (SELECT datetime(MAX(u.last_at), 'unixepoch') FROM azsd_usage u
     WHERE u.session_id = s.id AND u.last_at > 0),
    s.created
) < datetime(?)
"""

#: The agents whose import records name bytes of a file (OpenCode's name rows of its database).
_FILE_AGENTS: Final = ("claude", "codex", "aider")


@dataclass(frozen=True, slots=True)
class FullGap:
    """Bytes an import record says a session holds of `source` that the full record lacks:
    `covered` to `size` (offsets within the source: for an Aider run, within its block)."""

    session_id: int
    source: str
    agent: str
    covered: int
    size: int


@dataclass(frozen=True, slots=True)
class FullChunk:
    """One stored chunk: `size` bytes of `source` from offset `start`, made events `first_seq` to
    `last_seq`; `data` is None when it cannot be read (`error` says why)."""

    source: str
    start: int
    size: int
    first_seq: int
    last_seq: int
    stored: str
    data: bytes | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class FullCost:
    """What the full record costs: its chunks, their bytes on disk and the source bytes they hold."""

    sessions: int
    chunks: int
    stored_bytes: int
    source_bytes: int


class FullRecord(EventLog):
    """Reading and keeping the full record (the tables above)."""

    #: The store's state (:meth:`full_version`) when the full record was last found complete.
    full_idle_at: tuple[int, int] | None = None
    #: Set when a call just asked for work of the writer's upkeep (an ingest's full record): the
    #: writer starts it as soon as no call waits, not after a second of quiet.
    upkeep_soon: bool = False

    def take_upkeep_soon(self) -> bool:
        """Whether a call asked for upkeep since this was last asked (and no longer)."""
        soon, self.upkeep_soon = self.upkeep_soon, False
        return soon

    def full_version(self) -> tuple[int, int] | None:
        """What tells whether anything was committed since (by another connection: `data_version`;
        by this one: its `total_changes`), None with no file open. The writer's upkeep looks for
        what the full record lacks only when this moved (it runs every second while a store is
        open, and a store may have thousands of import records)."""
        conn = self._conn
        if conn is None:
            return None
        with translate(self.path):
            return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes

    def full_gaps(self, limit: int = 64) -> list[FullGap]:
        """Import records whose bytes the full record does not hold yet (nor was told to drop)."""
        if not self._has_table("azsd_full_sources"):
            return []
        marks = ",".join("?" * len(_FILE_AGENTS))
        rows = self._query(
            "SELECT i.session_id, i.source, i.agent, i.size, COALESCE(f.covered, 0) FROM azsd_imports i "
            "LEFT JOIN azsd_full_sources f ON f.session_id = i.session_id AND f.source = i.source "
            f"WHERE i.agent IN ({marks}) AND i.size > COALESCE(f.covered, 0) "
            "AND COALESCE(f.dropped, 0) = 0 "
            "UNION ALL SELECT session_id, source, agent, size, covered FROM azsd_full_sources "
            f"WHERE agent IN ({marks}) AND size > covered AND dropped = 0 LIMIT ?",
            (*_FILE_AGENTS, *_FILE_AGENTS, limit),
        )
        return [FullGap(sid, source, agent, covered, size) for sid, source, agent, size, covered in rows]

    def opencode_behind(self, limit: int = 16) -> list[FullGap]:
        """OpenCode sessions (import records of agent ``opencode``) whose events went on since their
        full record was last brought up to date: `covered` the bytes kept, `size` the session's
        latest seq then (an OpenCode session is rows of a database, read again whole when it grew)."""
        if not self._has_table("azsd_full_sources"):
            return []
        rows = self._query(
            "SELECT i.session_id, i.source, COALESCE(f.covered, 0), COALESCE(f.size, 0) FROM azsd_imports i "
            "LEFT JOIN azsd_full_sources f ON f.session_id = i.session_id AND f.source = i.source "
            "WHERE i.agent = 'opencode' AND COALESCE(f.dropped, 0) = 0 "
            "AND COALESCE((SELECT MAX(seq) FROM events e WHERE e.session_id = i.session_id), 0) "
            "> COALESCE(f.size, 0) LIMIT ?",
            (limit,),
        )
        return [FullGap(sid, source, "opencode", covered, seq) for sid, source, covered, seq in rows]

    def full_seen(self, gap: FullGap) -> None:
        """An OpenCode session's full record is up to date with its events as they are now."""
        with self.atomic() as conn:
            _require_session(conn, gap.session_id)
            conn.execute(
                "INSERT INTO azsd_full_sources (session_id, source, covered, agent, size) "
                "VALUES (?, ?, ?, 'opencode', ?) ON CONFLICT (session_id, source) DO UPDATE SET "
                "agent = excluded.agent, size = excluded.size",
                (gap.session_id, gap.source, gap.covered, self.max_seq(gap.session_id)),
            )

    def want_full(self, session_id: int, source: str, agent: str, size: int) -> None:
        """Keep the first `size` bytes of `source` (an agent's file that no import record names: one
        `azs ingest` read) in the session's full record, as soon as the writer is idle
        (:meth:`take_upkeep_soon`)."""
        self.upkeep_soon = True
        with self.atomic() as conn:
            _require_session(conn, session_id)
            conn.execute(
                "INSERT INTO azsd_full_sources (session_id, source, agent, size) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id, source) DO UPDATE SET agent = excluded.agent, "
                "size = MAX(size, excluded.size)",
                (session_id, source, agent, size),
            )

    def full_waiting(self) -> int:
        """Bytes the import records name that the full record does not hold yet."""
        return sum(gap.size - gap.covered for gap in self.full_gaps(limit=-1))

    def keep_full(self, gap: FullGap, data: bytes) -> None:
        """Add `data`, the source's bytes from `gap.covered` on, to the session's full record: the
        last chunk of the same source grows while it is under :data:`CHUNK_BYTES` and ends where
        `data` begins; the rest goes into new chunks. The chunks link to the session's events
        since the last chunk. Compressed before the write transaction begins."""
        if not data or self._covered(gap) != gap.covered:
            return  # (kept meanwhile, as another record of the same source)
        last = self._full_tail(gap.session_id)
        first_seq = (last[5] + 1) if last is not None else 1
        last_seq = max(self.max_seq(gap.session_id), first_seq - 1)
        # a compressor of this call's own: at its level, zstd's context takes ~11 MB, which a store
        # kept open would hold for as long as it stays open
        compress = zstandard.ZstdCompressor(level=FULL_LEVEL).compress
        rows: list[tuple[int | None, int, bytes, bytes]] = []  # (row to replace, start, raw, frame)
        start, rest = gap.covered, data
        if (
            last is not None
            and last[1] == gap.source
            and last[2] + last[3] == start
            and last[3] < CHUNK_BYTES
        ):
            more, rest = _lines_within(rest, CHUNK_BYTES - last[3], whole=True)
            if more:
                head = self._full_bytes(last[6]) + more
                rows.append((last[0], last[2], head, compress(head)))
                start += len(more)
        while rest:
            piece, rest = _lines_within(rest, CHUNK_BYTES)
            rows.append((None, start, piece, compress(piece)))
            start += len(piece)
        with self.atomic() as conn:
            _require_session(conn, gap.session_id)
            for row_id, at, raw, frame in rows:
                if row_id is None:
                    conn.execute(
                        "INSERT INTO azsd_full (session_id, source, start, size, first_seq, last_seq, data) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (gap.session_id, gap.source, at, len(raw), first_seq, last_seq, frame),
                    )
                else:
                    conn.execute(
                        "UPDATE azsd_full SET size = ?, last_seq = ?, data = ?, stored = datetime('now') "
                        "WHERE id = ?",
                        (len(raw), last_seq, frame, row_id),
                    )
            _cover(conn, gap.session_id, gap.source, gap.covered + len(data))

    def drop_full_source(self, gap: FullGap, why: int) -> None:
        """Never read `gap.source` for this session again (`why`: :data:`DROPPED_GONE`, …)."""
        with self.atomic() as conn:
            _require_session(conn, gap.session_id)
            _cover(conn, gap.session_id, gap.source, gap.covered, dropped=why)

    def full_chunks(self, session_id: int) -> Iterator[FullChunk]:
        """The session's full record, chunk by chunk in the order it was kept (each source's bytes
        in order), read a chunk at a time."""
        if not self._has_table("azsd_full"):
            return
        ids = [
            r[0]
            for r in self._query("SELECT id FROM azsd_full WHERE session_id = ? ORDER BY id", (session_id,))
        ]
        for row_id in ids:
            chunk = self.full_chunk(row_id)
            if chunk is not None:  # (None: pruned meanwhile)
                yield chunk

    def full_chunk_refs(
        self, sessions: Sequence[int] | None = None, worktrees: Sequence[str] | None = None
    ) -> list[tuple[int, int, str]]:
        """(chunk id, session, agent) of every chunk of the sessions chosen (None: all), newest
        first: what a search of the full record reads, a chunk at a time (:meth:`full_chunk`)."""
        if not self._has_table("azsd_full"):
            return []
        where: list[str] = []
        params: list[object] = []
        if sessions is not None:
            where.append(f"f.session_id IN ({','.join('?' * len(sessions))})")
            params += list(sessions)
        if worktrees is not None:
            where.append(f"s.worktree IN ({','.join('?' * len(worktrees))})")
            params += list(worktrees)
        rows = self._query(
            "SELECT f.id, f.session_id, COALESCE(i.agent, NULLIF(w.agent, ''), 'claude') FROM azsd_full f "
            "JOIN sessions s ON s.id = f.session_id LEFT JOIN azsd_imports i ON i.source = f.source "
            "LEFT JOIN azsd_full_sources w ON w.session_id = f.session_id AND w.source = f.source "
            f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY f.id DESC",
            params,
        )
        return [(int(a), int(b), str(c)) for a, b, c in rows]

    def full_chunk(self, chunk_id: int) -> FullChunk | None:
        """One chunk by its id (None when it is gone)."""
        rows = self._query(
            "SELECT source, start, size, first_seq, last_seq, stored, data FROM azsd_full WHERE id = ?",
            (chunk_id,),
        )
        if not rows:
            return None
        source, start, size, first_seq, last_seq, stored, frame = rows[0]
        try:
            data, error = _decompress(zstandard.ZstdDecompressor(), frame, size), ""
        except CodecError as exc:
            data, error = None, str(exc)
        return FullChunk(source, start, size, first_seq, last_seq, stored, data, error)

    def has_full(self, session_id: int) -> bool:
        """Whether the session has any full record kept."""
        return self._has_table("azsd_full") and bool(
            self._query("SELECT 1 FROM azsd_full WHERE session_id = ? LIMIT 1", (session_id,))
        )

    def full_cost(self) -> FullCost:
        """What the whole store's full record costs (:class:`FullCost`)."""
        if not self._has_table("azsd_full"):
            return FullCost(0, 0, 0, 0)
        sessions, chunks, stored, source = self._query(
            "SELECT COUNT(DISTINCT session_id), COUNT(*), COALESCE(SUM(length(data)), 0), "
            "COALESCE(SUM(size), 0) FROM azsd_full"
        )[0]
        return FullCost(int(sessions), int(chunks), int(stored), int(source))

    def prune_full(self, before: str, session_id: int | None = None) -> int:
        """Drop the full record of sessions last active before `before` (an ISO date or time, UTC:
        a session's last activity is its latest turn's time, else its creation), or of one session
        whatever its age; their sources are never read again. The compact events stay. Returns how
        many chunks were dropped."""
        if not self._has_table("azsd_full"):
            return 0
        chosen, params = (
            ("SELECT DISTINCT session_id FROM azsd_full WHERE session_id = ?", session_id)
            if session_id is not None
            else (_LAST_ACTIVE_BEFORE, before)
        )
        with self.atomic() as conn:
            dropped = 0
            for (sid,) in conn.execute(chosen, (params,)).fetchall():
                dropped += conn.execute("DELETE FROM azsd_full WHERE session_id = ?", (sid,)).rowcount
                conn.execute(
                    "UPDATE azsd_full_sources SET dropped = ? WHERE session_id = ?", (DROPPED_PRUNED, sid)
                )
            return dropped

    # -- helpers ----------------------------------------------------------------------------------

    def full_agent(self, session_id: int, source: str) -> str:
        """Whose file `source` is (``claude``, ``codex``, ``aider``), as its import record or the
        `azs ingest` that read it says; ``claude`` when neither does."""
        agent = self._scalar(
            "SELECT COALESCE((SELECT agent FROM azsd_imports WHERE source = ?), "
            "(SELECT NULLIF(agent, '') FROM azsd_full_sources WHERE session_id = ? AND source = ?))",
            (source, session_id, source),
            "claude",
        )
        return str(agent)

    def _covered(self, gap: FullGap) -> int:
        return int(
            self._scalar(
                "SELECT covered FROM azsd_full_sources WHERE session_id = ? AND source = ?",
                (gap.session_id, gap.source),
                0,
            )
        )

    def _full_tail(self, session_id: int) -> tuple[int, str, int, int, int, int, bytes] | None:
        rows = self._query(
            "SELECT id, source, start, size, first_seq, last_seq, data FROM azsd_full "
            "WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            (session_id,),
        )
        return tuple(rows[0]) if rows else None

    def _full_bytes(self, frame: bytes) -> bytes:
        try:
            return _decompress(zstandard.ZstdDecompressor(), frame, MAX_CHUNK_BYTES)
        except CodecError:
            return b""  # (an unreadable tail is replaced by what follows; nothing else is lost)


def _lines_within(data: bytes, room: int, *, whole: bool = False) -> tuple[bytes, bytes]:
    """`data` cut after its last whole line that fits in `room` bytes, and the rest; a line longer
    than `room` is cut at `room` (a chunk holds whole lines but for such a line), unless `whole`
    (then nothing is taken)."""
    if len(data) <= room:
        return data, b""
    end = data.rfind(b"\n", 0, room)
    if end < 0:
        return (b"", data) if whole else (data[:room], data[room:])
    return data[: end + 1], data[end + 1 :]


def _cover(conn: sqlite3.Connection, session_id: int, source: str, covered: int, dropped: int = 0) -> None:
    conn.execute(
        "INSERT INTO azsd_full_sources (session_id, source, covered, dropped) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session_id, source) DO UPDATE SET covered = excluded.covered, "
        "dropped = excluded.dropped",
        (session_id, source, covered, dropped),
    )


def _decompress(dctx: zstandard.ZstdDecompressor, frame: bytes, size: int) -> bytes:
    """A chunk's bytes, at most :data:`MAX_CHUNK_BYTES` whatever its frame says."""
    if not isinstance(frame, bytes):
        raise CodecError("a chunk that is not a zstd frame")
    try:
        said = zstandard.frame_content_size(frame)
        if said > MAX_CHUNK_BYTES or size > MAX_CHUNK_BYTES:
            raise CodecError(
                f"a chunk of {max(said, size):,} bytes: over the {MAX_CHUNK_BYTES:,} one may hold"
            )
        with dctx.stream_reader(frame) as reader:
            out = reader.read(MAX_CHUNK_BYTES + 1)
    except zstandard.ZstdError as exc:
        raise CodecError(f"bad zstd frame: {exc}") from None
    if len(out) > MAX_CHUNK_BYTES:
        raise CodecError(f"a chunk of over {MAX_CHUNK_BYTES:,} bytes")
    return out
