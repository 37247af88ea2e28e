"""A retried request never writes twice (issue 2/7).

Seen on main: `azs new --timeout 1` timed out while the store was busy, but the `CreateSession` was
committed, so the retry made a second session. Mutating requests now carry a `request_key`; the
daemon answers a request whose key it knows (on disk, or still running) with the first reply.

The store is kept busy by a foreign writer (an AZUREAL-style connection holding the write lock), and
released only once the daemon's log says the retry arrived, so no assertion depends on timing.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import zmq

from azsd.errors import DaemonUnavailable
from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer, recv_reply, send_request
from azsd_client import AsyncClient
from azsd_client.cli import main
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir, start_daemon
from tests.reliability.common import stream_lines, wait_until

#: What the daemon logs when a retry arrives while the first request still runs.
RETRY_WAITS = "waits for the first"


@pytest.fixture
def daemon_and_root() -> Iterator[tuple[DaemonProc, Path]]:
    with daemon_in_tmpdir() as d:
        root = d.runtime_dir.parent / "w"
        root.mkdir()
        yield d, root


def total(d: DaemonProc, root: Path) -> int:
    reply = d.request(p.ListSessions(root=str(root), archived="include"))
    assert isinstance(reply, p.SessionsReply), reply
    return reply.total


@contextmanager
def foreign_lock(root: Path) -> Iterator[sqlite3.Connection]:
    """The store's write lock, held by another program (as AZUREAL holds it while it writes)."""
    holder = sqlite3.connect(
        root / ".azureal" / "sessions.azs", isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield holder
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()


def release_on_retry(d: DaemonProc, holder: sqlite3.Connection, fallback_s: float = 4.0) -> threading.Thread:
    """Roll `holder` back once the daemon logs that a retry waits for its first (or after
    `fallback_s`, under the daemon's 5 s busy timeout, so that a daemon without the feature ends the
    test with the work committed)."""

    def run() -> None:
        deadline = time.monotonic() + fallback_s
        while RETRY_WAITS not in d.log_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        holder.execute("ROLLBACK")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


class Pipe:
    """One DEALER on the daemon: send now, read the replies later (in the order they come)."""

    def __init__(self, d: DaemonProc) -> None:
        self.sock = connect_dealer(d.ctx, d.rpc)
        self.n = 0

    def send(self, message: p._Msg) -> bytes:
        self.n += 1
        rid = f"r{self.n}".encode()
        send_request(self.sock, rid, p.encode(message))
        return rid

    def replies(self, count: int, timeout_ms: int = 20_000) -> dict[bytes, bytes]:
        out: dict[bytes, bytes] = {}
        while len(out) < count:
            assert self.sock.poll(timeout_ms), f"only {len(out)} of {count} replies"
            rid, payload = recv_reply(self.sock)
            out[rid] = payload
        return out

    def close(self) -> None:
        self.sock.close(linger=0)


def test_a_create_sent_again_with_its_key_creates_one_session(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    notes = d.subscribe(str(root).encode() + b"\0")
    request = p.CreateSession(root=str(root), name="fix parser", request_key="k-create-1")
    # The first try: sent, and its reply never read (the client timed out and went away).
    lost = connect_dealer(d.ctx, d.rpc)
    send_request(lost, b"lost", p.encode(request))
    assert lost.poll(5000)
    lost.close(linger=0)
    # The retries, with the same key.
    first, second = d.request(request), d.request(request)
    assert isinstance(first, p.SessionReply), first
    assert first == second
    assert total(d, root) == 1
    _, note = d.next_note(notes)
    assert isinstance(note, p.SessionCreated)
    assert not notes.poll(300), "a retry announced a second session"


def test_a_retry_while_the_first_still_waits_for_the_store_runs_once(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
    request = p.CreateSession(root=str(root), name="busy", request_key="k-busy")
    one, two = Pipe(d), Pipe(d)
    try:
        with foreign_lock(root) as holder:
            one.send(request)
            two.send(request)  # the client timed out and asked again, on a new socket
            release_on_retry(d, holder).join()
        (a,) = one.replies(1).values()
        (b,) = two.replies(1).values()
    finally:
        one.close()
        two.close()
    assert isinstance(p.decode_reply(a), p.SessionReply), p.decode_reply(a)
    assert a == b
    assert total(d, root) == 2


def test_a_retried_long_ingest_runs_once(daemon_and_root: tuple[DaemonProc, Path]) -> None:
    d, root = daemon_and_root
    created = d.request(p.CreateSession(root=str(root)))
    assert isinstance(created, p.SessionReply)
    agent = root / "run.jsonl"
    agent.write_bytes(b"".join(stream_lines(30_000)))
    request = p.IngestFile(
        root=str(root), session=created.session.id, path=str(agent), format="claude-stream-json",
        request_key="k-ingest",
    )  # fmt: skip
    pipe = Pipe(d)
    try:
        pipe.send(request)
        pipe.send(request)  # pipelined behind the first, which is still reading the file
        a, b = pipe.replies(2).values()
    finally:
        pipe.close()
    first = p.decode_reply(a)
    assert isinstance(first, p.IngestReply), first
    assert first.appended > 0 and first.duplicates == 0
    assert a == b  # a second run would have found every event stored already (duplicates)


def test_a_key_used_for_another_request_is_refused_and_writes_nothing(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    created = d.request(p.CreateSession(root=str(root), name="a", request_key="k-reused"))
    assert isinstance(created, p.SessionReply), created
    sid = created.session.id
    for other in (
        p.CreateSession(root=str(root), name="b", request_key="k-reused"),
        p.RenameSession(root=str(root), session=sid, name="zzz", request_key="k-reused"),
    ):
        reply = d.request(other)
        assert isinstance(reply, p.ErrorReply), reply
        assert reply.code == "bad_request"
        assert "request_key" in reply.message and "another request" in reply.message, reply.message
    assert total(d, root) == 1
    got = d.request(p.GetSession(root=str(root), session=sid))
    assert isinstance(got, p.SessionReply) and got.session.name == "a"
    # The same while the first is still running: one pipeline, so they arrive in order.
    pipe = Pipe(d)
    try:
        with foreign_lock(root) as holder:
            first = pipe.send(p.CreateSession(root=str(root), name="c", request_key="k-flight"))
            second = pipe.send(p.CreateSession(root=str(root), name="d", request_key="k-flight"))
            conflict = p.decode_reply(pipe.replies(1)[second])  # answered at once, the store still locked
            holder.execute("ROLLBACK")
        done = p.decode_reply(pipe.replies(1)[first])
    finally:
        pipe.close()
    assert isinstance(conflict, p.ErrorReply) and conflict.code == "bad_request", conflict
    assert isinstance(done, p.SessionReply) and done.session.name == "c", done
    assert total(d, root) == 2


def test_a_key_is_remembered_across_a_kill_9() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    request = p.CreateSession(root=str(root), name="kept", request_key="k-restart")
    d = start_daemon(base / "run")
    try:
        first = d.request(request)
        assert isinstance(first, p.SessionReply), first
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.close()
        d = start_daemon(base / "run")
        again = d.request(request)
        assert again == first
        assert total(d, root) == 1
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_failed_request_is_not_remembered(daemon_and_root: tuple[DaemonProc, Path]) -> None:
    d, root = daemon_and_root
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
    rename = p.RenameSession(root=str(root), session=2, name="later", request_key="k-failed")
    for _ in range(2):
        reply = d.request(rename)
        assert isinstance(reply, p.ErrorReply) and reply.code == "not_found", reply
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
    renamed = d.request(rename)  # now it can be done, and it is
    assert isinstance(renamed, p.SessionReply) and renamed.session.name == "later", renamed


@pytest.mark.parametrize("key", ["", "k" * 129, "line\nbreak", "nul\0", "tab\tkey", "ключ"])
def test_a_bad_key_is_a_bad_request_and_leaves_no_trace(
    daemon_and_root: tuple[DaemonProc, Path], key: str
) -> None:
    d, root = daemon_and_root
    reply = d.request(p.CreateSession(root=str(root), request_key=key))
    assert isinstance(reply, p.ErrorReply) and reply.code == "bad_request", reply
    assert "request_key" in reply.message, reply.message
    assert not (root / ".azureal").exists()
    ok = d.request(p.CreateSession(root=str(root), request_key="k" * 128))
    assert isinstance(ok, p.SessionReply), ok


def test_the_client_asks_again_with_the_same_key_when_a_write_times_out(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
    with foreign_lock(root) as holder, d.client(timeout=1.5) as client:
        client.status()
        release = release_on_retry(d, holder)
        try:
            reply = client.create_session(root, "late")  # times out once, then gets the first's reply
        except DaemonUnavailable:
            release.join()
            wait_until(lambda: total(d, root) == 2, 10, "the timed-out create to commit")
            raise
        release.join()
    assert reply.session.name == "late"
    assert total(d, root) == 2


def test_the_async_client_asks_again_with_the_same_key_when_a_write_times_out(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    created = d.request(p.CreateSession(root=str(root)))
    assert isinstance(created, p.SessionReply)

    async def rename() -> p.SessionReply:
        async with AsyncClient(d.config, timeout=1.5, context=zmq.Context.instance()) as client:
            await client.status()
            with foreign_lock(root) as holder:
                release = release_on_retry(d, holder)
                try:
                    return await client.rename_session(root, created.session.id, "renamed late")
                finally:
                    release.join()

    reply = asyncio.run(rename())
    assert reply.session.name == "renamed late"
    assert total(d, root) == 1


def azs(capsys: pytest.CaptureFixture[str], d: DaemonProc, *argv: str) -> tuple[int, str]:
    """`azs argv…` in this process, on the test's daemon: (exit status, stderr)."""
    try:
        main(["--runtime-dir", str(d.runtime_dir), *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


def test_azs_new_with_a_short_timeout_on_a_busy_store_creates_one_session(
    capsys: pytest.CaptureFixture[str], daemon_and_root: tuple[DaemonProc, Path]
) -> None:
    """The case seen on main: `azs new --timeout 1` timed out, and was committed all the same."""
    d, root = daemon_and_root
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
    with foreign_lock(root) as holder:
        release = release_on_retry(d, holder)
        code, err = azs(capsys, d, "new", "--root", str(root), "--timeout", "1", "late")
        release.join()
    assert (code, err) == (0, "")
    wait_until(lambda: total(d, root) >= 2, 10, "the create to commit")
    assert total(d, root) == 2


def test_azs_waits_for_a_write_and_never_reports_a_failure_that_is_then_applied(
    capsys: pytest.CaptureFixture[str], daemon_and_root: tuple[DaemonProc, Path]
) -> None:
    """`azs new` said "did not answer … twice" and exited 1, and the session was made later: it
    waits while the daemon answers, saying so; here another program holds the lock past the
    daemon's own 5 s wait, so the create fails, says why, and is never made."""
    d, root = daemon_and_root
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
    with foreign_lock(root):
        code, err = azs(capsys, d, "new", "--root", str(root), "--timeout", "0.5", "late")
    assert code == 1
    lines = err.splitlines()
    assert len(lines) >= 2, err  # once a wait passes 10 s (a slow machine), it says so again
    assert all(line.startswith("azs: still waiting for CreateSession after ") for line in lines[:-1]), err
    assert "database is locked" in lines[-1] and "twice" not in err, err
    time.sleep(1.0)
    assert total(d, root) == 1  # truly not made
    code, err = azs(capsys, d, "new", "--root", str(root), "--timeout", "0.5", "now")
    assert code == 0 and err == "", err
    assert total(d, root) == 2
