"""The real daemon as a subprocess: lifecycle, single instance, stale sockets, bad input, writes."""

from __future__ import annotations

import shutil
import signal
import socket
import sqlite3
import stat
import time
from pathlib import Path

import msgspec

from azsd.events import AssistantText, Complete, Event, UserMessage, decode_event, encode_event
from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer
from tests.daemon_fixture import DaemonProc, daemon, short_tmpdir, start_daemon

__all__ = ["daemon"]  # the fixture, re-exported for pytest


def worktree() -> Path:
    path = short_tmpdir()
    return path


def test_status_and_discovery(daemon: DaemonProc) -> None:
    reply = daemon.request(p.Status())
    assert isinstance(reply, p.StatusReply)
    assert reply.protocol == p.PROTOCOL_VERSION and reply.pid == daemon.proc.pid and reply.uptime_s >= 0
    discovery = msgspec.json.decode((daemon.runtime_dir / "azsd.json").read_bytes())
    assert discovery["pid"] == daemon.proc.pid and discovery["rpc"] == daemon.rpc
    assert stat.S_IMODE(daemon.runtime_dir.stat().st_mode) == 0o700
    assert stat.S_ISSOCK((daemon.runtime_dir / "rpc").stat().st_mode)


def test_session_lifecycle_and_notifications(daemon: DaemonProc) -> None:
    root = worktree()
    sub = daemon.subscribe(p.topic(str(root)))
    created = daemon.request(p.CreateSession(root=str(root), name="demo", worktree="main"))
    assert isinstance(created, p.SessionReply) and created.session.display_name == "demo"
    sid = created.session.id
    topic, note = daemon.next_note(sub)
    assert topic == p.topic(str(root), sid)
    assert isinstance(note, p.SessionCreated) and note.seq == 1 and note.session.id == sid

    events: list[Event] = [
        UserMessage(content="hi"),
        AssistantText(text="hello"),
        Complete(success=True, duration_ms=9, cost_usd=0.5),
    ]
    appended = daemon.request(
        p.AppendEvents(root=str(root), session=sid, events=[encode_event(e).decode() for e in events])
    )
    assert isinstance(appended, p.AppendReply) and [e.seq for e in appended.events] == [1, 2, 3]
    _, note = daemon.next_note(sub)
    assert isinstance(note, p.EventsAppended) and note.seq == 2
    assert [decode_event(e.data) for e in note.events] == events
    _, note = daemon.next_note(sub)
    assert isinstance(note, p.SessionChanged) and note.change == "completed" and note.seq == 3

    page = daemon.request(p.GetEvents(root=str(root), session=sid, from_seq=2, limit=1))
    assert isinstance(page, p.EventsPage) and [e.seq for e in page.events] == [2] and page.next_seq == 3
    last = daemon.request(p.GetEvents(root=str(root), session=sid, from_seq=3))
    assert isinstance(last, p.EventsPage) and last.next_seq is None

    listed = daemon.request(p.ListSessions(root=str(root)))
    assert (
        isinstance(listed, p.SessionsReply) and listed.total == 1 and listed.sessions[0].state == "succeeded"
    )
    ctx = daemon.request(p.BuildContext(root=str(root), session=sid, prompt="next"))
    assert isinstance(ctx, p.ContextReply) and ctx.prompt.endswith("</azureal-session-context>\n\nnext")
    meter = daemon.request(p.ContextMeter(root=str(root), session=sid))
    assert isinstance(meter, p.MeterReply) and meter.chars == len("hi") + len("hello")

    renamed = daemon.request(p.RenameSession(root=str(root), session=sid, name="better"))
    assert isinstance(renamed, p.SessionReply) and renamed.session.name == "better"
    assert isinstance(daemon.request(p.DeleteSession(root=str(root), session=sid)), p.OkReply)
    missing = daemon.request(p.GetSession(root=str(root), session=sid))
    assert isinstance(missing, p.ErrorReply) and missing.code == "not_found"
    # The store is AZUREAL's file, written by the daemon.
    with sqlite3.connect(root / ".azureal" / "sessions.azs") as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone() == (0,)
    shutil.rmtree(root, ignore_errors=True)


def test_errors_are_replies_and_the_daemon_keeps_serving(daemon: DaemonProc) -> None:
    root = worktree()
    assert isinstance(daemon.request(p.CreateSession(root="relative/path")), p.ErrorReply)
    nope = daemon.request(p.CreateSession(root="/definitely/not/here"))
    assert isinstance(nope, p.ErrorReply) and nope.code == "no_such_root"
    bad_event = daemon.request(p.AppendEvents(root=str(root), session=1, events=["{not an event"]))
    assert isinstance(bad_event, p.ErrorReply)
    sock = connect_dealer(daemon.ctx, daemon.rpc)
    garbage = [
        [b"1", b"\xc1\xc1 not msgpack"],
        [b"2", msgspec.msgpack.encode({"op": "no-such-op"})],
        [b"3", msgspec.msgpack.encode({"op": "getsession", "root": "/", "session": "three"})],
        [b"4", msgspec.msgpack.encode([1, 2, 3])],
        [b"5", b"a", b"b", b"c"],
        [b""],
    ]
    for frames in garbage:
        sock.send_multipart(frames)
    codes = []
    for _ in garbage:
        assert sock.poll(5000)
        reply = p.decode_reply(sock.recv_multipart()[-1])
        assert isinstance(reply, p.ErrorReply)
        codes.append(reply.code)
    assert codes == ["bad_request"] * len(garbage)
    # A client that sends and vanishes before the reply.
    gone = connect_dealer(daemon.ctx, daemon.rpc)
    gone.send_multipart([b"x", p.encode(p.ListSessions(root=str(root)))])
    gone.close(linger=0)
    assert isinstance(daemon.request(p.Status()), p.StatusReply)
    sock.close(linger=0)
    shutil.rmtree(root, ignore_errors=True)


def test_a_store_that_is_not_sqlite_does_not_stop_others(daemon: DaemonProc) -> None:
    bad, good = worktree(), worktree()
    (bad / ".azureal").mkdir()
    (bad / ".azureal" / "sessions.azs").write_bytes(b"garbage " * 512)
    reply = daemon.request(p.ListSessions(root=str(bad)))
    assert isinstance(reply, p.ErrorReply) and reply.code == "not_a_store"
    assert isinstance(daemon.request(p.CreateSession(root=str(good))), p.SessionReply)
    assert (bad / ".azureal" / "sessions.azs").read_bytes() == b"garbage " * 512
    shutil.rmtree(bad)
    shutil.rmtree(good, ignore_errors=True)  # (the daemon may still be writing its new store's journal)


def test_second_daemon_is_refused_naming_the_pid(daemon: DaemonProc) -> None:
    second = start_daemon(daemon.runtime_dir, wait=False)
    assert second.proc.wait(10) == 1
    err = second.log_text()
    second.close()
    assert f"already running (pid {daemon.proc.pid}" in err
    assert isinstance(daemon.request(p.Status()), p.StatusReply)


def test_sigterm_stops_promptly_and_keeps_acknowledged_writes(daemon: DaemonProc) -> None:
    root = worktree()
    sid = daemon.request(p.CreateSession(root=str(root)))
    assert isinstance(sid, p.SessionReply)
    texts = [f"event {i}" for i in range(200)]
    reply = daemon.request(
        p.AppendEvents(
            root=str(root),
            session=sid.session.id,
            events=[encode_event(AssistantText(text=t)).decode() for t in texts],
        )
    )
    assert isinstance(reply, p.AppendReply)
    started = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - started < 2.0
    assert not (daemon.runtime_dir / "rpc").exists() and not (daemon.runtime_dir / "azsd.json").exists()
    with sqlite3.connect(root / ".azureal" / "sessions.azs") as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (200,)
    shutil.rmtree(root, ignore_errors=True)


def test_kill_9_then_restart_over_the_stale_socket() -> None:
    base = short_tmpdir()
    first = start_daemon(base / "run")
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait()
    assert (base / "run" / "rpc").exists()  # left behind
    second = start_daemon(base / "run")
    try:
        reply = second.request(p.Status())
        assert isinstance(reply, p.StatusReply) and reply.pid == second.proc.pid
    finally:
        second.close()
        first.close()
        shutil.rmtree(base, ignore_errors=True)


def test_shutdown_request() -> None:
    base = short_tmpdir()
    d = start_daemon(base / "run")
    assert isinstance(d.request(p.Shutdown()), p.ShutdownReply)
    assert d.proc.wait(5) == 0
    d.close()
    shutil.rmtree(base, ignore_errors=True)


def test_systemd_readiness_over_a_real_datagram_socket() -> None:
    base = short_tmpdir()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(base / "notify"))
    listener.settimeout(10)
    d = start_daemon(base / "run", env={"NOTIFY_SOCKET": str(base / "notify"), "WATCHDOG_USEC": "200000"})
    try:
        messages = [listener.recv(4096).decode() for _ in range(2)]
        assert messages[0].startswith("READY=1")
        assert f"MAINPID={d.proc.pid}" in messages[0]
        assert messages[1] == "WATCHDOG=1"
        d.stop()
        while (message := listener.recv(4096).decode()) == "WATCHDOG=1":
            pass
        assert message == "STOPPING=1"
    finally:
        d.close()
        listener.close()
        shutil.rmtree(base, ignore_errors=True)


def test_oversized_message_is_dropped_not_fatal() -> None:
    base = short_tmpdir()
    config = base / "config.toml"
    config.write_text("max-message-bytes = 1000\n")
    d = start_daemon(base / "run", env={"AZSD_CONFIG": str(config)})
    try:
        sock = connect_dealer(d.ctx, d.rpc)
        sock.send_multipart([b"1", b"x" * 5000])
        assert not sock.poll(300)  # ZeroMQ dropped the connection: no reply, no crash
        sock.close(linger=0)
        assert isinstance(d.request(p.Status()), p.StatusReply)
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
