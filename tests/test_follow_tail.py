"""A followed file's reads (azsd.server.follow.tailing.Tail), on real files: what an Unfollow's last
reads take in."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

from azsd.events import AssistantText
from azsd.ipc.transport import Envelope
from azsd.model import FollowRecord
from azsd.server.follow.tailing import READ_BUDGET, Tail


def _line(i: int) -> bytes:
    message = {"id": f"m{i}", "content": [{"type": "text", "text": f"t{i} " + "x" * 900}]}
    return json.dumps({"type": "assistant", "session_id": "s", "message": message}).encode() + b"\n"


def test_an_unfollow_with_more_than_a_read_unread_takes_every_line_in_reads_of_its_budget(
    tmp_path: Path,
) -> None:
    """An Unfollow comes while more than one read's worth is unread: its reads go on, each within the
    budget, until no whole line is left, and only then is a last line without its newline taken in
    (the rest of the file was read as one torn line and skipped, its events lost)."""
    path = tmp_path / "agent.jsonl"
    lines = 3 * READ_BUDGET // len(_line(0)) + 5
    path.write_bytes(b"".join(_line(i) for i in range(lines)) + b'{"type":"assistant","session_id":"s",')
    tail = Tail(str(tmp_path), FollowRecord(session_id=1, path=str(path), format="claude-stream-json"))
    assert tail.prepare_parser() is not None
    tail.ending = cast(Envelope, object())  # an Unfollow waits for the last read
    inode = os.stat(path).st_ino
    texts: list[str] = []
    reads = 0
    while True:
        before = tail.record.offset
        texts += [e.text for e in tail.read_new(inode) if isinstance(e, AssistantText)]
        reads += 1
        assert tail.record.offset - before <= 2 * READ_BUDGET  # a read of its budget (and a part)
        if tail.caught_up:
            break
    assert reads >= 3
    assert [t.split()[0] for t in texts] == [f"t{i}" for i in range(lines)]
    assert tail.record.offset == path.stat().st_size  # the torn last line, read once every whole one was
