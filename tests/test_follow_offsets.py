"""The follow offset's compare-and-swap and its end mark, on a real store file (`azsd_follows`)."""

from __future__ import annotations

import pytest

from azsd.events import AssistantText
from azsd.model import FollowRecord
from azsd.store import Store
from azsd.store.side_tables import FollowMovedError


def test_save_follow_swaps_only_from_the_offset_read(store: Store) -> None:
    sid = store.create_session().id
    store.save_follow(FollowRecord(session_id=sid, path="/a.jsonl", format="claude-stream-json", offset=10))
    moved = FollowRecord(session_id=sid, path="/a.jsonl", format="claude-stream-json", offset=20, lines=2)
    store.save_follow(moved, expect_offset=10)
    stale = FollowRecord(session_id=sid, path="/a.jsonl", format="claude-stream-json", offset=30, lines=3)
    with pytest.raises(FollowMovedError, match="stored at byte 20, not at byte 10"):
        with store.atomic():  # as the follower's commit: the offset first, then the events
            store.save_follow(stale, expect_offset=10)
            store.append_prepared(sid, [AssistantText(text="stored twice")])
    record = store.get_follow(sid, "/a.jsonl")
    assert record is not None and (record.offset, record.lines) == (20, 2)
    assert store.max_seq(sid) == 0  # the events of the failed swap rolled back with it
    gone = FollowRecord(session_id=sid, path="/b.jsonl", format="claude-stream-json", offset=5)
    with pytest.raises(FollowMovedError, match="no longer recorded"):
        store.save_follow(gone, expect_offset=0)


def test_end_follow_keeps_the_stored_offset(store: Store) -> None:
    sid = store.create_session().id
    store.save_follow(FollowRecord(session_id=sid, path="/a.jsonl", format="claude-stream-json", offset=10))
    assert store.end_follow(sid, "/a.jsonl", "2026-01-01 00:00:00")
    (record,) = store.follows()
    assert (record.active, record.ended, record.offset) == (False, "2026-01-01 00:00:00", 10)
    assert store.follows(active_only=True) == []
    assert not store.end_follow(sid, "/missing.jsonl", "2026-01-01 00:00:00")
