"""What the Store keeps in memory: the shared row cache and the session index, which must always
answer exactly as the SQL they stand in for, whoever writes the file and whatever rolls back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest
import zstandard

from azsd.context import CONTEXT_CLOSE, CONTEXT_OPEN, build_context_prompt, render_transcript
from azsd.errors import SessionNotFoundError
from azsd.events import AssistantText, Complete, Event, ToolCall, ToolResult, UserMessage, encode_event
from azsd.ingest import file as ingest
from azsd.ingest.file import ingest_file
from azsd.ingest.parsers import make_parser
from azsd.ingest.parsers.claude import TOOL_CALLS_KEPT
from azsd.ingest.parsers.claude_usage import MESSAGES_KEPT
from azsd.model import SessionInfo
from azsd.server.views import wire_events
from azsd.store import Store, store_path
from azsd.store.cache import FRESH_SHARE, ROWS, CachedRow, RowCache
from azsd.store.codec import PARALLEL_ROWS, RowCodec


def turn(i: int, *, done: bool = True) -> list[Event]:
    events: list[Event] = [
        UserMessage(content=f"prompt {i}"),
        AssistantText(text=f"answer {i}"),
        ToolCall(tool_use_id=f"t{i}", tool_name="Bash", input={"command": f"echo {i}"}),
        ToolResult(tool_use_id=f"t{i}", tool_name="Bash", content=f"{i}\n", is_error=False),
    ]
    if done:
        events.append(Complete(success=i % 2 == 0, duration_ms=10 * i, cost_usd=0.5))
    return events


def listed_fresh(root: Path, worktree: str | None = None) -> list[SessionInfo]:
    """What a Store that never saw anything before lists (the plain SQL answer)."""
    with Store.open(root) as fresh:
        return fresh.list_sessions(worktree)


def foreign(root: Path) -> sqlite3.Connection:
    """Another writer on the same file, as AZUREAL would be."""
    return sqlite3.connect(store_path(root), isolation_level=None)


# -- the row cache ---------------------------------------------------------------------------------


def test_row_cache_forgets_the_least_recently_used_past_its_budget() -> None:
    cache = RowCache(budget=3 * CachedRow(b"k0", b"x" * 100).cost)
    rows = [CachedRow(f"k{i}".encode(), b"x" * 100) for i in range(4)]
    cache.put_many(rows[:3])
    assert cache.get_many([b"k0"])[0] is rows[0]  # now the most recently used
    cache.put_many(rows[3:])
    assert [r is not None for r in cache.get_many([b"k0", b"k1", b"k2", b"k3"])] == [True, False, True, True]
    assert cache.size <= cache.budget and len(cache) == 3


def test_row_cache_skips_a_row_bigger_than_its_budget() -> None:
    cache = RowCache(budget=1000)
    cache.put_many([CachedRow(b"big", b"x" * 1000)])
    assert len(cache) == 0 and cache.get_many([b"big"]) == [None]


def test_appended_rows_wait_apart_in_their_share_until_read() -> None:
    one = CachedRow(b"r0", b"x" * 100).cost
    cache = RowCache(budget=FRESH_SHARE * (2 * one + 9))  # room for 2 fresh rows (keys one longer)
    read = [CachedRow(f"r{i}".encode(), b"x" * 100) for i in range(8)]
    cache.put_many(read)
    appended = [CachedRow(f"a{i}".encode(), b"y" * 100, AssistantText(text="y")) for i in range(50)]
    cache.put_many(appended, fresh=True)  # a big follow: none of its rows is read
    assert all(row is not None for row in cache.get_many([r.key for r in read]))  # none pushed out
    assert cache.get_many([b"a0", b"a47"]) == [None, None]
    assert cache.size <= cache.budget and len(cache) == 8 + 2
    got = cache.get_many([b"a48", b"a48", b"a49"])  # read at last: ordinary rows now
    assert got == [appended[48], appended[48], appended[49]]
    cache.put_many(
        [CachedRow(f"b{i}".encode(), b"z" * 100, AssistantText(text="z")) for i in range(5)], fresh=True
    )
    assert cache.get_many([b"a48", b"a49"]) == [appended[48], appended[49]]
    assert appended[48].json == b"" and appended[48].wire == "y" * 100  # the wire text is the JSON
    assert cache.size <= cache.budget


def test_loads_are_the_same_with_and_without_the_row_cache(store: Store) -> None:
    sid = store.create_session().id
    wrapped = f"{CONTEXT_OPEN}\n## User\nold\n{CONTEXT_CLOSE}\n\nnew prompt"
    store.append_events(sid, [*turn(1), *turn(2, done=False)])
    with store.atomic() as conn:  # a prompt as AZUREAL may have stored it, context and all
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, 11, 'UserMessage', ?, 0)",
            (sid, zstandard.ZstdCompressor().compress(encode_event(UserMessage(content=wrapped)))),
        )
    ROWS.clear()
    cold = (store.load_events(sid), store.load_json(sid), store.build_context(sid))
    warm = (store.load_events(sid), store.load_json(sid), store.build_context(sid))
    assert cold == warm
    events, skipped = warm[1]
    assert skipped == 0
    assert events == [(w.seq, w.kind, w.data) for w in wire_events(warm[0].events)]
    assert events[-1] == (11, "UserMessage", '{"UserMessage":{"content":"new prompt"}}')
    payload = warm[2]
    assert payload is not None and payload.rendered is not None
    transcript = render_transcript(None, payload.events)
    assert render_transcript(None, payload.events, payload.rendered) == transcript
    bare = type(payload)(payload.compaction_summary, payload.events)
    assert build_context_prompt(payload, "next") == build_context_prompt(bare, "next")


# -- the session index -----------------------------------------------------------------------------


def test_listing_follows_the_stores_own_writes(store: Store, root: Path) -> None:
    ids = [store.create_session(f"s{i}", "main" if i % 2 else "feat").id for i in range(6)]
    assert store.list_sessions() == listed_fresh(root)  # the index is built now
    store.append_events(ids[1], turn(1))
    store.append_events(ids[4], turn(2, done=False))
    store.rename_session(ids[2], "renamed")
    store.mark_completed(ids[3], False, 5, 0.25)
    store.delete_session(ids[5])
    new = store.create_session("late", "main").id
    store.append_events(ids[1], [AssistantText(text="more")])
    for worktree in (None, "main", "feat", "none"):
        assert store.list_sessions(worktree) == listed_fresh(root, worktree)
        assert store.count_sessions(worktree) == len(listed_fresh(root, worktree))
    assert [s.id for s in store.list_sessions()][:3] == [ids[1], ids[4], new]
    assert store.list_sessions(limit=2, offset=1) == listed_fresh(root)[1:3]
    assert store.list_sessions(limit=0) == []
    assert store.get_session(ids[1]) == next(s for s in listed_fresh(root) if s.id == ids[1])
    with pytest.raises(SessionNotFoundError):
        store.get_session(ids[5])
    assert store.rename_worktree("feat", "main") == 3
    assert store.list_sessions("main") == listed_fresh(root, "main")


def test_listing_sees_what_another_connection_committed(store: Store, root: Path) -> None:
    a = store.create_session("a").id
    store.list_sessions()
    with foreign(root) as conn:
        conn.execute("INSERT INTO sessions (id, name) VALUES (?, 'theirs')", (a + 1,))
        data = zstandard.ZstdCompressor().compress(b'{"AssistantText":{"text":"x"}}')
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, 1, 'AssistantText', ?, 1)",
            (a, data),
        )
        conn.execute("UPDATE sessions SET completed = 1 WHERE id = ?", (a,))
    assert store.list_sessions() == listed_fresh(root)
    got = {s.id: s for s in store.list_sessions()}
    assert got[a].event_count == 1 and got[a].message_count == 1 and got[a].completed is True
    assert got[a + 1].name == "theirs" and store.get_session(a + 1).name == "theirs"


def test_listing_after_a_rollback_shows_only_what_was_committed(store: Store, root: Path) -> None:
    a, b = store.create_session("a").id, store.create_session("b").id
    store.list_sessions()
    with pytest.raises(RuntimeError), store.atomic():
        store.append_events(a, turn(1))
        store.rename_session(b, "gone")
        assert [s.id for s in store.list_sessions()] == [a, b]  # inside: the uncommitted state
        raise RuntimeError("undo")
    assert store.list_sessions() == listed_fresh(root)
    assert store.get_session(a).event_count == 0 and store.get_session(b).name == "b"
    with store.atomic():  # a request that fails alone inside a group
        store.append_events(b, turn(2))
        with pytest.raises(SessionNotFoundError):
            store.append_events(999, turn(3))
    assert store.list_sessions() == listed_fresh(root)
    assert store.list_sessions()[0].id == b


# -- streaming ingest ------------------------------------------------------------------------------


def stream_json(path: Path, turns: int, last_done: bool) -> None:
    lines = ['{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}']
    for i in range(turns):
        lines += [
            f'{{"type":"user","message":{{"role":"user","content":"prompt {i}"}},"session_id":"s"}}',
            f'{{"type":"assistant","session_id":"s","message":{{"id":"m{i}","content":'
            f'[{{"type":"tool_use","id":"t{i}","name":"Bash","input":{{"command":"ls"}}}}],'
            f'"usage":{{"input_tokens":1,"output_tokens":{i}}}}}}}',
            f'{{"type":"user","session_id":"s","message":{{"role":"user","content":'
            f'[{{"tool_use_id":"t{i}","type":"tool_result","content":"a\\nb"}}]}}}}',
        ]
        if i < turns - 1 or last_done:
            lines.append(
                f'{{"type":"result","subtype":"success","session_id":"s","duration_ms":{i},"total_cost_usd":1}}'
            )
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("chunk", [1, 2, 5, 8192])
@pytest.mark.parametrize("last_done", [True, False])
def test_ingest_in_chunks_stores_what_one_append_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, last_done: bool
) -> None:
    source = tmp_path / "run.jsonl"
    stream_json(source, 7, last_done)
    results = []
    for size in (chunk, 1_000_000):
        monkeypatch.setattr(ingest, "CHUNK_LINES", size)
        root = tmp_path / f"wt{size}"
        root.mkdir()
        with Store.open(root) as store:
            sid = store.create_session().id
            store.append_events(sid, [UserMessage(content="before")])
            first = ingest_file(store, sid, source)
            again = ingest_file(store, sid, source)  # everything already stored
            results.append(
                (
                    first.appended,
                    first.parsed,
                    again.appended,
                    store.load_events(sid),
                    msgspec.structs.replace(store.get_session(sid), created=""),  # may be a second apart
                )
            )
    assert results[0] == results[1]
    assert results[0][2] == 0
    info = results[0][4]  # as one append: the last Complete decides, even before a turn without one
    assert info.completed is True and info.duration_ms == (6 if last_done else 5)


def test_ingest_overlap_longer_than_a_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest, "CHUNK_LINES", 3)
    source, longer = tmp_path / "run.jsonl", tmp_path / "longer.jsonl"
    stream_json(source, 5, True)
    stream_json(longer, 8, True)
    with Store.open(tmp_path) as store:
        sid = store.create_session().id
        assert ingest_file(store, sid, source).appended > 0
        stored = store.get_session(sid).event_count
        report = ingest_file(store, sid, longer)  # its first five turns are already stored
        assert report.duplicates == stored  # the leading Init is skipped, the five turns recognised
        assert store.get_session(sid).event_count == stored + report.appended
        assert ingest_file(store, sid, longer).appended == 0


# -- codec and parser ------------------------------------------------------------------------------


def test_encode_many_makes_the_frames_encode_makes() -> None:
    codec = RowCodec()
    payloads = [encode_event(AssistantText(text=f"text {i} " * (i % 7))) for i in range(PARALLEL_ROWS + 3)]
    assert codec.encode_many(payloads) == [codec.encode(p) for p in payloads]
    assert codec.encode_many(payloads[:5]) == [codec.encode(p) for p in payloads[:5]]


def test_claude_parser_state_stays_bounded_and_usage_exact() -> None:
    parser = make_parser("claude-stream-json")
    parser.feed(
        b'{"type":"assistant","session_id":"s","message":{"id":"sub","content":'
        b'[{"type":"tool_use","id":"task","name":"Task","input":{"description":"d"}}]}}'
    )
    n = TOOL_CALLS_KEPT + MESSAGES_KEPT + 10
    output = 0
    for i in range(n):
        for part in (1, 2):  # one message split over two lines, as Claude writes it
            parser.feed(
                f'{{"type":"assistant","session_id":"s","message":{{"id":"m{i}","content":'
                f'[{{"type":"tool_use","id":"t{i}_{part}","name":"Read","input":{{"file_path":"/f"}}}}],'
                f'"usage":{{"input_tokens":2,"output_tokens":{part * 3}}}}}}}'.encode()
            )
        output += 6
    result = parser.feed(
        f'{{"type":"user","session_id":"s","message":{{"role":"user","content":'
        f'[{{"tool_use_id":"t{n - 1}_2","type":"tool_result","content":"x"}}]}}}}'.encode()
    )
    assert isinstance(result[0], ToolResult) and result[0].tool_name == "Read"
    task = parser.feed(
        b'{"type":"user","session_id":"s","message":{"role":"user","content":'
        b'[{"tool_use_id":"task","type":"tool_result","content":"done"}]}}'
    )
    assert isinstance(task[0], ToolResult) and task[0].tool_name == "Task"  # a running sub-agent is kept
    assert parser.report.usage.input == 2 * n and parser.report.usage.output == output
    assert len(parser._tools) == TOOL_CALLS_KEPT  # type: ignore[attr-defined]
    assert len(parser._usage._messages) == MESSAGES_KEPT  # type: ignore[attr-defined]
