"""`import_many`: new small sources created together (`Store.create_filled`) leave the same store as
importing them one by one, and a batch that mixes new sources, grown ones, a name given twice and a
source that cannot be read imports each as `import_source` would."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from azsd.context import build_context_prompt
from azsd.errors import IngestError
from azsd.ingest.import_batch import import_many
from azsd.ingest.importer import ImportOutcome, discover, import_source
from azsd.ingest.source_events import SourceReaders, source_events
from azsd.ingest.sources import AIDER_HISTORY, Source
from azsd.model import Usage
from azsd.store import Store, store_path
from azsd.store.schema import SUMMARY_HWM_KEY
from tests.opencode_fixture import OpenCodeBuilder

DATA = Path(__file__).parent / "data" / "aider"


@pytest.fixture
def sources(tmp_path: Path) -> list[Source]:
    """Every Aider run of two real samples, three OpenCode sessions of a database (one spawned by
    another) and one of the older JSON tree."""
    project = tmp_path / "project"
    project.mkdir()
    history = project / AIDER_HISTORY
    history.write_bytes((DATA / "aider__v0.47-request-cost.md").read_bytes())
    with history.open("ab") as out:
        out.write((DATA / "aider__v0.51-cache-write.md").read_bytes())
    typed = "\n# 2024-08-05 21:00:00.000000\n+Use the Spinner instead of the inlined custom spinner\n"
    (project / ".aider.input.history").write_text(typed)  # dates the first run's usage
    oc = OpenCodeBuilder(tmp_path / "opencode")
    oc.session("ses_a", project, "fix main")
    oc.turn("ses_a", 1)
    oc.turn("ses_a", 2)
    oc.session("ses_b", project, "child", parent="ses_a")
    oc.turn("ses_b", 3)
    oc.session("ses_c", project, "empty")
    older = OpenCodeBuilder(tmp_path / "opencode", json_tree=True)  # 0.x's storage/ tree beside it
    older.session("ses_old", project, "older")
    older.turn("ses_old", 4)
    found = discover("aider", project, project) + discover("opencode", tmp_path / "opencode", project)
    assert len(found) >= 7 and all(s.small for s in found)
    assert any(s.path.name == "storage" for s in found)
    return found


def _state(store: Store) -> list[Any]:
    """What a user (or AZUREAL) sees of every session: row, events, usage, context, search."""
    with closing(sqlite3.connect(f"file:{store_path(store.root)}?mode=ro", uri=True)) as conn:
        out: list[Any] = [conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()]  # marks
        out.append(
            conn.execute(
                "SELECT source, session_id, agent, size, last_seq FROM azsd_imports ORDER BY 1"
            ).fetchall()
        )
    for info in sorted(store.list_sessions(), key=lambda s: s.id):
        out.append(
            (
                info.id, info.name, info.worktree, info.event_count, info.message_count, info.completed,
                info.duration_ms, info.cost_usd, info.parent, info.fork_seq,
                [e.json for e in store.load_events(info.id).events],
                store.session_usage(info.id),
                build_context_prompt(store.build_context(info.id), "next", codex=False),
                store.rendered_context(info.id) == store.build_context(info.id),
            )
        )  # fmt: skip
    out.append(
        [(r.session_id, r.source, r.model, r.usage, r.cost_usd, r.cost_source) for r in store.usage_rows()]
    )
    out.append([round(r.first / 600) for r in store.usage_rows()])  # now, when the lines carry no time
    out.append([(r.first, r.last) for r in store.usage_rows() if r.source.endswith("19:33:32")])  # typed
    out.append([(h.session_id, h.seq) for h in store.search("main")])
    return out


def _summaries(store: Store) -> tuple[list[Any], int]:
    """The sessions' counted summaries and their mark, when every row is counted (else a failure)."""
    with closing(sqlite3.connect(f"file:{store_path(store.root)}?mode=ro", uri=True)) as conn:
        counted = conn.execute("SELECT session_id, events, messages, last_id FROM azsd_summaries ORDER BY 1")
        (mark,) = conn.execute("SELECT value FROM meta WHERE key = ?", (SUMMARY_HWM_KEY,)).fetchone()
        (top,) = conn.execute("SELECT MAX(id) FROM events").fetchone()
        rows = conn.execute(
            "SELECT session_id, COUNT(*), SUM(kind IN ('UserMessage', 'AssistantText')), MAX(id) FROM events "
            "GROUP BY session_id ORDER BY 1"
        ).fetchall()
        listed = counted.fetchall()
    assert int(mark) == top and listed == rows
    return listed, int(mark)


def test_new_sources_created_together_leave_the_store_one_by_one_imports_leave(
    tmp_path: Path, sources: list[Source]
) -> None:
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        singly = [import_source(one, source, "main") for source in sources]
        together = import_many(many, sources, "main")
        assert together == singly
        assert _state(many) == _state(one)
        typed = datetime(2024, 8, 5, 21).astimezone().timestamp()
        assert [r.first for r in many.usage_rows() if r.first == typed]  # the prompt's time, as typed
        for source in sources:
            assert many.get_import(source.key) == one.get_import(source.key)
        assert [import_source(many, s).current for s in sources] == [True] * len(sources)


def test_a_mixed_batch_imports_each_source_as_import_source_would(
    tmp_path: Path, sources: list[Source]
) -> None:
    history = sources[0].path
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:
        first = [s for s in sources if s.agent == "aider"] + [
            next(s for s in sources if s.agent == "opencode")
        ]
        assert import_many(many, first) == [import_source(one, s) for s in first]
        with history.open("a") as f:  # the last Aider run grows; a run with a prompt starts
            f.write(
                "#### one more thing  \n\nDone.\n\n# aider chat started at 2030-01-01 08:00:00\n\n#### hi  \n"
            )
        again = discover("aider", history.parent, history.parent) + [
            s for s in sources if s.agent == "opencode"
        ]
        nowhere = tmp_path / "gone" / "opencode.db"
        gone = Source(nowhere, "opencode", 1, f"{nowhere}#ses_a", small=True)  # its database is gone
        batch = [*again, again[-1], gone, again[0]]  # a name given twice, one that cannot be read

        def singly(source: Source) -> ImportOutcome | str:
            try:
                return import_source(one, source)
            except IngestError as exc:
                return str(exc)

        expected = [singly(source) for source in batch]
        got = [o if isinstance(o, ImportOutcome) else str(o) for o in import_many(many, batch)]
        assert got == expected
        assert isinstance(expected[-2], str) and "no such OpenCode database" in expected[-2]
        assert any(isinstance(o, ImportOutcome) and o.appended and not o.created for o in expected)  # grew
        assert (
            sum(isinstance(o, ImportOutcome) and o.created for o in expected) == 4
        )  # a run, ses_b, ses_c, ses_old
        assert _state(many) == _state(one)


def test_small_claude_files_share_transactions_each_alone_when_it_fails(tmp_path: Path) -> None:
    """Claude files batched (each in a savepoint of the shared transaction) leave what importing them
    one by one leaves: a file that fails leaves nothing, a resumed copy's messages are counted once,
    and each session's turns are its prompts."""
    from tests.test_usage_counted import prompt, reply, tokens_of
    from tests.test_usage_prices import write

    at = "2026-05-02T10:0{}:00Z"
    a = write(tmp_path / "a.jsonl", [prompt("s-a", "one", at.format(0)), reply("s-a", 1, at.format(1))])
    b = write(  # `claude --resume`: a's turn copied, then a turn of its own
        tmp_path / "b.jsonl",
        [prompt("s-b", "one", at.format(0)), reply("s-b", 1, at.format(1)),
         prompt("s-b", "two", at.format(2)), reply("s-b", 2, at.format(3))],
    )  # fmt: skip
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "an agent line"}\n')
    gone = write(tmp_path / "gone.jsonl", [prompt("s-g", "x", at.format(0))])
    batch = [Source(p, "claude", p.stat().st_size) for p in (a, bad, gone, b)]
    gone.unlink()
    with Store.open(tmp_path / "one") as one, Store.open(tmp_path / "many") as many:

        def singly(source: Source) -> ImportOutcome | str:
            try:
                return import_source(one, source, "main")
            except IngestError as exc:
                return str(exc)

        expected = [singly(source) for source in batch]
        got = [o if isinstance(o, ImportOutcome) else str(o) for o in import_many(many, batch, "main")]
        assert got == expected
        assert [isinstance(o, str) for o in got] == [False, True, True, False]
        assert _state(many) == _state(one)
        assert len(many.list_sessions()) == 2  # nothing of the two that failed
        assert _summaries(many) == _summaries(one) != ([], 0)  # counted once a batch, as once an append
        usage = many.usage_by_session()
        assert sum((u.usage for u in usage.values()), start=Usage()) == tokens_of(a, b)
        assert sorted(u.turns for u in usage.values()) == [1, 2]


def test_a_batched_file_that_fails_midway_leaves_its_import_record_as_it_was(tmp_path: Path) -> None:
    """A file imported before, that fails once its import has begun writing (it became a directory:
    the unfinished mark is written, then it cannot be read), is rolled back alone: its record still
    says what was imported, and the file beside it is imported."""
    from tests.test_usage_counted import prompt, reply
    from tests.test_usage_prices import write

    at = "2026-05-02T10:0{}:00Z"
    a = write(tmp_path / "a.jsonl", [prompt("s-a", "one", at.format(0)), reply("s-a", 1, at.format(1))])
    b = write(tmp_path / "b.jsonl", [prompt("s-b", "two", at.format(0))])
    with Store.open(tmp_path / "s") as store:
        first = import_many(store, [Source(p, "claude", p.stat().st_size) for p in (a, b)])
        assert all(isinstance(o, ImportOutcome) and o.created for o in first)
        before = store.get_import(str(a))
        assert before is not None
        a.unlink()
        a.mkdir()
        with b.open("a") as f:
            f.write(json.dumps(reply("s-b", 2, at.format(1))) + "\n")
        again = import_many(store, [Source(p, "claude", p.stat().st_size) for p in (a, b)])
        assert isinstance(again[0], IngestError) and "not a regular file" in str(again[0])
        assert isinstance(again[1], ImportOutcome) and again[1].appended
        assert store.get_import(str(a)) == before


def test_a_small_aider_run_read_at_once_gives_what_reading_it_in_chunks_gives(sources: list[Source]) -> None:
    runs = [s for s in sources if s.agent == "aider"]
    with open(runs[-1].path, "ab") as out:
        out.write(b"#### a last line with no newline, \r\nand a CR  \n\nreply with a lone \r inside\r\ntorn")
    runs = discover("aider", runs[0].path.parent, runs[0].path.parent)
    assert len(runs) >= 3
    with SourceReaders() as readers:
        for run in runs:
            whole = source_events(run, readers)
            chunked = source_events(replace(run, small=False), readers)
            assert [e for c in whole.chunks for e in c] == [e for c in chunked.chunks for e in c]
            assert whole.report.lines == chunked.report.lines and whole.report.usage == chunked.report.usage


def test_deferred_upkeep_indexes_what_survived_a_rolled_back_append(tmp_path: Path) -> None:
    """Within `upkeep_deferred` (an import's shared transaction), an append rolled back with its
    savepoint is not indexed, though the next append takes its row ids again; what stays is found,
    and the marks end where appending each alone leaves them."""
    from azsd.events import AssistantText, Event, UserMessage

    with Store.open(tmp_path / "deferred") as store, Store.open(tmp_path / "alone") as alone:
        for s in (store, alone):
            s.append_events(s.create_session("before", "").id, [UserMessage(content="earlier words")])
        with store.atomic(), store.upkeep_deferred():
            lost = store.create_session("lost", "").id
            with pytest.raises(IngestError), store.atomic():
                store.append_events(lost, [UserMessage(content="pelican"), AssistantText(text="ibis")])
                raise IngestError("the file failed after its events were appended")
            kept = store.create_session("kept", "").id
            store.append_events(kept, [UserMessage(content="heron"), AssistantText(text="stork")])
            with pytest.raises(IngestError), store.atomic():  # its ids are taken by nobody after
                store.append_events(lost, [UserMessage(content="egret")])
                raise IngestError("failed too")
        alone.create_session("lost", "")
        turn: list[Event] = [UserMessage(content="heron"), AssistantText(text="stork")]
        alone.append_events(alone.create_session("kept", "").id, turn)
        assert [h.session_id for h in store.search("heron")] == [kept]
        assert store.search("pelican") == store.search("ibis") == store.search("egret") == []
        with closing(sqlite3.connect(f"file:{store_path(store.root)}?mode=ro", uri=True)) as conn:
            raw = "SELECT rowid FROM azsd_search WHERE azsd_search MATCH ?"
            assert [conn.execute(raw, (w,)).fetchall() for w in ("pelican", "egret")] == [[], []]
        assert [h.session_id for h in store.search("earlier")] == [1]
        assert _summaries(store) == _summaries(alone)
        assert _state(store)[0] == _state(alone)[0]  # the marks
