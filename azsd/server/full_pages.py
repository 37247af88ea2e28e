"""Pages of a session's full record (`GetEvents` with `full`): what the agent wrote, parsed again
uncompacted (:func:`azsd.ingest.full_record.full_events`), as wire events numbered by their place."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final

import msgspec

from azsd.events import encode_event, event_kind
from azsd.ingest.full_record import FullEvents, full_events
from azsd.ipc import protocol as p
from azsd.store import Store

__all__ = ["full_page"]


#: Sessions' full records parsed, kept while their store file is unchanged (reading one page after
#: another parses it once), the most recent few.
_PARSED: OrderedDict[tuple[str, int, tuple[int, ...]], FullEvents] = OrderedDict()
_PARSED_MOST: Final = 4
_LOCK = threading.Lock()


def full_page(store: Store, session_id: int, from_seq: int, limit: int) -> p.EventsPage:
    """The events `from_seq` to `from_seq + limit - 1` of the session's full record (1 is the first)."""
    found = _parsed(store, session_id)
    first = from_seq - 1
    chosen = range(first, min(first + limit, len(found.events)))
    events = [
        p.WireEvent(
            seq=i + 1,
            kind=event_kind(found.events[i]),
            data=encode_event(found.events[i]).decode(),
            subagent=found.lanes[i] or msgspec.UNSET,
            at=found.times[i] or msgspec.UNSET,
        )
        for i in chosen
    ]
    more = first + limit < len(found.events)
    return p.EventsPage(
        events=events, next_seq=from_seq + limit if more else None, skipped=found.unreadable, full=True
    )


def _parsed(store: Store, session_id: int) -> FullEvents:
    version = store.read_version() if store.reader else None
    if version is None:
        return full_events(store, session_id)
    key = (str(store.path), session_id, version)
    with _LOCK:
        if key in _PARSED:
            _PARSED.move_to_end(key)
            return _PARSED[key]
    found = full_events(store, session_id)
    with _LOCK:
        _PARSED[key] = found
        while len(_PARSED) > _PARSED_MOST:
            _PARSED.popitem(last=False)
    return found
