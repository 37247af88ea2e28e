"""The full record end to end (issue 36): `azs import` of real Claude histories, the daemon keeping
what the agent wrote beside the compact events by itself, `azs show --full` (and `--json`), and the
store's AZUREAL rows left as the compact events made them."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from azsd.store import store_path
from azsd_client import Client
from tests.conftest import requires_corpus
from tests.test_cli import Azs, azs
from tests.test_cli_import import home
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "home", "worktree"]  # the fixtures, re-exported for pytest

pytestmark = requires_corpus

TODO_SESSION = (
    "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"  # claude-code-viewer's (MIT): Edit, MultiEdit, TodoWrite
)


def _full_json(azs: Azs, sid: int, wait_s: float = 20.0) -> dict[str, Any]:
    """`azs --json show --full S` once the daemon has kept the session's full record."""
    deadline = time.monotonic() + wait_s
    while True:
        code, out, err = azs("--json", "show", "--full", str(sid))
        assert code == 0, err
        shown: dict[str, Any] = json.loads(out)
        if shown.get("full") or time.monotonic() > deadline:
            return shown
        time.sleep(0.2)


def test_show_full_gives_what_compaction_left_out(
    azs: Azs, client: Client, worktree: Path, home: Path
) -> None:
    azs.ok("import", "claude")
    sid = _by_source(worktree, TODO_SESSION)
    with closing(sqlite3.connect(store_path(worktree))) as conn:
        compact_before = conn.execute("SELECT id, seq, kind, data FROM events ORDER BY id").fetchall()
    shown = _full_json(azs, sid)
    assert shown["full"] is True, "the daemon kept no full record"
    calls = [e for e in shown["events"] if e["kind"] == "ToolCall"]
    multi = next(c for c in calls if c["event"]["ToolCall"]["tool_name"] == "MultiEdit")
    edits = multi["event"]["ToolCall"]["input"]["edits"]
    assert edits[0]["old_string"].startswith("A fully functional TODO application built with Next.js 14")
    results = "\n".join(
        e["event"]["ToolResult"]["content"] for e in shown["events"] if e["kind"] == "ToolResult"
    )
    assert "addTodo(" in results  # a Read's whole output (the compact events keep its ends)
    tasks = {
        c["event"]["ToolCall"]["tool_use_id"] for c in calls if c["event"]["ToolCall"]["tool_name"] == "Task"
    }
    nested = [e for e in shown["events"] if "subagent" in e]  # Claude Code 1.0's sidechain lines
    assert nested and {e["subagent"] for e in nested} <= tasks
    assert any(
        "I'll examine the package.json files" in e["event"].get("AssistantText", {}).get("text", "")
        for e in nested
    )
    mains = [e for e in shown["events"] if "subagent" not in e and e["kind"] == "AssistantText"]
    assert not any(
        "I'll examine the package.json files" in e["event"]["AssistantText"]["text"] for e in mains
    )
    text = azs.ok("show", "--full", str(sid))
    assert "│   I'll examine the package.json files" in text
    assert "- A fully functional TODO application built with Next.js 14" in text  # the MultiEdit as a diff
    assert "+ A fully functional TODO application built with Next.js 15.5.2" in text
    assert "the full record:" in text
    compact = azs.ok("show", str(sid))
    assert "Next.js 14" not in compact  # what the compact events do not hold
    with closing(sqlite3.connect(store_path(worktree))) as conn:
        assert conn.execute("SELECT id, seq, kind, data FROM events ORDER BY id").fetchall() == compact_before


def test_show_full_of_a_session_without_one_says_so_and_shows_the_compact_events(
    azs: Azs, client: Client
) -> None:
    sid = client.create_session(azs.root, "typed").session.id
    code, out, err = azs("show", "--full", str(sid))
    assert code == 0 and "has no full record" in err and f"S{sid}" in out


def _imported(azs: Azs, worktree: Path) -> int:
    """`azs import claude` of the corpus; the session of claude-code-viewer's transcript, once the
    daemon has kept its full record."""
    azs.ok("import", "claude")
    sid = _by_source(worktree, TODO_SESSION)
    assert _full_json(azs, sid)["full"] is True, "the daemon kept no full record"
    return sid


def _by_source(worktree: Path, stem: str) -> int:
    with closing(sqlite3.connect(store_path(worktree))) as conn:
        rows = conn.execute(
            "SELECT session_id FROM azsd_imports WHERE source LIKE ?", (f"%{stem}%",)
        ).fetchall()
    assert rows, f"no import of {stem}"
    return int(rows[0][0])


def test_status_doctor_and_prune_say_what_the_full_record_costs(
    azs: Azs, client: Client, worktree: Path, home: Path
) -> None:
    sid = _imported(azs, worktree)
    deadline = time.monotonic() + 20
    while (cost := client.full_status(worktree)).waiting_bytes and time.monotonic() < deadline:
        time.sleep(0.2)
    with closing(sqlite3.connect(store_path(worktree))) as conn:
        sources = sum(Path(s).stat().st_size for (s,) in conn.execute("SELECT source FROM azsd_imports"))
    assert cost.waiting_bytes == 0 and cost.source_bytes == sources and 0 < cost.stored_bytes < sources
    (status,) = azs.json("status")
    assert status["full_record"]["source_bytes"] == sources
    assert "full record of" in azs.ok("status") and "up to date" in azs.ok("status")
    doctor = [json.loads(line) for line in azs.ok("--json", "doctor").splitlines()]
    (finding,) = [f for f in doctor if f["check"] == "full record"]
    assert finding["ok"] and "bytes a byte" in finding["detail"]

    code, _, err = azs("prune", "--full-before", "not-a-date")
    assert code != 0 and "not a date" in err
    assert "dropped 0 chunks" in azs.ok("prune", "--full-before", "2001-01-01")
    assert azs.ok("prune", "--session", str(sid)).startswith("dropped 1 chunk of full record of S")
    code, _, err = azs("show", "--full", str(sid))
    assert code == 0 and "has no full record" in err
    time.sleep(1.5)  # the daemon's upkeep runs meanwhile: what was pruned stays dropped
    assert client.full_status(worktree).sessions == cost.sessions - 1
    after = azs.ok("prune", "--full-before", "2100-01-01")
    assert client.full_status(worktree).sessions == 0 and "dropped" in after
    assert client.list_sessions(worktree).total == len(client.list_sessions(worktree).sessions) > 0


def test_search_finds_what_only_the_full_record_holds_once(
    azs: Azs, client: Client, worktree: Path, home: Path
) -> None:
    """Issue 36: `azs search 'addTodo('` found nothing (the Reads that hold it are cut in the compact
    events); now the full record's hits come in the same ranking, each said to be of the full record,
    and what the compact events hold is not found twice."""
    azs.ok("import", "claude")
    sid = _by_source(worktree, TODO_SESSION)
    before = azs.json("search", "addTodo(")
    assert _full_json(azs, sid)["full"] is True
    hits = azs.json("search", "addTodo(")
    full = [h for h in hits if h.get("full")]
    assert full and all(h["session"] == sid for h in full) and len(hits) > len(before)
    assert all(h["kind"] in ("ToolCall", "ToolResult") for h in full)
    assert all("addtodo(" in h["snippet"].casefold() for h in full)
    assert "(full)" in azs.ok("search", "addTodo(")
    prompt = azs.json("search", "orchestrator")  # a prompt: in the compact events whole, found once
    assert prompt and not any(h.get("full") for h in prompt)


def test_export_full_writes_what_the_agent_wrote(
    azs: Azs, client: Client, worktree: Path, home: Path
) -> None:
    sid = _imported(azs, worktree)
    compact = azs.ok("export", str(sid))
    full = azs.ok("export", "--full", str(sid))
    assert "addTodo(" not in compact and "addTodo(" in full  # a Read's whole output
    assert len(full) > len(compact)
    lines = [
        json.loads(line) for line in azs.ok("export", "--full", "--format", "jsonl", str(sid)).splitlines()
    ]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
