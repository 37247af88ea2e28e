"""ZeroMQ sockets and frames: the only code in azsd that sees either.

Request frames, client side (DEALER): ``[request_id, payload]``. The daemon's ROUTER sees
``[identity, request_id, payload]`` and replies with the same envelope. A client may pipeline:
replies carry the request id they answer. Notifications (PUB): ``[topic, payload]``.

Other threads never touch the daemon's sockets: they hand replies and notifications to an
:class:`Outbox`, whose receiving end the socket-owning thread drains.
"""

from __future__ import annotations

import errno
import logging
import threading
from pathlib import Path
from typing import Final, cast

import msgspec
import zmq

from azsd.errors import DaemonUnavailable

__all__ = [
    "HWM",
    "LINGER_MS",
    "ZERO_COPY_BYTES",
    "DirectSender",
    "Envelope",
    "Outbox",
    "OutboxSender",
    "bind_pub",
    "bind_router",
    "connect_dealer",
    "connect_sub",
    "has_request",
    "ipc_path",
    "probe",
    "publish",
    "recv_notification",
    "recv_reply",
    "recv_reply_within",
    "recv_request",
    "send_reply",
    "send_request",
]

log = logging.getLogger("azsd.ipc.transport")

#: Pending messages a socket buffers per peer before it drops (PUB) or blocks (others).
HWM: Final = 10_000
#: How long a closing socket may still try to deliver: short, so stopping is prompt.
LINGER_MS: Final = 100
#: Payloads from this size on are handed to ZeroMQ without a copy (smaller ones copy faster).
ZERO_COPY_BYTES: Final = 64 * 1024
_REPLY: Final = b"R"
_PUBLISH: Final = b"P"
# The flags as plain ints: pyzmq's enum flags cost an enum operation each time they are combined
# (send_multipart and recv_multipart combine them on every frame), a few µs of every round trip.
_NOBLOCK: Final = int(zmq.NOBLOCK)
_MORE: Final = int(zmq.SNDMORE)
_MORE_NOBLOCK: Final = _MORE | _NOBLOCK
_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_RCVTIMEO: Final = int(zmq.RCVTIMEO)


class Envelope(msgspec.Struct, frozen=True, gc=False):
    """Who sent a request, and its id: what a reply needs to find its way back."""

    identity: bytes
    request_id: bytes


def ipc_path(endpoint: str) -> Path | None:
    """The socket file of an `ipc://` endpoint."""
    return Path(endpoint[len("ipc://") :]) if endpoint.startswith("ipc://") else None


def bind_router(
    ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str, max_message_bytes: int
) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, LINGER_MS)
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)  # a vanished client raises instead of silently queueing
    sock.setsockopt(zmq.MAXMSGSIZE, max_message_bytes)  # oversized input drops that connection
    sock.setsockopt(zmq.SNDHWM, HWM)
    sock.setsockopt(zmq.RCVHWM, HWM)
    sock.bind(endpoint)
    return sock


def bind_pub(ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.PUB)
    sock.setsockopt(zmq.LINGER, LINGER_MS)
    sock.setsockopt(zmq.SNDHWM, HWM)
    sock.bind(endpoint)
    return sock


def connect_dealer(ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)  # a client never waits on exit for an undelivered request
    sock.setsockopt(zmq.SNDHWM, HWM)
    sock.setsockopt(zmq.RCVHWM, HWM)
    sock.connect(endpoint)
    return sock


def connect_sub(
    ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str, prefixes: list[bytes]
) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, HWM)
    for prefix in prefixes or [b""]:
        sock.setsockopt(zmq.SUBSCRIBE, prefix)
    sock.connect(endpoint)
    return sock


def has_request(sock: zmq.Socket[bytes]) -> bool:
    """Whether a request is waiting on the ROUTER (cheaper than a receive that raises `zmq.Again`)."""
    return bool(cast(int, sock.getsockopt(_EVENTS)) & _POLLIN)


def recv_request(sock: zmq.Socket[bytes]) -> tuple[Envelope, bytes | None]:
    """One request off the ROUTER, or `zmq.Again` when none is waiting.

    A payload of None means the frames were not shaped as a request.
    """
    frames = _recv_frames(sock, _NOBLOCK)
    identity = frames[0]
    if len(frames) == 3:
        return Envelope(identity, frames[1]), frames[2]
    if len(frames) == 2:  # a peer that sent a bare payload: answer it with an empty request id
        return Envelope(identity, b""), frames[1] if frames[1] else None
    return Envelope(identity, frames[1] if len(frames) > 1 else b""), None


def _recv_frames(sock: zmq.Socket[bytes], flags: int) -> list[bytes]:
    """Every frame of the next message: `recv_multipart` without its per-frame option lookups
    (each `RCVMORE` asked of pyzmq converts it to an enum first; a frame says it has more itself)."""
    frame = sock.recv(flags, copy=False)
    frames = [frame.bytes]
    while frame.more:
        frame = sock.recv(flags, copy=False)
        frames.append(frame.bytes)
    return frames


def send_reply(sock: zmq.Socket[bytes], envelope: Envelope, payload: bytes | zmq.Frame) -> bool:
    """Send a reply; False (and a log line) when the client is gone."""
    try:
        send = sock.send
        send(envelope.identity, _MORE_NOBLOCK)
        send(envelope.request_id, _MORE_NOBLOCK)
        send(payload, _NOBLOCK, copy=_copied(payload))
    except zmq.ZMQError as exc:
        if exc.errno in (errno.EHOSTUNREACH, zmq.EAGAIN):
            log.info("dropped a reply: the client went away before it was sent")
            return False
        raise
    return True


def publish(sock: zmq.Socket[bytes], topic: bytes, payload: bytes | zmq.Frame) -> None:
    sock.send_multipart([topic, payload], copy=_copied(payload))


def _copied(payload: bytes | zmq.Frame) -> bool:
    """Whether to send `payload` as a copy: a small one (a frame received is sent as it is)."""
    return not isinstance(payload, zmq.Frame) and len(payload) < ZERO_COPY_BYTES


def send_request(sock: zmq.Socket[bytes], request_id: bytes, payload: bytes) -> None:
    try:
        sock.send(request_id, _MORE)
        sock.send(payload)
    except zmq.ZMQError as exc:
        raise DaemonUnavailable(f"cannot send to azsd: {exc}") from None


def recv_reply(sock: zmq.Socket[bytes]) -> tuple[bytes, bytes]:
    """`(request_id, payload)` of the next reply on a DEALER."""
    frames = _recv_frames(sock, 0)
    if len(frames) != 2:
        return b"", b""
    return frames[0], frames[1]


def recv_reply_within(sock: zmq.Socket[bytes], timeout_s: float) -> tuple[bytes, bytes] | None:
    """As :func:`recv_reply`, or None when no reply came within `timeout_s` (a receive timeout on
    the socket, cheaper than polling it first). The socket keeps the timeout: use this function
    for every receive on it, or set it back."""
    sock.setsockopt(_RCVTIMEO, max(1, int(timeout_s * 1000)))
    try:
        frames = _recv_frames(sock, 0)
    except zmq.Again:
        return None
    if len(frames) != 2:
        return b"", b""
    return frames[0], frames[1]


def recv_notification(sock: zmq.Socket[bytes]) -> tuple[bytes, bytes]:
    frames = sock.recv_multipart()
    return (frames[0], frames[1]) if len(frames) == 2 else (b"", b"")


def probe(ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str, payload: bytes, timeout_ms: int) -> bool:
    """True when something answers `payload` on `endpoint` within the timeout."""
    sock = connect_dealer(ctx, endpoint)
    try:
        sock.send_multipart([b"probe", payload], flags=zmq.NOBLOCK)
        return bool(sock.poll(timeout_ms, zmq.POLLIN))
    except zmq.ZMQError:
        return False
    finally:
        sock.close(linger=0)


class OutboxSender:
    """One thread's way into the outbox (ZeroMQ sockets belong to one thread each).

    Big payloads go through without copies, so a big reply is not copied again on each hop
    between threads.
    """

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], endpoint: str) -> None:
        self._sock = ctx.socket(zmq.PUSH)
        self._sock.setsockopt(zmq.LINGER, LINGER_MS)
        self._sock.setsockopt(zmq.SNDHWM, 0)  # never drop or block a reply on the way out
        self._sock.connect(endpoint)

    def reply(self, envelope: Envelope, payload: bytes) -> None:
        self._sock.send_multipart(
            [_REPLY, envelope.identity, envelope.request_id, payload], copy=_copied(payload)
        )

    def publish(self, topic: bytes, payload: bytes) -> None:
        self._sock.send_multipart([_PUBLISH, topic, payload], copy=_copied(payload))

    def close(self) -> None:
        self._sock.close()


class DirectSender:
    """The socket-owning thread's own sender: its replies leave at once, on the ROUTER (a read it
    answers itself skips the hop through the outbox); its notifications still queue in the outbox,
    behind those of the workers, so each store's stay in order."""

    def __init__(self, router: zmq.Socket[bytes], queued: OutboxSender) -> None:
        self._router = router
        self._queued = queued

    def reply(self, envelope: Envelope, payload: bytes) -> None:
        send_reply(self._router, envelope, payload)

    def publish(self, topic: bytes, payload: bytes) -> None:
        self._queued.publish(topic, payload)


class Outbox:
    """Replies and notifications from worker threads, delivered by the socket-owning thread."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
        self._ctx = ctx
        self.endpoint = f"inproc://azsd-outbox-{id(self)}"
        self.socket = ctx.socket(zmq.PULL)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)
        self.socket.bind(self.endpoint)
        self._local = threading.local()
        self._senders: list[OutboxSender] = []
        self._lock = threading.Lock()

    def own(self, router: zmq.Socket[bytes]) -> None:
        """Make the calling thread, which owns `router`, reply on it directly (see :meth:`sender`)."""
        self._local.direct = DirectSender(router, self._queued())

    def sender(self) -> OutboxSender | DirectSender:
        """This thread's sender (created on first use); for the thread that owns the ROUTER
        (:meth:`own`), one that replies directly."""
        direct: DirectSender | None = getattr(self._local, "direct", None)
        return direct if direct is not None else self._queued()

    def _queued(self) -> OutboxSender:
        sender: OutboxSender | None = getattr(self._local, "sender", None)
        if sender is None:
            sender = OutboxSender(self._ctx, self.endpoint)
            self._local.sender = sender
            with self._lock:
                self._senders.append(sender)
        return sender

    def release(self) -> None:
        """Close this thread's sender (call before a worker thread exits)."""
        sender: OutboxSender | None = getattr(self._local, "sender", None)
        if sender is not None:
            with self._lock:
                self._senders.remove(sender)
            sender.close()
            self._local.sender = None
        self._local.direct = None

    def drain(self, router: zmq.Socket[bytes], pub: zmq.Socket[bytes], limit: int = 1000) -> int:
        """Deliver what is waiting, at most `limit` messages; returns how many."""
        done = 0
        while done < limit:
            try:
                frames = self.socket.recv_multipart(flags=zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            if frames[0].bytes == _REPLY:
                send_reply(router, Envelope(frames[1].bytes, frames[2].bytes), frames[3])
            else:
                publish(pub, frames[1].bytes, frames[2])
            done += 1
        return done

    def close(self) -> None:
        with self._lock:
            for sender in self._senders:
                sender.close()
            self._senders.clear()
        self.socket.close()
