"""The typed client (sync, asyncio) and `follow_session`: against a scripted ROUTER, then the real daemon.

The end-to-end tests start the real daemon (`python -m azsd run --runtime-dir <tmp>`, see
tests/daemon_fixture.py) through :func:`running_daemon`, whose fixtures `tests/test_cli.py` uses too.
A daemon that does not start, answer, or stop on SIGTERM fails them.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import importlib
import inspect
import shutil
import signal
import socket
import subprocess
import threading
import time
import typing
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import zmq

import azsd_client
from azsd.config import ResolvedConfig
from azsd.errors import DaemonUnavailable, NoReply, ProtocolError, RemoteError
from azsd.events import AssistantText, Complete, Event, ToolCall, UserMessage, decode_event, encode_event
from azsd.ipc import protocol as p
from azsd.ipc.transport import bind_router, recv_request
from azsd_client import AsyncClient, Client, follow_session
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import DaemonProc, config_for, daemon_in_tmpdir, short_tmpdir

REPO = Path(__file__).resolve().parent.parent
CLIENT_DIR = REPO / "client"
STOP_TIMEOUT_S = 15.0


# -- the real daemon --------------------------------------------------------------------------------


@contextlib.contextmanager
def running_daemon() -> Iterator[DaemonProc]:
    """The real daemon on a private runtime dir, logging at DEBUG; it must exit 0 on SIGTERM after."""
    with daemon_in_tmpdir(log_level="DEBUG") as daemon:
        try:
            yield daemon
        finally:
            if daemon.proc.poll() is None:
                daemon.proc.send_signal(signal.SIGTERM)
            try:
                code = daemon.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                daemon.proc.kill()
                daemon.proc.wait()
                pytest.fail(f"azsd did not stop within {STOP_TIMEOUT_S} s of SIGTERM:\n{daemon.log_text()}")
            if code != 0:
                pytest.fail(f"azsd exited with {code} on SIGTERM:\n{daemon.log_text()}")


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    with running_daemon() as d:
        yield d


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    path = tmp_path / "worktree"
    path.mkdir()
    return path


@pytest.fixture
def client(daemon: DaemonProc) -> Iterator[Client]:
    with daemon.client() as c:
        yield c


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


# -- the public surface -----------------------------------------------------------------------------


def test_public_surface_is_pinned() -> None:
    assert azsd_client.__all__ == (
        "AsyncClient",
        "AsyncPushSubscription",
        "AsyncSubscription",
        "Client",
        "FollowItem",
        "PushSubscription",
        "RootLike",
        "Subscription",
        "__version__",
        "follow_session",
    )
    for name in azsd_client.__all__:
        assert hasattr(azsd_client, name), name


def test_client_imports_only_the_protocol_side_of_azsd() -> None:
    allowed = {
        "azsd",  # the package root: its __version__ (the rest loads on first use)
        "azsd.ipc.protocol",
        "azsd.ipc.transport",
        "azsd.config",
        "azsd.errors",
        "azsd.events",
        "azsd.export",  # pure core: the web view shows events as the export does
        "azsd.files",
        "azsd.model",  # pure data types (StoredEvent)
        "azsd.tools",
    }
    package = CLIENT_DIR / "azsd_client"
    seen: set[str] = set()
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                seen.update(a.name for a in node.names if a.name.split(".")[0] == "azsd")
            elif (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").split(".")[0] == "azsd"
            ):
                seen.add(node.module or "")
    assert seen, "the scan found no azsd imports at all"
    assert seen <= allowed, f"the client must not import {sorted(seen - allowed)}"


def test_docstring_examples_run() -> None:
    attempted = 0
    for source in sorted((CLIENT_DIR / "azsd_client").rglob("*.py")):
        if source.stem == "__main__":
            continue
        parts = source.relative_to(CLIENT_DIR).with_suffix("").parts
        module = importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        result = doctest.testmod(module)
        assert result.failed == 0, source.name
        attempted += result.attempted
    assert attempted >= 7  # render (4 functions), _shared, cli: every `>>>` that is not skipped


def _parameters(method: Any) -> list[tuple[str, Any, Any]]:
    return [(q.name, q.kind, q.default) for q in inspect.signature(method).parameters.values()]


def test_async_client_has_the_same_methods_as_the_sync_one() -> None:
    def public(cls: type) -> set[str]:  # the typed client's own methods (and its mixins'), not the sockets'
        sockets = ("connection", "pubsub", "builtins")
        typed = [k for k in cls.__mro__ if not k.__module__.endswith(sockets)]
        return {n for k in typed for n, v in vars(k).items() if callable(v) and not n.startswith("_")}

    assert public(Client) - {"close"} == public(AsyncClient) - {"aclose"}
    for name in public(Client) - {"close", "request", "call", "subscribe"}:
        assert _parameters(getattr(Client, name)) == _parameters(getattr(AsyncClient, name)), name
        assert inspect.iscoroutinefunction(getattr(AsyncClient, name)) or inspect.isasyncgenfunction(
            getattr(AsyncClient, name)
        ), name
    requests = {cls.__name__ for cls in typing.get_args(p.Request)}
    methods = {"".join(w.capitalize() for w in n.split("_")) for n in public(Client)}
    assert requests - methods <= {
        "GetEvents",
        "IngestFile",
        "Search",
    }  # get_events(_page), ingest_file, search


# -- sync client, scripted daemon -------------------------------------------------------------------


def test_no_daemon_is_daemon_unavailable_at_once() -> None:
    """No socket file, or one a dead daemon left (connecting is refused): said at once, not after
    the timeout (it waited the whole 5 s by default)."""
    runtime_dir = short_tmpdir()
    try:
        with Client(config_for(runtime_dir), timeout=5.0) as client:
            started = time.monotonic()
            with pytest.raises(DaemonUnavailable) as caught:
                client.status()
            assert time.monotonic() - started < 1.0
        assert str(caught.value) == (
            "azsd is not running — start it with `systemctl --user start azsd` or `azsd run` "
            f"(no socket file: {runtime_dir}/rpc)"
        )
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(str(runtime_dir / "rpc"))  # bound, never listening: what kill -9 leaves behind
        try:
            with Client(config_for(runtime_dir), timeout=5.0) as client:
                started = time.monotonic()
                with pytest.raises(DaemonUnavailable, match="nothing listens on its socket"):
                    client.status()
                assert time.monotonic() - started < 1.0
        finally:
            stale.close()
    finally:
        shutil.rmtree(runtime_dir)


def test_a_daemon_that_does_not_answer_is_daemon_unavailable_within_the_timeout() -> None:
    runtime_dir = short_tmpdir()
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    silent = context.socket(zmq.ROUTER)  # listens, never answers (a daemon stuck at start)
    silent.bind(f"ipc://{runtime_dir}/rpc")
    try:
        with Client(config_for(runtime_dir), timeout=0.3, context=context) as client:
            for _ in range(2):  # the second try runs on a reopened socket
                started = time.monotonic()
                with pytest.raises(DaemonUnavailable) as caught:
                    client.status()
                assert 0.25 <= time.monotonic() - started < 2.0
        message = str(caught.value)
        assert message.startswith(
            "azsd is not running — start it with `systemctl --user start azsd` or `azsd run`"
        )
        assert f"no answer on ipc://{runtime_dir}/rpc within 0.3 s" in message
    finally:
        silent.close(linger=0)
        context.term()
        shutil.rmtree(runtime_dir)


def test_a_socket_that_cannot_open_is_daemon_unavailable() -> None:
    runtime_dir = short_tmpdir()
    listening: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    daemon_side = listening.socket(zmq.ROUTER)  # something listens: the client's own socket is the problem
    daemon_side.bind(f"ipc://{runtime_dir}/rpc")
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    context.term()
    try:
        with Client(config_for(runtime_dir), context=context) as client:
            with pytest.raises(DaemonUnavailable, match=f"cannot connect to azsd on ipc://{runtime_dir}/rpc"):
                client.status()
            with pytest.raises(DaemonUnavailable, match="cannot connect"):
                client.subscribe("/")
    finally:
        daemon_side.close(linger=0)
        listening.term()
        shutil.rmtree(runtime_dir)


def test_first_use_checks_status_once_and_a_status_call_reuses_it(fake: Any) -> None:
    server = fake(answer_status_then(_ok))
    with Client(server.config, timeout=2) as client:
        assert client.status().version == "fake"
        client.delete_session("/", 1)
        client.delete_session("/", 2)
    assert [type(r).__name__ for r in server.received] == ["Status", "DeleteSession", "DeleteSession"]


def test_another_protocol_version_is_refused_with_restart_advice(fake: Any) -> None:
    server = fake(lambda rid, req: [(rid, _status_reply(protocol=p.PROTOCOL_VERSION + 1))])
    with Client(server.config, timeout=2) as client, pytest.raises(ProtocolError) as caught:
        client.list_sessions("/")
    assert "restart the daemon" in str(caught.value)
    assert f"speaks protocol {p.PROTOCOL_VERSION + 1}" in str(caught.value)
    assert [type(r).__name__ for r in server.received] == ["Status"]  # the request itself was never sent


def test_error_reply_raises_remote_error(fake: Any) -> None:
    server = fake(
        answer_status_then(lambda rid, req: [(rid, p.ErrorReply(code="not_found", message="no S9"))])
    )
    with Client(server.config, timeout=2) as client, pytest.raises(RemoteError) as caught:
        client.get_session("/", 9)
    assert (caught.value.code, caught.value.message) == ("not_found", "no S9")


def test_a_reply_of_the_wrong_type_is_a_protocol_error(fake: Any) -> None:
    server = fake(answer_status_then(_ok))
    with (
        Client(server.config, timeout=2) as client,
        pytest.raises(ProtocolError, match="expected a SessionReply"),
    ):
        client.get_session("/", 1)


def test_replies_to_other_request_ids_are_dropped(fake: Any) -> None:
    stale = p.ErrorReply(code="internal", message="a late answer to somebody else")
    server = fake(answer_status_then(lambda rid, req: [(b"stale-id", stale), (rid, p.OkReply())]))
    with Client(server.config, timeout=2) as client:
        assert client.delete_session("/", 1) == p.OkReply()


def test_lazy_pirate_reopens_after_a_timeout_and_checks_status_again(fake: Any) -> None:
    def handler(rid: bytes, req: p.Request) -> Answer:
        if isinstance(req, p.GetSession):
            return []  # this one is never answered
        return [(rid, p.OkReply())]

    server = fake(answer_status_then(handler))
    with Client(server.config, timeout=10) as client:
        with pytest.raises(DaemonUnavailable, match=r"did not answer GetSession .* within 0.3 s"):
            client.call(p.GetSession(root="/", session=1), p.OkReply, timeout=0.3)
        assert client.delete_session("/", 2) == p.OkReply()
    names = [type(r).__name__ for r in server.received]
    assert names == ["Status", "GetSession", "Status", "DeleteSession"]  # a read is not sent again


@pytest.mark.parametrize("answered", [False, True])
def test_a_write_that_times_out_is_sent_once_more_with_the_same_key(fake: Any, answered: bool) -> None:
    writes: list[p.DeleteSession] = []

    def handler(rid: bytes, req: p.Request) -> Answer:
        assert isinstance(req, p.DeleteSession)
        writes.append(req)
        return [(rid, p.OkReply())] if answered and len(writes) >= 2 else []  # the first is lost

    server = fake(answer_status_then(handler))
    with Client(server.config, timeout=10) as client:
        if answered:
            assert client.call(p.DeleteSession(root="/", session=1), p.OkReply, timeout=0.3) == p.OkReply()
            assert client.delete_session("/", 2) == p.OkReply()
        else:
            client.busy_wait_s = 0  # no waiting on beyond the second try
            with pytest.raises(NoReply, match=r"DeleteSession .* within 0.3 s, twice .* at most once"):
                client.call(p.DeleteSession(root="/", session=1), p.OkReply, timeout=0.3)
    names = [type(r).__name__ for r in server.received]
    assert names[:4] == ["Status", "DeleteSession", "Status", "DeleteSession"]
    first, again = writes[0], writes[1]
    assert isinstance(first.request_key, str) and len(first.request_key) == 32  # a uuid4's hex
    assert again == first  # the same request, with the same key
    if answered:
        assert isinstance(writes[2].request_key, str) and writes[2].request_key != first.request_key


def test_a_write_behind_long_work_is_waited_for_while_the_daemon_answers(fake: Any) -> None:
    """A rename behind a long ingest was reported failed after two timeouts ("did not answer …
    twice"), then applied: the client waits on while the daemon answers, and says what it waits for."""
    writes: list[p.RenameSession] = []

    def handler(rid: bytes, req: p.Request) -> Answer:
        assert isinstance(req, p.RenameSession)
        writes.append(req)
        if len(writes) < 4:  # busy: the first three tries time out
            return []
        view = p.SessionView(
            id=1, name="done", display_name="done", worktree="", created="", event_count=0,
            message_count=0, state="new",
        )  # fmt: skip
        return [(rid, p.SessionReply(session=view))]

    server = fake(answer_status_then(handler))
    told: list[str] = []
    with Client(server.config, timeout=10, on_wait=told.append) as client:
        reply = client.call(p.RenameSession(root="/w", session=1, name="done"), p.SessionReply, timeout=0.3)
    assert reply.session.name == "done"
    assert len({w.request_key for w in writes}) == 1 and len(writes) == 4  # one key: carried out once
    assert len(told) == 1  # at once, then every 10 s
    assert "still waiting for RenameSession" in told[0] and "/w" in told[0]
    names = [type(r).__name__ for r in server.received]
    assert names == ["Status", "RenameSession"] * 4  # each try checks that the daemon answers first


def test_requests_carry_canonical_roots_and_exact_event_json(fake: Any, tmp_path: Path) -> None:
    events: list[Event] = [
        UserMessage(content="hi"),
        ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "ls"}),
    ]
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    server = fake(answer_status_then(lambda rid, req: [(rid, p.AppendReply(events=[]))]))
    with Client(server.config, timeout=2) as client:
        client.append_events(tmp_path / "link" / ".", 3, events)
    sent = server.received[-1]
    assert isinstance(sent, p.AppendEvents)
    assert sent.root == str((tmp_path / "real").resolve())
    assert sent.events == [encode_event(e).decode() for e in events]


def test_get_events_pages_by_next_seq(fake: Any) -> None:
    stored = [
        p.WireEvent(seq=i, kind="AssistantText", data=f'{{"AssistantText":{{"text":"{i}"}}}}')
        for i in range(1, 8)
    ]

    def page(rid: bytes, req: p.Request) -> Answer:
        assert isinstance(req, p.GetEvents)
        chunk = [e for e in stored if req.from_seq <= e.seq < req.from_seq + req.limit]
        nxt = req.from_seq + req.limit if req.from_seq + req.limit <= len(stored) else None
        return [(rid, p.EventsPage(events=chunk, next_seq=nxt))]

    server = fake(answer_status_then(page))
    with Client(server.config, timeout=2) as client:
        got = list(client.get_events("/", 1, from_seq=2, page_size=3))
    assert [e.seq for e in got] == [2, 3, 4, 5, 6, 7]
    assert [r.from_seq for r in server.received if isinstance(r, p.GetEvents)] == [2, 5]


# -- asyncio client, scripted daemon ----------------------------------------------------------------


def test_async_requests_pipeline_and_replies_match_by_id(fake: Any) -> None:
    held: list[tuple[bytes, p.Request]] = []

    def reverse_after_three(rid: bytes, req: p.Request) -> Answer:
        held.append((rid, req))
        if len(held) < 3:
            return []
        answers: Answer = [(i, p.ContextReply(prompt=str(cast(p.ContextMeter, r).session))) for i, r in held]
        return answers[::-1]  # all three were in flight at once, and come back in reverse

    server = fake(answer_status_then(reverse_after_three))

    async def go() -> list[str]:
        async with AsyncClient(server.config, timeout=3) as client:
            replies = await asyncio.gather(
                *(client.call(p.ContextMeter(root="/", session=n), p.ContextReply) for n in (1, 2, 3))
            )
            return [r.prompt for r in replies]

    assert asyncio.run(go()) == ["1", "2", "3"]
    assert (
        sum(isinstance(r, p.Status) for r in server.received) == 1
    )  # concurrent first requests share the check


def test_async_timeout_fails_what_is_in_flight_and_recovers(fake: Any) -> None:
    answer = [False]
    server = fake(answer_status_then(lambda rid, req: [(rid, p.OkReply())] if answer[0] else []))

    async def go() -> None:
        async with AsyncClient(server.config, timeout=10) as client:
            unanswered = [  # reads: a write would be sent once more (see the test above)
                client.call(p.GetSession(root="/", session=n), p.OkReply, timeout=0.5) for n in (1, 2)
            ]
            results = await asyncio.gather(*unanswered, return_exceptions=True)
            assert all(isinstance(r, DaemonUnavailable) for r in results), results
            answer[0] = True
            assert await client.delete_session("/", 3) == p.OkReply()

    asyncio.run(go())
    assert [type(r).__name__ for r in server.received].count("Status") == 2


def test_async_nothing_listening_is_daemon_unavailable() -> None:
    runtime_dir = short_tmpdir()

    async def go() -> None:
        async with AsyncClient(config_for(runtime_dir), timeout=0.3) as client:
            await client.status()

    try:
        with pytest.raises(DaemonUnavailable, match="azsd is not running"):
            asyncio.run(go())
    finally:
        shutil.rmtree(runtime_dir)


# -- follow_session, scripted ------------------------------------------------------------------------


def _wire(seq: int) -> p.WireEvent:
    return p.WireEvent(
        seq=seq, kind="AssistantText", data=encode_event(AssistantText(text=str(seq))).decode()
    )


class _ScriptedSubscription:
    def __init__(self, owner: _ScriptedClient, steps: list[tuple[list[int], p.Notification | None]]) -> None:
        self.owner = owner
        self.steps = deque(steps)
        self.closed = False

    def recv(self, timeout: float | None = None) -> p.Notification | None:
        stored, note = self.steps.popleft()  # running out means follow_session did not stop: IndexError
        self.owner.stored += [_wire(s) for s in stored]
        return note

    def close(self) -> None:
        self.closed = True


class _ScriptedClient:
    def __init__(self, stored: list[int], steps: list[tuple[list[int], p.Notification | None]]) -> None:
        self.stored = [_wire(s) for s in stored]
        self.log: list[str] = []
        self.subscription = _ScriptedSubscription(self, steps)
        self.fail_next_read = False

    def subscribe(self, root: str, session: int | None = None) -> _ScriptedSubscription:
        self.log.append(f"subscribe {session}")
        return self.subscription

    def get_events(self, root: str, session: int, *, from_seq: int = 1) -> Iterator[p.WireEvent]:
        self.log.append(f"read {from_seq}")
        if self.fail_next_read:
            self.fail_next_read = False
            raise DaemonUnavailable("restarting")
        return iter([e for e in self.stored if e.seq >= from_seq])


def _appended(*seqs: int) -> p.EventsAppended:
    return p.EventsAppended(root="/r", seq=0, session_id=1, events=[_wire(s) for s in seqs])


def _changed(change: str) -> p.SessionChanged:
    return p.SessionChanged(root="/r", seq=0, session_id=1, change=change)


def test_follow_yields_each_event_once_in_order_and_rereads_gaps() -> None:
    steps: list[tuple[list[int], p.Notification | None]] = [
        ([3], _appended(3)),  # live
        ([4], None),  # its notification was dropped: the quiet re-read finds it
        ([5, 6], _appended(6)),  # 5's notification dropped: a gap, re-read
        ([], _appended(6)),  # nothing new
        ([], _changed("renamed")),
        ([], _changed("deleted")),
    ]
    fake_client = _ScriptedClient([1, 2], steps)
    items = list(follow_session(cast(Client, fake_client), "/r", 1, idle_check_s=0.01))
    assert [i.seq if isinstance(i, p.WireEvent) else i.change for i in items] == [
        1,
        2,
        3,
        4,
        5,
        6,
        "renamed",
        "deleted",
    ]
    assert fake_client.log[:2] == ["subscribe 1", "read 1"]  # subscribed before the first read
    assert fake_client.log[2:] == ["read 4", "read 5"]
    assert fake_client.subscription.closed


def test_follow_waits_out_a_daemon_restart() -> None:
    steps: list[tuple[list[int], p.Notification | None]] = [
        ([2], None),
        ([], None),
        ([], _changed("deleted")),
    ]
    fake_client = _ScriptedClient([1], steps)
    items = follow_session(cast(Client, fake_client), "/r", 1, idle_check_s=0.01)
    assert next(items) == _wire(1)
    fake_client.fail_next_read = True
    assert [i.seq if isinstance(i, p.WireEvent) else i.change for i in items] == [2, "deleted"]


def test_follow_without_follow_only_reads() -> None:
    fake_client = _ScriptedClient([1, 2, 3], [])
    items = list(follow_session(cast(Client, fake_client), "/r", 1, from_seq=2, follow=False))
    assert [cast(p.WireEvent, i).seq for i in items] == [2, 3]
    assert fake_client.log == ["read 2"]


# -- against the real daemon ------------------------------------------------------------------------


def test_status_of_the_real_daemon(client: Client) -> None:
    status = client.status()
    assert status.protocol == p.PROTOCOL_VERSION
    assert status.pid > 0


def test_session_lifecycle(client: Client, worktree: Path) -> None:
    first = client.create_session(worktree, "fix parser", worktree="main").session
    second = client.create_session(worktree).session
    assert (first.name, first.worktree, first.state, first.event_count) == ("fix parser", "main", "new", 0)
    assert second.id > first.id and second.display_name == f"S{second.id}"
    assert (worktree / ".azureal" / "sessions.azs").is_file()
    assert [v.id for v in client.list_sessions(worktree, "main").sessions] == [first.id]
    assert client.list_sessions(worktree).total == 2
    assert client.rename_session(worktree, second.id, "renamed").session.name == "renamed"
    assert client.get_session(worktree, second.id).session.display_name == "renamed"
    client.delete_session(worktree, second.id)
    with pytest.raises(RemoteError) as caught:
        client.get_session(worktree, second.id)
    assert caught.value.code == "not_found"
    assert client.create_session(worktree).session.id > second.id  # numbers are never reused


def test_events_context_completion_and_compaction(client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "ctx").session.id
    events: list[Event] = [UserMessage(content=f"prompt {i}") for i in range(5)]
    events.append(AssistantText(text="answer"))
    appended = client.append_events(worktree, sid, events).events
    assert [e.seq for e in appended] == [1, 2, 3, 4, 5, 6]
    assert [decode_event(e.data) for e in client.get_events(worktree, sid, page_size=2)] == events
    assert client.get_session(worktree, sid).session.state == "ended"  # no completion, nothing follows it
    prompt = client.build_context(worktree, sid, "next", backend="codex").prompt
    assert prompt.startswith("<azureal-session-context>") and prompt.endswith("next")
    assert "prompt 4" in prompt
    client.append_events(worktree, sid, [Complete(success=False, duration_ms=1500, cost_usd=0.5)])
    assert client.get_session(worktree, sid).session.state == "failed"
    client.mark_completed(worktree, sid, True, duration_ms=10, cost_usd=0.1)
    assert client.get_session(worktree, sid).session.state == "succeeded"
    boundary = client.compaction_boundary(worktree, sid, keep=2).after_seq
    assert boundary is not None
    client.store_compaction(worktree, sid, boundary, "SUMMARY")
    assert "SUMMARY" in client.build_context(worktree, sid, "again").prompt
    meter = client.context_meter(worktree, sid)
    assert meter.threshold == 400_000 and 0 < meter.chars < meter.threshold


def test_search_finds_prompts(client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    client.append_events(
        worktree, sid, [UserMessage(content="Why does it PANIC here?"), AssistantText(text="ok")]
    )
    hits = client.search(worktree, "panic").hits
    assert [(h.session, decode_event(h.data)) for h in hits] == [
        (sid, UserMessage(content="Why does it PANIC here?"))
    ]


@requires_corpus
def test_ingest_a_corpus_file(client: Client, worktree: Path) -> None:
    source = corpus_files("claude-stream-json")[0]
    sid = client.create_session(worktree).session.id
    reply = client.ingest_file(worktree, sid, source)
    assert reply.format == "claude-stream-json" and reply.appended > 0
    assert len(list(client.get_events(worktree, sid))) == reply.appended
    assert client.ingest_file(worktree, sid, source).appended == 0  # dedup on a second ingest


def test_remote_errors_for_bad_roots_and_sessions(client: Client, worktree: Path) -> None:
    with pytest.raises(RemoteError) as caught:
        client.list_sessions(worktree / "missing")
    assert caught.value.code == "no_such_root"
    with pytest.raises(RemoteError) as caught:
        client.get_events_page(worktree, 99)
    assert caught.value.code == "not_found"


def test_subscription_sees_another_clients_changes(daemon: DaemonProc, worktree: Path) -> None:
    with daemon.client() as writer, daemon.client() as reader, reader.subscribe(worktree) as subscription:
        sid = writer.create_session(worktree).session.id
        last = _joined(subscription, lambda: writer.rename_session(worktree, sid, "ping"))
        writer.append_events(worktree, sid, [UserMessage(content="hello")])
        appended = subscription.recv(5)
        assert isinstance(appended, p.EventsAppended)
        assert appended.root == str(worktree.resolve()) and appended.session_id == sid
        assert [decode_event(e.data) for e in appended.events] == [UserMessage(content="hello")]
        assert appended.seq == last.seq + 1  # the store's notifications are numbered without gaps
        writer.rename_session(worktree, sid, "pong")
        renamed = subscription.recv(5)
        assert isinstance(renamed, p.SessionChanged) and renamed.session is not None
        assert (renamed.change, renamed.session.name, renamed.seq) == ("renamed", "pong", appended.seq + 1)


def _joined(subscription: azsd_client.Subscription, poke: Callable[[], object]) -> p.Notification:
    """PUB drops what is sent before a SUB has joined: poke until something arrives, then drain.

    Returns the last notification received, once none has come for a while.
    """
    deadline = time.monotonic() + 10
    last = None
    while last is None and time.monotonic() < deadline:
        poke()
        last = subscription.recv(0.2)
    while last is not None:
        note = subscription.recv(0.3)
        if note is None:
            return last
        last = note
    pytest.fail("no notification within 10 s")


def test_async_client_pipelines_against_the_daemon(daemon: DaemonProc, worktree: Path) -> None:
    async def go() -> None:
        async with AsyncClient(daemon.config, timeout=10) as client:
            views = await asyncio.gather(*(client.create_session(worktree, f"s{i}") for i in range(20)))
            ids = [v.session.id for v in views]
            assert len(set(ids)) == 20
            await asyncio.gather(
                *(client.append_events(worktree, i, [UserMessage(content=f"to {i}")]) for i in ids)
            )
            events = [[e async for e in client.get_events(worktree, i)] for i in ids]
            assert [decode_event(e[0].data) for e in events] == [UserMessage(content=f"to {i}") for i in ids]
            listed = await client.list_sessions(worktree, limit=5, offset=0)
            assert listed.total == 20 and len(listed.sessions) == 5

    asyncio.run(go())


def test_async_subscription_sees_sync_changes(daemon: DaemonProc, worktree: Path) -> None:
    async def go() -> None:
        with daemon.client() as writer:
            sid = writer.create_session(worktree).session.id
            async with AsyncClient(daemon.config) as client:
                async with client.subscribe(worktree, sid) as subscription:
                    for _ in range(50):
                        writer.rename_session(worktree, sid, "poke")
                        note = await subscription.recv(0.2)
                        if note is not None:
                            break
                    assert isinstance(note, p.SessionChanged) and note.change == "renamed"
                    writer.delete_session(worktree, sid)
                    gone = await subscription.recv(5)
                    assert (
                        isinstance(gone, p.SessionChanged)
                        and gone.change == "deleted"
                        and gone.session is None
                    )

    asyncio.run(go())


def test_shutdown_stops_the_daemon() -> None:
    with running_daemon() as own:
        with own.client() as client:
            assert client.shutdown() == p.ShutdownReply()
        own.proc.wait(STOP_TIMEOUT_S)
        assert own.proc.returncode == 0
        with Client(own.config, timeout=0.3) as client, pytest.raises(DaemonUnavailable):
            client.status()
