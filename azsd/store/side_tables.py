"""What the store keeps beside the events: token usage, imports, followed files, compactions, context.

:class:`SideTables` owns azsd's side tables ``azsd_usage`` (per-turn usage, replaced never added),
``azsd_imports`` (which agent history went into which session), ``azsd_follows`` (the position
of each followed file), and AZUREAL's ``compactions`` table together with what is built from
it: the compaction boundary and the context of a session (spec §5, §6). A store opened read-only with a
newer schema may lack azsd's tables; the reads here then return nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from azsd.context import ContextPayload, render_event, strip_injected_context_indexed, strip_rendered
from azsd.errors import BadRequestError, StoreError
from azsd.events import Event
from azsd.model import (
    Compaction,
    FollowRecord,
    ImportRecord,
)
from azsd.store.listing import _require_session
from azsd.store.side_rows import IMPORT_UPSERT
from azsd.store.usage import IN_LIST_MAX, UsageTables

__all__ = ["FollowMovedError", "SideTables"]


def _moved(path: str, stored: int | None, expected: int) -> str:
    """Why a follow's stored position is not the one its writer left: said as it happened."""
    if stored is None:
        return f"the follow of {path} is no longer recorded in its store (not at byte {expected})"
    if stored < expected:  # our own commits are not there: the file was put back or rewritten
        return (
            f"the store holds the follow of {path} at byte {stored}, before byte {expected} where it "
            "last stored it: the store file was replaced or rolled back under the daemon (another "
            "program rewrote it, or a backup was put back); reading on from there, nothing is lost"
        )
    return f"the follow of {path} is stored at byte {stored}, not at byte {expected}: another writer moved it"


class FollowMovedError(StoreError):
    """A follow's stored offset is not the one its follower read from (a compare-and-swap of
    :meth:`SideTables.save_follow` failed): another writer stored those lines. Nothing was written."""


class SideTables(UsageTables):
    """Usage (:class:`~azsd.store.usage.UsageTables`), imports, follows, compactions and context building."""

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
                IMPORT_UPSERT, (record.source, record.session_id, record.agent, record.size, record.last_seq)
            )

    # -- followed files (side table azsd_follows) -----------------------------------------------

    def save_follow(self, record: FollowRecord, *, expect_offset: int | None = None) -> None:
        """Insert or update a follow's position (call inside the transaction that stored its events).

        With `expect_offset` (compare-and-swap), the row is updated only while its stored offset is
        still that one; otherwise :class:`FollowMovedError` is raised, and the enclosing transaction
        (with the events read from that offset) must roll back: another writer stored them.
        """
        values = (
            record.format,
            record.offset,
            record.inode,
            record.lines,
            record.skipped,
            int(record.active),
            record.writer_pid,
            record.ended,
            record.model,
            int(record.idle),
            record.usage_from,
        )
        with self.atomic() as conn:
            _require_session(conn, record.session_id)
            if expect_offset is not None:
                cursor = conn.execute(
                    "UPDATE azsd_follows SET format = ?, offset = ?, inode = ?, lines = ?, skipped = ?, "
                    "active = ?, writer_pid = ?, ended = ?, model = ?, idle = ?, usage_from = ?, "
                    "last_activity = datetime('now') "
                    "WHERE session_id = ? AND path = ? AND offset = ?",
                    (*values, record.session_id, record.path, expect_offset),
                )
                if cursor.rowcount != 1:
                    row = conn.execute(
                        "SELECT offset FROM azsd_follows WHERE session_id = ? AND path = ?",
                        (record.session_id, record.path),
                    ).fetchone()
                    stored = None if row is None else int(row[0])
                    raise FollowMovedError(_moved(record.path, stored, expect_offset))
                return
            conn.execute(
                "INSERT INTO azsd_follows (session_id, path, format, offset, inode, lines, skipped, active, "
                "writer_pid, ended, model, idle, usage_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, path) DO UPDATE SET format = excluded.format, "
                "offset = excluded.offset, inode = excluded.inode, lines = excluded.lines, "
                "skipped = excluded.skipped, active = excluded.active, writer_pid = excluded.writer_pid, "
                "ended = excluded.ended, model = excluded.model, idle = excluded.idle, "
                "usage_from = excluded.usage_from, "
                "last_activity = datetime('now')",
                (record.session_id, record.path, *values),
            )

    def end_follow(self, session_id: int, path: str, ended: str) -> bool:
        """Mark a follow ended, its position left as stored; False when it has no row."""
        with self.atomic() as conn:
            cursor = conn.execute(
                "UPDATE azsd_follows SET active = 0, ended = ?, last_activity = datetime('now') "
                "WHERE session_id = ? AND path = ?",
                (ended, session_id, path),
            )
            return cursor.rowcount == 1

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
            f"started, last_activity, ended, model, {self._follows_idle()}, {self._follows_usage_from()} "
            "FROM azsd_follows "
            f"WHERE {where} ORDER BY started, path",
            params,
        )
        return [
            FollowRecord(
                session_id=r[0], path=r[1], format=r[2], offset=r[3], inode=r[4], lines=r[5], skipped=r[6],
                active=bool(r[7]), writer_pid=r[8], started=r[9], last_activity=r[10], ended=r[11],
                model=r[12], idle=bool(r[13]), usage_from=r[14],
            )
            for r in rows
        ]  # fmt: skip

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
        return self.chars_between(session_id, self.first_seq_since_compaction(session_id))

    def chars_between(self, session_id: int, from_seq: int, to_seq: int | None = None) -> int:
        """The stored `char_len` of the rows with `from_seq <= seq <= to_seq` (§6 counts stored bytes)."""
        last = to_seq if to_seq is not None else 2**63 - 1
        return int(
            self._scalar(
                "SELECT SUM(char_len) FROM events WHERE session_id = ? AND seq >= ? AND seq <= ?",
                (session_id, from_seq, last),
                0,
            )
        )

    def context_chars(self, session_ids: Sequence[int]) -> dict[int, int]:
        """:meth:`total_chars_since_compaction` of many sessions in one query (0 for none stored)."""
        found: dict[int, int] = dict.fromkeys(session_ids, 0)
        for start in range(0, len(session_ids), IN_LIST_MAX):
            ids = session_ids[start : start + IN_LIST_MAX]
            marks = ", ".join("?" * len(ids))
            rows = self._query(
                "SELECT e.session_id, SUM(e.char_len) FROM events AS e "
                "LEFT JOIN (SELECT session_id, MAX(after_seq) AS after_seq FROM compactions "
                f"WHERE session_id IN ({marks}) GROUP BY session_id) AS c ON c.session_id = e.session_id "
                f"WHERE e.session_id IN ({marks}) AND e.seq > COALESCE(c.after_seq, 0) GROUP BY e.session_id",
                (*ids, *ids),
            )
            found.update((int(sid), int(total)) for sid, total in rows)
        return found

    def compaction_boundary(self, session_id: int, from_seq: int, keep: int) -> int | None:
        """The seq to compact through so that the newest `keep` prompts stay raw, or None."""
        if keep < 1:
            raise BadRequestError(f"keep must be at least 1, got {keep}")
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

    def rendered_context(self, session_id: int) -> ContextPayload | None:
        """:meth:`build_context`, read from the rendered blocks (:mod:`azsd.store.rendered`): the same
        prompt byte for byte, with `rendered` alone given (`events` left empty). Rows not rendered yet,
        and runs of prompts that may hold injected context, are taken from the events."""
        latest = self.latest_compaction(session_id)
        summary = latest.summary if latest else None
        from_seq = latest.after_seq + 1 if latest else 1
        joined = self._context_joined(session_id, from_seq)
        if joined is not None:  # the usual case: the blocks, joined, are the transcript
            events, texts = joined
            if not events and latest is None:
                return None
            return ContextPayload(summary, (), texts if texts else [None] if events else [])
        blocks = self._context_rows(session_id, from_seq)
        if blocks is None:  # no such table (a newer schema, read-only)
            return self.build_context(session_id)

        def load(first: int, last: int) -> list[Event]:
            return self._load(session_id, first, last, -1)[1]

        rendered = strip_rendered(blocks, load)
        if not rendered and latest is None:
            return None
        return ContextPayload(summary, (), rendered)
