"""The follower's inbox: what other threads ask of it, one typed message each.

The follower thread (:mod:`azsd.server.follow.follower`) is the only one that touches its follows; the
daemon, the watcher and the store workers put these messages in its queue, and it matches on them.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from azsd.ipc import protocol as p
from azsd.ipc.transport import Envelope
from azsd.model import FollowRecord
from azsd.server.follow.tailing import Tail

__all__ = ["Committed", "End", "Fetched", "Hint", "Message", "Resume", "Service", "Start", "Wake"]


@dataclass(frozen=True)
class Start:
    """A `Follow` request (no envelope: the daemon's own); `accepted(root)` runs once it is."""

    envelope: Envelope | None
    root: str
    request: p.Follow
    accepted: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Resume:
    """A follow a previous daemon left running."""

    root: str
    record: FollowRecord


@dataclass(frozen=True)
class End:
    """An `Unfollow` request."""

    envelope: Envelope
    root: str
    path: str
    reason: str = "unfollowed"


@dataclass(frozen=True)
class Hint:
    """The watcher saw these paths change (or go)."""

    changed: set[str]
    deleted: set[str]


@dataclass(frozen=True)
class Service:
    """Read a followed file now (after `resync`: from its stored offset, its parser rebuilt)."""

    path: str
    resync: bool = False


@dataclass(frozen=True)
class Fetched:
    """The store gave back (or could not give back) a follow's saved position."""

    path: str
    done: Future[FollowRecord | None]


@dataclass(frozen=True)
class Committed:
    """The store took (or could not take) a read of `follow` made in its `generation`: `record`."""

    follow: Tail
    generation: int
    error: BaseException | None
    record: FollowRecord


@dataclass(frozen=True)
class Wake:
    """Look at the stop flag."""


Message = Start | Resume | End | Hint | Service | Fetched | Committed | Wake
