"""Live follow through the real daemon: torn writes, restarts, kill -9, truncation, huge lines."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from azsd.compact import prepare_for_store
from azsd.events import Complete, decode_event, encode_event
from azsd.ingest.file import parse_file
from azsd.ipc import protocol as p
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon

ONE_PER_FORMAT = [
    "claude-stream-json/claude-clean__claude-stream-json-simple.jsonl",
    "claude-session/agentcmd__full-session-two.jsonl",
    "codex-exec-json/rust-claude-codes__file_change.jsonl",
    "codex-rollout/agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
]


def corpus(name: str) -> Path:
    matches = [f for f in corpus_files() if f"{f.parent.name}/{f.name}" == name]
    assert matches, name
    return matches[0]


def expected_data(path: Path) -> list[str]:
    """What a one-shot parse of the whole file stores into an empty session."""
    return [encode_event(e).decode() for e in prepare_for_store(parse_file(path)[0])]


def write_slowly(
    src: Path, target: Path, *, delay: float = 0.002, torn_every: int = 4, start: int = 0
) -> None:
    """Append `src`'s lines to `target` the way an agent writes: line by line, some torn in two."""
    lines = src.read_bytes().splitlines(keepends=True)
    with open(target, "ab") as out:
        for i, line in enumerate(lines[start:], start=start):
            if torn_every and i % torn_every == 0 and len(line) > 2:
                out.write(line[: len(line) // 2])
                out.flush()
                time.sleep(delay * 5)
                out.write(line[len(line) // 2 :])
            else:
                out.write(line)
            out.flush()
            time.sleep(delay)


def wall_time_filled(got: list[str], want: list[str]) -> list[str]:
    """`got`, with the wall-time duration the daemon gives a Complete that reported 0 set back to 0."""
    out = []
    for g, w in zip(got, want, strict=False):
        ge, we = decode_event(g), decode_event(w)
        if isinstance(ge, Complete) and isinstance(we, Complete) and we.duration_ms == 0:
            assert ge.duration_ms > 0, "a zero duration is replaced by the turn's wall time"
            g = encode_event(msgspec.structs.replace(ge, duration_ms=0)).decode()
        out.append(g)
    return out + got[len(want) :]


def stored(d: DaemonProc, root: Path, sid: int) -> list[str]:
    page = d.request(p.GetEvents(root=str(root), session=sid, limit=100_000))
    assert isinstance(page, p.EventsPage)
    return [e.data for e in page.events]


def wait_for(d: DaemonProc, root: Path, sid: int, count: int, timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        got = stored(d, root, sid)
        if len(got) >= count or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def follow(d: DaemonProc, root: Path, sid: int, path: Path, **kw: object) -> p.FollowView:
    reply = d.request(p.Follow(root=str(root), session=sid, path=str(path), **kw))  # type: ignore[arg-type]
    assert isinstance(reply, p.FollowReply), reply
    return reply.follow


@pytest.fixture
def env() -> Iterator[tuple[DaemonProc, Path, int]]:
    base, root = short_tmpdir(), short_tmpdir()
    d = start_daemon(base / "run")
    created = d.request(p.CreateSession(root=str(root)))
    assert isinstance(created, p.SessionReply)
    try:
        yield d, root, created.session.id
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


@requires_corpus
@pytest.mark.parametrize("name", ONE_PER_FORMAT)
def test_live_follow_with_torn_writes_equals_one_shot_ingest(
    env: tuple[DaemonProc, Path, int], name: str
) -> None:
    d, root, sid = env
    src = corpus(name)
    target = root / "agent.jsonl"
    target.write_bytes(b"")
    view = follow(d, root, sid, target)
    assert view.active and view.offset == 0
    sub = d.subscribe(p.topic(str(root), sid))
    write_slowly(src, target)
    want = expected_data(src)
    got = wait_for(d, root, sid, len(want))
    assert wall_time_filled(got, want) == want
    # Every stored event was announced as it was stored.
    announced: list[str] = []
    while len(announced) < len(want):
        _, note = d.next_note(sub)
        if isinstance(note, p.EventsAppended):
            announced += [e.data for e in note.events]
    assert wall_time_filled(announced, want) == want
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    ends_in_final = src.read_bytes().rstrip().splitlines()[-1].find(b'"result"') >= 0 or name.startswith(
        "codex-exec"
    )
    if ends_in_final:
        (ended,) = status.follows  # the turn's final event ended the follow; Status still shows it
        assert not ended.active and ended.ended and ended.offset == target.stat().st_size
        # Following the finished file again stores nothing twice.
        again = follow(d, root, sid, target)
        assert again.active
        time.sleep(0.6)
        assert wall_time_filled(stored(d, root, sid), want) == want
    else:
        size = target.stat().st_size
        deadline = time.monotonic() + 10
        while (live := _only_follow(d)).offset < size and time.monotonic() < deadline:
            time.sleep(0.05)  # the last lines may hold no events: wait for the offset itself
        assert live.offset == size and live.lines == len(target.read_bytes().splitlines())
        assert isinstance(d.request(p.Unfollow(root=str(root), path=str(target))), p.OkReply)
    assert wall_time_filled(stored(d, root, sid), want) == want


def _only_follow(d: DaemonProc) -> p.FollowView:
    (view,) = _live(d)
    return view


def _live(d: DaemonProc) -> list[p.FollowView]:
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    return [f for f in status.follows if f.active]


@requires_corpus
def test_kill_9_during_follow_loses_and_repeats_nothing() -> None:
    src = corpus(ONE_PER_FORMAT[3])  # the 209-line rollout
    want = expected_data(src)
    base, root = short_tmpdir(), short_tmpdir()
    target = root / "rollout.jsonl"
    target.write_bytes(b"")
    d = start_daemon(base / "run")
    created = d.request(p.CreateSession(root=str(root)))
    assert isinstance(created, p.SessionReply)
    sid = created.session.id
    follow(d, root, sid, target, format="codex-rollout")
    writer = threading.Thread(target=write_slowly, args=(src, target), kwargs={"delay": 0.004})
    writer.start()
    try:
        for kill_at in (0.15, 0.25, 0.2):
            time.sleep(kill_at)
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            d.close()
            d = start_daemon(base / "run")  # resumes the follow from its stored offset
        writer.join()
        got = wait_for(d, root, sid, len(want))
        assert got == want
        deadline = time.monotonic() + 10
        while _only_follow(d).offset < target.stat().st_size and time.monotonic() < deadline:
            time.sleep(0.05)
        with sqlite3.connect(root / ".azureal" / "sessions.azs") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            (offset,) = conn.execute("SELECT offset FROM azsd_follows").fetchone()
        assert offset == target.stat().st_size
    finally:
        writer.join()
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def line(text: str, n: int) -> bytes:
    return (
        b'{"type":"assistant","session_id":"s","message":{"id":"m%d","content":[{"type":"text","text":"%s"}]}}\n'
        % (
            n,
            text.encode(),
        )
    )


def texts(data: list[str]) -> list[str]:
    return [s.split('"text":"')[1].split('"')[0] for s in data]


def test_truncation_and_replacement_never_duplicate(env: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = env
    target = root / "agent.jsonl"
    target.write_bytes(line("one", 1) + line("two", 2))
    follow(d, root, sid, target, format="claude-stream-json")
    assert texts(wait_for(d, root, sid, 2)) == ["one", "two"]
    # Replaced by a file with the same start and more: only the new line is stored.
    tmp = root / "agent.tmp"
    tmp.write_bytes(line("one", 1) + line("two", 2) + line("three", 3))
    tmp.replace(target)
    assert texts(wait_for(d, root, sid, 3)) == ["one", "two", "three"]
    # Truncated, then written again from scratch: the new lines are stored, once.
    target.write_bytes(b"")
    time.sleep(0.5)
    with open(target, "ab") as out:
        out.write(line("four", 4))
    assert texts(wait_for(d, root, sid, 4)) == ["one", "two", "three", "four"]
    time.sleep(0.6)
    assert texts(stored(d, root, sid)) == ["one", "two", "three", "four"]


def test_a_torn_last_line_waits_and_unfollow_reads_it(env: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = env
    target = root / "agent.jsonl"
    target.write_bytes(line("whole", 1) + line("torn", 2)[:-1])  # no newline yet
    follow(d, root, sid, target, format="claude-stream-json")
    assert texts(wait_for(d, root, sid, 1)) == ["whole"]
    time.sleep(0.6)
    assert texts(stored(d, root, sid)) == ["whole"]  # still waiting for its newline
    assert isinstance(d.request(p.Unfollow(root=str(root), path=str(target))), p.OkReply)
    assert texts(stored(d, root, sid)) == ["whole", "torn"]
    missing = d.request(p.Unfollow(root=str(root), path=str(target)))
    assert isinstance(missing, p.ErrorReply) and missing.code == "not_found"


def test_huge_lines_are_skipped_without_loading_them(env: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = env
    target = root / "agent.jsonl"
    target.write_bytes(line("before", 1))
    follow(d, root, sid, target, format="claude-stream-json")
    wait_for(d, root, sid, 1)
    chunk = b"x" * (1 << 20)
    with open(target, "ab") as out:
        out.write(b'{"type":"assistant","message":{"id":"big","content":[{"type":"text","text":"')
        for _ in range(80):  # 80 MiB: over the 64 MiB line limit
            out.write(chunk)
        out.write(b'"}]}}\n')
        out.write(line("after", 2))
    assert texts(wait_for(d, root, sid, 2, timeout=60)) == ["before", "after"]
    view = _only_follow(d)
    assert view.skipped == 1 and view.offset == target.stat().st_size
    peak_kb = d.peak_rss_kb()
    assert peak_kb < 200 * 1024, f"the daemon held the huge line: peak RSS {peak_kb} kB"


@pytest.fixture
def idle_ends() -> Iterator[tuple[DaemonProc, Path, int]]:
    """A daemon that ends a follow whose writer is gone after 0.5 s of idle file, and a session."""
    base, root = short_tmpdir(), short_tmpdir()
    config = base / "config.toml"
    config.write_text("follow-idle-s = 0.5\n")
    d = start_daemon(base / "run", env={"AZSD_CONFIG": str(config)})
    try:
        created = d.request(p.CreateSession(root=str(root)))
        assert isinstance(created, p.SessionReply)
        yield d, root, created.session.id
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_follow_ends_when_the_writer_is_gone_and_marks_the_turn_failed(
    idle_ends: tuple[DaemonProc, Path, int],
) -> None:
    d, root, sid = idle_ends
    target = root / "agent.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    target.write_bytes(line("partial", 1))
    follow(d, root, sid, target, format="claude-stream-json", writer_pid=writer.pid)
    writer.wait()
    deadline = time.monotonic() + 10
    while True:
        info = d.request(p.GetSession(root=str(root), session=sid))
        assert isinstance(info, p.SessionReply)
        if info.session.state == "failed":
            break
        assert time.monotonic() < deadline, info.session
        time.sleep(0.1)
    assert _live(d) == []
    assert texts(stored(d, root, sid)) == ["partial"]


def test_follow_request_errors(env: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = env
    for path, fmt, code in [
        ("relative.jsonl", None, "follow_error"),
        (str(root / "nodir" / "x.jsonl"), None, "follow_error"),
        (str(root), None, "follow_error"),
        (str(root / "x.jsonl"), "yaml", "follow_error"),
    ]:
        reply = d.request(p.Follow(root=str(root), session=sid, path=path, format=fmt))
        assert isinstance(reply, p.ErrorReply) and reply.code == code, (path, reply)
    missing = d.request(p.Follow(root=str(root), session=99, path=str(root / "y.jsonl")))
    assert isinstance(missing, p.ErrorReply) and missing.code == "not_found"
    assert os.path.isdir(root)


def test_refollowing_while_the_store_is_busy_stores_nothing_twice(env: tuple[DaemonProc, Path, int]) -> None:
    """A new follow is not read before the store has said where it starts, however busy the store is."""
    from azsd.ipc.transport import connect_dealer, recv_reply, send_request
    from tests.reliability.common import stream_lines

    d, root, sid = env
    target = root / "agent.jsonl"
    target.write_bytes(line("one", 1) + line("two", 2))
    follow(d, root, sid, target, format="claude-stream-json")
    assert texts(wait_for(d, root, sid, 2)) == ["one", "two"]
    assert isinstance(d.request(p.Unfollow(root=str(root), path=str(target))), p.OkReply)
    big = root / "big.jsonl"
    big.write_bytes(b"".join(stream_lines(30_000)))
    other = d.request(p.CreateSession(root=str(root)))
    assert isinstance(other, p.SessionReply)
    busy = connect_dealer(d.ctx, d.rpc)  # keeps the store's worker busy while we follow again
    send_request(
        busy, b"ingest", p.encode(p.IngestFile(root=str(root), session=other.session.id, path=str(big)))
    )
    follow(d, root, sid, target, format="claude-stream-json")
    assert busy.poll(60_000)
    assert isinstance(p.decode_reply(recv_reply(busy)[1]), p.IngestReply)
    busy.close(linger=0)
    time.sleep(0.6)
    assert texts(stored(d, root, sid)) == ["one", "two"]


def test_roots_without_live_follows_are_forgotten_at_start() -> None:
    base, ended_root, live_root = short_tmpdir(), short_tmpdir(), short_tmpdir()
    daemons: list[DaemonProc] = []
    try:
        d = start_daemon(base / "run")
        daemons.append(d)
        for root in (ended_root, live_root):
            created = d.request(p.CreateSession(root=str(root)))
            assert isinstance(created, p.SessionReply)
            (root / "a.jsonl").write_bytes(line("x", 1))
            follow(d, root, created.session.id, root / "a.jsonl", format="claude-stream-json")
        assert isinstance(
            d.request(p.Unfollow(root=str(ended_root), path=str(ended_root / "a.jsonl"))), p.OkReply
        )
        d.close()
        roots_file = base / "state" / "azsd" / "follow-roots"
        gone = "/tmp/azsd-no-such-root"
        roots_file.write_text(roots_file.read_text() + gone + "\n")
        assert set(roots_file.read_text().split()) == {str(ended_root), str(live_root), gone}
        d = start_daemon(base / "run")
        daemons.append(d)
        deadline = time.monotonic() + 10
        while set(roots_file.read_text().split()) != {str(live_root)} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(roots_file.read_text().split()) == {str(live_root)}
        while not _live(d) and time.monotonic() < deadline:  # its store opens on a thread of its own
            time.sleep(0.05)
        assert [v.path for v in _live(d)] == [str(live_root / "a.jsonl")]  # the live one was resumed
        d.close()
    finally:
        for started in daemons:
            started.close()
        for path in (base, ended_root, live_root):
            shutil.rmtree(path, ignore_errors=True)


def test_a_refused_follow_is_gone_before_its_refusal_is_heard(env: tuple[DaemonProc, Path, int]) -> None:
    """A follow its store refuses (here: into a session that does not exist) is dropped before the
    client hears why, so the follow it asks for next is not refused as a second one of the file."""
    d, root, sid = env
    for n in range(25):
        path = root / f"agent-{n}.jsonl"
        path.write_text("")
        refused = d.request(p.Follow(root=str(root), session=sid + 1000, path=str(path)))
        assert isinstance(refused, p.ErrorReply), refused
        follow(d, root, sid, path)  # at once: no "already followed into S…"
        assert isinstance(d.request(p.Unfollow(root=str(root), path=str(path))), p.OkReply)
