"""A follow that cannot make progress backs off, says why, and ends with its reason (issue 2/7).

A store that turned read-only under a follow used to be retried at once, forever: every failed
commit re-read the file and tried again, hundreds of times a second. Now each retry waits longer
(0.25 s doubling to a cap, with jitter), `status` shows the follow `retrying` with the reason, and
after `MAX_FAILURES` failures in a row the follow is ended with that reason. A follow whose store is
busy shows `waiting` with words saying so.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

from azsd.ipc import protocol as p
from azsd.server.follow.tailing import MAX_FAILURES
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.reliability.common import assistant_line as line
from tests.reliability.common import start_following, stored_data, wait_until

#: How long the attempts are counted: the old follower retried many times a second.
COUNTED_S = 5.0


def follow_view(d: DaemonProc, path: Path) -> p.FollowView:
    status = d.request(p.Status())
    assert isinstance(status, p.StatusReply)
    (view,) = [f for f in status.follows if f.path == str(path)]
    return view


def test_a_follow_on_a_read_only_store_backs_off_and_ends_with_its_reason() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    d, agent, sid = start_following(base, root, line("one"))
    try:
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.close()
        # A newer AZUREAL wrote the store: azsd may read it but not write to it.
        conn = sqlite3.connect(root / ".azureal" / "sessions.azs")
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        conn.commit()
        conn.close()
        with agent.open("ab") as out:
            out.write(line("two"))
        d = start_daemon(base / "run")  # resumes the follow; storing line two must fail
        attempt = f"{agent}: storing its new lines failed"
        wait_until(lambda: attempt in d.log_text(), 15, "a first failed commit")
        first = time.monotonic()
        time.sleep(COUNTED_S)
        attempts = d.log_text().count(attempt)
        # With no backoff: one attempt per poll (0.25 s) or faster. With it: 0.25, 0.5, 1, 2, 4 s…
        assert attempts <= 8, f"{attempts} commits in {COUNTED_S} s: no backoff"
        view = follow_view(d, agent)
        assert view.state in ("retrying", "ended"), view
        assert view.failures >= 2 and "read-only" in view.reason, view
        wait_until(lambda: follow_view(d, agent).state == "ended", 60, "the follow to end")
        ended = follow_view(d, agent)
        assert not ended.active and ended.failures == MAX_FAILURES, ended
        assert ended.offset == len(line("one")) and ended.lines == 1, ended  # what the store holds
        assert f"{MAX_FAILURES} failures" in ended.reason and "read-only" in ended.reason, ended
        total = d.log_text().count(attempt)
        assert total == MAX_FAILURES, (total, time.monotonic() - first)
        assert d.proc.poll() is None
        assert len(stored_data(d, root, sid)) == 1  # nothing half-stored
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_status_says_a_follow_waits_for_its_busy_store() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    d, agent, sid = start_following(base, root, line("one"))
    try:
        assert follow_view(d, agent).state == "following"
        # Another program holds the store's write lock: the new line waits to be stored.
        holder = sqlite3.connect(root / ".azureal" / "sessions.azs", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with agent.open("ab") as out:
                out.write(line("two"))
            wait_until(lambda: follow_view(d, agent).state == "waiting", 4, "the follow to say it waits")
            view = follow_view(d, agent)
            assert view.active and "store is busy" in view.reason, view
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        wait_until(lambda: len(stored_data(d, root, sid)) == 2, 15, "the line once the store is free")
        wait_until(lambda: follow_view(d, agent).state == "following", 5, "the follow to go on")
        assert follow_view(d, agent).reason == ""
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_followed_file_that_cannot_be_read_says_so_and_recovers() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    d, agent, sid = start_following(base, root, line("one"))
    try:
        agent.unlink()
        os.mkfifo(agent)
        wait_until(lambda: follow_view(d, agent).state == "retrying", 5, "the follow to retry")
        view = follow_view(d, agent)
        assert view.active and "FIFO" in view.reason and "next try" in view.reason, view
        agent.unlink()
        agent.write_bytes(line("one") + line("two"))  # a regular file again, one line longer
        wait_until(lambda: len(stored_data(d, root, sid)) == 2, 15, "the new line")
        wait_until(lambda: follow_view(d, agent).state == "following", 5, "the follow to go on")
        assert follow_view(d, agent).failures == 0
        assert len(stored_data(d, root, sid)) == 2
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_follow_shows_active_until_its_final_line_is_stored() -> None:
    """`status` saying a follow ended means its last lines are stored: a session read right after
    shows the turn's outcome, never `running` (CI saw the follow gone while its commit still waited
    for the store)."""
    base, root = short_tmpdir(), short_tmpdir()
    d, agent, sid = start_following(base, root, line("one"))
    try:
        holder = sqlite3.connect(root / ".azureal" / "sessions.azs", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the final line's commit waits for this lock
        try:
            with agent.open("ab") as out:
                out.write(
                    b'{"type":"result","subtype":"success","session_id":"s","is_error":false,"duration_ms":7}\n'
                )
            wait_until(lambda: follow_view(d, agent).state == "waiting", 4, "the final line to wait")
            assert follow_view(d, agent).active, "its last lines are not stored yet"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        wait_until(lambda: not follow_view(d, agent).active, 15, "the follow to end")
        session = d.request(p.GetSession(root=str(root), session=sid))
        assert isinstance(session, p.SessionReply)
        assert session.session.state == "succeeded", session.session
        assert follow_view(d, agent).reason == "the turn ended (its final event is stored)"
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
