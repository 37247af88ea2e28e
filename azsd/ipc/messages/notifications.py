"""What the daemon publishes on its PUB socket: a store's notifications, on the topic of the session
they are about (see :func:`topic`), and the sync notification `SyncCaughtUp` on :data:`SYNC_TOPIC`.

>>> topic("/src/app", 3)
b'/src/app\\x003\\x00'
"""

from __future__ import annotations

from typing import Final

from azsd.ipc.messages.base import _Note, _Versioned
from azsd.ipc.messages.events import WireEvent
from azsd.ipc.messages.sessions import SessionView

__all__ = ["SYNC_TOPIC", "EventsAppended", "SessionChanged", "SessionCreated", "SyncCaughtUp", "topic"]


class SessionCreated(_Note, frozen=True):
    session: SessionView


class SessionChanged(_Note, frozen=True):
    """`change` is `renamed`, `completed`, `archived`, `unarchived`, `unlinked` (its fork parent was
    deleted), `compacted` (a compaction was stored), `idle` (a follow into it went idle: it no longer
    shows running), `running` (that follow's file grew again) or `deleted`; `session` is None after
    a delete."""

    session_id: int
    change: str
    session: SessionView | None = None


class EventsAppended(_Note, frozen=True):
    session_id: int
    events: list[WireEvent]


class SyncCaughtUp(_Versioned, frozen=True):
    """A store's pushes caught up: the sync database holds every event of the store up to
    `pushed_event_id` (its `events.id`), so the other machines see them now. Published on
    :data:`SYNC_TOPIC`, never on a store's topic; `seq` counts the daemon's sync notifications."""

    root: str
    seq: int
    store_uuid: str = ""
    repository: str = ""
    pushed_event_id: int = 0
    pushed: int = 0


#: The PUB topic of sync notifications. It starts with a NUL, and a store's topic starts with its
#: root (an absolute path): no store subscription matches it, so older clients never receive one.
SYNC_TOPIC: Final = b"\0sync\0"


def topic(root: str, session: int | None = None) -> bytes:
    """The PUB topic of a session (or the prefix of a whole store with `session=None`)."""
    prefix = root.encode() + b"\0"
    return prefix if session is None else prefix + str(session).encode() + b"\0"
