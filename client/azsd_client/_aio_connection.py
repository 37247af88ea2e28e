"""The asyncio sockets under :class:`~azsd_client.AsyncClient`: a pipelined DEALER with Lazy Pirate
timeouts, and the SUB sockets of its subscriptions (made here, read in :mod:`._aio_pubsub`).

Requests can be pipelined: each gets its own request id and future, one reader task matches
replies to futures, so several `await`s may be in flight on the one DEALER socket at once. When a
request times out, the socket is presumed dead (Lazy Pirate): it is closed with linger 0, every
request still in flight fails with :class:`~azsd.errors.DaemonUnavailable`, and the next request
opens a fresh socket and checks the daemon's protocol again. The typed methods are
:class:`~azsd_client.AsyncClient`'s (``aio.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from types import TracebackType
from typing import Self, cast

import zmq
import zmq.asyncio

from azsd.errors import AzsdError, ProtocolError
from azsd.ipc.protocol import (
    Reply,
    Request,
    Status,
    StatusReply,
    decode_reply,
    encode,
)
from azsd.ipc.transport import connect_dealer, connect_sub

from ._aio_pubsub import AsyncSubscribeMethods
from ._shared import (
    ConnectionBase,
    check_protocol,
    connecting,
    raise_for_error,
    refuse_unless_listening,
    unavailable,
)

__all__ = ["AsyncConnection"]


def _asyncio_context(context: zmq.Context[zmq.Socket[bytes]]) -> zmq.Context[zmq.Socket[bytes]]:
    """`context` making asyncio sockets. (Not `Socket.from_socket`: that leaves a second Python object
    on the same handle, which at garbage collection may close whatever socket reuses the handle.)"""
    return cast("zmq.Context[zmq.Socket[bytes]]", zmq.asyncio.Context.shadow(context))


def _asyncio_socket(sock: zmq.Socket[bytes]) -> zmq.asyncio.Socket:
    """A socket made in an :func:`_asyncio_context`, typed as what it is."""
    return cast(zmq.asyncio.Socket, sock)


class AsyncConnection(AsyncSubscribeMethods, ConnectionBase):
    """An asyncio connection to azsd: untyped `request`s on one DEALER; use it from one event loop.

    Made with the arguments of :class:`~azsd_client._shared.ConnectionBase`.
    """

    _sock: zmq.asyncio.Socket | None = None
    _reader: asyncio.Task[None] | None = None
    _checked: asyncio.Future[StatusReply] | None = None  # the first request's Status check

    @functools.cached_property
    def _pending(self) -> dict[bytes, asyncio.Future[Reply]]:
        """The requests in flight: their futures by request id."""
        return {}

    async def request(self, message: Request, *, timeout: float | None = None) -> Reply:
        """Send one request and await its reply (see :meth:`azsd_client.Client.request`); several may be
        in flight at once."""
        first = self._checked is None
        status = await self._check()
        if first and isinstance(message, Status):
            return status
        return raise_for_error(await self._roundtrip(message, self.timeout if timeout is None else timeout))

    async def _check(self) -> StatusReply:
        """The first request of a connection checks `Status`; concurrent first requests share one check."""
        if self._checked is None:
            self._checked = asyncio.ensure_future(self._first_contact())
            # (its failure is raised to whoever waits for it; when nobody does any more, a request
            # cancelled meanwhile, it is seen here rather than reported by asyncio as never retrieved)
            self._checked.add_done_callback(_seen)
        check = self._checked
        try:
            return await asyncio.shield(check)
        except AzsdError:
            if self._checked is check:
                self._checked = None
            raise

    async def _first_contact(self) -> StatusReply:
        refuse_unless_listening(self.config.rpc_endpoint)
        return check_protocol(await self._roundtrip(Status(), self.timeout, first_contact=True))

    async def _roundtrip(self, message: Request, timeout: float, *, first_contact: bool = False) -> Reply:
        sock = self._socket()
        request_id = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            async with asyncio.timeout(timeout):
                await sock.send_multipart([request_id, encode(message)])
                return await future
        except TimeoutError:
            error = unavailable(
                self.config.rpc_endpoint, timeout, first_contact=first_contact, op=type(message).__name__
            )
            self._reset(error)
            raise error from None
        finally:
            self._pending.pop(request_id, None)

    def _sub_socket(self, prefix: bytes) -> zmq.asyncio.Socket:
        """A SUB socket on the daemon's PUB socket, subscribed to `prefix` (see :meth:`subscribe`)."""
        with connecting(self.config.pub_endpoint):
            return _asyncio_socket(
                connect_sub(_asyncio_context(self._context), self.config.pub_endpoint, [prefix])
            )

    def _socket(self) -> zmq.asyncio.Socket:
        if self._sock is None:
            endpoint = self.config.rpc_endpoint
            with connecting(endpoint):
                self._sock = _asyncio_socket(connect_dealer(_asyncio_context(self._context), endpoint))
            self._reader = asyncio.get_running_loop().create_task(self._read(self._sock))
        return self._sock

    async def _read(self, sock: zmq.asyncio.Socket) -> None:
        """Hand each reply to the future of the request it answers; drop the rest."""
        while True:
            frames = await sock.recv_multipart()
            if len(frames) != 2:
                continue
            future = self._pending.get(frames[0])
            if future is None or future.done():
                continue
            try:
                future.set_result(decode_reply(frames[1]))
            except ProtocolError as exc:
                future.set_exception(exc)

    def _reset(self, error: AzsdError | None = None) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error or AzsdError("the client was closed"))
                future.exception()
        self._pending.clear()
        self._checked = None

    async def aclose(self) -> None:
        """Close the socket; requests still in flight fail. The client reconnects if used again."""
        reader = self._reader
        self._reset()
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _seen(task: asyncio.Future[StatusReply]) -> None:
    """Take a finished first contact's outcome, so that a failure nobody waited for is not
    reported by asyncio ("Task exception was never retrieved")."""
    if not task.cancelled():
        task.exception()
