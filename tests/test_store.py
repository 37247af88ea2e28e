"""The `.azs` store on real SQLite files: lazy creation, sessions, events, completion.

Loading, compaction and foreign files: tests/test_store_load.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import zstandard

import azsd.store
from azsd.context import CONTEXT_CLOSE, CONTEXT_OPEN
from azsd.errors import SessionNotFoundError
from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    ModelSwitch,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.store import Store, store_path


def raw_rows(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, params).fetchall()


def sample_events() -> list[UserMessage | AssistantText | ToolCall | ToolResult]:
    """The spec's `sample_events` (§9)."""
    return [
        UserMessage(content="Hello"),
        AssistantText(text="Hi there!"),
        ToolCall(tool_use_id="tc1", tool_name="Read", file_path=None, input={"file_path": "/src/main.rs"}),
        ToolResult(tool_use_id="tc1", tool_name="Read", content="fn main() {}", is_error=False),
    ]


# -- lazy creation --------------------------------------------------------------------------------


def test_opening_a_root_never_creates_the_file(root: Path) -> None:
    with Store.open(root) as store:
        assert not store.exists
        assert store.list_sessions() == []
        assert store.count_sessions() == 0
        assert store.load_events(1).events == []
        assert store.build_context(1) is None
        assert store.search("x") == []
        with pytest.raises(SessionNotFoundError):
            store.get_session(1)
    assert not (root / ".azureal").exists()


def test_first_session_creates_directories_and_file(store: Store, root: Path) -> None:
    session = store.create_session(worktree="main")
    assert store_path(root).is_file()
    assert session.id == 1 and session.worktree == "main" and session.name == ""
    assert session.display_name == "S1"
    assert session.state == "new"


# -- sessions ---------------------------------------------------------------------------------------


def test_rename_get_count_and_display_name(store: Store) -> None:
    a = store.create_session(worktree="main")
    b = store.create_session("fix parser", worktree="azureal/feat-x")
    assert b.name == "fix parser" and b.display_name == "fix parser"
    store.rename_session(a.id, "renamed")
    assert store.get_session(a.id).display_name == "renamed"
    assert store.count_sessions() == 2
    assert store.count_sessions("main") == 1
    assert store.session_names() == {1: "renamed", 2: "fix parser"}
    with pytest.raises(SessionNotFoundError):
        store.rename_session(99, "nope")


def test_list_orders_by_latest_activity_then_id(store: Store) -> None:
    ids = [store.create_session(worktree="main").id for _ in range(4)]
    store.append_events(ids[0], [UserMessage(content="first")])
    store.append_events(ids[2], [UserMessage(content="second")])
    store.append_events(ids[0], [AssistantText(text="latest")])
    listed = [s.id for s in store.list_sessions()]
    # S1 has the newest event row, then S3; S2 and S4 have none and follow by id descending.
    assert listed == [ids[0], ids[2], ids[3], ids[1]]
    s1 = store.list_sessions()[0]
    assert (s1.event_count, s1.message_count, s1.state) == (2, 2, "ended")  # nothing follows it
    assert [s.id for s in store.list_sessions(limit=2, offset=1)] == [ids[2], ids[3]]


def test_list_filters_by_worktree(store: Store) -> None:
    store.create_session(worktree="main")
    store.create_session(worktree="feat")
    assert [s.worktree for s in store.list_sessions("feat")] == ["feat"]


def test_delete_cascades_to_events_and_compactions(store: Store) -> None:
    s = store.create_session()
    store.append_events(s.id, sample_events())
    store.store_compaction(s.id, 2, "summary")
    store.delete_session(s.id)
    assert raw_rows(store.path, "SELECT COUNT(*) FROM events") == [(0,)]
    assert raw_rows(store.path, "SELECT COUNT(*) FROM compactions") == [(0,)]
    with pytest.raises(SessionNotFoundError):
        store.delete_session(s.id)


def test_numbers_are_never_reused_even_across_reopen(root: Path) -> None:
    with Store.open(root) as store:
        ids = [store.create_session().id for _ in range(5)]
        assert ids == [1, 2, 3, 4, 5]
        store.delete_session(5)
        assert store.create_session().id == 6
        store.delete_session(6)
    with Store.open(root) as store:
        assert store.create_session().id == 7


def test_sessions_created_by_a_foreign_writer_are_respected(store: Store) -> None:
    store.create_session()
    # AZUREAL lets SQLite pick max(rowid)+1.
    with sqlite3.connect(store.path) as conn:
        conn.execute("INSERT INTO sessions (worktree) VALUES ('main')")
    assert store.create_session().id == 3


def test_session_uuid_round_trip(store: Store) -> None:
    s = store.create_session(worktree="main")
    store.set_session_uuid(s.id, "abc-123")
    assert store.sessions_with_uuid() == [(s.id, "main", "abc-123")]
    store.clear_session_uuid(s.id)
    assert store.sessions_with_uuid() == []


def test_rename_worktree(store: Store) -> None:
    store.create_session(worktree="old")
    store.create_session(worktree="old")
    assert store.rename_worktree("old", "new") == 2
    assert {s.worktree for s in store.list_sessions()} == {"new"}


# -- append ---------------------------------------------------------------------------------------


def test_append_assigns_contiguous_seqs_and_skips_unstored_variants(store: Store) -> None:
    s = store.create_session()
    result = store.append_events(
        s.id,
        [
            Init(cwd="/w", model="m"),
            Filtered(),
            UserMessage(content="a"),
            MayBeCompacting(),
            AssistantText(text="b"),
        ],
    )
    assert [e.seq for e in result.events] == [1, 2, 3]
    again = store.append_events(s.id, [AssistantText(text="c")])
    assert [e.seq for e in again.events] == [4]
    rows = raw_rows(store.path, "SELECT seq, kind FROM events ORDER BY seq")
    assert rows == [(1, "Init"), (2, "UserMessage"), (3, "AssistantText"), (4, "AssistantText")]


def test_append_stores_compacted_zstd_rows_with_char_len(store: Store) -> None:
    s = store.create_session()
    store.append_events(
        s.id, [ToolResult(tool_use_id="t", tool_name="Bash", content="a\n\nb\nc\n", is_error=False)]
    )
    ((kind, data, length),) = raw_rows(store.path, "SELECT kind, data, char_len FROM events")
    assert kind == "ToolResult"
    assert isinstance(data, bytes) and data[:4] == b"\x28\xb5\x2f\xfd"
    payload = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    expected = (
        b'{"ToolResult":{"tool_use_id":"t","tool_name":"Bash","file_path":null,'
        b'"content":"b\\nc","is_error":false}}'
    )
    assert payload == expected
    assert length == 3


def test_prompt_that_was_only_injected_context_is_not_stored(store: Store) -> None:
    s = store.create_session()
    wrapped = f"{CONTEXT_OPEN}\n## User\nold\n{CONTEXT_CLOSE}\n\n"
    result = store.append_events(s.id, [UserMessage(content=wrapped), UserMessage(content="")])
    # The tagged one vanishes and uses no seq; a genuinely empty prompt is kept.
    assert [(e.seq, e.event) for e in result.events] == [(1, UserMessage(content=""))]


def test_append_cleans_an_injected_prompt(store: Store) -> None:
    s = store.create_session()
    wrapped = f"{CONTEXT_OPEN}\n## User\nold\n{CONTEXT_CLOSE}\n\nnew prompt"
    store.append_events(s.id, [UserMessage(content=wrapped)])
    assert store.load_events(s.id).plain() == [UserMessage(content="new prompt")]


def test_append_to_a_missing_session_fails_and_writes_nothing(store: Store) -> None:
    store.create_session()
    with pytest.raises(SessionNotFoundError):
        store.append_events(42, [UserMessage(content="x")])
    assert raw_rows(store.path, "SELECT COUNT(*) FROM events") == [(0,)]


def completion(store: Store, sid: int) -> tuple[object, ...]:
    return raw_rows(store.path, "SELECT completed, duration_ms, cost_usd FROM sessions WHERE id = ?", (sid,))[
        0
    ]


def test_completion_rules(store: Store) -> None:
    s = store.create_session()
    store.append_events(
        s.id, [UserMessage(content="go"), Complete(success=True, duration_ms=5000, cost_usd=0.05)]
    )
    assert completion(store, s.id) == (1, 5000, 0.05)
    # Hook, Compacting, Compacted and ModelSwitch leave the badge alone.
    store.append_events(s.id, [Hook(name="h", output="o"), Compacting(), Compacted(), ModelSwitch(model="x")])
    assert completion(store, s.id) == (1, 5000, 0.05)
    # New turn content resets it (AZUREAL's "running"): ended, since no follow is active into it.
    store.append_events(s.id, [Command(name="/compact")])
    assert completion(store, s.id) == (None, None, None)
    assert store.get_session(s.id).state == "ended"
    # The last Complete of a batch wins, even with turn content after it.
    store.append_events(
        s.id,
        [
            Complete(success=True, duration_ms=1, cost_usd=1.0),
            Complete(success=False, duration_ms=2, cost_usd=2.0),
            AssistantText(text="after"),
        ],
    )
    assert completion(store, s.id) == (0, 2, 2.0)
    assert store.get_session(s.id).state == "failed"


def test_mark_completed(store: Store) -> None:
    s = store.create_session()
    store.mark_completed(s.id, True, 1234, 0.5)
    info = store.get_session(s.id)
    assert (info.completed, info.duration_ms, info.cost_usd, info.state) == (True, 1234, 0.5, "succeeded")
    with pytest.raises(SessionNotFoundError):
        store.mark_completed(99, True, 1, 0.0)


def test_atomic_groups_appends_and_rolls_back_on_error(store: Store) -> None:
    s = store.create_session()
    with store.atomic():
        store.append_events(s.id, [UserMessage(content="a")])
        store.append_events(s.id, [AssistantText(text="b")])
    assert store.max_seq(s.id) == 2
    with pytest.raises(RuntimeError), store.atomic():
        store.append_events(s.id, [UserMessage(content="c")])
        raise RuntimeError("boom")
    assert store.max_seq(s.id) == 2
    # A failing inner block (savepoint) does not undo the outer one.
    with store.atomic():
        store.append_events(s.id, [UserMessage(content="d")])
        with pytest.raises(SessionNotFoundError):
            store.append_events(404, [UserMessage(content="e")])
    assert [e.seq for e in store.load_events(s.id).events] == [1, 2, 3]


# -- the package ------------------------------------------------------------------------------------


def test_public_names() -> None:
    assert azsd.store.__all__ == [
        "BUSY_TIMEOUT_S",
        "STORE_DIR",
        "STORE_FILE",
        "Store",
        "completion_of",
        "store_path",
    ]
