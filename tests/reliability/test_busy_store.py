"""A follow is never dropped (issue 2/7): when its store is locked by another writer for longer
than any wait, a resumed follow waits its turn and then goes on; it used to be dropped after 10 s."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import time

from azsd.ipc import protocol as p
from tests.daemon_fixture import short_tmpdir, start_daemon
from tests.reliability.common import assistant_line as line
from tests.reliability.common import start_following, stored_data, wait_until

LOCKED_S = 12.0  # longer than the 10 s the follower used to wait before it dropped the follow


def test_a_resumed_follow_waits_out_a_long_foreign_lock_and_goes_on() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    d, agent, sid = start_following(base, root, line("one"))
    try:
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.close()
        # Another program holds the store's write lock for longer than every wait in azsd.
        holder = sqlite3.connect(root / ".azureal" / "sessions.azs", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            d = start_daemon(base / "run")  # resumes the follow, and cannot read where it stood
            with agent.open("ab") as out:
                out.write(line("two"))
            time.sleep(LOCKED_S)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        wait_until(
            lambda: len(stored_data(d, root, sid)) == 2, 20, "the line written while the store was locked"
        )
        with agent.open("ab") as out:
            out.write(line("three"))
        wait_until(lambda: len(stored_data(d, root, sid)) == 3, 10, "a line after the lock")
        status = d.request(p.Status())
        assert isinstance(status, p.StatusReply)
        assert [f.active for f in status.follows if f.path == str(agent)] == [True]
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
