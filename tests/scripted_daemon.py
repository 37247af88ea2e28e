"""A scripted fake daemon (a ROUTER answering as a test says, no azsd needed) for the client's tests."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import zmq

from azsd.config import ResolvedConfig
from azsd.ipc import protocol as p
from azsd.ipc.transport import bind_router, recv_request
from tests.daemon_fixture import config_for, short_tmpdir

# -- a scripted fake daemon (no azsd needed) --------------------------------------------------------

Answer = list[tuple[bytes, p.Reply]]
Handler = Callable[[bytes, p.Request], Answer]


def _status_reply(protocol: int = p.PROTOCOL_VERSION) -> p.StatusReply:
    return p.StatusReply(version="fake", pid=1, uptime_s=0.0, stores=[], protocol=protocol)


def answer_status_then(handler: Callable[[bytes, p.Request], Answer]) -> Handler:
    """Answer `Status` as a daemon of this protocol, everything else with `handler`."""

    def respond(request_id: bytes, request: p.Request) -> Answer:
        if isinstance(request, p.Status):
            return [(request_id, _status_reply())]
        return handler(request_id, request)

    return respond


@dataclass
class FakeDaemon:
    """A ROUTER on a temporary ipc endpoint, answering in a thread with what `handler` says."""

    handler: Handler
    runtime_dir: Path = field(default_factory=short_tmpdir)
    received: list[p.Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._router = bind_router(self._ctx, self.config.rpc_endpoint, 1 << 20)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def config(self) -> ResolvedConfig:
        return config_for(self.runtime_dir)

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not self._router.poll(20, zmq.POLLIN):
                continue
            envelope, payload = recv_request(self._router)
            assert payload is not None
            request = p.decode_request(payload)
            self.received.append(request)
            for request_id, reply in self.handler(envelope.request_id, request):
                self._router.send_multipart([envelope.identity, request_id, p.encode(reply)])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._router.close(linger=0)
        self._ctx.term()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


@pytest.fixture
def fake() -> Iterator[Callable[[Handler], FakeDaemon]]:
    made: list[FakeDaemon] = []

    def make(handler: Handler) -> FakeDaemon:
        made.append(FakeDaemon(handler))
        return made[-1]

    yield make
    for f in made:
        f.close()


def _ok(request_id: bytes, request: p.Request) -> Answer:
    return [(request_id, p.OkReply())]
