"""A follow's offset is saved with compare-and-swap (issue 2/7): when another writer (a second
daemon, a stale follower) moved the stored offset between the follower's read and its commit, the
follower stores nothing of that read and goes on from the stored offset, so no line is stored twice."""

from __future__ import annotations

import shutil
import time

from azsd.compact import prepare_for_store
from azsd.ingest.parsers import make_parser
from azsd.ipc import protocol as p
from azsd.store import Store
from tests.daemon_fixture import short_tmpdir
from tests.reliability.common import assistant_line as line
from tests.reliability.common import start_following, stored_data, wait_until

FORMAT = "claude-stream-json"


def test_an_offset_moved_by_another_writer_is_not_stored_over() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    d, agent, sid = start_following(base, root, line("one"))
    try:
        parser = make_parser(FORMAT)
        parser.feed(line("one").rstrip(b"\n"))
        events_two = prepare_for_store(parser.feed(line("two").rstrip(b"\n")))
        assert len(events_two) == 1
        # The second writer: a Store of its own on the same file, holding its write lock while the
        # daemon reads line two (the daemon's commit waits for the lock), then storing that line and
        # moving the offset past it itself.
        with Store.open(root) as other, other.atomic():
            with agent.open("ab") as out:
                out.write(line("two"))
            time.sleep(1.0)  # the daemon reads it and queues its commit, which waits for our lock
            other.append_prepared(sid, events_two)
            record = other.get_follow(sid, str(agent))
            assert record is not None and record.offset == len(line("one"))
            record.offset, record.lines = agent.stat().st_size, record.lines + 1
            other.save_follow(record)
        time.sleep(1.0)  # the daemon's commit runs now: it must find the offset moved
        assert len(stored_data(d, root, sid)) == 2, "line two was stored twice"
        # The follow goes on from the offset the other writer stored.
        with agent.open("ab") as out:
            out.write(line("three"))
        wait_until(lambda: len(stored_data(d, root, sid)) >= 3, 10, "line three")
        time.sleep(0.5)
        data = stored_data(d, root, sid)
        assert len(data) == 3, data
        assert ["one" in data[0], "two" in data[1], "three" in data[2]] == [True, True, True]
        status = d.request(p.Status())
        assert isinstance(status, p.StatusReply)
        (view,) = [f for f in status.follows if f.path == str(agent)]
        assert view.active and view.offset == agent.stat().st_size, view
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
