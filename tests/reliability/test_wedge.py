"""A store that cannot be opened never wedges its root (issue 2/7): every request for it gets a
clear error at once, and once the cause is gone the store serves again."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir


@pytest.fixture
def daemon_and_root() -> Iterator[tuple[DaemonProc, Path]]:
    with daemon_in_tmpdir() as d:
        root = d.runtime_dir.parent / "w"
        root.mkdir()
        yield d, root


def test_a_directory_where_the_store_should_be_gets_an_error_not_a_timeout(
    daemon_and_root: tuple[DaemonProc, Path],
) -> None:
    d, root = daemon_and_root
    (root / ".azureal" / "sessions.azs").mkdir(parents=True)  # what the user saw: `mkdir -p`
    for _ in range(3):  # the first request, and every later one
        started = time.monotonic()
        reply = d.request(p.ListSessions(root=str(root)), timeout_ms=3000)
        assert isinstance(reply, p.ErrorReply), reply
        assert reply.code == "store_error", reply
        assert "sessions.azs is a directory, not a session store file" in reply.message, reply.message
        assert time.monotonic() - started < 2.0
    # Other stores are not affected, and the daemon is alive.
    other = root.parent / "other"
    other.mkdir()
    assert isinstance(d.request(p.CreateSession(root=str(other))), p.SessionReply)
    # Once the directory is gone, the same root serves again: nothing stayed wedged.
    shutil.rmtree(root / ".azureal")
    created = d.request(p.CreateSession(root=str(root), name="back"))
    assert isinstance(created, p.SessionReply), created
    assert d.proc.poll() is None
