"""The blocking sockets under :class:`~azsd_client.Client`: a DEALER with Lazy Pirate timeouts, and the
SUB sockets of its subscriptions (made here, read in :mod:`._pubsub`, generated from ``_aio_pubsub.py``).

Every request is ``[request_id, msgpack]`` on a DEALER; the reply carrying the same id is the answer,
and anything else that arrives (a late answer to an earlier request) is dropped. When no answer comes
within the timeout the socket is closed with linger 0 and reopened on the next request (the zguide's
"Lazy Pirate"), and :class:`~azsd.errors.DaemonUnavailable` is raised (:class:`~azsd.errors.NoReply`
once the daemon had answered: the request may or may not have been carried out). The connection
never sends a request again by itself; the typed client does, once, for a write with a request key.

The first request of a connection checks `Status` and refuses a daemon that speaks another
protocol version. The typed methods are :class:`~azsd_client.Client`'s (generated from ``aio.py``).
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Self

import zmq

from azsd.ipc.protocol import (
    Reply,
    Request,
    Status,
    decode_reply,
    encode,
)
from azsd.ipc.transport import connect_dealer, connect_sub, recv_reply_within, send_request

from ._pubsub import SubscribeMethods
from ._shared import (
    ConnectionBase,
    check_protocol,
    connecting,
    raise_for_error,
    refuse_unless_listening,
    unavailable,
)

__all__ = ["Connection"]


class Connection(SubscribeMethods, ConnectionBase):
    """A blocking connection to azsd: untyped `request`s on one DEALER. Not thread-safe: use one per thread.

    Made with the arguments of :class:`~azsd_client._shared.ConnectionBase`.
    """

    _sock: zmq.Socket[bytes] | None = None
    _checked = False

    def request(self, message: Request, *, timeout: float | None = None) -> Reply:
        """Send one request and return its reply.

        Raises:
            DaemonUnavailable: no answer within the timeout (the socket is reset for the next call).
            RemoteError: the daemon answered with an error reply.
            ProtocolError: the daemon speaks another protocol version, or sent something undecodable.
        """
        if not self._checked:
            refuse_unless_listening(self.config.rpc_endpoint)
            status = check_protocol(self._roundtrip(Status(), self.timeout, first_contact=True))
            self._checked = True
            if isinstance(message, Status):
                return status
        return raise_for_error(self._roundtrip(message, self.timeout if timeout is None else timeout))

    def _roundtrip(self, message: Request, timeout: float, *, first_contact: bool = False) -> Reply:
        sock = self._socket()
        request_id = next(self._ids)
        send_request(sock, request_id, encode(message))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            got = recv_reply_within(sock, remaining) if remaining > 0 else None
            if got is None:
                self._reset()
                raise unavailable(
                    self.config.rpc_endpoint, timeout, first_contact=first_contact, op=type(message).__name__
                )
            answered, payload = got
            if answered == request_id:
                return decode_reply(payload)

    def _sub_socket(self, prefix: bytes) -> zmq.Socket[bytes]:
        """A SUB socket on the daemon's PUB socket, subscribed to `prefix` (see :meth:`subscribe`)."""
        with connecting(self.config.pub_endpoint):
            return connect_sub(self._context, self.config.pub_endpoint, [prefix])

    def _socket(self) -> zmq.Socket[bytes]:
        if self._sock is None:
            with connecting(self.config.rpc_endpoint):
                self._sock = connect_dealer(self._context, self.config.rpc_endpoint)
        return self._sock

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        self._checked = False  # whoever answers next may be another daemon

    def close(self) -> None:
        """Close the socket (idempotent; the client reconnects if used again)."""
        self._reset()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
