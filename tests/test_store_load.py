"""The `.azs` store on real SQLite files: loading rows back (bad rows, AZUREAL's rows, legacy
injected context), compaction and context, and files that are not ours (not SQLite, newer or older
schemas).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import zstandard

from azsd.context import CONTEXT_CLOSE, CONTEXT_OPEN, ContextPayload
from azsd.errors import NotAStoreError, ReadOnlyStoreError, StoreError
from azsd.events import AssistantText, Compacted, UserMessage, encode_event
from azsd.store import Store, store_path
from tests.test_store import raw_rows, sample_events

# -- loading ----------------------------------------------------------------------------------------


def test_load_all_from_and_range(store: Store) -> None:
    s = store.create_session()
    store.append_events(s.id, [AssistantText(text=str(i)) for i in range(1, 11)])
    assert [e.seq for e in store.load_events(s.id).events] == list(range(1, 11))
    assert [e.seq for e in store.load_events(s.id, 8).events] == [8, 9, 10]
    assert [e.seq for e in store.load_events(s.id, 3, 5).events] == [3, 4, 5]
    assert [e.seq for e in store.load_events(s.id, 2, limit=2).events] == [2, 3]
    info = store.get_session(s.id)
    assert (info.event_count, info.message_count) == (10, 10)
    assert store.max_seq(s.id) == 10


def insert_raw(path: Path, sid: int, seq: int, kind: str, data: object, length: int = 0) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
            (sid, seq, kind, data, length),
        )


def test_bad_rows_are_skipped_and_counted(store: Store) -> None:
    s = store.create_session()
    store.append_events(s.id, [UserMessage(content="good")])
    frame = zstandard.ZstdCompressor().compress(b'{"AssistantText":{"text":"x"}}')
    insert_raw(store.path, s.id, 2, "AssistantText", frame[:-3])  # truncated frame
    insert_raw(store.path, s.id, 3, "AssistantText", b"\x28\xb5\x2f\xfd garbage")
    insert_raw(store.path, s.id, 4, "AssistantText", b"not json")
    insert_raw(store.path, s.id, 5, "Bogus", b'{"Bogus":{}}')
    insert_raw(
        store.path, s.id, 6, "Complete", b'{"Complete":{"success":true,"duration_ms":5000.0,"cost_usd":0}}'
    )
    insert_raw(store.path, s.id, 7, "AssistantText", b'{"AssistantText":{"text":"fine"}}')
    result = store.load_events(s.id)
    assert result.skipped == 5
    assert [(e.seq, e.event) for e in result.events] == [
        (1, UserMessage(content="good")),
        (7, AssistantText(text="fine")),
    ]


def test_rows_as_azureal_writes_them_read_back(store: Store) -> None:
    s = store.create_session()
    # A streaming frame (no content size), a raw JSON blob, and a TEXT-typed value.
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=False)
    obj = cctx.compressobj()
    streamed = obj.compress(b'{"UserMessage":{"content":"streamed"}}') + obj.flush()
    assert zstandard.frame_content_size(streamed) == -1  # unknown
    insert_raw(store.path, s.id, 1, "UserMessage", streamed)
    insert_raw(store.path, s.id, 2, "AssistantText", b'{"AssistantText":{"text":"raw blob"}}')
    insert_raw(store.path, s.id, 3, "Compacted", '"Compacted"')
    assert store.load_events(s.id).plain() == [
        UserMessage(content="streamed"),
        AssistantText(text="raw blob"),
        Compacted(),
    ]


def test_loading_strips_injected_context_from_legacy_rows(store: Store) -> None:
    s = store.create_session()
    wrapped = f"{CONTEXT_OPEN}\n## User\nold\n{CONTEXT_CLOSE}\n\nthe prompt"
    insert_raw(store.path, s.id, 1, "UserMessage", encode_event(UserMessage(content=wrapped)), 9999)
    insert_raw(store.path, s.id, 2, "AssistantText", encode_event(AssistantText(text="reply")))
    loaded = store.load_events(s.id)
    assert [(e.seq, e.event) for e in loaded.events] == [
        (1, UserMessage(content="the prompt")),
        (2, AssistantText(text="reply")),
    ]


# -- compaction and context -------------------------------------------------------------------------


def test_compaction_boundary_spec_example(store: Store) -> None:
    s = store.create_session()
    events: list[UserMessage | AssistantText] = []
    for i in range(5):
        events += [UserMessage(content=f"p{i}"), AssistantText(text=f"a{i}")]
    store.append_events(s.id, events)  # prompts at seqs 1, 3, 5, 7, 9
    assert store.compaction_boundary(s.id, 1, 3) == 4
    assert store.compaction_boundary(s.id, 1, 1) == 8
    assert store.compaction_boundary(s.id, 1, 5) is None
    assert store.compaction_boundary(s.id, 6, 2) is None  # only 7 and 9 remain
    assert store.compaction_boundary(s.id, 6, 1) == 8
    with pytest.raises(ValueError):
        store.compaction_boundary(s.id, 1, 0)


def test_latest_compaction_is_the_highest_after_seq(store: Store) -> None:
    s = store.create_session()
    assert store.latest_compaction(s.id) is None
    store.store_compaction(s.id, 10, "ten")
    store.store_compaction(s.id, 4, "four (inserted later)")
    latest = store.latest_compaction(s.id)
    assert latest is not None and (latest.after_seq, latest.summary) == (10, "ten")


def test_total_chars_since_compaction_threshold_case(store: Store) -> None:
    s = store.create_session()
    store.append_events(s.id, [UserMessage(content="x" * 200_000), AssistantText(text="é" * 100_000)])
    assert store.total_chars_since_compaction(s.id) == 400_000
    store.store_compaction(s.id, 1, "sum")
    assert store.total_chars_since_compaction(s.id) == 200_000


def test_build_context(store: Store) -> None:
    s = store.create_session()
    assert store.build_context(s.id) is None
    store.append_events(s.id, sample_events())
    payload = store.build_context(s.id)
    assert payload is not None and payload.compaction_summary is None and len(payload.events) == 4
    store.store_compaction(s.id, 2, "earlier work")
    assert store.build_context(s.id) == ContextPayload("earlier work", sample_events()[2:])


def test_build_context_with_compaction_and_no_new_events(store: Store) -> None:
    s = store.create_session()
    store.append_events(s.id, [UserMessage(content="a")])
    store.store_compaction(s.id, 1, "all of it")
    assert store.build_context(s.id) == ContextPayload("all of it", [])


# -- files that are not ours ----------------------------------------------------------------------


def test_a_file_that_is_not_sqlite_gives_a_clear_error(root: Path) -> None:
    path = store_path(root)
    path.parent.mkdir()
    path.write_bytes(b"this is not a database, just text\n" * 100)
    with pytest.raises(NotAStoreError, match="not an SQLite database"):
        Store.open(root)
    assert path.read_bytes() == b"this is not a database, just text\n" * 100


def test_a_newer_schema_is_read_only(root: Path) -> None:
    with Store.open(root) as store:
        s = store.create_session()
        store.append_events(s.id, [UserMessage(content="kept")])
    with sqlite3.connect(store_path(root)) as conn:
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    before = store_path(root).read_bytes()
    with Store.open(root) as store:
        assert store.read_only and store.schema_version == 4
        assert store.load_events(s.id).plain() == [UserMessage(content="kept")]
        with pytest.raises(ReadOnlyStoreError, match="schema_version 4"):
            store.append_events(s.id, [UserMessage(content="lost?")])
        with pytest.raises(ReadOnlyStoreError):
            store.create_session()
    assert store_path(root).read_bytes() == before


def test_a_newer_schema_without_azsd_tables_still_lists_and_shows(root: Path) -> None:
    """A store AZUREAL rewrote in a newer schema may lack azsd's side tables: reads still work."""
    with Store.open(root) as store:
        s = store.create_session("kept")
        store.append_events(s.id, [UserMessage(content="kept")])
    with sqlite3.connect(store_path(root)) as conn:
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        for table in ("azsd_usage", "azsd_lineage", "azsd_archive", "azsd_follows"):
            conn.execute(f"DROP TABLE {table}")
    with Store.open(root) as store:
        assert [i.name for i in store.list_sessions(archived="exclude")] == ["kept"]
        assert store.usage_by_session() == {} and store.session_usage(s.id).turns == 0
        assert store.forks_of(s.id) == [] and store.get_session(s.id).parent is None


def test_a_v2_store_is_migrated(root: Path) -> None:
    path = store_path(root)
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:
        conn.executescript(
            """
            CREATE TABLE sessions (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT '',
                worktree TEXT NOT NULL DEFAULT '', created TEXT NOT NULL DEFAULT (datetime('now')),
                completed INTEGER, duration_ms INTEGER, cost_usd REAL,
                context_tokens INTEGER, output_tokens INTEGER, context_window INTEGER);
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO meta VALUES ('schema_version', '2');
            INSERT INTO sessions (id, name) VALUES (3, 'old one');
            """
        )
    with Store.open(root) as store:
        assert store.get_session(3).name == "old one"
        assert store.create_session().id == 4
    columns = [r[1] for r in raw_rows(path, "PRAGMA table_info(sessions)")]
    assert columns == [
        "id", "name", "worktree", "created", "completed", "duration_ms", "cost_usd", "last_claude_uuid",
    ]  # fmt: skip
    assert raw_rows(path, "SELECT value FROM meta WHERE key = 'schema_version'") == [("3",)]


def test_store_errors_are_azsd_errors(store: Store) -> None:
    store.create_session()
    with pytest.raises(StoreError):
        store.append_events(7, [])
