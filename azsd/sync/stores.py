"""What sync needs of the daemon's open stores: the one way to a store's writer, and the outbox.

Sync sits below the daemon (:mod:`azsd.server`), which starts it with its registry
(:class:`~azsd.server.registry.StoreRegistry` is a :class:`Stores`) and the function that makes a
session's wire view (:data:`SessionViewFn`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol, TypeVar

from azsd.ipc import protocol as p
from azsd.ipc.transport import Outbox
from azsd.model import SessionInfo
from azsd.store import Store

__all__ = ["SessionViewFn", "Stores"]

T = TypeVar("T")

#: A stored session as the wire shows it (the daemon's :func:`~azsd.server.views.session_view`).
SessionViewFn = Callable[[Store, SessionInfo], p.SessionView]


class Stores(Protocol):
    """The daemon's open stores, as sync uses them."""

    #: Called with a store's root after each batch its writer committed (the pusher's cue).
    on_commit: Callable[[str], None] | None

    @property
    def outbox(self) -> Outbox: ...

    def call(
        self, root: str, fn: Callable[[Store], T], *, then: Callable[[Future[T]], None] | None = None
    ) -> Future[T]:
        """Queue `fn(store)` for the store's writer; the future of its result."""
        ...

    def publish(self, root: str, notes: Sequence[p.Notification]) -> None:
        """Number and publish notifications of the store of `root`."""
        ...
