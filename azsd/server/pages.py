"""Pages of events already encoded: a `GetEvents` asked again gets the bytes sent last time.

Editors and terminals read the same pages again and again (a transcript reopened, scrolled back, a
`tail` that starts from the top, several windows on one session). Building a page is mostly Python
work per event (rows, the row cache, the wire values, the encoding), several times what sending it
costs; an encoded page is only copied out, with no transaction (:meth:`PageCache.peek`).

Each page is kept with the store's :meth:`~azsd.store.core.StoreCore.read_version` as it was before
the page was read: the file's stat, which any commit (ours or another program's) changes, and the
connection. A file changed in the last few ms has no version yet: its pages are read afresh.
Only stores' readers use the cache (a writer may read inside its own uncommitted writes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final

from azsd.ipc import protocol as p
from azsd.server.handlers import get_events
from azsd.server.workers import Outcome, encoded
from azsd.store import Store

__all__ = ["PAGE_CACHE_BYTES", "PageCache"]

#: About how many bytes of encoded pages the daemon keeps, all stores together.
PAGE_CACHE_BYTES: Final = 16 * 1024 * 1024

_Key = tuple[str, int, int, int]  # root, session, from_seq, limit
_Version = tuple[int, ...]  # StoreCore.read_version


class PageCache:
    """Encoded `EventsPage` replies, least recently used dropped first; shared by the socket thread
    (inline reads) and the readers' threads."""

    def __init__(self, budget: int = PAGE_CACHE_BYTES, largest: int | None = None) -> None:
        """Keeps about `budget` bytes, and no page over `largest` (an eighth of it unless given:
        one huge page would push out everything else)."""
        self._budget = budget
        self._largest = budget // 8 if largest is None else largest
        self._pages: OrderedDict[_Key, tuple[_Version, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def peek(self, store: Store, req: p.GetEvents) -> Outcome | None:
        """The page encoded before, if the store is as it was when it was read (see the module);
        else None. Needs no transaction: call it right after the store's `check_file`."""
        version = store.read_version() if store.reader else None
        if version is None:
            return None
        key = _key(req)
        with self._lock:
            found = self._pages.get(key)
            if found is None or found[0] != version:
                return None
            self._pages.move_to_end(key)
        return Outcome(found[1])

    def answer(self, store: Store, req: p.GetEvents) -> Outcome:
        """Read the page (:func:`~azsd.server.handlers.get_events`), and keep it encoded under the
        version of the file `check_file` saw before the read."""
        version = store.read_version() if store.reader else None
        outcome = get_events(store, req)
        if version is None:
            return outcome
        payload = encoded(outcome.reply)
        self._put(_key(req), version, payload)
        return Outcome(payload, outcome.notes)

    @property
    def size(self) -> int:
        """Bytes of pages kept."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._pages)

    def _put(self, key: _Key, version: _Version, payload: bytes) -> None:
        if len(payload) > self._largest:
            return
        with self._lock:
            old = self._pages.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._pages[key] = (version, payload)
            self._bytes += len(payload)
            while self._bytes > self._budget:
                self._bytes -= len(self._pages.popitem(last=False)[1][1])


def _key(req: p.GetEvents) -> _Key:
    return (req.root, req.session, req.from_seq, req.limit)
