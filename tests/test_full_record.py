"""The full record (azsd.store.full_record, azsd.ingest.full_record): what each agent wrote, kept
beside AZUREAL's compact events, and read back uncompacted."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

import pytest
import zstandard

from azsd.events import Hook, ToolCall, ToolResult, UserMessage
from azsd.ingest import full_record
from azsd.ingest.full_record import full_events, keep_full_some
from azsd.ingest.importer import Source, discover, import_source
from azsd.ingest.sources import AIDER_HISTORY, Agent, source_of
from azsd.store import Store, store_path
from azsd.store.full_record import CHUNK_BYTES, MAX_CHUNK_BYTES, FullGap
from tests.conftest import corpus_files, requires_corpus
from tests.opencode_fixture import OpenCodeBuilder

AIDER_DATA = Path(__file__).parent / "data" / "aider"


def _imported(store: Store, history: Path, agent: Agent = "claude") -> int:
    """The session an import of the whole of `history` made."""
    return import_source(store, Source(history, agent, history.stat().st_size)).session_id


def _keep_all(store: Store) -> None:
    while keep_full_some(store):
        pass


def _kept(store: Store, session_id: int) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for chunk in store.full_chunks(session_id):
        assert chunk.data is not None, chunk.error
        assert len(out.get(chunk.source, b"")) == chunk.start  # each source's bytes in order, none twice
        out[chunk.source] = out.get(chunk.source, b"") + chunk.data
    return out


def _events_rows(path: Path) -> list[tuple[int, int, str, bytes]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT session_id, seq, kind, data FROM events ORDER BY id").fetchall()


@requires_corpus
@pytest.mark.parametrize(
    "path", corpus_files("claude-session") + corpus_files("codex-rollout"), ids=lambda p: p.name
)
def test_every_byte_of_a_corpus_history_is_kept_once_and_the_events_are_untouched(
    tmp_path: Path, path: Path
) -> None:
    agent: Literal["claude", "codex"] = "claude" if path.parent.name.startswith("claude") else "codex"
    history = tmp_path / "history.jsonl"
    history.write_bytes(path.read_bytes())
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history, agent)
        before = _events_rows(store_path(tmp_path / "w"))
        _keep_all(store)
        assert _kept(store, sid) == {str(history): path.read_bytes()}
        assert _events_rows(store_path(tmp_path / "w")) == before  # AZUREAL's rows exactly as they were
        _keep_all(store)  # nothing more to keep: nothing is kept twice
        assert _kept(store, sid) == {str(history): path.read_bytes()}
        cost = store.full_cost()
        assert cost.source_bytes == len(path.read_bytes()) and 0 < cost.stored_bytes


def test_a_grown_history_adds_only_its_new_bytes_to_the_last_chunk(tmp_path: Path) -> None:
    history = tmp_path / "s.jsonl"
    lines = [_claude_line(i) for i in range(40)]
    history.write_bytes(b"".join(lines[:20]))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        with history.open("ab") as out:
            out.write(b"".join(lines[20:]))
        import_source(store, Source(history, "claude", history.stat().st_size))
        _keep_all(store)
        chunks = list(store.full_chunks(sid))
        assert len(chunks) == 1 and chunks[0].data == b"".join(lines)
        assert chunks[0].first_seq == 1 and chunks[0].last_seq == store.max_seq(sid)


def test_a_big_source_is_cut_into_bounded_chunks(tmp_path: Path) -> None:
    history = tmp_path / "s.jsonl"
    line = _claude_line(0, text="x" * 5000)
    history.write_bytes(line * (3 * CHUNK_BYTES // len(line)))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        chunks = list(store.full_chunks(sid))
        assert len(chunks) >= 3 and all(c.size <= CHUNK_BYTES for c in chunks)
        assert all(c.data is not None and c.data.endswith(b"\n") for c in chunks)  # whole lines each
        assert _kept(store, sid) == {str(history): history.read_bytes()}


def test_a_source_longer_than_a_step_is_kept_whole_while_nothing_else_is_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step of the upkeep keeps whole lines of at most its budget, so it stops short of it: the
    upkeep still says more remains, and the next steps keep the rest (the idle writer used to stop
    there, with a big ingest's record kept only up to its first step until something else came)."""
    monkeypatch.setattr(full_record, "STEP_BYTES", 64 * 1024)
    history = tmp_path / "s.jsonl"
    line = _claude_line(0, text="x" * 5000)
    history.write_bytes(line * (300_000 // len(line)))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        assert _kept(store, sid) == {str(history): history.read_bytes()}


def test_a_source_gone_or_rewritten_shorter_is_dropped_not_read_again(tmp_path: Path) -> None:
    gone, shorter = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    gone.write_bytes(_claude_line(1))
    shorter.write_bytes(_claude_line(2) * 3)
    with Store.open(tmp_path / "w") as store:
        a = import_source(store, Source(gone, "claude", gone.stat().st_size)).session_id
        b = import_source(store, Source(shorter, "claude", shorter.stat().st_size)).session_id
        gone.unlink()
        shorter.write_bytes(_claude_line(2))
        _keep_all(store)
        assert not store.has_full(a) and not store.has_full(b)
        assert store.full_gaps() == []


def test_full_events_keep_what_compaction_leaves_out(tmp_path: Path) -> None:
    history = tmp_path / "s.jsonl"
    content = "".join(f"line {i}\n" for i in range(50))
    write = {
        "type": "tool_use",
        "id": "t1",
        "name": "Write",
        "input": {"file_path": "/w/todo.ts", "content": content},
    }
    thinking = {"type": "thinking", "thinking": "Let me think about Todo"}
    reply = {"id": "m1", "role": "assistant", "model": "claude-x", "content": [thinking, write]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": content}]}
    history.write_bytes(
        _claude_line(0)
        + _line({"type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:01Z", "message": reply})
        + _line({"type": "user", "uuid": "u2", "timestamp": "2026-01-01T00:00:02Z", "message": result})
    )
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        found = full_events(store, sid)
        call = next(e for e in found.events if isinstance(e, ToolCall))
        assert isinstance(call.input, dict) and call.input["content"] == content
        output = next(e for e in found.events if isinstance(e, ToolResult))
        assert output.content.strip() == content.strip()
        assert any(isinstance(e, Hook) and "Todo" in e.output for e in found.events)
        assert found.sources == [str(history)] and found.unreadable == 0


def test_a_chunk_that_would_expand_past_its_bound_is_reported_not_read(tmp_path: Path) -> None:
    history = tmp_path / "s.jsonl"
    history.write_bytes(_claude_line(0))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
    bomb = zstandard.ZstdCompressor().compress(b"\n" * (MAX_CHUNK_BYTES + 10))
    with closing(sqlite3.connect(store_path(tmp_path / "w"))) as conn:  # another program's row
        conn.execute("UPDATE azsd_full SET data = ?", (bomb,))
        conn.commit()
    with Store.open(tmp_path / "w") as store:
        chunk = next(store.full_chunks(sid))
        assert chunk.data is None and "over" in chunk.error
        assert full_events(store, sid).unreadable == 1


def test_prune_drops_the_full_record_of_old_sessions_and_keeps_it_dropped(tmp_path: Path) -> None:
    history = tmp_path / "s.jsonl"
    history.write_bytes(_claude_line(0))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        events = store.max_seq(sid)
        assert store.prune_full("2000-01-01") == 0 and store.has_full(sid)  # last active in 2026
        assert store.prune_full("2100-01-01") == 1 and not store.has_full(sid)
        _keep_all(store)
        assert not store.has_full(sid)  # never read again
        assert store.max_seq(sid) == events  # the compact events stay


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps({"sessionId": "s", "cwd": "/w", **obj}).encode() + b"\n"


def _claude_line(i: int, text: str = "") -> bytes:
    message = {"role": "user", "content": text or f"prompt {i}"}
    return _line({"type": "user", "uuid": f"u{i}", "timestamp": "2026-01-01T00:00:00Z", "message": message})


def test_an_aider_run_keeps_its_own_block_of_the_shared_history(tmp_path: Path) -> None:
    """Aider writes every run of a worktree into one chat history: each run's session keeps its own
    block of it, not the file."""
    project = tmp_path / "project"
    project.mkdir()
    history = project / AIDER_HISTORY
    history.write_bytes((AIDER_DATA / "aider__v0.47-request-cost.md").read_bytes())
    with Store.open(tmp_path / "w") as store:
        sources = discover("aider", project, project)
        sids = [import_source(store, s).session_id for s in sources]
        _keep_all(store)
        text = history.read_bytes()
        for source, sid in zip(sources, sids, strict=True):
            assert source.span is not None
            kept = _kept(store, sid)
            assert kept == {source.key: text[source.span[0] : source.span[1]]}
            assert any(isinstance(e, UserMessage) for e in full_events(store, sid).events)


def test_a_read_of_a_full_record_holds_at_most_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However big a session's full record, one read (a page, an export) parses at most
    MOST_BYTES of it; the chunks past it are left out and counted."""
    from azsd.ingest import full_record

    history = tmp_path / "s.jsonl"
    line = _claude_line(0, text="y" * 4000)
    history.write_bytes(line * (3 * CHUNK_BYTES // len(line)))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        chunks = len(list(store.full_chunks(sid)))
        monkeypatch.setattr(full_record, "MOST_BYTES", CHUNK_BYTES + 1)
        found = full_events(store, sid)
        assert found.unreadable == chunks - 1 and found.events


@pytest.mark.parametrize("json_tree", [False, True], ids=["opencode.db", "storage tree"])
def test_an_opencode_session_keeps_its_rows_and_grows_with_its_events(
    tmp_path: Path, json_tree: bool
) -> None:
    """OpenCode's sessions are rows of its database (or files of its older tree): the full record keeps
    each finished message as OpenCode stored it, and takes in a turn once the session's events went
    on; read back, it makes the events the import made, uncompacted."""
    project = tmp_path / "project"
    project.mkdir()
    oc = OpenCodeBuilder(tmp_path / "opencode", json_tree=json_tree)
    oc.session("ses_a", project, "fix main")
    oc.turn("ses_a", 1)
    with Store.open(tmp_path / "w") as store:
        (source,) = discover("opencode", oc.data_dir, project)
        sid = import_source(store, source).session_id
        _keep_all(store)
        first = full_events(store, sid)
        kinds = [type(e).__name__ for e in first.events]
        assert "ToolCall" in kinds and "ToolResult" in kinds and "Complete" in kinds
        assert all(at.endswith("Z") for at in first.times)  # when each message was made
        kept = _kept(store, sid)
        assert list(kept) == [source.key] and kept[source.key].count(b"\n") >= 2
        _keep_all(store)
        assert _kept(store, sid) == kept  # nothing new: nothing kept again
        oc.turn("ses_a", 2)
        import_source(store, source_of("opencode", source.key))
        _keep_all(store)
        grown = _kept(store, sid)[source.key]
        assert grown.startswith(kept[source.key]) and len(grown) > len(kept[source.key])
        assert len(full_events(store, sid).events) > len(first.events)


def test_the_upkeep_looks_for_what_is_missing_only_after_a_commit(tmp_path: Path) -> None:
    """The writer's upkeep runs every second while a store is open: once the full record is
    complete, it does not query the import records again until something was committed."""
    history = tmp_path / "s.jsonl"
    history.write_bytes(_claude_line(0))
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        asked: list[int] = []
        real = store.full_gaps

        def counted(limit: int = 64) -> list[FullGap]:
            asked.append(limit)
            return real(limit)

        store.full_gaps = counted  # type: ignore[method-assign]
        assert not keep_full_some(store) and not keep_full_some(store)
        assert asked == []  # nothing committed since it was complete
        store.rename_session(sid, "renamed")
        assert not keep_full_some(store) and len(asked) == 1


def test_a_store_keeps_no_compressor_of_the_full_records_level_once_its_chunks_are_kept(
    tmp_path: Path,
) -> None:
    """zstd's context at the full record's level takes ~11 MB: a store that kept one for its next
    chunk held that much for as long as the daemon kept it open (each active store: +10 MB RSS)."""
    history = tmp_path / "s.jsonl"
    history.write_bytes(_claude_line(0, text="x" * 5000) * 100)
    with Store.open(tmp_path / "w") as store:
        sid = _imported(store, history)
        _keep_all(store)
        assert _kept(store, sid) == {str(history): history.read_bytes()}
        held = [value for value in vars(store).values() if isinstance(value, zstandard.ZstdCompressor)]
        assert held == []
