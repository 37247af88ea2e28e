# GENERATED from _aio_pubsub.py by client/unasync.py (`make unasync`): edit _aio_pubsub.py, never this file.
"""Live notifications of :class:`~azsd_client.Client`: SUB sockets on the daemon's PUB socket,
for one store (or one session of it), or for its pushes to the sync database. The connection makes
the socket (:meth:`~azsd_client._connection.Connection._sub_socket`); the rest is here.
The asyncio module is the source; its blocking twin is generated from it by ``make unasync``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

import zmq

from azsd.ipc.protocol import (
    SYNC_TOPIC,
    Notification,
    SyncCaughtUp,
    decode_notification,
    decode_sync_notification,
    topic,
)

from ._shared import RootLike, canonical_root, notification_payload

__all__ = ["PushSubscription", "SubscribeMethods", "Subscription"]


class _Subscriber:
    """A SUB socket on the daemon's PUB socket, subscribed to one topic prefix."""

    def __init__(self, sock: zmq.Socket[bytes]) -> None:
        self._sock = sock

    def _payload(self, timeout: float | None) -> bytes | None:
        if not self._sock.poll(None if timeout is None else int(timeout * 1000)):
            return None
        return notification_payload(self._sock.recv_multipart())

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._sock.close(linger=0)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Subscription(_Subscriber):
    """Live notifications of one store (or one session of it) on the daemon's PUB socket.

    PUB/SUB drops messages for a subscriber that is slow or not connected yet: compare each
    notification's `seq` with the previous one (for a whole store), or event seqs (for one session),
    and re-read by request when there is a gap.
    """

    def recv(self, timeout: float | None = None) -> Notification | None:
        """The next notification, or None when none arrives within `timeout` seconds (None: wait)."""
        payload = self._payload(timeout)
        return None if payload is None else decode_notification(payload)


class PushSubscription(_Subscriber):
    """Notifications that a store's pushes to the sync database caught up (:class:`SyncCaughtUp`:
    every event up to `pushed_event_id` is visible to the other machines), for every store."""

    def recv(self, timeout: float | None = None) -> SyncCaughtUp | None:
        """The next one, or None when none arrives within `timeout` seconds (None: wait)."""
        payload = self._payload(timeout)
        return None if payload is None else decode_sync_notification(payload)


class SubscribeMethods:
    """The subscriptions of a connection, each on a SUB socket of its own."""

    def _sub_socket(self, prefix: bytes) -> zmq.Socket[bytes]:
        raise NotImplementedError  # the connection's

    def subscribe(self, root: RootLike, session: int | None = None) -> Subscription:
        """Notifications of the store at `root`, or of one session in it."""
        return Subscription(self._sub_socket(topic(canonical_root(root), session)))

    def subscribe_pushes(self) -> PushSubscription:
        """Notifications that a store's pushes to the sync database caught up (a daemon with a
        `sync-url` sends them; one without, none)."""
        return PushSubscription(self._sub_socket(SYNC_TOPIC))
