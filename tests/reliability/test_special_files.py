"""Special files never hang or loop the daemon (issue 2/7): an `IngestFile` of a FIFO or of
/dev/zero is refused at once, naming what the file is, and a followed path that becomes a FIFO
stops nobody else's follow."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir
from tests.reliability.common import stored_data, wait_until

TURN = (
    b'{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}\n'
    b'{"type":"assistant","session_id":"s","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}\n'
)


@pytest.fixture
def daemon_and_session() -> Iterator[tuple[DaemonProc, Path, int]]:
    with daemon_in_tmpdir() as d:
        root = d.runtime_dir.parent / "w"
        root.mkdir()
        reply = d.request(p.CreateSession(root=str(root)))
        assert isinstance(reply, p.SessionReply)
        yield d, root, reply.session.id


@pytest.mark.parametrize("fmt", [None, "claude-stream-json"])
def test_ingesting_a_fifo_is_refused_at_once(
    daemon_and_session: tuple[DaemonProc, Path, int], fmt: str | None
) -> None:
    d, root, sid = daemon_and_session
    fifo = root / "agent.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    reply = d.request(p.IngestFile(root=str(root), session=sid, path=str(fifo), format=fmt), timeout_ms=4000)
    assert isinstance(reply, p.ErrorReply) and reply.code == "ingest_error", reply
    assert "FIFO" in reply.message and str(fifo) in reply.message
    assert time.monotonic() - started < 2.0
    # The store's write lock was not left held: the next write goes through.
    assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)


def test_ingesting_dev_zero_is_refused_not_looped(daemon_and_session: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = daemon_and_session
    started = time.monotonic()
    reply = d.request(
        p.IngestFile(root=str(root), session=sid, path="/dev/zero", format="claude-stream-json"),
        timeout_ms=4000,
    )
    assert isinstance(reply, p.ErrorReply) and reply.code == "ingest_error", reply
    assert "character device" in reply.message
    assert time.monotonic() - started < 2.0


def test_a_followed_path_that_becomes_a_fifo_stops_no_other_follow(
    daemon_and_session: tuple[DaemonProc, Path, int],
) -> None:
    d, root, sid = daemon_and_session
    other = d.request(p.CreateSession(root=str(root)))
    assert isinstance(other, p.SessionReply)
    bad, good = root / "bad.jsonl", root / "good.jsonl"
    bad.write_bytes(TURN)
    good.write_bytes(TURN)
    for path, session in ((bad, sid), (good, other.session.id)):
        assert isinstance(d.request(p.Follow(root=str(root), session=session, path=str(path))), p.FollowReply)
    wait_until(lambda: len(stored_data(d, root, other.session.id)) == 2, 10, "the good file's first lines")
    bad.unlink()
    os.mkfifo(bad)  # the follower thread must not block opening it
    time.sleep(0.6)  # a few polls
    with good.open("ab") as out:
        out.write(
            b'{"type":"assistant","session_id":"s","message":{"id":"m2","content":[{"type":"text","text":"more"}]}}\n'
        )
    wait_until(lambda: len(stored_data(d, root, other.session.id)) == 3, 10, "the good file's new line")
    assert d.proc.poll() is None


def test_a_writer_pid_that_is_no_pid_is_refused_and_not_remembered(
    daemon_and_session: tuple[DaemonProc, Path, int],
) -> None:
    d, root, sid = daemon_and_session
    path = root / "run.jsonl"
    path.write_bytes(TURN)
    reply = d.request(p.Follow(root=str(root), session=sid, path=str(path), writer_pid=2**40))
    assert isinstance(reply, p.ErrorReply) and reply.code == "follow_error", reply
    assert "writer_pid" in reply.message
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply) and status.follows == []
    assert "OverflowError" not in d.log_text()


def test_ingesting_a_file_that_keeps_growing_ends(daemon_and_session: tuple[DaemonProc, Path, int]) -> None:
    """Reads stop at the size fstat saw when the file was opened: a file another program appends
    to faster than it is stored (a live agent's, a runaway log) is ingested as it was, and ends."""
    d, root, sid = daemon_and_session
    target = root / "growing.jsonl"
    block = b"".join(
        b'{"type":"assistant","session_id":"s","message":{"id":"g%d",'
        b'"content":[{"type":"text","text":"line %d"}]}}\n' % (i, i)
        for i in range(2000)
    )
    target.write_bytes(TURN + block * 10)
    stop = threading.Event()

    def grow() -> None:  # about 40 MB/s, for 12 s at most: faster than any ingest here
        with open(target, "ab") as out:
            deadline = time.monotonic() + 12
            while not stop.is_set() and time.monotonic() < deadline:
                out.write(block)
                out.flush()
                time.sleep(0.005)

    writer = threading.Thread(target=grow)
    writer.start()
    try:
        time.sleep(0.2)
        reply = d.request(
            p.IngestFile(root=str(root), session=sid, path=str(target), format="claude-stream-json"),
            timeout_ms=10_000,
        )
    finally:
        stop.set()
        writer.join()
    assert isinstance(reply, p.IngestReply), reply
    lines_now = target.read_bytes().count(b"\n")
    assert 2 + 20_000 <= reply.lines < lines_now  # what was there when it began, not what came after
