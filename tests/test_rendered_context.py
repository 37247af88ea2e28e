"""The rendered context blocks (azsd.store.rendered): a context read from them is the one built from
the events, byte for byte, whoever wrote the rows.

Each check compares `Store.rendered_context` (what `BuildContext` serves) with `Store.build_context`
(the events decoded and rendered afresh), for the plain and the Codex prompt, on the writer, on a
freshly opened writer and on a reader, with the row cache emptied.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import msgspec
import pytest
import zstandard

from azsd.context import CONTEXT_CLOSE, CONTEXT_OPEN, HIDDEN_CODEX_PREFIX, build_context_prompt
from azsd.events import (
    AssistantText,
    Complete,
    Event,
    Init,
    ToolCall,
    ToolResult,
    UserMessage,
    encode_event,
    event_kind,
)
from azsd.ingest.file import ingest_file
from azsd.store import Store, rendered, store_path
from azsd.store.cache import ROWS
from azsd.store.core import StoreBusyError
from azsd.store.rendered import CONTEXT_INLINE_ROWS
from azsd.store.schema import CONTEXT_HWM_KEY
from tests.conftest import corpus_files, requires_corpus

WRAPPED = f"{CONTEXT_OPEN}\n## User\nold\n{CONTEXT_CLOSE}\n\nthe real prompt"
MALFORMED = f"{CONTEXT_OPEN}\n## User\nnever closed"
HIDDEN = f"{HIDDEN_CODEX_PREFIX}/repo\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>"


def turn(i: int) -> list[Event]:
    return [
        UserMessage(content=f"prompt {i}"),
        AssistantText(text=f"answer {i}\nline two"),
        ToolCall(tool_use_id=f"t{i}", tool_name="Bash", input={"command": f"ls {i}"}),
        ToolResult(
            tool_use_id=f"t{i}",
            tool_name="Bash",
            content="\n".join(f"l{j}" for j in range(9)),
            is_error=i % 2 == 0,
        ),
        Complete(success=True, duration_ms=1234 + i, cost_usd=0.0123),
    ]


def prompts(store: Store, sid: int) -> tuple[str, str]:
    payload = store.build_context(sid)
    return build_context_prompt(payload, "next"), build_context_prompt(payload, "next", codex=True)


def assert_same(root: Path, sid: int) -> None:
    """The rendered context equals the one from the events, on a fresh writer and on a reader."""
    for reader in (False, True):
        ROWS.clear()
        with Store.open(root, reader=reader) as store, store.snapshot():
            fast = store.rendered_context(sid)
            want = store.build_context(sid)
            assert (fast is None) == (want is None)
            assert build_context_prompt(fast, "next") == build_context_prompt(want, "next")
            assert build_context_prompt(fast, "go", codex=True) == build_context_prompt(
                want, "go", codex=True
            )


def azureal_append(root: Path, sid: int, events: list[Event], *, new_session: bool = False) -> int:
    """Append rows as AZUREAL does: its own connection, a streaming zstd frame (no content size)."""
    conn = sqlite3.connect(store_path(root), isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    if new_session:
        sid = conn.execute("INSERT INTO sessions (worktree) VALUES ('azureal')").lastrowid or 0
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (sid,)
    ).fetchone()[0]
    conn.execute("BEGIN")
    for i, event in enumerate(events):
        frame = zstandard.ZstdCompressor(level=3).compressobj()
        data = frame.compress(encode_event(event)) + frame.flush()
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, 0)",
            (sid, seq + i, event_kind(event), data),
        )
    conn.execute("COMMIT")
    conn.close()
    return sid


def context_mark(root: Path) -> int | None:
    conn = sqlite3.connect(store_path(root))
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (CONTEXT_HWM_KEY,)).fetchone()
    conn.close()
    return None if row is None else int(row[0])


def blocks_of(root: Path, sid: int) -> int:
    """How many of the session's events its groups hold."""
    conn = sqlite3.connect(store_path(root))
    layouts = conn.execute("SELECT layout FROM azsd_context WHERE session_id = ?", (sid,)).fetchall()
    conn.close()
    return sum(len(msgspec.msgpack.decode(layout)) // 3 for (layout,) in layouts)


@requires_corpus
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_every_corpus_file(tmp_path: Path, path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    root = tmp_path / "wt"
    with Store.open(root) as store:
        sid = store.create_session("corpus", "main").id
        ingest_file(store, sid, copy)
        assert blocks_of(root, sid) == store.max_seq(sid)  # rendered in the append transaction
        fast = store.rendered_context(sid)
        assert build_context_prompt(fast, "next") == prompts(store, sid)[0]
    assert_same(root, sid)


def test_azureal_rows_injected_context_and_catch_up(tmp_path: Path) -> None:
    """Rows AZUREAL appends (with prompts that still hold injected context) are read from the events
    until an append of azsd or the catch-up renders them; the prompt is the same throughout."""
    with Store.open(tmp_path) as store:
        sid = store.create_session("s", "main").id
        store.append_events(sid, turn(1))
    assert context_mark(tmp_path) is not None
    azureal_append(
        tmp_path,
        sid,
        [UserMessage(content="plain before"), UserMessage(content=WRAPPED), UserMessage(content="after"),
         AssistantText(text="ok"), UserMessage(content=MALFORMED), UserMessage(content="swallowed"),
         ToolCall(tool_use_id="x", tool_name="Read", input={"file_path": "/a"}), UserMessage(content=HIDDEN),
         UserMessage(content="kept"), *turn(2)],
    )  # fmt: skip
    assert_same(tmp_path, sid)
    with Store.open(tmp_path) as store:
        store.append_events(sid, turn(3))  # renders AZUREAL's rows first, then its own
        assert blocks_of(tmp_path, sid) == store.max_seq(sid)
        assert context_mark(tmp_path) == store._scalar("SELECT MAX(id) FROM events")
    assert_same(tmp_path, sid)
    with Store.open(tmp_path) as store:  # a compaction inside a run of prompts
        store.store_compaction(sid, 6, "summary up to the wrapped prompt")
    assert_same(tmp_path, sid)


def test_many_rows_wait_for_the_chunked_catch_up(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("s", "main").id
        store.append_events(sid, turn(0))
    other = azureal_append(
        tmp_path, 0, [e for i in range(CONTEXT_INLINE_ROWS // 5 + 1) for e in turn(i)], new_session=True
    )
    with Store.open(tmp_path) as store:
        store.append_events(sid, turn(1))  # too many above the mark: left to the catch-up
        assert blocks_of(tmp_path, other) == 0
        assert_same(tmp_path, other)
        assert_same(tmp_path, sid)
        store.catch_up_context()
        assert blocks_of(tmp_path, other) == store.max_seq(other) > CONTEXT_INLINE_ROWS
    assert_same(tmp_path, other)
    assert_same(tmp_path, sid)


def test_own_rows_are_rendered_while_many_foreign_rows_wait(tmp_path: Path) -> None:
    """A big ingest while AZUREAL's rows wait went to the catch-up whole: azsd renders its own rows
    in their append when every earlier row of their session has its block (the mark stays, and the
    catch-up skips them), and leaves to the catch-up a session whose own earlier rows wait."""
    with Store.open(tmp_path) as store:
        sid = store.create_session("s", "main").id
        store.append_events(sid, turn(0))
        shared = store.create_session("shared", "main").id
        store.append_events(shared, turn(0))
    mark = context_mark(tmp_path)
    other = azureal_append(
        tmp_path, 0, [e for i in range(CONTEXT_INLINE_ROWS // 5 + 1) for e in turn(i)], new_session=True
    )
    azureal_append(tmp_path, shared, turn(1))  # rows of azsd's session that wait too
    with Store.open(tmp_path) as store:
        store.append_events(sid, turn(1))
        store.append_events(sid, turn(2))
        assert blocks_of(tmp_path, sid) == store.max_seq(sid) == 15  # in the appends themselves
        fork = store.fork_session(sid, 12).id
        assert blocks_of(tmp_path, fork) == 12
        store.append_events(shared, turn(2))  # its rows 6..10 wait: its own wait with them
        assert blocks_of(tmp_path, shared) == 5
        assert context_mark(tmp_path) == mark
        for session in (sid, fork, shared, other):
            assert_same(tmp_path, session)
        store.catch_up_context()
        for session in (sid, fork, shared, other):  # every row once: none rendered twice
            assert blocks_of(tmp_path, session) == store.max_seq(session)
    for session in (sid, fork, shared, other):
        assert_same(tmp_path, session)


def test_deletes_reused_ids_and_forks(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        a = store.create_session("a", "main").id
        b = store.create_session("b", "main").id
        for i in range(3):
            store.append_events(a, turn(i))
            store.append_events(b, turn(10 + i))
        fork = store.fork_session(a, 7).id
        assert blocks_of(tmp_path, fork) == 7
        store.append_events(fork, [UserMessage(content="in the fork")])
    assert_same(tmp_path, fork)
    # AZUREAL deletes the newest session and creates one that takes its id again
    conn = sqlite3.connect(store_path(tmp_path), isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM sessions WHERE id = ?", (fork,))
    conn.close()
    assert blocks_of(tmp_path, fork) == 0
    again = azureal_append(
        tmp_path, 0, [UserMessage(content="a new session"), AssistantText(text="hi")], new_session=True
    )
    assert again == fork
    assert_same(tmp_path, again)
    with Store.open(tmp_path) as store:
        store.delete_session(b)
        assert store.rendered_context(b) is None
        store.append_events(a, turn(5))
        second = store.fork_session(again, 2).id  # a fork of rows not rendered yet
    for sid in (a, again, second):
        assert_same(tmp_path, sid)


def test_a_store_from_before_the_table(tmp_path: Path) -> None:
    """A store written before the blocks existed (no table, no mark) is read from the events, and
    rendered by the catch-up."""
    with Store.open(tmp_path) as store:
        sid = store.create_session("s", "main").id
        store.append_events(sid, [*turn(1), UserMessage(content=WRAPPED)])
    conn = sqlite3.connect(store_path(tmp_path), isolation_level=None)
    conn.execute("DROP TABLE azsd_context")
    conn.execute("DELETE FROM meta WHERE key = ?", (CONTEXT_HWM_KEY,))
    conn.close()
    assert_same(tmp_path, sid)  # opened, the table is back, empty and without a mark
    with Store.open(tmp_path) as store:
        assert blocks_of(tmp_path, sid) == 0
        store.catch_up_context()
        assert blocks_of(tmp_path, sid) == store.max_seq(sid)
    assert_same(tmp_path, sid)


def test_live_appends_share_groups_and_a_compaction_cuts_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends of one event (a live turn) go into the session's last group until it is full; a
    compaction whose boundary falls inside a group reads that group from the boundary on."""
    monkeypatch.setattr(rendered, "GROUP_BYTES", 1000)
    with Store.open(tmp_path) as store:
        sid = store.create_session("live", "main").id
        for i in range(40):
            for event in turn(i):
                store.append_events(sid, [event])
        store.append_events(sid, [Init(model="m", cwd="/")])  # a row not shown
        conn = store._require()
        groups = conn.execute(
            "SELECT COUNT(*), SUM(size) FROM azsd_context WHERE session_id = ?", (sid,)
        ).fetchone()
        assert 4 < groups[0] < 10 and blocks_of(tmp_path, sid) == 201
        assert_same(tmp_path, sid)
        for boundary in (1, 7, 64, 150, 200):
            store.store_compaction(sid, boundary, f"summary through {boundary}")
            assert_same(tmp_path, sid)


def test_a_damaged_group_is_read_from_the_events(tmp_path: Path) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("s", "main").id
        store.append_events(sid, turn(1) + turn(2))
    conn = sqlite3.connect(store_path(tmp_path), isolation_level=None)
    conn.execute("UPDATE azsd_context SET text = ? WHERE session_id = ?", (b"\x28\xb5\x2f\xfd garbage", sid))
    conn.close()
    assert_same(tmp_path, sid)


def test_a_locked_file_is_a_busy_store_not_a_crash(tmp_path: Path) -> None:
    """A reader that cannot get the file's lock says so with StoreBusyError (its worker then waits
    on the reader thread or hands the read to the writer), never a raw sqlite3 error."""
    with Store.open(tmp_path) as store:
        sid = store.create_session("s", "main").id
        store.append_events(sid, turn(1))
    with Store.open(tmp_path, reader=True) as reader:
        holder = sqlite3.connect(store_path(tmp_path), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            reader.wait_for_locks(0)
            for read in (reader.rendered_context, reader.get_session):
                with pytest.raises(StoreBusyError):
                    read(sid)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert reader.rendered_context(sid) is not None
