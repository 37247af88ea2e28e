"""The typed client (sync, asyncio): its public surface, then against the real daemon.

The end-to-end tests start the real daemon (`python -m azsd run --runtime-dir <tmp>`, see
tests/daemon_fixture.py) through :func:`running_daemon`, whose fixtures `tests/test_cli.py` uses too.
A daemon that does not start, answer, or stop on SIGTERM fails them. The client against a scripted
ROUTER: tests/test_client_scripted.py and tests/test_client_follow.py.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import importlib
import inspect
import signal
import subprocess
import time
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import azsd_client
from azsd.errors import DaemonUnavailable, RemoteError
from azsd.events import AssistantText, Complete, Event, UserMessage, decode_event
from azsd.ipc import protocol as p
from azsd_client import AsyncClient, Client
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir

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
        "azsd.version",  # __version__ (never the package root, whose names include the store)
        "azsd.ipc.protocol",
        "azsd.ipc.transport",
        "azsd.config",
        "azsd.errors",
        "azsd.events",
        "azsd.export",  # pure core: the web view shows events as the export does
        "azsd.files",
        "azsd.histories",  # where the agents keep their histories (import --all; the daemon's watch too)
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
