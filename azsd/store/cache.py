"""What a long-running Store keeps in memory so that reads do not redo work: pure data, no SQL.

- :class:`RowCache`: decoded `events.data` values by their stored bytes. The bytes of a row decide
  its JSON, its event and its wire text, so an entry never goes stale, whatever writes the file,
  and every Store of the process shares one cache (bounded, least recently used out first).
- :class:`SessionIndex`: one store's session list with each session's counts and latest event id,
  kept up to date by the Store's own writes and rebuilt from SQL when another connection (AZUREAL)
  committed or anything the Store cannot account for happened.

>>> cache = RowCache(budget=1 << 20)
>>> row = CachedRow(b"frame", b'"Compacted"')
>>> cache.put_many([row]); cache.get_many([b"frame", b"other"])[0] is row
True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from azsd.events import Event
from azsd.model import Archived, SessionInfo

__all__ = ["FRESH_SHARE", "ROWS", "ROW_CACHE_BYTES", "CachedRow", "RowCache", "SessionIndex"]

#: About how many bytes of decoded rows the process keeps (estimated, see `CachedRow.cost`).
ROW_CACHE_BYTES: Final = 24 * 1024 * 1024
#: Rows appended and not read yet take at most this share of the budget (1/FRESH_SHARE).
FRESH_SHARE: Final = 8
#: Python's overhead per cached row (key object, entry, node, the row itself), estimated.
_ROW_OVERHEAD: Final = 440


class CachedRow:
    """One stored payload, decoded as far as anyone needed: its JSON, its event, its wire text,
    its block of a context transcript. Each is filled in on first use."""

    __slots__ = ("cost", "event", "json", "key", "rendered", "rendered_known", "wire")

    def __init__(self, key: bytes | str, json: bytes, event: Event | None = None) -> None:
        """`event`, when given, is the one `json` is `encode_event` of (an append's): its wire text
        is then `json` itself. Once the event is known, the JSON is not kept (`json` is empty)."""
        self.key = key
        self.event: Event | None = event
        self.json = json if event is None else b""
        self.wire: str | None = None if event is None else json.decode()  # `encode_event(event)` as text
        self.rendered: str | None = None  # `render_event(event)` (None is a value: not shown)
        self.rendered_known = False
        # the event, the wire text and the rendered block each hold about as much as the JSON
        self.cost = len(key) + 4 * len(json) + _ROW_OVERHEAD

    def decoded(self, event: Event) -> None:
        """The row's event, decoded from its JSON, which the row no longer needs (the event is set
        first: a reader that finds the JSON gone finds the event)."""
        self.event = event
        self.json = b""


class RowCache:
    """Decoded rows by their stored payload, bounded to about `budget` bytes. Thread-safe.

    Rows an append puts in (:meth:`put_many` with `fresh=True`) wait apart, in at most
    `budget // FRESH_SHARE` bytes, until a read takes them: a follow of a big file appends far more
    rows than anyone reads, and they would otherwise push out every row that was read (and hold the
    whole budget with rows never read). The first read of a fresh row makes it an ordinary one.
    """

    def __init__(self, budget: int = ROW_CACHE_BYTES) -> None:
        self.budget = budget
        self.fresh_budget = budget // FRESH_SHARE
        self._rows: OrderedDict[bytes | str, CachedRow] = OrderedDict()
        self._fresh: OrderedDict[bytes | str, CachedRow] = OrderedDict()
        self._size = 0
        self._fresh_size = 0
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[bytes | str]) -> list[CachedRow | None]:
        """The cached row of each payload (None where there is none), now the most recently used."""
        with self._lock:
            rows, fresh = self._rows, self._fresh
            found = [rows.get(key) for key in keys]
            touch = rows.move_to_end
            taken = False
            for i, row in enumerate(found):
                if row is None and fresh:
                    row = fresh.pop(keys[i], None)
                    if row is None:
                        row = rows.get(keys[i])  # (or taken just now: a key asked for twice)
                    else:  # read at last: an ordinary row now
                        rows[row.key] = row
                        self._fresh_size -= row.cost
                        self._size += row.cost
                        taken = True
                    found[i] = row
                if row is not None:
                    touch(row.key)
            if taken:
                self._evict()
            return found

    def put_many(self, rows: Iterable[CachedRow], *, fresh: bool = False) -> None:
        """Remember rows (decoded or not yet), forgetting the least recently used past the budget;
        `fresh`: rows just appended, which no one has read yet (see the class)."""
        with self._lock:
            cached, waiting = self._rows, self._fresh
            into, most = (waiting, self.fresh_budget) if fresh else (cached, self.budget)
            for row in rows:
                if row.cost > most or row.key in cached or row.key in waiting:
                    continue
                into[row.key] = row
                if fresh:
                    self._fresh_size += row.cost
                else:
                    self._size += row.cost
            self._evict()

    def _evict(self) -> None:
        """Forget the oldest fresh rows past their share, then the least recently used rows past the
        budget (under the lock)."""
        while self._fresh_size > self.fresh_budget:
            _, old = self._fresh.popitem(last=False)
            self._fresh_size -= old.cost
        while self._size + self._fresh_size > self.budget and self._rows:
            _, old = self._rows.popitem(last=False)
            self._size -= old.cost

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self._fresh.clear()
            self._size = self._fresh_size = 0

    @property
    def size(self) -> int:
        """Estimated bytes held."""
        return self._size + self._fresh_size

    def __len__(self) -> int:
        return len(self._rows) + len(self._fresh)


#: The process's row cache, shared by every Store.
ROWS: Final = RowCache()


class SessionIndex:
    """Every session of one store as `list_sessions` returns them, with each one's latest event id.

    The Store builds it from SQL, applies its own writes to it (:meth:`upsert`, :meth:`add_events`,
    :meth:`drop`) and throws it away when it cannot account for a change (another connection
    committed, a transaction rolled back).
    """

    def __init__(
        self,
        data_version: int,
        infos: dict[int, SessionInfo],
        last_ids: dict[int, int],
        archived: Iterable[int] | None = None,
    ) -> None:
        """`infos` and each one's latest event id (0: none), by session id (taken, not copied: the
        builder hands them over); `archived`, when the builder knows them, the ids of those archived
        (else they are looked for among `infos`)."""
        self.data_version = data_version
        #: The file change counter it was read at (None: not known), see azsd.store.changes.
        self.counter: int | None = None
        self._infos = infos
        self._last_ids = last_ids
        self._archived: set[int] = (
            {sid for sid, info in infos.items() if info.archived}
            if archived is None
            else {sid for sid in archived if sid in infos}
        )
        self._order: list[int] | None = None

    def get(self, session_id: int) -> SessionInfo | None:
        return self._infos.get(session_id)

    def last_id(self, session_id: int) -> int:
        """The id of the session's latest event row (0: none)."""
        return self._last_ids.get(session_id, 0)

    def upsert(self, info: SessionInfo, last_id: int) -> None:
        """A session as it now is (its row re-read, or just created)."""
        self._infos[info.id] = info
        if info.archived:
            self._archived.add(info.id)
        else:
            self._archived.discard(info.id)
        if self._last_ids.get(info.id) != last_id:
            self._last_ids[info.id] = last_id
            self._order = None

    def add_events(self, session_id: int, count: int, messages: int, last_id: int) -> None:
        """`count` events (`messages` of them prompts or replies) were appended, the last as `last_id`."""
        info = self._infos.get(session_id)
        if info is None or count == 0:
            return
        self._infos[session_id] = msgspec.structs.replace(
            info, event_count=info.event_count + count, message_count=info.message_count + messages
        )
        self._last_ids[session_id] = last_id
        self._order = None

    def drop(self, session_id: int) -> None:
        if self._infos.pop(session_id, None) is not None:
            del self._last_ids[session_id]
            self._archived.discard(session_id)
            self._order = None

    def _ordered(self) -> list[int]:
        """Session ids, latest activity first, then those without events, newest first (spec §7)."""
        if self._order is None:
            last = self._last_ids
            # by latest event id, ties by id, both descending: a stable sort by the first of ids
            # already in descending order (no key function made in Python)
            self._order = sorted(sorted(last, reverse=True), key=last.__getitem__, reverse=True)
        return self._order

    def page(
        self, worktree: str | None, limit: int, offset: int, archived: Archived = "include"
    ) -> list[SessionInfo]:
        """As `SELECT … WHERE worktree … ORDER BY … LIMIT limit OFFSET offset` (limit < 0: all)."""
        infos = self._infos
        ids = self._ordered()
        if worktree is None and (archived == "include" or (archived == "exclude" and not self._archived)):
            chosen = ids[offset:] if limit < 0 else ids[offset : offset + limit]
            return list(map(infos.__getitem__, chosen))
        matching = [info for info in map(infos.__getitem__, ids) if _wanted(info, worktree, archived)]
        return matching[offset:] if limit < 0 else matching[offset : offset + limit]

    def count(self, worktree: str | None, archived: Archived = "include") -> int:
        if worktree is None:
            everything, hidden = len(self._infos), len(self._archived)
            return {"include": everything, "exclude": everything - hidden, "only": hidden}[archived]
        return sum(1 for info in self._infos.values() if _wanted(info, worktree, archived))


def _wanted(info: SessionInfo, worktree: str | None, archived: Archived) -> bool:
    if worktree is not None and info.worktree != worktree:
        return False
    return archived == "include" or info.archived == (archived == "only")
