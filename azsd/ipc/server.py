"""The daemon's socket loop: frames in, decoded requests to a handler, replies and notifications out.

It owns the ROUTER (requests), the PUB (notifications) and the outbox through which worker
threads send. It never imports the store: the daemon passes in `handle`. A request that cannot
be decoded gets an error reply; a client that vanished before its reply is a logged drop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import zmq

from azsd.config import ResolvedConfig
from azsd.errors import ProtocolError
from azsd.ipc import protocol as p
from azsd.ipc.transport import (
    Envelope,
    Outbox,
    bind_pub,
    bind_router,
    has_request,
    recv_request,
    send_reply,
)

__all__ = ["Handler", "Server"]

log = logging.getLogger("azsd.ipc.server")

Handler = Callable[[Envelope, p.Request], None]

#: Requests taken off the socket per wake-up, so replies and timers are never starved.
_BURST = 256


class Server:
    """The bound sockets of a running daemon (create, then :meth:`serve` in the same thread)."""

    def __init__(self, config: ResolvedConfig) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.router = bind_router(self.ctx, config.rpc_endpoint, config.max_message_bytes)
        self.pub = bind_pub(self.ctx, config.pub_endpoint)
        self.outbox = Outbox(self.ctx)

    def reply(self, envelope: Envelope, message: p.Reply) -> None:
        """Answer from the socket thread (other threads use `outbox.sender()`)."""
        send_reply(self.router, envelope, p.encode(message))

    def serve(
        self,
        handle: Handler,
        stop: threading.Event,
        tick: Callable[[], None] = lambda: None,
        interval_s: float = 0.1,
    ) -> None:
        """Serve until `stop` is set, calling `tick` at least every `interval_s`."""
        self.outbox.own(self.router)  # replies made in this thread leave at once
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.outbox.socket, zmq.POLLIN)
        timeout_ms = int(interval_s * 1000)
        while not stop.is_set():
            ready = dict(poller.poll(timeout_ms))
            if self.outbox.socket in ready:
                self.outbox.drain(self.router, self.pub)
            if self.router in ready:
                for _ in range(_BURST):  # while requests wait (asked, not tried: zmq.Again costs more)
                    try:
                        if not self._one(handle):
                            break
                    except Exception:  # one bad request never ends the loop
                        log.exception("dropped a request that could not be handled")
                    if not has_request(self.router):
                        break
            tick()
        self.outbox.drain(self.router, self.pub)

    def flush(self) -> None:
        """Deliver whatever workers left in the outbox."""
        self.outbox.drain(self.router, self.pub, limit=1_000_000)

    def _one(self, handle: Handler) -> bool:
        try:
            envelope, payload = recv_request(self.router)
        except zmq.Again:
            return False
        if payload is None:
            self.reply(
                envelope, p.ErrorReply(code="bad_request", message="expected [request_id, payload] frames")
            )
            return True
        try:
            request = p.decode_request(payload)
        except ProtocolError as exc:
            log.info("bad request: %s", exc)
            self.reply(envelope, p.ErrorReply(code="bad_request", message=str(exc)))
            return True
        try:
            handle(envelope, request)
        except Exception as exc:
            log.exception("handler failed on %s", type(request).__name__)
            self.reply(envelope, p.ErrorReply(code="internal", message=f"{type(exc).__name__}: {exc}"))
        return True

    def close(self) -> None:
        self.flush()
        self.outbox.close()
        self.router.close()
        self.pub.close()
        self.ctx.term()
