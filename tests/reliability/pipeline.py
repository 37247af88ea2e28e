"""A client that pipelines: many requests on one DEALER socket, replies matched by request id.

:class:`DaemonProc.request` opens a socket per request and waits for each reply; the reliability
tests of the store registry need one client identity sending several requests before reading any
reply (read-your-writes), or many at once (group commits, many stores).
"""

from __future__ import annotations

import itertools

import zmq

from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer, recv_reply, send_request
from tests.daemon_fixture import DaemonProc


class Pipe:
    """One client identity on the daemon of `d`; close it after use."""

    def __init__(self, d: DaemonProc) -> None:
        self._sock = connect_dealer(d.ctx, d.rpc)
        self._ids = itertools.count(1)

    def send(self, message: p._Msg) -> bytes:
        """Send a request without waiting; returns its request id."""
        rid = str(next(self._ids)).encode()
        send_request(self._sock, rid, p.encode(message))
        return rid

    def ready(self, timeout_ms: int = 0) -> bool:
        """Whether a reply is waiting (after at most `timeout_ms`)."""
        return bool(self._sock.poll(timeout_ms, zmq.POLLIN))

    def recv(self, timeout_ms: int = 10_000) -> tuple[bytes, p.Reply]:
        """The next reply, whichever request it answers."""
        assert self._sock.poll(timeout_ms, zmq.POLLIN), "no reply in time"
        rid, payload = recv_reply(self._sock)
        return rid, p.decode_reply(payload)

    def replies(self, rids: list[bytes], timeout_ms: int = 30_000) -> dict[bytes, p.Reply]:
        """The replies to every request of `rids`, by request id (each must come, exactly once)."""
        got: dict[bytes, p.Reply] = {}
        while len(got) < len(rids):
            rid, reply = self.recv(timeout_ms)
            assert rid in rids and rid not in got, f"unexpected reply {rid!r}: {reply!r}"
            got[rid] = reply
        return got

    def close(self) -> None:
        self._sock.close(linger=0)
