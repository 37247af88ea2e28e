"""A `Follow` that fails validation leaves no trace (issue 2/7): its root is not remembered for the
next daemon to resume (`follow-roots`), and nothing is created in it, before or after a restart."""

from __future__ import annotations

import os
import shutil

from azsd.config import default_state_dir
from azsd.ipc import protocol as p
from tests.daemon_fixture import short_tmpdir, start_daemon

TURN = b'{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}\n'


def test_refused_follows_are_not_remembered_nor_resumed() -> None:
    base, root = short_tmpdir(), short_tmpdir()
    agent, fifo = root / "run.jsonl", root / "pipe.jsonl"
    agent.write_bytes(TURN)
    os.mkfifo(fifo)
    roots = default_state_dir({"XDG_STATE_HOME": str(base / "state")}) / "follow-roots"
    d = start_daemon(base / "run")
    try:
        bad = [
            p.Follow(root=str(root), session=1, path=str(agent), writer_pid=2**40),
            p.Follow(root=str(root), session=1, path=str(fifo)),
            p.Follow(root=str(root), session=1, path=str(root / "no-such-dir" / "run.jsonl")),
            p.Follow(root=str(root), session=1, path=str(agent), format="no-such-format"),
            p.Follow(root=str(root), session=1, path=str(agent)),  # no store, so no session 1
        ]
        for request in bad:
            reply = d.request(request)
            assert isinstance(reply, p.ErrorReply), (request, reply)
        remembered = roots.read_text() if roots.exists() else ""
        assert str(root) not in remembered
        d.close()
        d = start_daemon(base / "run")
        status = d.request(p.Status())
        assert isinstance(status, p.StatusReply) and status.follows == [] and status.stores == []
        remembered = roots.read_text() if roots.exists() else ""
        assert str(root) not in remembered
        assert sorted(os.listdir(root)) == ["pipe.jsonl", "run.jsonl"]  # no .azureal/
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
