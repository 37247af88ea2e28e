"""The follow offset's compare-and-swap and its end mark, on a real store file (`azsd_follows`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from azsd.events import AssistantText
from azsd.model import FollowRecord
from azsd.store import Store
from azsd.store.core import store_path
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
    # behind where the follow last stored it: its own commits are not in this file (issue 37: a
    # store another program rewrote logged "another writer moved it", though none had)
    with pytest.raises(
        FollowMovedError, match="byte 20, before byte 25 where it last stored it: the store file was"
    ):
        store.save_follow(stale, expect_offset=25)


def test_end_follow_keeps_the_stored_offset(store: Store) -> None:
    sid = store.create_session().id
    store.save_follow(FollowRecord(session_id=sid, path="/a.jsonl", format="claude-stream-json", offset=10))
    assert store.end_follow(sid, "/a.jsonl", "2026-01-01 00:00:00")
    (record,) = store.follows()
    assert (record.active, record.ended, record.offset) == (False, "2026-01-01 00:00:00", 10)
    assert store.follows(active_only=True) == []
    assert not store.end_follow(sid, "/missing.jsonl", "2026-01-01 00:00:00")


def test_an_idle_follow_stays_active_but_its_session_no_longer_runs(root: Path) -> None:
    """`idle` (a follow given no writer whose file went quiet): resumed by the next daemon (active),
    its session not `running`; a store from before the column gains it (every follow not idle), and
    one opened read-only that lacks it still lists."""
    with Store.open(root) as store:
        sid = store.create_session().id
        follow = FollowRecord(session_id=sid, path="/a.jsonl", format="claude-session", offset=10)
        store.save_follow(follow)
        assert store.get_session(sid).state == "running"
        store.sync_prepare("repo")
        assert [s.state for s in store.sync_session_rows()] == ["running"]
        store.save_follow(msgspec.structs.replace(follow, idle=True), expect_offset=10)
        assert store.get_session(sid).state == "new"
        assert [s.state for s in store.sync_session_rows()] == ["ended"]  # as pushed to PostgreSQL
        assert [r.idle for r in store.follows(active_only=True)] == [True]
        store.save_follow(msgspec.structs.replace(follow, offset=20), expect_offset=10)  # it grew
        assert store.get_session(sid).state == "running"
    with sqlite3.connect(store_path(root)) as conn:  # as an azsd from before the column left it
        conn.execute("ALTER TABLE azsd_follows DROP COLUMN idle")
    with Store.open(root) as store:
        assert [r.idle for r in store.follows(active_only=True)] == [False]
        assert store.get_session(sid).state == "running"
    with sqlite3.connect(store_path(root)) as conn:  # then AZUREAL moved it to a newer schema
        conn.execute("ALTER TABLE azsd_follows DROP COLUMN idle")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with Store.open(root) as store:
        assert store.read_only
        assert [r.idle for r in store.follows()] == [False]
        assert [i.state for i in store.list_sessions()] == ["running"]
