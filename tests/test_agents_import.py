"""Aider and OpenCode histories imported into a store: sessions, usage, lineage, re-imports that add
only what grew, read-only access to a live OpenCode database, and rows AZUREAL reads."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from azsd.context import build_context_prompt
from azsd.errors import IngestError
from azsd.events import AssistantText, Complete, Hook, Init, ToolCall, ToolResult, UserMessage
from azsd.export import render
from azsd.ingest.import_batch import import_many
from azsd.ingest.importer import ImportOutcome, discover, import_source
from azsd.ingest.sources import AIDER_HISTORY, source_of
from azsd.model import SessionUsage
from azsd.store import Store
from tests.opencode_fixture import OpenCodeBuilder, conversation

DATA = Path(__file__).parent / "data" / "aider"
SQLITE3, ZSTD = shutil.which("sqlite3"), shutil.which("zstd")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _context(store: Store, sid: int, prompt: str, backend: str = "claude") -> str:
    return build_context_prompt(store.build_context(sid), prompt, codex=backend == "codex")


def _usage(store: Store, sid: int) -> SessionUsage:
    return store.session_usage(sid)


def _import_all(
    store: Store, agent: str, source_dir: Path, project: Path, *, together: bool = False
) -> list[int]:
    """The sessions of `agent`'s sources, imported one by one, or `together` as `azs import` does
    (the new ones created at once)."""
    sources = discover(agent, source_dir, project)  # type: ignore[arg-type]
    if not together:
        return [import_source(store, s).session_id for s in sources]
    outcomes = import_many(store, sources)
    assert all(isinstance(o, ImportOutcome) for o in outcomes)
    return [o.session_id for o in outcomes if isinstance(o, ImportOutcome)]


def test_aider_runs_become_sessions_and_grow_by_what_was_appended(root: Path, project: Path) -> None:
    history = project / AIDER_HISTORY
    history.write_bytes((DATA / "aider__v0.47-request-cost.md").read_bytes())
    typed = "\n# 2024-08-05 21:00:00.000000\n+Use the Spinner instead of the inlined custom spinner\n"
    (project / ".aider.input.history").write_text(typed)
    with Store.open(root) as store:
        sids = _import_all(store, "aider", project, project)
        (row,) = store.usage_rows([sids[0]])
        assert row.first == datetime(2024, 8, 5, 21).astimezone().timestamp()  # the prompt's time, typed
        assert len(sids) == 2  # of 3 runs: the one that only started and quit (no prompt) is no session
        runs = [store.load_events(sid).plain() for sid in sids]
        assert all(isinstance(r[0], Init) and r[0].model for r in runs)
        edit = next(e for e in runs[0] if isinstance(e, ToolCall))
        assert (edit.tool_name, edit.file_path) == ("Edit", "aider/utils.py")
        assert "Spinner" in edit.input["new_string"] and edit.input["summary"].startswith("replace ")
        result = next(e for e in runs[0] if isinstance(e, ToolResult))
        assert result.tool_use_id == edit.tool_use_id and result.content == "Applied edit to aider/utils.py"
        assert isinstance(runs[0][-1], Complete) and runs[0][-1].cost_usd == 0.02  # a later run closed it
        assert not any(isinstance(e, Complete) for e in runs[1])  # the last run may still grow
        assert store.get_session(sids[0]).name == "Use the Spinner instead of the inlined custom spinner"
        usage = _usage(store, sids[0])
        assert (usage.usage.input, usage.usage.output, usage.cost_source) == (5244, 604, "reported")
        assert usage.cost_usd == pytest.approx(0.02)
        # again: nothing; then the last run grows, a run starts and quits, and one with a prompt
        assert [import_source(store, s).appended for s in discover("aider", project, project)] == [0, 0]
        with history.open("a") as f:
            f.write("#### and now?  \n\nAll done.\n\n> Tokens: 1.1k sent, 9 received. Cost: $0.001 message,"
                    " $0.003 session.  \n\n# aider chat started at 2024-08-06 08:00:00\n\n> Aider v0.48.0  \n"
                    "\n# aider chat started at 2024-08-06 09:00:00\n\n#### next  \n")  # fmt: skip
        outcomes = [import_source(store, s) for s in discover("aider", project, project)]
        assert len(outcomes) == 3 and outcomes[0].appended == 0 and outcomes[2].created
        grown = store.load_events(sids[1]).plain()
        assert grown[: len(runs[1])] == runs[1]  # nothing twice
        new = grown[len(runs[1]) :]
        assert [type(e) for e in new] == [UserMessage, AssistantText, Hook, Complete]


def test_opencode_db_sessions_usage_lineage_and_regrowth(root: Path, project: Path, tmp_path: Path) -> None:
    oc = OpenCodeBuilder(tmp_path / "opencode")
    oc.session("ses_a", project, "fix main")
    oc.turn("ses_a", 1)
    oc.session("ses_b", project / "sub", "subagent of fix main", parent="ses_a")
    oc.turn("ses_b", 2)
    oc.session("ses_x", tmp_path / "elsewhere", "another project")
    oc.turn("ses_x", 3)
    with Store.open(root) as store:
        sources = discover("opencode", oc.data_dir, project)
        assert [s.key.rpartition("#")[2] for s in sources] == ["ses_a", "ses_b"]
        a, b = (import_source(store, s).session_id for s in sources)
        events = store.load_events(a).plain()
        kinds = [type(e).__name__ for e in events]
        assert kinds == [
            "UserMessage", "Init", "Hook", "AssistantText", "ToolCall", "ToolResult", "ToolCall",
            "ToolResult", "ToolCall", "ToolResult", "Hook", "AssistantText", "Complete",
        ]  # fmt: skip
        assert events[1] == Init(cwd="/work/p", model="anthropic/claude-sonnet-4-5")
        read, edit, bash = (e for e in events if isinstance(e, ToolCall))
        assert (read.tool_name, read.input) == ("Read", {"file_path": "/work/p/main.py"})
        assert edit.input == {"file_path": "/work/p/main.py", "old_string": "'hi'", "new_string": "'hi 1'"}
        assert bash.tool_name == "Bash" and events[9] == ToolResult(
            tool_use_id="toolu_1_c", tool_name="Bash", file_path=None, content="exit code 1", is_error=True
        )
        assert events[-1] == Complete(success=True, duration_ms=8000, cost_usd=0.0123)
        assert store.get_session(a).name == "fix main"  # OpenCode's own title (issue 35)
        usage = _usage(store, a)
        assert (usage.usage.input, usage.usage.cache_read, usage.usage.cache_write) == (1200, 5000, 800)
        assert usage.cost_usd == pytest.approx(0.0123) and usage.cost_source == "reported"
        assert store.forks_of(a) == [b]
        # nothing new: nothing added; a new turn: only it
        assert [import_source(store, s).appended for s in discover("opencode", oc.data_dir, project)] == [
            0,
            0,
        ]
        oc.turn("ses_a", 4)
        again = import_source(store, source_of("opencode", sources[0].key))
        assert again.appended == len(events) - 1  # the model is the same: no new Init
        assert store.load_events(a).plain()[: len(events)] == events
        # a reply still being written waits for the next import
        user, _ = conversation(5)[0]
        oc.message("ses_a", user, [{"type": "text", "text": "and more"}])
        writing = {"role": "assistant", "time": {"created": 2 * 10**12}}
        oc.message("ses_a", writing, [{"type": "text", "text": "wri"}])
        assert import_source(store, source_of("opencode", sources[0].key)).appended == 1


def test_opencode_db_is_read_while_opencode_holds_a_write_transaction(
    root: Path, project: Path, tmp_path: Path
) -> None:
    oc = OpenCodeBuilder(tmp_path / "opencode")
    oc.session("ses_a", project, "busy")
    oc.turn("ses_a", 1)
    writer = sqlite3.connect(oc.db, timeout=0)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE session SET title = 'renamed' WHERE id = 'ses_a'")
    try:
        with Store.open(root) as store:
            (source,) = discover("opencode", oc.data_dir, project)
            assert import_source(store, source).appended > 0
        writer.commit()  # our reads never held it up (WAL readers take no lock a writer waits for)
    finally:
        writer.close()
    assert not Path(f"{oc.db}-journal").exists()


def test_opencode_json_storage_generation(root: Path, project: Path, tmp_path: Path) -> None:
    oc = OpenCodeBuilder(tmp_path / "opencode", json_tree=True)
    oc.session("ses_old", project, "older opencode")
    oc.turn("ses_old", 1)
    oc.message("ses_old", {"role": "user", "time": {"created": 5}}, [])
    (oc.data_dir / "storage" / "part" / "msg_000003").mkdir(parents=True)
    (oc.data_dir / "storage" / "part" / "msg_000003" / "prt_bad.json").write_text("{not json")
    with Store.open(root) as store:
        (source,) = discover("opencode", oc.data_dir, project)
        assert source.key.endswith("storage#ses_old")
        outcome = import_source(store, source)
        assert outcome.created and outcome.skipped == 1
        events = store.load_events(outcome.session_id).plain()
        assert sum(isinstance(e, ToolCall) for e in events) == 3
        assert import_source(store, source_of("opencode", source.key)).current


def _one_of_each(
    store: Store, project: Path, tmp_path: Path, aider_sample: str, *, together: bool = False
) -> list[int]:
    """An OpenCode session and the runs of an Aider history imported: their sessions, OpenCode's first."""
    oc = OpenCodeBuilder(tmp_path / "opencode")
    oc.session("ses_a", project, "fix main")
    oc.turn("ses_a", 1)
    (project / AIDER_HISTORY).write_bytes((DATA / aider_sample).read_bytes())
    return _import_all(store, "opencode", oc.data_dir, project, together=together) + _import_all(
        store, "aider", project, project, together=together
    )


@pytest.mark.parametrize("together", [False, True], ids=["one-by-one", "together"])
def test_imported_sessions_render_context_and_export(
    root: Path, project: Path, tmp_path: Path, together: bool
) -> None:
    with Store.open(root) as store:
        sids = _one_of_each(store, project, tmp_path, "aider__v0.51-cache-write.md", together=together)
        for sid in sids:
            for backend in ("claude", "codex"):
                prompt = _context(store, sid, "next", backend)
                assert prompt.startswith("<azureal-session-context>") and prompt.endswith("next")
            loaded = store.load_events(sid).events
            prompt = next(e.event.content for e in loaded if isinstance(e.event, UserMessage))
            assert prompt in render("md", store.get_session(sid), loaded)
        assert "## Tool: Edit (/work/p/main.py)" in _context(store, sids[0], "go")
        assert "## Tool: Edit (aider/coders/base_coder.py)" in _context(store, sids[-1], "go")
        hits = store.search("round properly")
        assert {h.session_id for h in hits} == {sids[-1]}


@pytest.mark.interop
@pytest.mark.skipif(SQLITE3 is None or ZSTD is None, reason="needs the sqlite3 and zstd programs")
@pytest.mark.parametrize("together", [False, True], ids=["one-by-one", "together"])
def test_rows_of_imported_aider_and_opencode_sessions_read_as_azureal_reads_them(
    root: Path, project: Path, tmp_path: Path, together: bool
) -> None:
    with Store.open(root) as store:
        sids = _one_of_each(store, project, tmp_path, "aider__v0.47-request-cost.md", together=together)
        path = store.path
    assert SQLITE3 is not None and ZSTD is not None
    for sid in (sids[0], sids[1]):
        out = subprocess.run(
            [SQLITE3, str(path),
             f"SELECT seq, kind, typeof(data), hex(data) FROM events WHERE session_id = {sid} ORDER BY seq"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        rows = [line.split("|") for line in out.splitlines()]
        assert [int(r[0]) for r in rows] == list(range(1, len(rows) + 1))
        for seq, kind, typ, hexdata in rows:
            assert typ == "blob"
            frame = tmp_path / f"{sid}-{seq}.zst"
            frame.write_bytes(bytes.fromhex(hexdata))
            plain = subprocess.run([ZSTD, "-d", "-c", str(frame)], check=True, capture_output=True).stdout
            assert plain.startswith(f'{{"{kind}":'.encode()) or plain == f'"{kind}"'.encode()
    assert (
        subprocess.run(
            [SQLITE3, str(path), "PRAGMA journal_mode;"], capture_output=True, text=True
        ).stdout.strip()
        == "delete"
    )


def test_a_rewritten_history_is_refused_not_imported_twice(root: Path, project: Path, tmp_path: Path) -> None:
    history = project / AIDER_HISTORY
    history.write_bytes((DATA / "aider__v0.50-cached.md").read_bytes())
    oc = OpenCodeBuilder(tmp_path / "opencode")
    oc.session("ses_a", project, "fix main")
    oc.turn("ses_a", 1)
    oc.turn("ses_a", 2)
    with Store.open(root) as store:
        sids = _import_all(store, "aider", project, project) + _import_all(
            store, "opencode", oc.data_dir, project
        )
        before = [store.load_events(sid).plain() for sid in sids]
        history.write_bytes(history.read_bytes().replace(b"Bonjour", b"Salut!"))  # rewritten in place
        after = conversation(1)[1][0]["time"]["created"]
        with sqlite3.connect(oc.db) as conn:  # a reverted turn: its messages taken back
            taken = "SELECT id FROM message WHERE time_created > ?"
            conn.execute(f"DELETE FROM part WHERE message_id IN ({taken})", (after,))
            conn.execute("DELETE FROM message WHERE time_created > ?", (after,))
        for agent, where in (("aider", project), ("opencode", oc.data_dir)):
            for source in discover(agent, where, project):  # type: ignore[arg-type]
                with pytest.raises(IngestError, match="no longer begins with what was imported"):
                    import_source(store, source)
        assert [store.load_events(sid).plain() for sid in sids] == before
