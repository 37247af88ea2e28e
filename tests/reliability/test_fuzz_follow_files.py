"""Fuzzing: followed files truncated, replaced and deleted under live follows.

The daemon keeps serving, the real lines' events are stored once and in order, and rows stored
before the change never change.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer
from tests.daemon_fixture import DaemonProc
from tests.reliability.fuzz_follow import (
    aline,
    follow_daemon,
    follow_root,
    mixed,
    start_follow,
    texts,
    unfollow,
    view_of,
    wait_read_to,
    write_lines,
)
from tests.reliability.fuzz_helpers import REPLY_MS, await_reply, event_rows, status, stored

__all__ = ["follow_daemon", "follow_root"]  # the fixtures, re-exported for pytest


def test_truncated_to_empty_mid_follow(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    rng = random.Random("truncate-empty")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2", "a3"], rng, bad_each=2)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    assert wait_read_to(d, target, len(old)).skipped == old_bad
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3"]
    before = event_rows(root, sid)
    os.truncate(target, 0)
    wait_read_to(d, target, 0)  # the daemon saw the truncation: now the file starts again
    new, new_bad = mixed(["b1", "b2"], rng, bad_each=3)
    write_lines(target, [ln + b"\n" for ln in new.split(b"\n")[:-1]], rng)
    wait_read_to(d, target, len(new))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "b1", "b2"]
    # lines, offset and skipped all describe the file as it now is (re-read from its start).
    assert view.skipped == new_bad and view.lines == new.count(b"\n"), view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_truncated_to_a_shorter_prefix_mid_follow(follow_root: tuple[DaemonProc, Path, int]) -> None:
    """The file loses its tail (its head is unchanged, and was stored): nothing is stored twice."""
    d, root, sid = follow_root
    rng = random.Random("truncate-prefix")
    target = root / "agent.jsonl"
    head, head_bad = mixed(["a1", "a2"], rng)
    tail, _ = mixed(["a3", "a4"], rng)
    target.write_bytes(head + tail)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(head + tail))
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "a4"]
    before = event_rows(root, sid)
    os.truncate(target, len(head))
    wait_read_to(d, target, len(head))  # the daemon saw the truncation
    more, more_bad = mixed(["c1"], rng)
    with open(target, "ab") as out:
        out.write(more)
    wait_read_to(d, target, len(head + more))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "a4", "c1"], "every line's events exactly once"
    assert view.skipped == head_bad + more_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_replaced_by_rename_mid_follow(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    rng = random.Random("replace")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2", "a3"], rng)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3"]
    before = event_rows(root, sid)
    # An atomic rewrite that keeps the old content and adds to it: only the new lines are stored.
    grown_tail, tail_bad = mixed(["b1", "b2"], rng, bad_each=2)
    grown = old + grown_tail
    tmp = root / "agent.tmp"
    tmp.write_bytes(grown)
    tmp.replace(target)
    view = wait_read_to(d, target, len(grown))
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "b1", "b2"]
    assert view.skipped == old_bad + tail_bad, view
    # A rewrite with other content altogether (a new turn): all of it is new.
    other, other_bad = mixed(["d1", "d2"], rng, bad_each=2)
    tmp.write_bytes(other)
    tmp.replace(target)
    wait_read_to(d, target, len(other))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "a3", "b1", "b2", "d1", "d2"]
    assert view.skipped == other_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_deleted_mid_follow_then_recreated_on_the_same_inode(
    follow_root: tuple[DaemonProc, Path, int],
) -> None:
    """The file is deleted (the follower sees it gone), then the agent starts over at the same path
    with a longer file that has the deleted file's inode number. ext4 hands a freed inode out again
    at once, so plain `rm; create` does this about half the time here; to make it deterministic the
    test keeps the inode alive under a second hard link, rewrites it there, and links it back."""
    d, root, sid = follow_root
    rng = random.Random("delete")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2"], rng, bad_each=2)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2"]
    before = event_rows(root, sid)
    keep = root / "kept-inode"
    os.link(target, keep)
    target.unlink()
    time.sleep(1.0)  # about four of the follower's polls, with the file gone
    view = view_of(d, target)
    assert view.active and view.offset == len(old) and view.skipped == old_bad, view
    assert event_rows(root, sid) == before
    new, new_bad = mixed(["n1", "n2", "n3", "n4"], rng, bad_each=1)
    assert len(new) > len(old)
    keep.write_bytes(new)
    os.link(keep, target)
    keep.unlink()
    wait_read_to(d, target, len(new))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "n1", "n2", "n3", "n4"], "the new file's lines, once"
    assert view.skipped == new_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


def test_deleted_mid_follow_then_recreated(follow_root: tuple[DaemonProc, Path, int]) -> None:
    """The same with a new inode (what most file systems do): re-read from the start, deduplicated."""
    d, root, sid = follow_root
    rng = random.Random("delete-new-inode")
    target = root / "agent.jsonl"
    old, _ = mixed(["a1", "a2"], rng, bad_each=2)
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2"]
    before = event_rows(root, sid)
    blocker = root / "holds-the-old-inode"
    os.link(target, blocker)  # so that the new file cannot get the old inode
    target.unlink()
    time.sleep(1.0)
    new, new_bad = mixed(["n1", "n2", "n3"], rng, bad_each=1)
    target.write_bytes(new)
    assert target.stat().st_ino != blocker.stat().st_ino
    wait_read_to(d, target, len(new))
    view = unfollow(d, root, target)
    assert texts(stored(d, root, sid)) == ["a1", "a2", "n1", "n2", "n3"]
    assert view.skipped == new_bad, view
    assert event_rows(root, sid)[: len(before)] == before
    status(d)


@pytest.mark.parametrize("change", ["replaced", "truncated"])
def test_unfollow_right_after_the_file_changed_gets_one_reply(
    follow_root: tuple[DaemonProc, Path, int], change: str
) -> None:
    """An Unfollow that arrives before the follower noticed a replacement (or truncation): the
    protocol's one reply, sent once the follow has ended and what the file holds is stored."""
    d, root, sid = follow_root
    target = root / "agent.jsonl"
    old = aline("a1") + aline("a2")
    target.write_bytes(old)
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    sock = connect_dealer(d.ctx, d.rpc)
    try:
        if change == "replaced":
            tmp = root / "agent.tmp"
            tmp.write_bytes(old + aline("b1"))
            tmp.replace(target)
        else:
            target.write_bytes(aline("b1"))  # truncated (O_TRUNC), then written again
        sock.send_multipart([b"unfollow", p.encode(p.Unfollow(root=str(root), path=str(target)))])
        await_reply(d, sock, REPLY_MS)
        rid, payload = sock.recv_multipart()
        assert rid == b"unfollow" and isinstance(p.decode_reply(payload), p.OkReply)
        view = view_of(d, target)
        assert not view.active, f"answered before the follow ended: {view}"
        assert texts(stored(d, root, sid)) == ["a1", "a2", "b1"]
        assert not sock.poll(1000), f"a second reply to one Unfollow: {sock.recv_multipart()!r}"
    finally:
        sock.close(linger=0)
    status(d)


def test_deleted_mid_follow_then_unfollowed(follow_root: tuple[DaemonProc, Path, int]) -> None:
    d, root, sid = follow_root
    rng = random.Random("delete-unfollow")
    target = root / "agent.jsonl"
    old, old_bad = mixed(["a1", "a2"], rng, bad_each=2)
    target.write_bytes(old + b'{"type":"assis')  # and a torn last line
    start_follow(d, root, sid, target, "claude-stream-json")
    wait_read_to(d, target, len(old))
    assert texts(stored(d, root, sid)) == ["a1", "a2"]
    before = event_rows(root, sid)
    target.unlink()
    status(d)
    view = unfollow(d, root, target)
    assert view.skipped == old_bad and view.offset == len(old), view
    assert event_rows(root, sid) == before
    status(d)
