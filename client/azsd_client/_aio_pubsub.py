"""Live notifications of :class:`~azsd_client.AsyncClient`: SUB sockets on the daemon's PUB socket,
for one store (or one session of it), or for its pushes to the sync database. The connection makes
the socket (:meth:`~azsd_client._aio_connection.AsyncConnection._sub_socket`); the rest is here.
The asyncio module is the source; its blocking twin is generated from it by ``make unasync``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

import zmq
import zmq.asyncio

from azsd.ipc.protocol import (
    SYNC_TOPIC,
    Notification,
    SyncCaughtUp,
    decode_notification,
    decode_sync_notification,
    topic,
)

from ._shared import RootLike, canonical_root, notification_payload

__all__ = ["AsyncPushSubscription", "AsyncSubscribeMethods", "AsyncSubscription"]


class _AsyncSubscriber:
    """A SUB socket on the daemon's PUB socket, subscribed to one topic prefix."""

    def __init__(self, sock: zmq.asyncio.Socket) -> None:
        self._sock = sock

    async def _payload(self, timeout: float | None) -> bytes | None:
        if not await self._sock.poll(None if timeout is None else int(timeout * 1000)):
            return None
        return notification_payload(await self._sock.recv_multipart())

    def close(self) -> None:
        """Stop receiving (idempotent)."""
        self._sock.close(linger=0)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncSubscription(_AsyncSubscriber):
    """Live notifications of one store (or one session of it) on the daemon's PUB socket.

    PUB/SUB drops messages for a subscriber that is slow or not connected yet: compare each
    notification's `seq` with the previous one (for a whole store), or event seqs (for one session),
    and re-read by request when there is a gap.
    """

    async def recv(self, timeout: float | None = None) -> Notification | None:
        """The next notification, or None when none arrives within `timeout` seconds (None: wait)."""
        payload = await self._payload(timeout)
        return None if payload is None else decode_notification(payload)


class AsyncPushSubscription(_AsyncSubscriber):
    """Notifications that a store's pushes to the sync database caught up (:class:`SyncCaughtUp`:
    every event up to `pushed_event_id` is visible to the other machines), for every store."""

    async def recv(self, timeout: float | None = None) -> SyncCaughtUp | None:
        """The next one, or None when none arrives within `timeout` seconds (None: wait)."""
        payload = await self._payload(timeout)
        return None if payload is None else decode_sync_notification(payload)


class AsyncSubscribeMethods:
    """The subscriptions of a connection, each on a SUB socket of its own."""

    def _sub_socket(self, prefix: bytes) -> zmq.asyncio.Socket:
        raise NotImplementedError  # the connection's

    def subscribe(self, root: RootLike, session: int | None = None) -> AsyncSubscription:
        """Notifications of the store at `root`, or of one session in it."""
        return AsyncSubscription(self._sub_socket(topic(canonical_root(root), session)))

    def subscribe_pushes(self) -> AsyncPushSubscription:
        """Notifications that a store's pushes to the sync database caught up (a daemon with a
        `sync-url` sends them; one without, none)."""
        return AsyncPushSubscription(self._sub_socket(SYNC_TOPIC))
