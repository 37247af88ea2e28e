"""Resuming a big follow after kill -9 holds a bounded amount of memory (issue 2/7): the replay up
to the saved offset used to keep every line in memory (following a 1 GB file took more than 1 GB).
The daemon is killed halfway through a big file; the one that resumes it must stay under 100 MB of
resident memory while it finishes, and store every event exactly once."""

from __future__ import annotations

import shutil
import signal
import sqlite3
from pathlib import Path

from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.reliability.common import scaled, wait_until

MEGABYTES = scaled(120, 1024)
RSS_LIMIT_KB = 100 * 1024


def write_big_transcript(path: Path, megabytes: int) -> int:
    """A Claude stream of `megabytes` MB of assistant text lines (unique ids); how many lines."""
    words = b"parse the store, follow the line, count every event once " * 4
    n = 0
    with open(path, "wb") as out:
        out.write(b'{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}\n')
        block: list[bytes] = []
        size = 0
        while size < megabytes << 20:
            n += 1
            line = (
                b'{"type":"assistant","session_id":"s","message":{"id":"m%d","content":'
                b'[{"type":"text","text":"%d %s"}]}}\n' % (n, n, words)
            )
            block.append(line)
            size += len(line)
            if len(block) == 4096:
                out.write(b"".join(block))
                block.clear()
        out.write(b"".join(block))
    return n


def follow_view(d: DaemonProc) -> p.FollowView | None:
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    return status.follows[0] if status.follows else None


def test_resume_after_kill_9_in_a_big_follow_stays_small() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    target = root / "agent.jsonl"
    texts = write_big_transcript(target, MEGABYTES)
    size = target.stat().st_size
    d = start_daemon(base / "run")
    try:
        created = d.request(p.CreateSession(root=str(root)))
        assert isinstance(created, p.SessionReply)
        sid = created.session.id
        follow = p.Follow(root=str(root), session=sid, path=str(target), format="claude-stream-json")
        reply = d.request(follow)
        assert isinstance(reply, p.FollowReply), reply

        def halfway() -> bool:
            view = follow_view(d)
            return view is not None and view.offset > size // 2

        wait_until(halfway, timeout=300, what="the follow to pass half the file")
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.close()
        d = start_daemon(base / "run")

        def finished() -> bool:
            view = follow_view(d)
            return view is not None and view.offset == size

        wait_until(finished, timeout=300, what="the resumed follow to reach the end")
        peak_kb = d.peak_rss_kb()
        assert peak_kb < RSS_LIMIT_KB, f"peak RSS {peak_kb} kB resuming a {MEGABYTES} MB follow"
        print(f"peak RSS resuming a {MEGABYTES} MB follow after kill -9: {peak_kb / 1024:.0f} MB")
    finally:
        d.close()
    with sqlite3.connect(root / ".azureal" / "sessions.azs") as conn:
        counts = conn.execute("SELECT kind, COUNT(*) FROM events WHERE session_id = ? GROUP BY kind", (sid,))
        kinds = dict(counts.fetchall())
    assert kinds.get("AssistantText") == texts, kinds
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
