"""Replies already encoded: a `GetEvents` page or a `ListSessions` listing asked again gets the bytes
sent last time.

Editors and terminals read the same pages again and again (a transcript reopened, scrolled back, a
`tail` that starts from the top, several windows on one session), and list the same sessions on
every refresh. Building either is mostly Python work per row (rows, the row cache, the wire values,
the encoding), several times what sending it costs: a listing of 10 000 sessions is 10 000 views
and 2.5 MB to encode. An encoded reply is only copied out, with no transaction
(:meth:`EncodedReplies.peek`).

Each reply is kept with the store's :meth:`~azsd.store.core.StoreCore.read_version` as it was before
it was read: the file's stat, which any commit (ours or another program's) changes, and the
connection. A file changed in the last few ms has no version yet: its replies are read afresh.
Both are pure functions of the file: a session's `following` state, its usage and its context meter
are all read from it. Only stores' readers use the caches (a writer may read inside its own
uncommitted writes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final, Generic, TypeVar

from azsd.ipc import protocol as p
from azsd.server.handlers import get_events, list_sessions
from azsd.server.views import EncodedViews
from azsd.server.workers import Outcome, encoded
from azsd.store import Store

__all__ = ["LISTING_CACHE_BYTES", "PAGE_CACHE_BYTES", "EncodedReplies", "ListingCache", "PageCache"]

#: About how many bytes of encoded pages the daemon keeps, all stores together.
PAGE_CACHE_BYTES: Final = 16 * 1024 * 1024
#: About how many bytes of encoded listings the daemon keeps, all stores together (a listing of
#: 10 000 sessions is about 2.5 MB).
LISTING_CACHE_BYTES: Final = 16 * 1024 * 1024

_Version = tuple[int, ...]  # StoreCore.read_version
R = TypeVar("R", p.GetEvents, p.ListSessions)


class EncodedReplies(Generic[R]):
    """Encoded replies to one kind of read, by request (each names its store's root), least recently
    used dropped first; shared by the socket thread (inline reads) and the readers' threads."""

    def __init__(self, budget: int, largest: int) -> None:
        """Keeps about `budget` bytes, and no reply over `largest` (one huge reply would push out
        everything else)."""
        self._budget = budget
        self._largest = largest
        self._replies: OrderedDict[R, tuple[_Version, Outcome, int]] = OrderedDict()  # (…, its cost)
        self._bytes = 0  # the replies' bytes and their requests' (a filter may be long)
        self._lock = threading.Lock()

    def peek(self, store: Store, req: R) -> Outcome | None:
        """The reply encoded before, if the store is as it was when it was read (see the module);
        else None. Needs no transaction: call it right after the store's `check_file`."""
        version = store.read_version() if store.reader else None
        if version is None:
            return None
        with self._lock:
            found = self._replies.get(req)
            if found is None or found[0] != version:
                return None
            self._replies.move_to_end(req)
        return found[1]  # (the same Outcome each time: nobody changes one)

    def answer(self, store: Store, req: R) -> Outcome:
        """Read the reply (:meth:`read`), and keep it encoded under the version of the file
        `check_file` saw before the read."""
        version = store.read_version() if store.reader else None
        outcome = self.read(store, req)
        if version is None:
            return outcome
        payload = encoded(outcome.reply)
        self._put(req, version, payload)
        return Outcome(payload, outcome.notes)

    def read(self, store: Store, req: R) -> Outcome:
        """The reply read from the store (in a transaction)."""
        raise NotImplementedError

    @property
    def size(self) -> int:
        """Bytes of replies kept, with their requests'."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._replies)

    def _put(self, req: R, version: _Version, payload: bytes) -> None:
        cost = len(payload) + len(p.encode(req))  # the request is kept too, as the key
        if cost > self._largest:
            return
        with self._lock:
            old = self._replies.pop(req, None)
            if old is not None:
                self._bytes -= old[2]
            self._replies[req] = (version, Outcome(payload), cost)
            self._bytes += cost
            while self._bytes > self._budget:
                self._bytes -= self._replies.popitem(last=False)[1][2]


class PageCache(EncodedReplies[p.GetEvents]):
    """Encoded `EventsPage` replies (:func:`~azsd.server.handlers.get_events`)."""

    def __init__(self, budget: int = PAGE_CACHE_BYTES, largest: int | None = None) -> None:
        """No page over `largest`: an eighth of the budget unless given."""
        super().__init__(budget, budget // 8 if largest is None else largest)

    def read(self, store: Store, req: p.GetEvents) -> Outcome:
        return get_events(store, req)


class ListingCache(EncodedReplies[p.ListSessions]):
    """Encoded `SessionsReply` listings (:func:`~azsd.server.handlers.list_sessions`); one read
    again after a change re-encodes only the sessions that changed (:class:`EncodedViews`)."""

    def __init__(self, budget: int = LISTING_CACHE_BYTES, largest: int | None = None) -> None:
        """No listing over `largest`: half the budget unless given."""
        super().__init__(budget, budget // 2 if largest is None else largest)
        self.views = EncodedViews()

    def read(self, store: Store, req: p.ListSessions) -> Outcome:
        return list_sessions(store, req, self.views)
