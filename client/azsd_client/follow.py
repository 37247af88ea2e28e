"""Follow one session live: its stored events, then each new one as the daemon stores it.

Notifications travel on PUB/SUB, which drops messages for a subscriber that is slow or not yet
connected. So :func:`follow_session` subscribes *before* it reads what is stored, keeps the next seq
it expects, and re-reads with `GetEvents` whenever something could have been missed: a notification
whose first event is past that seq (a gap), shortly after it starts (the subscription may not have
reached the daemon when the first read ran), and after a quiet spell (the last notification may have
been the one dropped). Events are yielded once each, in seq order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, TypeAlias

from azsd.errors import DaemonUnavailable
from azsd.ipc.protocol import EventsAppended, SessionChanged, WireEvent

from ._shared import RootLike
from .client import Client

__all__ = ["FollowItem", "follow_session"]

#: What a follower yields: stored events, and the session's renames, completions and deletion.
FollowItem: TypeAlias = WireEvent | SessionChanged

#: The first re-read after subscribing: by then the subscription has reached the daemon.
_SETTLE_S: Final = 0.3


@dataclass
class _Cursor:
    next_seq: int


def follow_session(
    client: Client,
    root: RootLike,
    session: int,
    *,
    from_seq: int = 1,
    follow: bool = True,
    idle_check_s: float = 5.0,
) -> Iterator[FollowItem]:
    """Yield the session's events from `from_seq` on, then (with `follow`) live ones, until deleted.

    A `SessionChanged` is yielded for each rename, completion and the deletion, which ends the
    iteration. While following, a daemon that stops answering is waited for (re-reads retry every
    `idle_check_s`); any other error ends the iteration by raising.
    """
    subscription = client.subscribe(root, session) if follow else None
    try:
        cursor = _Cursor(from_seq)
        yield from _read(client, root, session, cursor)
        if subscription is None:
            return
        check_at = time.monotonic() + _SETTLE_S  # re-read if nothing arrives by then
        while True:
            note = subscription.recv(timeout=max(0.0, check_at - time.monotonic()))
            check_at = time.monotonic() + idle_check_s
            if note is None:
                yield from _read_quietly(client, root, session, cursor)
            elif isinstance(note, EventsAppended):
                yield from _appended(client, root, session, cursor, note)
            elif isinstance(note, SessionChanged):
                yield note
                if note.change == "deleted":
                    return
    finally:
        if subscription is not None:
            subscription.close()


def _appended(
    client: Client, root: RootLike, session: int, cursor: _Cursor, note: EventsAppended
) -> Iterator[WireEvent]:
    if note.events and note.events[0].seq > cursor.next_seq:
        yield from _read(client, root, session, cursor)  # a gap: what was missed is stored, read it all
        return
    for event in note.events:
        if event.seq >= cursor.next_seq:
            cursor.next_seq = event.seq + 1
            yield event


def _read(client: Client, root: RootLike, session: int, cursor: _Cursor) -> Iterator[WireEvent]:
    for event in client.get_events(root, session, from_seq=cursor.next_seq):
        if event.seq >= cursor.next_seq:
            cursor.next_seq = event.seq + 1
            yield event


def _read_quietly(client: Client, root: RootLike, session: int, cursor: _Cursor) -> Iterator[WireEvent]:
    try:
        yield from _read(client, root, session, cursor)
    except DaemonUnavailable:
        pass  # stopped or restarting: try again after the next quiet spell
