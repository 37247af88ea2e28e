"""kill -9 of the daemon at random moments during live follows: nothing lost, nothing duplicated."""

from __future__ import annotations

import random
import shutil
import signal
import sqlite3
import threading
import time

from azsd.compact import prepare_for_store
from azsd.events import encode_event
from azsd.ingest.parsers import make_parser
from azsd.ipc import protocol as p
from tests.daemon_fixture import short_tmpdir, start_daemon
from tests.reliability.common import scaled, stored_data, stream_lines, wait_until

KILLS = scaled(10, 50)


def test_kill_9_during_two_live_follows_loses_and_repeats_nothing() -> None:
    rng = random.Random(20261121)
    base, root = short_tmpdir(), short_tmpdir()
    files = [root / "a.jsonl", root / "b.jsonl"]
    contents = [stream_lines(scaled(1500, 6000), seed=1), stream_lines(scaled(1500, 6000), seed=2)]
    for f in files:
        f.write_bytes(b"")
    d = start_daemon(base / "run")
    sids = []
    for f in files:
        created = d.request(p.CreateSession(root=str(root)))
        assert isinstance(created, p.SessionReply)
        sids.append(created.session.id)
        reply = d.request(
            p.Follow(root=str(root), session=created.session.id, path=str(f), format="claude-stream-json")
        )
        assert isinstance(reply, p.FollowReply)

    def write(path: object, lines: list[bytes], seed: int) -> None:
        wrng = random.Random(seed)
        with open(path, "ab") as out:  # type: ignore[call-overload]
            for line in lines:
                if wrng.random() < 0.2:  # a torn write
                    cut = wrng.randint(1, len(line) - 1)
                    out.write(line[:cut])
                    out.flush()
                    time.sleep(0.003)
                    line = line[cut:]
                out.write(line)
                out.flush()
                time.sleep(wrng.uniform(0, 0.004))

    writers = [
        threading.Thread(target=write, args=(f, c, i))
        for i, (f, c) in enumerate(zip(files, contents, strict=True))
    ]
    for w in writers:
        w.start()
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.05, 0.35))
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            d.close()
            d = start_daemon(base / "run")  # resumes both follows from their stored offsets
        for w in writers:
            w.join()
        for f, c, sid in zip(files, contents, sids, strict=True):
            parser = make_parser("claude-stream-json")
            want = [encode_event(e).decode() for e in prepare_for_store(parser.feed_all(c))]
            n = len(want)
            wait_until(lambda sid=sid, n=n: len(stored_data(d, root, sid)) >= n, what=f"{f.name} stored")
            assert stored_data(d, root, sid) == want, f"{f.name}: lost or duplicated events"
        d.close()
        with sqlite3.connect(root / ".azureal" / "sessions.azs") as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            seqs = conn.execute("SELECT session_id, seq FROM events ORDER BY session_id, seq").fetchall()
        for sid in sids:
            mine = [s for sess, s in seqs if sess == sid]
            assert mine == list(range(1, len(mine) + 1))
    finally:
        for w in writers:
            w.join()
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
