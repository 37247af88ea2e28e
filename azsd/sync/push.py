"""One push of one store: the rows its file gained since the database's cursor, in one transaction.

A push runs inside a Postgres transaction that first locks the store's row in ``azsd.stores``
(``FOR UPDATE``) and reads its cursors there; the local rows after them are read from one SQLite
snapshot; then sessions that changed are upserted, the events are copied in (``COPY`` into a
temporary table, then ``INSERT … ON CONFLICT (session_uuid, seq) DO NOTHING``), compactions and
tombstones follow, and the cursors move, all in the same commit.

A deleted session is found by difference: the database's live sessions of the store (read once per
connection, then kept as pushed) that the file no longer has, whoever deleted them (azsd or AZUREAL).
The session list is read without its counts (:meth:`~azsd.store.sync_state.SyncState.sync_session_rows`,
no scan of `events`): the database counts what it inserts. So a crash, a kill -9 or a lost
connection at any point leaves the database either before the batch or after it, never between;
and a batch pushed twice (after a commit whose answer was lost) inserts nothing twice.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import psycopg

from azsd.errors import NewIncarnation
from azsd.events import EventDecodeError, decode_event, encode_event
from azsd.model import UsageRow
from azsd.redact import may_hold_secret, redact_event, redact_text
from azsd.search import search_text
from azsd.store.codec import CodecError, RowCodec
from azsd.store.sync_state import SyncEvent, SyncSession, event_digest

if TYPE_CHECKING:
    from azsd.store import Store

__all__ = ["BATCH", "BODY_MAX", "PushResult", "StorePush", "prepare_connection"]

log = logging.getLogger("azsd.sync.push")

#: The most events one push transaction carries (a catch-up is many of these).
BATCH: Final = 10_000
#: The most characters of an event's text the search index gets (a tsvector is at most 1 MB).
BODY_MAX: Final = 100_000

_STAGING: Final = (
    "CREATE TEMP TABLE IF NOT EXISTS azsd_staging (session_uuid uuid, seq integer, kind text, "
    "data bytea, char_len integer, local_id bigint, body text) ON COMMIT DELETE ROWS"
)
_SESSION_COLUMNS: Final = (
    "session_uuid, store_uuid, identity, repository, local_id, name, worktree, created, state, completed, "
    "duration_ms, cost_usd, archived, parent_uuid, fork_seq, pulled_from, usage_input, usage_output, "
    "usage_cache_read, usage_cache_write, usage_reasoning, usage_cost_usd, usage_turns, cost_source"
)
_UPSERT_SESSION: Final = (  # a new row: `updated` is the session's own last time (see _seen)
    f"INSERT INTO azsd.sessions ({_SESSION_COLUMNS}, updated) "
    f"VALUES ({', '.join(['%s'] * 24)}, COALESCE(%s::timestamptz, now())) "
    "ON CONFLICT (session_uuid) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _SESSION_COLUMNS.split(", ")[1:])
    + ", updated = CASE WHEN ("
    + ", ".join(f"azsd.sessions.{c}" for c in _SESSION_COLUMNS.split(", ")[1:])
    + ") IS DISTINCT FROM ("
    + ", ".join(f"excluded.{c}" for c in _SESSION_COLUMNS.split(", ")[1:])
    + ") THEN now() ELSE azsd.sessions.updated END"  # (a row sent again after a reconnect: as it was)
)


_USAGE_COLUMNS: Final = (
    "session_uuid, source, model, slot, repository, first_at, last_at, input, output, cache_read, "
    "cache_write, reasoning, cost_usd, estimated"
)


def _seen(session: SyncSession, usage: list[UsageRow]) -> str | None:
    """When a session pushed for the first time was last active, as far as its store says: its last
    turn with usage, else its creation (so that a whole store pushed at once, when sync is turned on
    or a file is a new incarnation, lists by its own times, not all at the time of the push)."""
    times = [u.last for u in usage if u.session_id == session.id and u.last]
    try:
        created = datetime.fromisoformat(session.created.strip().replace(" ", "T"))
        times.append((created if created.tzinfo else created.replace(tzinfo=UTC)).timestamp())
    except ValueError:
        pass
    return datetime.fromtimestamp(max(times), UTC).isoformat() if times else None


def prepare_connection(conn: psycopg.Connection[Any]) -> None:
    """What a pushing connection needs once: its staging table (temporary, emptied at each commit)."""
    conn.execute(_STAGING)


def _clean(text: str) -> str:
    """Text Postgres can hold (it refuses NUL characters)."""
    return text.replace("\x00", "") if "\x00" in text else text


#: The bounds of a usage row the sync database takes (006_hostile_rows.sql): tokens of a kind, a
#: cost in dollars, times in Unix seconds.
MAX_TOKENS: Final = 10**12
MAX_COST_USD: Final = 1e9
MAX_TIME: Final = 32_503_680_000.0


def pushable_usage(row: UsageRow) -> bool:
    """Whether a usage row is within what the sync database takes (a store another program wrote
    may hold anything): one that is not is left out of the push, never failing it."""
    u = row.usage
    counts = (u.input, u.output, u.cache_read, u.cache_write, u.reasoning)
    cost = row.cost_usd
    return (
        all(isinstance(n, int) and 0 <= n <= MAX_TOKENS for n in counts)
        and (cost is None or (math.isfinite(cost) and 0 <= cost < MAX_COST_USD))
        and all(isinstance(t, int | float) and 0 <= t <= MAX_TIME for t in (row.first, row.last))
        and isinstance(row.slot, int)
        and abs(row.slot) <= MAX_TIME
    )


class PushResult(NamedTuple):
    """What a committed push did: events sent, the event cursor now, the tombstones recorded."""

    events: int
    cursor: int
    tombstones: list[str]


@dataclass
class StorePush:
    """What one store's pushes keep between them: the sessions as last pushed (so that only those
    that changed are sent again). Dropped with the connection: a new one starts over, safely."""

    root: str
    identity: str
    sessions: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: The UUIDs of the store's sessions the database holds alive (None: read it in the next push).
    live: set[str] | None = None
    batch: int = BATCH
    codec: RowCodec = field(default_factory=RowCodec)
    #: The pushing file (``machine:inode``): the database binds the store's cursor to it.
    file_id: str = ""
    #: Mask secrets in what is pushed (`sync-redact`); the local store keeps the original.
    redact: bool = True
    #: How many secrets were masked in what the database now holds, per pattern (this connection).
    masked: Counter[str] = field(default_factory=Counter)
    _pending_masks: Counter[str] = field(default_factory=Counter)
    _names: dict[str, str] = field(default_factory=dict)

    def push(
        self, conn: psycopg.Connection[Any], store: Store, store_uuid: str, repository: str
    ) -> PushResult:
        """Push one batch (at most :attr:`batch` events) and commit it."""
        self._pending_masks = Counter()
        with conn.transaction():
            conn.execute(
                "INSERT INTO azsd.stores (store_uuid, identity, repository, root, file_id) "
                "VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (store_uuid) DO UPDATE SET identity = excluded.identity, "
                "repository = excluded.repository, root = excluded.root, updated = now()",
                (store_uuid, self.identity, repository, _clean(self.root), self.file_id or None),
            )
            row = conn.execute(
                "SELECT pushed_event_id, pushed_compaction_id, file_id, cursor_check FROM azsd.stores "
                "WHERE store_uuid = %s FOR UPDATE",
                (store_uuid,),
            ).fetchone()
            assert row is not None
            cursor, ccursor = int(row[0]), int(row[1])
            if self.file_id and row[2] is not None and row[2] != self.file_id:
                raise NewIncarnation(
                    f"{self.root}: the store file is not the one that pushed as {store_uuid} "
                    "(a copy of the worktree, a backup put back, or a file from another machine)"
                )
            if self.live is None:
                self.live = {
                    str(u)
                    for (u,) in conn.execute(
                        "SELECT session_uuid FROM azsd.sessions WHERE store_uuid = %s AND deleted IS NULL",
                        (store_uuid,),
                    )
                }
            with store.snapshot():
                check = self._check_cursor(store, store_uuid, cursor, row[3])
                sessions = store.sync_session_rows()
                events = store.sync_events_after(cursor, self.batch)
                compactions = store.sync_compactions_after(ccursor)
                rows = {s.uuid: self._session_row(s, store_uuid, repository) for s in sessions}
                changed = {k: v for k, v in rows.items() if self.sessions.get(k) != v}
                ids = {s.id: s.uuid for s in sessions if s.uuid in changed}
                usage = store.usage_rows(sorted(ids)) if ids else []
            tombstones = sorted(self.live - rows.keys())
            fresh = {
                s.uuid: _seen(s, usage) for s in sessions if s.uuid in changed and s.uuid not in self.live
            }
            if changed:
                with conn.cursor() as cur:
                    cur.executemany(_UPSERT_SESSION, [(*v, fresh.get(k)) for k, v in changed.items()])
                    self._push_usage(cur, repository, list(changed), usage, ids)
            if events:
                self._copy_events(conn, events)
            if compactions:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO azsd.compactions (store_uuid, local_id, session_uuid, after_seq, "
                        "summary, created) VALUES (%s, %s, %s, %s, %s, %s) "
                        "ON CONFLICT (session_uuid, local_id) DO NOTHING",
                        [
                            (store_uuid, c.id, c.session_uuid, c.after_seq, self._text(c.summary), c.created)
                            for c in compactions
                        ],
                    )
            if tombstones:
                conn.execute(
                    "UPDATE azsd.sessions SET deleted = now(), updated = now() "
                    "WHERE session_uuid = ANY(%s::uuid[]) AND deleted IS NULL",
                    (tombstones,),
                )
                conn.execute("DELETE FROM azsd.events WHERE session_uuid = ANY(%s::uuid[])", (tombstones,))
                conn.execute(
                    "DELETE FROM azsd.compactions WHERE session_uuid = ANY(%s::uuid[])", (tombstones,)
                )
            new_cursor = events[-1].id if events else cursor
            new_ccursor = compactions[-1].id if compactions else ccursor
            if events:
                check = event_digest(events[-1].data)
            if (new_cursor, new_ccursor, check) != (cursor, ccursor, row[3]) or (
                row[2] is None and self.file_id
            ):
                conn.execute(
                    "UPDATE azsd.stores SET pushed_event_id = %s, pushed_compaction_id = %s, "
                    "cursor_check = %s, file_id = COALESCE(file_id, %s), updated = now() "
                    "WHERE store_uuid = %s",
                    (new_cursor, new_ccursor, check, self.file_id or None, store_uuid),
                )
        # committed: what the database now holds
        self.sessions.update(changed)
        self.live = set(rows)
        for gone in tombstones:
            self.sessions.pop(gone, None)
        self.masked += self._pending_masks
        self._pending_masks = Counter()
        return PushResult(len(events), new_cursor, tombstones)

    def push_again(
        self,
        conn: psycopg.Connection[Any],
        store: Store,
        ident: tuple[str, str],
        session_uuid: str,
        upto: int,
    ) -> int:
        """Push a session's rows up to the cursor `upto` again (`azs sync verify`), inserting those the
        database lacks, and bring it back if it was tombstoned while the file still has it; the
        events inserted."""
        store_uuid, repository = ident
        with store.snapshot():
            info = next((s for s in store.sync_session_rows() if s.uuid == session_uuid), None)
            events = store.sync_events_of(session_uuid, upto)
        if info is None:
            return 0
        count = "SELECT COUNT(*) FROM azsd.events WHERE session_uuid = %s"
        with conn.transaction():
            conn.execute(_UPSERT_SESSION, (*self._session_row(info, store_uuid, repository), None))
            before = conn.execute(count, (session_uuid,)).fetchone()
            for at in range(0, len(events), self.batch):
                self._copy_events(conn, events[at : at + self.batch])
            after = conn.execute(count, (session_uuid,)).fetchone()
            conn.execute(  # alive again, and counted from the rows themselves
                "UPDATE azsd.sessions s SET deleted = NULL, event_count = t.events, "
                "message_count = t.messages, char_total = t.chars FROM (SELECT COUNT(*) AS events, "
                "COUNT(*) FILTER (WHERE kind IN ('UserMessage', 'AssistantText')) AS messages, "
                "COALESCE(SUM(char_len), 0) AS chars FROM azsd.events WHERE session_uuid = %(u)s) t "
                "WHERE s.session_uuid = %(u)s",
                {"u": session_uuid},
            )
        self.sessions.pop(session_uuid, None)
        return int(after[0] if after else 0) - int(before[0] if before else 0)

    def _check_cursor(self, store: Store, store_uuid: str, cursor: int, check: str | None) -> str | None:
        """That the file holds what the database's cursor says was pushed from it, else
        :class:`NewIncarnation`: its highest `events.id` at or above the cursor, and the row at the
        cursor (when it was not deleted with its session) the one pushed. The digest to keep."""
        if cursor <= 0:
            return check
        if store.sync_max_event_id() < cursor:
            raise NewIncarnation(
                f"{self.root}: its events.id went back below what was pushed as {store_uuid} "
                f"(#{cursor}): a backup put back?"
            )
        local = store.sync_event_digest(cursor)
        if check is None or local is None:
            return check if local is None else local
        if local != check:
            raise NewIncarnation(
                f"{self.root}: its event #{cursor} is not the one pushed as {store_uuid}: "
                "a backup put back, or a copy written to?"
            )
        return check

    def _push_usage(
        self,
        cur: psycopg.Cursor[Any],
        repository: str,
        changed: list[str],
        usage: list[UsageRow],
        uuids: dict[int, str],
    ) -> None:
        """Replace the usage rows of the sessions whose row changed (their usage may have)."""
        cur.execute("DELETE FROM azsd.usage WHERE session_uuid = ANY(%s::uuid[])", (changed,))
        rows = [u for u in usage if pushable_usage(u)]
        if rows:
            cur.executemany(
                f"INSERT INTO azsd.usage ({_USAGE_COLUMNS}) VALUES ({', '.join(['%s'] * 14)})",
                [
                    (
                        uuids[u.session_id], _clean(u.source), _clean(u.model), u.slot, repository, u.first,
                        u.last, u.usage.input, u.usage.output, u.usage.cache_read, u.usage.cache_write,
                        u.usage.reasoning, u.cost_usd, u.cost_source == "estimated",
                    )
                    for u in rows
                ],
            )  # fmt: skip

    def _copy_events(self, conn: psycopg.Connection[Any], events: list[SyncEvent]) -> None:
        with conn.cursor() as cur:
            with cur.copy(
                "COPY azsd_staging (session_uuid, seq, kind, data, char_len, local_id, body) FROM STDIN"
            ) as copy:
                for e in events:
                    data, body = self._payload(e)
                    copy.write_row((e.session_uuid, e.seq, e.kind, data, e.char_len, e.id, body))
            cur.execute(  # the counts grow by the rows inserted now (none, for a batch sent again)
                "WITH ins AS (INSERT INTO azsd.events "
                "(session_uuid, seq, kind, data, char_len, local_id, body) "
                "SELECT session_uuid, seq, kind, data, char_len, local_id, body FROM azsd_staging "
                "ON CONFLICT (session_uuid, seq) DO NOTHING RETURNING session_uuid, kind, char_len) "
                "UPDATE azsd.sessions s SET char_total = s.char_total + t.n, "
                "event_count = s.event_count + t.events, message_count = s.message_count + t.messages "
                "FROM (SELECT session_uuid, SUM(char_len) AS n, COUNT(*) AS events, "
                "COUNT(*) FILTER (WHERE kind IN ('UserMessage', 'AssistantText')) AS messages "
                "FROM ins GROUP BY session_uuid) t WHERE s.session_uuid = t.session_uuid"
            )
            cur.execute("DELETE FROM azsd_staging")  # (ON COMMIT empties it too; a batch may follow)

    def _payload(self, event: SyncEvent) -> tuple[bytes, str | None]:
        """What is pushed of an event: its bytes (with :attr:`redact`, any secret in it masked and
        the event stored again) and the clean text search sees (as the local index does), or None."""
        try:
            raw = self.codec.decode(event.data)
            decoded = decode_event(raw)
        except (CodecError, EventDecodeError):
            return event.data, None
        data = event.data
        if self.redact and may_hold_secret(raw):
            masked, counts = redact_event(decoded)
            if counts:
                self._pending_masks.update(counts)
                decoded, data = masked, self.codec.encode(encode_event(masked))
        text = search_text(decoded)
        return data, None if text is None else _clean(text[:BODY_MAX])

    def _text(self, text: str) -> str:
        """A text pushed as it is (a name, a summary): cleaned, and with :attr:`redact`, masked."""
        if self.redact:
            text, counts = redact_text(text)
            self._pending_masks.update(counts)
        return _clean(text)

    def _name(self, name: str) -> str:
        """A session's name as pushed (masked with :attr:`redact`, not counted: it is sent again).
        Every push makes every session's row, so names seen before are looked up, not masked again."""
        if not self.redact or not may_hold_secret(name):
            return _clean(name)
        if (masked := self._names.get(name)) is None:
            masked = self._names[name] = _clean(redact_text(name)[0])
        return masked

    def _session_row(self, s: SyncSession, store_uuid: str, repository: str) -> tuple[Any, ...]:
        u = s.usage
        usage = (
            (0, 0, 0, 0, 0, 0.0, 0, "reported")
            if u is None
            else (
                u.usage.input, u.usage.output, u.usage.cache_read, u.usage.cache_write, u.usage.reasoning,
                u.cost_usd, u.turns, u.cost_source,
            )
        )  # fmt: skip
        return (
            s.uuid, store_uuid, self.identity, repository, s.id, self._name(s.name), _clean(s.worktree),
            s.created, s.state, s.completed, s.duration_ms, s.cost_usd, s.archived, s.parent_uuid,
            s.fork_seq, s.pulled_from, *usage,
        )  # fmt: skip
