"""One daemon per user holds the follows (issue 2/7): a second daemon on another runtime dir but
the same state dir would resume the same follows and store their lines twice, so it refuses to
start, saying which daemon holds them."""

from __future__ import annotations

import shutil
import time

from azsd.ipc import protocol as p
from tests.daemon_fixture import short_tmpdir, start_daemon


def test_a_second_daemon_on_another_runtime_dir_but_the_same_state_dir_refuses_to_start() -> None:
    base = short_tmpdir()
    state = base / "state"
    first = start_daemon(base / "run1", env={"XDG_STATE_HOME": str(state)})
    try:
        second = start_daemon(base / "run2", env={"XDG_STATE_HOME": str(state)}, wait=False)
        deadline = time.monotonic() + 10
        while second.proc.poll() is None:
            assert time.monotonic() < deadline, "the second daemon did not give up"
            time.sleep(0.05)
        second.close()
        assert second.proc.returncode != 0
        log = second.log_text()
        assert "already running" in log and str(first.proc.pid) in log, log
        # The first one is untouched and serving.
        assert isinstance(first.request(p.Status()), p.StatusReply)
        # With the first gone, a daemon on the other runtime dir starts.
        first.close()
        third = start_daemon(base / "run2", env={"XDG_STATE_HOME": str(state)})
        try:
            assert isinstance(third.request(p.Status()), p.StatusReply)
        finally:
            third.close()
    finally:
        first.close()
        shutil.rmtree(base, ignore_errors=True)
