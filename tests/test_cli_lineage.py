"""`azs fork`, `rm --with-forks`, `archive`/`unarchive`, and how `ls` and `show` tell of them, end to end
against the real daemon (the harness of tests/test_cli.py)."""

from __future__ import annotations

import io
import sqlite3
import sys
from pathlib import Path
from typing import Any

from azsd.events import AssistantText, Complete, Event, ToolCall, ToolResult, UserMessage
from azsd_client import Client
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

TURN: list[Event] = [
    UserMessage(content="why does it panic"),
    ToolCall(tool_use_id="t", tool_name="Read", input={"file_path": "/src/parser.rs"}),
    ToolResult(tool_use_id="t", tool_name="Read", content="fn main() {}", is_error=False),
    AssistantText(text="found it"),
    UserMessage(content="now fix it"),
    AssistantText(text="fixed"),
    Complete(success=True, duration_ms=2000, cost_usd=0.1),
]

Rows = list[tuple[int, str, bytes, int]]


def rows(root: Path, session: int) -> Rows:
    """A session's stored events, exactly as in the store file (read beside the daemon)."""
    conn = sqlite3.connect(f"file:{root / '.azureal' / 'sessions.azs'}?mode=ro", uri=True)
    try:
        sql = "SELECT seq, kind, data, char_len FROM events WHERE session_id=? ORDER BY seq"
        return [(seq, kind, bytes(data), n) for seq, kind, data, n in conn.execute(sql, (session,))]
    finally:
        conn.close()


def _session(client: Client, root: Path, name: str = "parent") -> int:
    sid = client.create_session(root, name).session.id
    client.append_events(root, sid, TURN)
    return sid


def _row_of(out: str, sid: int) -> str:
    return next(line for line in out.splitlines() if line.split()[1:2] == [f"S{sid}"])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_fork_copies_the_first_events_and_leaves_the_parent_alone(
    azs: Azs, client: Client, worktree: Path
) -> None:
    parent = _session(client, worktree)
    before = rows(worktree, parent)
    assert [r[0] for r in before] == list(range(1, len(TURN) + 1))
    out = azs.ok("fork", f"S{parent}", "--at", "4", "--name", "try another fix")
    fork = client.list_sessions(worktree).sessions[0].id
    assert out == f"forked S{parent} at seq 4 into S{fork} “try another fix”\n"
    assert rows(worktree, parent) == before  # byte for byte
    copied = rows(worktree, fork)
    assert [r[0] for r in copied] == [1, 2, 3, 4]
    assert [(seq, kind, data) for seq, kind, data, _ in copied] == [(s, k, d) for s, k, d, _ in before[:4]]
    view = client.get_session(worktree, fork).session
    assert (view.parent, view.fork_seq, view.name, view.event_count) == (parent, 4, "try another fix", 4)
    assert client.get_session(worktree, parent).session.forks == (fork,)

    (made,) = azs.json("fork", str(parent), "--at", "2")
    assert (made["parent"], made["fork_seq"], made["event_count"]) == (parent, 2, 2)
    assert f"⑂S{parent}@4" in _row_of(azs.ok("ls"), fork)
    assert "⑂" not in _row_of(azs.ok("ls"), parent)
    assert f"forked from S{parent} at seq 4" in azs.ok("show", f"S{fork}").splitlines()[2]
    assert azs.ok("show", f"S{parent}").splitlines()[2] == f"forks: S{fork}, S{made['id']}"
    code, _, err = azs("fork", f"S{parent}", "--at", "99")
    assert code == 1 and err.startswith("azs: ")
    assert azs("fork", f"S{parent}")[0] == 2  # --at is required


def test_rm_keeps_forks_unless_asked(azs: Azs, client: Client, worktree: Path, monkeypatch: Any) -> None:
    parent = _session(client, worktree)
    fork = client.fork_session(worktree, parent, 3).session.id
    assert azs.ok("rm", "-y", f"S{parent}") == f"deleted S{parent}\n"
    kept = client.get_session(worktree, fork).session
    assert kept.parent is None and kept.event_count == 3  # lineage cleared, events kept
    assert "⑂" not in _row_of(azs.ok("ls"), fork)
    assert "forked from" not in azs.ok("show", f"S{fork}")

    parent = _session(client, worktree, "second")
    forks = [client.fork_session(worktree, parent, n).session.id for n in (2, 5)]
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, _, err = azs("rm", f"S{parent}", "--with-forks")
    assert code == 1 and f"events? (with its forks S{forks[0]}, S{forks[1]})" in err
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, _, err = azs("rm", f"S{parent}")
    assert code == 1 and f"(its forks S{forks[0]}, S{forks[1]} stay)" in err
    assert azs.ok("rm", "-y", "--with-forks", f"S{parent}") == (
        f"deleted S{parent} and its forks S{forks[0]}, S{forks[1]}\n"
    )
    left = {v.id for v in client.list_sessions(worktree, archived="include").sessions}
    assert left == {fork}


def test_archive_hides_and_unarchive_returns(azs: Azs, client: Client, worktree: Path) -> None:
    live = client.create_session(worktree, "live").session.id
    old = _session(client, worktree, "old work")
    assert azs.ok("archive", f"S{old}") == f"archived S{old} “old work”\n"
    assert [v["id"] for v in azs.json("ls")] == [live]
    assert [v.id for v in client.list_sessions(worktree).sessions] == [live]  # the default request too
    (only,) = azs.json("ls", "--archived")
    assert (only["id"], only["archived"]) == (old, True)
    assert {v["id"] for v in azs.json("ls", "--all")} == {live, old}
    listed = azs.ok("ls", "--all")
    assert _row_of(listed, old).split()[-1] == "archived" and "archived" not in _row_of(listed, live)
    assert "(archived)" in azs.ok("show", f"S{old}").splitlines()[0]
    assert azs("ls", "--archived", "--all")[0] == 2
    (back,) = azs.json("unarchive", f"S{old}")
    assert back["archived"] is False
    assert {v["id"] for v in azs.json("ls")} == {live, old}
    assert azs.ok("unarchive", str(old)) == f"unarchived S{old} “old work”\n"  # idempotent
