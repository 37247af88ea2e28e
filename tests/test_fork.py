"""Fork, archive, and deleting sessions that have forks, in the store."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from azsd.errors import SessionNotFoundError
from azsd.events import AssistantText, Complete, Event, Init, ToolCall, ToolResult, UserMessage
from azsd.store import Store
from tests.test_search import index_contents


def rows(store: Store, session: int) -> dict[str, list[Any]]:
    """Everything the store holds for a session, as sqlite3 reads it (ids included)."""
    with sqlite3.connect(store.path) as conn:
        return {
            "session": conn.execute("SELECT * FROM sessions WHERE id = ?", (session,)).fetchall(),
            "events": conn.execute(
                "SELECT id, seq, kind, data, char_len FROM events WHERE session_id = ? ORDER BY seq",
                (session,),
            ).fetchall(),
            "compactions": conn.execute(
                "SELECT * FROM compactions WHERE session_id = ? ORDER BY id", (session,)
            ).fetchall(),
            "usage": conn.execute("SELECT * FROM azsd_usage WHERE session_id = ?", (session,)).fetchall(),
        }


TURN_1: list[Event] = [
    Init(cwd="/w", model="m"),
    UserMessage(content="first question"),
    ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls"}),
    ToolResult(tool_use_id="t1", tool_name="Bash", content="a b", is_error=False),
    AssistantText(text="first answer"),
    Complete(success=True, duration_ms=1200, cost_usd=0.01),
]
TURN_2: list[Event] = [
    UserMessage(content="second question"),
    AssistantText(text="second answer"),
    Complete(success=False, duration_ms=900, cost_usd=0.02),
]


@pytest.fixture
def parent(store: Store) -> int:
    s = store.create_session("parent", worktree="main")
    store.append_events(s.id, TURN_1 + TURN_2)
    store.store_compaction(s.id, 4, "summary of the first turn")
    store.store_compaction(s.id, 8, "summary of both")
    return s.id


def test_fork_copies_events_up_to_the_seq_and_leaves_the_parent_byte_identical(
    store: Store, parent: int
) -> None:
    before = rows(store, parent)
    fork = store.fork_session(parent, 6)
    assert rows(store, parent) == before
    copied = rows(store, fork.id)
    assert [(seq, kind, data, n) for _, seq, kind, data, n in copied["events"]] == [
        (seq, kind, data, n) for _, seq, kind, data, n in before["events"] if seq <= 6
    ]
    assert [e.event for e in store.load_events(fork.id).events] == TURN_1
    assert [(c[2], c[3]) for c in copied["compactions"]] == [(4, "summary of the first turn")]
    assert fork.name == "parent (fork at 6)"
    assert (fork.worktree, fork.parent, fork.fork_seq, fork.event_count) == ("main", parent, 6, 6)
    assert store.get_session(parent).parent is None
    assert store.forks_of(parent) == [fork.id]


def test_a_compaction_at_the_fork_point_comes_along(store: Store, parent: int) -> None:
    fork = store.fork_session(parent, 4)
    latest = store.latest_compaction(fork.id)
    assert latest is not None and (latest.after_seq, latest.summary) == (4, "summary of the first turn")
    assert store.total_chars_since_compaction(fork.id) == 0
    payload = store.build_context(fork.id)
    assert payload is not None and payload.compaction_summary == "summary of the first turn"
    assert list(payload.events) == []


def test_fork_recomputes_the_badge(store: Store, parent: int) -> None:
    assert store.get_session(parent).state == "failed"
    done = store.fork_session(parent, 6, "after turn one")
    assert (done.state, done.duration_ms, done.cost_usd, done.name) == (
        "succeeded",
        1200,
        0.01,
        "after turn one",
    )
    mid = store.fork_session(parent, 8)
    assert mid.state == "ended"  # a prompt and an answer after the last Complete, nothing following


def test_forks_are_searchable_and_grow_on_their_own(store: Store, parent: int) -> None:
    fork = store.fork_session(parent, 6)
    hits = store.search("first")  # a fork's copies are one hit each, naming the fork (issue 25)
    assert [(h.session_id, h.also_in) for h in hits] == [(parent, [fork.id]), (parent, [fork.id])]
    assert {h.session_id for h in store.search("second")} == {parent}
    appended = store.append_events(fork.id, [UserMessage(content="another road")])
    assert [e.seq for e in appended.events] == [7]
    assert [h.session_id for h in store.search("road")] == [fork.id]
    assert store.max_seq(parent) == 9


@pytest.mark.parametrize("at", [0, 10, -1])
def test_a_fork_point_outside_the_session_is_refused(store: Store, parent: int, at: int) -> None:
    count = store.count_sessions()
    with pytest.raises(ValueError, match="a fork point is 1 to 9"):
        store.fork_session(parent, at)
    assert store.count_sessions() == count


def test_forking_a_missing_or_empty_session(store: Store) -> None:
    with pytest.raises(SessionNotFoundError):
        store.fork_session(42, 1)
    empty = store.create_session()
    with pytest.raises(ValueError, match="has no events to fork"):
        store.fork_session(empty.id, 1)


def test_deleting_a_parent_keeps_its_forks_and_clears_their_lineage(store: Store, parent: int) -> None:
    fork = store.fork_session(parent, 6)
    grandchild = store.fork_session(fork.id, 3)
    assert store.delete_session(parent) == [parent]
    kept = store.get_session(fork.id)
    assert (kept.parent, kept.fork_seq, kept.event_count) == (None, None, 6)
    assert store.get_session(grandchild.id).parent == fork.id
    with sqlite3.connect(store.path) as conn:
        assert conn.execute(
            "SELECT COUNT(*) FROM azsd_lineage WHERE parent_id = ?", (parent,)
        ).fetchone() == (0,)


def test_deleting_with_forks_removes_the_whole_family(store: Store, parent: int) -> None:
    other = store.create_session("unrelated")
    fork = store.fork_session(parent, 6)
    grandchild = store.fork_session(fork.id, 3)
    sibling = store.fork_session(parent, 2)
    assert store.delete_session(parent, with_forks=True) == [parent, fork.id, grandchild.id, sibling.id]
    assert [s.id for s in store.list_sessions()] == [other.id]
    assert store.search("first") == []
    assert index_contents(store) == (0, [])  # the index holds nothing of them, not only hides it
    assert store.create_session().id == sibling.id + 1  # numbers are never reused


def test_a_fork_whose_parent_azureal_deleted_has_no_lineage(store: Store, parent: int) -> None:
    fork = store.fork_session(parent, 6)
    with sqlite3.connect(store.path) as conn:  # AZUREAL deletes with its own connection
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (parent,))
    assert store.get_session(fork.id).parent is None
    assert store.forks_of(parent) == []


def test_archive_hides_a_session_from_listings_until_unarchived(store: Store, parent: int) -> None:
    other = store.create_session("other", worktree="main")
    store.set_archived(parent, True)
    store.set_archived(parent, True)  # again: no change, no error
    assert [s.id for s in store.list_sessions(archived="exclude")] == [other.id]
    assert [s.id for s in store.list_sessions(archived="only")] == [parent]
    assert {s.id for s in store.list_sessions()} == {parent, other.id}
    assert store.count_sessions("main", archived="exclude") == 1
    assert store.count_sessions(archived="only") == 1
    assert store.get_session(parent).archived
    assert store.load_events(parent).events  # nothing is deleted
    fresh = Store.open(store.root)  # and it is in the file, not only in this Store's index
    assert [s.id for s in fresh.list_sessions(archived="only")] == [parent]
    fresh.close()
    store.set_archived(parent, False)
    assert {s.id for s in store.list_sessions(archived="exclude")} == {parent, other.id}
    with pytest.raises(SessionNotFoundError):
        store.set_archived(99, True)
