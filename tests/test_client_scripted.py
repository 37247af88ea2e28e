"""The typed client (sync, asyncio) against a scripted ROUTER (tests/scripted_daemon.py): timeouts,
retries, version checks, replies matched by id.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import time
from pathlib import Path
from typing import Any, cast

import pytest
import zmq

from azsd.errors import DaemonUnavailable, NoReply, ProtocolError, RemoteError
from azsd.events import Event, ToolCall, UserMessage, encode_event
from azsd.ipc import protocol as p
from azsd_client import AsyncClient, Client
from tests.daemon_fixture import config_for, short_tmpdir
from tests.scripted_daemon import Answer, _ok, _status_reply, answer_status_then, fake

__all__ = ["fake"]  # the fixtures, re-exported for pytest


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
