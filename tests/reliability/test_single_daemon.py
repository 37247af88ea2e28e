"""One daemon per user holds the follows (issue 2/7): a second daemon on another runtime dir but
the same state dir would resume the same follows and store their lines twice, so it refuses to
start, saying which daemon holds them."""

from __future__ import annotations

import shutil
import sqlite3
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


def test_one_daemon_writes_a_store_file_whatever_its_state_dir() -> None:
    """Two daemons with their own runtime and state dirs both wrote the same store, each sure it was
    its only writer: the store's writer lock (beside the file) lets one write it; the other says
    which daemon does, and AZUREAL still opens and writes the file."""
    base, root = short_tmpdir(), short_tmpdir()
    first = start_daemon(base / "run1", env={"XDG_STATE_HOME": str(base / "state1")})
    second = start_daemon(base / "run2", env={"XDG_STATE_HOME": str(base / "state2")})
    try:
        made = first.request(p.CreateSession(root=str(root), name="first"))
        assert isinstance(made, p.SessionReply), made
        refused = second.request(p.CreateSession(root=str(root), name="second"))
        assert isinstance(refused, p.ErrorReply), refused
        assert "written by another azsd" in refused.message and str(first.proc.pid) in refused.message
        conn = sqlite3.connect(root / ".azureal" / "sessions.azs", timeout=5.0, isolation_level=None)
        conn.execute("INSERT INTO sessions (worktree) VALUES ('azureal')")  # AZUREAL is not locked out
        conn.close()
        listed = first.request(p.ListSessions(root=str(root)))
        assert isinstance(listed, p.SessionsReply), listed
        assert sorted(s.worktree for s in listed.sessions) == ["", "azureal"]
        first.close()  # its store closes with it: the other daemon may write the file now
        again = second.request(p.CreateSession(root=str(root), name="second"))
        assert isinstance(again, p.SessionReply), again
    finally:
        first.close()
        second.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_root_whose_store_is_a_link_to_another_is_the_same_root() -> None:
    base, real, linked = short_tmpdir(), short_tmpdir(), short_tmpdir()
    d = start_daemon(base / "run")
    try:
        made = d.request(p.CreateSession(root=str(real), name="one"))
        assert isinstance(made, p.SessionReply), made
        (linked / ".azureal").symlink_to(real / ".azureal")
        also = d.request(p.CreateSession(root=str(linked), name="two"))
        assert isinstance(also, p.SessionReply), also
        assert also.session.id == made.session.id + 1  # the same file, one writer
        status = d.request(p.Status())
        assert isinstance(status, p.StatusReply)
        assert status.stores == [str(real)]
        listed = d.request(p.ListSessions(root=str(linked)))
        assert isinstance(listed, p.SessionsReply), listed
        assert sorted(s.name for s in listed.sessions) == ["one", "two"]
    finally:
        d.close()
        for path in (base, real, linked):
            shutil.rmtree(path, ignore_errors=True)
