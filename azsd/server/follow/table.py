"""The follows one follower owns, as `status` shows them: the live ones, the ended ones whose last
commit is still on its way (shown live until it is stored), and the most recently ended.

Only the follower thread (:mod:`azsd.server.follow.follower`) changes them, under one lock, so that `status`
and the watcher can read them from any thread; the follower reads its own `_follows` without it.
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path
from typing import Final

from azsd.ipc import protocol as p
from azsd.model import FollowRecord
from azsd.server.follow.tailing import Tail

__all__ = ["ENDED_KEPT", "FollowTable"]

#: How many ended follows `Status` still shows (the most recent ones).
ENDED_KEPT: Final = 100


class FollowTable:
    """Live, closing and ended follows (see the module docstring)."""

    def __init__(self) -> None:
        self._follows: dict[str, Tail] = {}  # live, by real path
        self._closing: dict[int, Tail] = {}  # ended, their last commit in flight: still shown live
        self._ended: deque[p.FollowView] = deque(maxlen=ENDED_KEPT)
        self._lock = threading.Lock()

    def views(self) -> list[p.FollowView]:
        """Live follows, then the most recently ended ones (only once what they read is stored)."""
        with self._lock:
            return [f.view() for f in (*self._follows.values(), *self._closing.values())] + list(self._ended)

    def claimed(self) -> set[str]:
        """The agents' own ids of the sessions live follows' runs write (their histories are theirs)."""
        with self._lock:
            follows = [*self._follows.values(), *self._closing.values()]
        return {f.agent_session for f in follows if f.agent_session}

    def followed(self) -> set[str]:
        """The paths of the live follows (an Aider history, an OpenCode session's key: theirs)."""
        with self._lock:
            return {*self._follows, *(f.record.path for f in self._closing.values())}

    def _live(self, path: str, follow: Tail) -> None:
        with self._lock:
            self._follows[path] = follow

    def _drop(self, path: str) -> None:
        """A follow that never began (refused by its store)."""
        with self._lock:
            self._follows.pop(path, None)

    def _close(self, follow: Tail) -> None:
        """`follow` ends: shown live until its last commit is done (:meth:`_retire`)."""
        with self._lock:
            self._follows.pop(follow.record.path, None)
            self._closing[id(follow)] = follow

    def _retire(self, follow: Tail, record: FollowRecord, reason: str) -> None:
        """Show `follow` (as `record`, with `reason`) among the ended, no longer live or closing."""
        ended = Tail(follow.root, record, end_reason=reason)
        ended.backoff.failures = follow.backoff.failures
        with self._lock:
            if self._follows.get(follow.record.path) is follow:  # not a new follow of the same file
                del self._follows[follow.record.path]
            self._closing.pop(id(follow), None)
            self._ended.appendleft(ended.view())

    def _watched_dirs(self) -> list[str]:
        with self._lock:
            return sorted({str(Path(path).parent) for path in self._follows})
