"""Request keys on disk: the side table ``azsd_requests`` (see :mod:`azsd.server.idempotency`).

:class:`RequestLog` keeps, per key, a digest of the request and what its retry is answered from (the
reply as the server packed it: compressed, or only the identifiers of what it returned, which
:meth:`RequestLog.stored_events` reads back). Keys leave by age (:data:`RETENTION_S`: a bounded
number per new key, the rest from the store's upkeep, :meth:`RequestLog.forget_requests`) and by
size: the table never holds more than the `max_bytes` given, the oldest keys leaving first, so it
cannot grow with what requests carry.
"""

from __future__ import annotations

from typing import Final

from azsd.events import encode_event, event_kind
from azsd.store.events import EventLog

__all__ = ["RETENTION_S", "RequestLog"]

#: How long a store remembers a request's key.
RETENTION_S: Final = 600.0
#: The most expired keys one upkeep forgets (bounded work between requests).
_FORGET_BATCH: Final = 256


class RequestLog(EventLog):
    """The keys of recent requests that changed the store."""

    def remembered_request(self, key: str, since: float) -> tuple[bytes, bytes] | None:
        """The digest and the packed reply of the request `key` was given to, if that request
        committed at `since` (a Unix time) or later; None for a key this store does not remember."""
        if self.read_only and not self._has_table("azsd_requests"):  # a newer schema may lack it
            return None
        rows = self._query(
            "SELECT digest, reply FROM azsd_requests WHERE key = ? AND created >= ?", (key, since)
        )
        return (bytes(rows[0][0]), bytes(rows[0][1])) if rows else None

    def remember_request(
        self,
        key: str,
        digest: bytes,
        reply: bytes,
        now: float,
        *,
        forget_before: float,
        prune: int,
        max_bytes: int,
    ) -> None:
        """Remember that the request given `key` committed with `reply` (call inside the transaction
        that made its writes); forget at most `prune` keys remembered before `forget_before`, and the
        oldest others while the replies kept pass `max_bytes`."""
        with self.atomic() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO azsd_requests (key, digest, reply, created) VALUES (?, ?, ?, ?)",
                (key, digest, reply, now),
            )
            conn.execute(
                "DELETE FROM azsd_requests WHERE rowid IN "
                "(SELECT rowid FROM azsd_requests WHERE created < ? ORDER BY created LIMIT ?)",
                (forget_before, prune),
            )
            total = conn.execute("SELECT TOTAL(length(reply) + length(digest)) FROM azsd_requests").fetchone()
            if total[0] <= max_bytes:
                return
            kept, over = 0, []
            for rowid, size, other in conn.execute(
                "SELECT rowid, length(reply) + length(digest), key != ? FROM azsd_requests "
                "ORDER BY created DESC",
                (key,),
            ):
                kept += size
                if kept > max_bytes and other:
                    over.append((rowid,))
            conn.executemany("DELETE FROM azsd_requests WHERE rowid = ?", over)

    def forget_requests(self, now: float) -> bool:
        """Forget some keys older than :data:`RETENTION_S` (a read finds none: no write); whether
        more remain."""
        conn = self._conn
        if conn is None or self.read_only or self.reader or conn.in_transaction:
            return False
        before = now - RETENTION_S
        if not self._query("SELECT 1 FROM azsd_requests WHERE created < ? LIMIT 1", (before,)):
            return False
        with self.atomic() as write:
            forgotten = write.execute(
                "DELETE FROM azsd_requests WHERE rowid IN "
                "(SELECT rowid FROM azsd_requests WHERE created < ? ORDER BY created LIMIT ?)",
                (before, _FORGET_BATCH),
            ).rowcount
        return bool(forgotten == _FORGET_BATCH)

    def stored_events(self, session_id: int, seqs: list[int]) -> dict[int, tuple[str, str]]:
        """The events of `session_id` at `seqs` as stored (kind and JSON, no context stripped): what
        an append's reply held; a seq whose row is gone or unreadable is left out."""
        if not seqs:
            return {}
        first, last = min(seqs), max(seqs)
        found, events, _rows, _skipped = self._load(session_id, first, last, last - first + 1)
        wanted = set(seqs)
        return {
            seq: (event_kind(event), encode_event(event).decode())
            for seq, event in zip(found, events, strict=True)
            if seq in wanted
        }
