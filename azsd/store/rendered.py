"""Rendered context blocks (side table ``azsd_context``): what a cold context reads instead of events.

The next turn's context is every event since the latest compaction, each rendered as a block of
text (spec §5.2). Rendering them from the event rows means decompressing and decoding every row
first (~5 µs an event: 55 ms for a 10 000-event session after a start). :class:`ContextTable` keeps
the blocks in groups: one row holds a run of a session's events, their blocks joined as the
transcript joins them, in one zstd frame, and a layout (each event's seq, its
:func:`azsd.context.strip_flag` and its block's length), so a context is a few frames decompressed
in one C call and joined, and the blocks take a fraction of the events' bytes. An append adds its
blocks to the session's last group while that group is under :data:`GROUP_BYTES`, else starts one.

Which rows have blocks is said by a mark (``meta`` key :data:`~azsd.store.schema.CONTEXT_HWM_KEY`,
the highest ``events.id`` rendered): azsd's appends render their own rows in their transaction
(:meth:`~ContextTable._context_new`, :meth:`~ContextTable._context_copies`); rows above the mark
(AZUREAL's, a pulled session's, a fork's not rendered) are rendered by the next append when they
are few, else by :meth:`~ContextTable.catch_up_context` in short chunks, and meanwhile a read renders
them from the events. While many wait, an append still renders its own rows when every earlier row
of their session has its block (a big ingest is not left to the catch-up): those rows are above the
mark and in a group, and the catch-up and the reads skip the rows of a session up to the highest seq
its groups hold (a session's rows come in seq order, whoever writes them). AUTOINCREMENT ids only
grow, so the rows above the mark are exactly those without a block, but for those; a deleted session
takes its groups with it (ON DELETE CASCADE); rows are never changed or deleted otherwise (spec
§2.5). Unreadable rows have no block, as they have no event.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Final

import msgspec

from azsd.context import USER_MAY_BE_INJECTED, render_event, strip_flag
from azsd.events import Event, EventDecodeError, decode_events
from azsd.store.chunks import ChunkedWrite
from azsd.store.codec import CodecError
from azsd.store.core import StoreCore
from azsd.store.schema import CONTEXT_HWM_KEY
from azsd.store.sqlite_errors import translate

__all__ = ["CONTEXT_INLINE_ROWS", "GROUP_BYTES", "ContextTable", "Entry", "GroupRow", "group_of"]

log = logging.getLogger("azsd.store")

#: Rows above the mark an append renders in its own transaction (more wait for the chunked catch-up).
CONTEXT_INLINE_ROWS: Final = 2000
#: A group takes more blocks while its text is under this many bytes.
GROUP_BYTES: Final = 1 << 16
#: Event ids a step of the chunked catch-up renders (a step stays well under a chunk's 200 ms).
_STEP_ROWS: Final = 250
#: What `bytes.rstrip` may take off a transcript's end (all of it Rust whitespace: `trim_end` agrees).
_ASCII_SPACE: Final = " \t\n\r\x0b\x0c"
_LAYOUT: Final = msgspec.msgpack.Decoder(list[int])
_ENCODE: Final = msgspec.msgpack.Encoder()

Entry = tuple[int, int, str | None]  # (seq, strip flag, block or None: not shown)
#: A group's row but for its session: (first_seq, last_seq, injected, layout, zstd text, size).
GroupRow = tuple[int, int, int, bytes, bytes, int]
_GROUP_INSERT: Final = (
    "INSERT INTO azsd_context (session_id, first_seq, last_seq, injected, layout, text, size) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class ContextTable(StoreCore):
    """The upkeep of the rendered context blocks, and reading them back."""

    # -- the mark -------------------------------------------------------------------------------

    def _context_hwm(self, conn: sqlite3.Connection) -> int | None:
        """The highest event id rendered; None when this version of the blocks never rendered any."""
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (CONTEXT_HWM_KEY,)).fetchone()
        return int(row[0]) if row else None

    def _set_context_hwm(self, conn: sqlite3.Connection, value: int) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (CONTEXT_HWM_KEY, str(value)),
        )

    # -- writing --------------------------------------------------------------------------------

    def _context_new(
        self,
        conn: sqlite3.Connection,
        session_id: int,
        first_seq: int,
        events: Sequence[Event],
        first_id: int,
    ) -> None:
        """Render events just inserted as rows `first_id`, `first_id + 1`, … (seqs from `first_seq`),
        after the rows above the mark when they are few; else, when every earlier row of their
        session is rendered, these alone (the mark stays: the catch-up skips them); else leave them
        to the catch-up."""
        entries = [(first_seq + i, strip_flag(e), render_event(e)) for i, e in enumerate(events)]
        if self._context_reach(conn, first_id - 1):
            self._context_add(conn, session_id, entries)
            self._set_context_hwm(conn, first_id + len(events) - 1)
        elif self._context_rendered_before(conn, session_id, first_seq):
            self._context_add(conn, session_id, entries)

    def _context_copies(
        self,
        conn: sqlite3.Connection,
        session_id: int,
        seqs: Sequence[int],
        events: Sequence[Event],
        before: int,
    ) -> None:
        """Render the rows just copied into `session_id` (a fork; `before`: the highest id before the
        copy), `events` being them decoded, by seq."""
        if not seqs:
            return
        entries = [(seq, strip_flag(e), render_event(e)) for seq, e in zip(seqs, events, strict=True)]
        if self._context_reach(conn, before):
            self._context_add(conn, session_id, entries)
            self._set_context_hwm(conn, conn.execute("SELECT MAX(id) FROM events").fetchone()[0])
        elif self._context_rendered_before(conn, session_id, seqs[0]):
            self._context_add(conn, session_id, entries)

    def _context_reach(self, conn: sqlite3.Connection, upto: int) -> bool:
        """Render the rows up to `upto` that are above the mark, if at most :data:`CONTEXT_INLINE_ROWS`;
        whether the mark is then at `upto` or past it."""
        mark = self._context_hwm(conn)
        if mark is not None and mark >= upto:
            return True
        waiting = conn.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE id > ? AND id <= ? LIMIT ?)",
            (mark or 0, upto, CONTEXT_INLINE_ROWS + 1),
        ).fetchone()[0]
        if waiting > CONTEXT_INLINE_ROWS:
            return False
        self._context_render(conn, mark, upto)
        return True

    def _context_rendered_before(self, conn: sqlite3.Connection, session_id: int, seq: int) -> bool:
        """Whether every row of the session before `seq` has its block (while rows above the mark
        wait): its row before `seq` is under the mark, or in a group (an append of azsd rendered it
        so: a session's rows come in seq order, so its groups then hold all of them up to there)."""
        mark = self._context_hwm(conn)
        if mark is None:  # (the catch-up drops every group first)
            return False
        before = conn.execute(
            "SELECT id, seq FROM events WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
            (session_id, seq),
        ).fetchone()
        return before is None or before[0] <= mark or before[1] <= self._rendered_upto(conn, session_id)

    def _rendered_upto(self, conn: sqlite3.Connection, session_id: int) -> int:
        """The highest seq of the session that has its block (0: none)."""
        return int(
            conn.execute(
                "SELECT COALESCE(MAX(last_seq), 0) FROM azsd_context WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
        )

    def _context_render(self, conn: sqlite3.Connection, mark: int | None, upto: int) -> None:
        """Render the rows with `mark < id <= upto` from the events, but those an append of azsd
        rendered already, and move the mark to `upto`. Without a mark (never rendered, or by another
        version), every group is dropped first."""
        if mark is None:
            conn.execute("DELETE FROM azsd_context")
        rows = conn.execute(
            "SELECT id, session_id, seq, kind, data FROM events WHERE id > ? AND id <= ? ORDER BY id",
            (mark or 0, upto),
        ).fetchall()
        by_session: dict[int, list[Entry]] = defaultdict(list)
        for session_id, entry in self._rendered(rows):
            by_session[session_id].append(entry)
        for session_id, entries in by_session.items():
            done = self._rendered_upto(conn, session_id) if mark is not None else 0
            entries = sorted((entry for entry in entries if entry[0] > done), key=lambda entry: entry[0])
            if entries:
                self._context_add(conn, session_id, entries)
        self._set_context_hwm(conn, upto)

    def _rendered(self, rows: Sequence[tuple[int, int, int, str, bytes]]) -> Iterator[tuple[int, Entry]]:
        """`(session, (seq, strip flag, block))` of the readable rows among `(id, session, seq, kind,
        data)` rows (decompressed and decoded in batches)."""
        jsons = self._codec.decode_many([row[4] for row in rows])
        readable = [
            (row, json) for row, json in zip(rows, jsons, strict=True) if not isinstance(json, CodecError)
        ]
        events = decode_events([(row[3], json) for row, json in readable])
        for (row, _), event in zip(readable, events, strict=True):
            if not isinstance(event, EventDecodeError):
                yield row[1], (row[2], strip_flag(event), render_event(event))

    def _context_add(self, conn: sqlite3.Connection, session_id: int, entries: Sequence[Entry]) -> None:
        """Add rendered rows of one session, in seq order, to its last group while that group is
        small and before them, else as a group of their own. Rows of a quarter of a group or more (a
        bulk append's) make a group of their own at once: adding them would read, decompress and
        compress again the last group for little gain."""
        layout, text, injected = group_of(entries)
        if len(text) >= GROUP_BYTES // 4:
            conn.execute(_GROUP_INSERT, self._group_row(session_id, entries, (layout, text, injected)))
            return
        last = conn.execute(
            "SELECT id, last_seq, injected, layout, text, size FROM azsd_context WHERE session_id = ? "
            "ORDER BY first_seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        if last is not None and last[1] < entries[0][0] and last[5] + len(text) < GROUP_BYTES:
            before = self._codec.decode(last[4])
            text = before + b"\n" + text if before and text else before or text
            conn.execute(
                "UPDATE azsd_context SET last_seq = ?, injected = ?, layout = ?, text = ?, size = ? "
                "WHERE id = ?",
                (
                    entries[-1][0], last[2] + injected, _ENCODE.encode(_LAYOUT.decode(last[3]) + layout),
                    self._codec.encode(text), len(text), last[0],
                ),
            )  # fmt: skip
            return
        conn.execute(_GROUP_INSERT, self._group_row(session_id, entries, (layout, text, injected)))

    def _group_row(
        self,
        session_id: int,
        entries: Sequence[Entry],
        grouped: tuple[list[int], bytes, int] | None = None,
    ) -> tuple[int, int, int, int, bytes, bytes, int]:
        """The :data:`_GROUP_INSERT` values of a new group of one session's rendered rows
        (`grouped`: their :func:`group_of`, when made already)."""
        layout, text, injected = group_of(entries) if grouped is None else grouped
        return (
            session_id, entries[0][0], entries[-1][0], injected, _ENCODE.encode(layout),
            self._codec.encode(text), len(text),
        )  # fmt: skip

    def _context_new_groups(
        self, conn: sqlite3.Connection, groups: Sequence[tuple[int, GroupRow]], first_id: int, last_id: int
    ) -> None:
        """Add the groups (:func:`azsd.store.rows.session_rows`) of new sessions whose rows were just
        inserted as ids `first_id` to `last_id`, as :meth:`_context_new` adds an append's: after the
        rows above the mark when they are few (the mark then moves to `last_id`), else alone (no row
        of a new session is before them)."""
        if self._context_reach(conn, first_id - 1):
            conn.executemany(_GROUP_INSERT, [(sid, *group) for sid, group in groups])
            self._set_context_hwm(conn, last_id)
        elif self._context_hwm(conn) is not None:
            conn.executemany(_GROUP_INSERT, [(sid, *group) for sid, group in groups])

    def catch_up_context(self) -> None:
        """Render the rows above the mark, in short chunks (:mod:`azsd.store.chunks`), the mark moving
        with each: an interrupted catch-up goes on from where it stopped."""
        if self._conn is None or self.read_only or self.reader:
            return
        with ChunkedWrite(self) as chunks:
            while True:
                with chunks.step() as conn:
                    if not self._context_step(conn):
                        break

    def _context_step(self, conn: sqlite3.Connection) -> bool:
        """Render the next ids above the mark, if any (in a write transaction); whether there were any."""
        mark = self._context_hwm(conn)
        top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        if mark is not None and mark >= top:
            return False
        self._context_render(conn, mark, min(top, (mark or 0) + _STEP_ROWS))
        return True

    # -- reading --------------------------------------------------------------------------------

    def _context_joined(self, session_id: int, from_seq: int) -> tuple[bool, list[str]] | None:
        """:meth:`_joined`, its sqlite3 errors translated (a locked file is StoreBusyError)."""
        with translate(self.path):
            return self._joined(session_id, from_seq)

    def _joined(self, session_id: int, from_seq: int) -> tuple[bool, list[str]] | None:
        """Whether the session has events from `from_seq` on, and their blocks as the texts of their
        groups, which joined by newlines as :func:`azsd.context.render_transcript` joins blocks give
        its transcript (less whitespace at the end, which its `trim_end` would take off: no block is
        blank; the caller joins them once, into its prompt), when the groups alone give the context: every
        row rendered, no prompt that may hold injected context, groups in seq order. Else None (see
        :meth:`_rows`)."""
        groups = self._context_groups(session_id, from_seq)
        if groups is None or any(injected for _, _, injected, _, _ in groups):
            return None
        # a group at a time: its frame decompressed and its text decoded, then the texts joined once
        # (no copy of the whole transcript but the join: each big buffer costs its page faults)
        parts: list[str] = []
        decode = self._codec.decode
        for first, _, _, layout, frame in groups:
            try:
                text = decode(frame)
            except CodecError:
                return None
            if first < from_seq:  # the group begins before the range: its blocks from there on
                skip = 0
                values = _LAYOUT.decode(layout)
                for i in range(0, len(values), 3):
                    if values[i] >= from_seq:
                        break
                    skip += values[i + 2] + 1 if values[i + 2] >= 0 else 0
                text = text[skip:]
            if text:
                parts.append(text.decode())
        if parts:
            parts[-1] = parts[-1].rstrip(_ASCII_SPACE)
        return bool(groups), parts

    def _context_groups(
        self, session_id: int, from_seq: int
    ) -> list[tuple[int, int, int, bytes, bytes]] | None:
        """The session's groups `(first_seq, last_seq, injected, layout, text)` that reach `from_seq`,
        in order, when they are all of its rows from there (none above the mark) and do not overlap;
        else None."""
        conn = self._conn
        if conn is None or (self.read_only and not self._has_table("azsd_context")):
            return None
        mark = self._context_hwm(conn)
        if mark is None:
            return None
        top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
        if (
            top > mark
            and conn.execute(  # (rows above the mark that an append rendered are in the groups)
                "SELECT 1 FROM events WHERE id > ? AND +session_id = ? AND seq >= ? AND seq > ? LIMIT 1",
                (mark, session_id, from_seq, self._rendered_upto(conn, session_id)),  # by id: few
            ).fetchone()
        ):
            return None
        groups = conn.execute(
            "SELECT first_seq, last_seq, injected, layout, text FROM azsd_context "
            "WHERE session_id = ? AND last_seq >= ? ORDER BY first_seq",
            (session_id, from_seq),
        ).fetchall()
        if any(groups[i][0] <= groups[i - 1][1] for i in range(1, len(groups))):
            return None
        return groups

    def _context_rows(self, session_id: int, from_seq: int) -> list[Entry] | None:
        """:meth:`_rows`, its sqlite3 errors translated (a locked file is StoreBusyError)."""
        with translate(self.path):
            return self._rows(session_id, from_seq)

    def _rows(self, session_id: int, from_seq: int) -> list[Entry] | None:
        """Every readable row of the session from `from_seq` on as `(seq, strip flag, block)`, in
        order: from the groups, and rendered now from the events above the mark; None for a store
        without the table (a newer schema opened read-only)."""
        conn = self._conn
        if conn is None or (self.read_only and not self._has_table("azsd_context")):
            return None
        mark = self._context_hwm(conn)
        entries: list[Entry] = []
        done = 0  # the highest seq the groups hold (rows above the mark up to it are in them)
        if mark is not None:
            groups = conn.execute(
                "SELECT layout, text FROM azsd_context WHERE session_id = ? AND last_seq >= ?",
                (session_id, from_seq),
            ).fetchall()
            texts = self._codec.decode_many([text for _, text in groups])
            for (layout, _), text in zip(groups, texts, strict=True):
                if isinstance(text, CodecError):  # a damaged group: every row from the events
                    log.warning("%s: S%d: a context group cannot be read: %s", self.path, session_id, text)
                    entries, mark = [], None
                    break
                entries += (e for e in _split(_LAYOUT.decode(layout), text) if e[0] >= from_seq)
            done = self._rendered_upto(conn, session_id) if mark is not None else 0
        above = conn.execute(
            "SELECT id, session_id, seq, kind, data FROM events WHERE session_id = ? AND seq >= ? AND id > ? "
            "AND seq > ?",
            (session_id, from_seq, mark or 0, done),
        ).fetchall()
        entries += (entry for _, entry in self._rendered(above))
        entries.sort(key=lambda entry: entry[0])
        return entries


def group_of(entries: Sequence[Entry]) -> tuple[list[int], bytes, int]:
    """A group's layout, text and number of prompts that may hold injected context."""
    layout: list[int] = []
    parts: list[bytes] = []
    for seq, flag, block in entries:
        data = None if block is None else block.encode()
        layout += (seq, flag, -1 if data is None else len(data))
        if data is not None:
            parts.append(data)
    return layout, b"\n".join(parts), sum(flag == USER_MAY_BE_INJECTED for _, flag, _ in entries)


def _split(layout: Sequence[int], text: bytes) -> Iterator[Entry]:
    """A group's rows `(seq, strip flag, block)` from its layout and its text."""
    at = 0
    for i in range(0, len(layout), 3):
        size = layout[i + 2]
        if size < 0:
            yield layout[i], layout[i + 1], None
            continue
        yield layout[i], layout[i + 1], text[at : at + size].decode()
        at += size + 1
