"""`azs search` and `azs doctor`, end to end against the real daemon (the harness of tests/test_cli.py)."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from azsd.events import AssistantText, Event, ToolCall, ToolResult, UserMessage
from azsd.ipc import protocol as p
from azsd_client import Client
from azsd_client.render.reports import highlighted, search_row
from azsd_client.render.term import console, write
from azsd_client.render.text import Style
from tests.daemon_fixture import short_tmpdir
from tests.test_cli import Azs, azs, run_main
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

HERE: list[Event] = [
    UserMessage(content="why does the parser panic on unwrap()"),
    AssistantText(text="The parser hits a panic: a None is unwrapped when the line is empty."),
    ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "cargo test parser"}),
    ToolResult(tool_use_id="t1", tool_name="Bash", content="parser_empty FAILED (panic)", is_error=True),
    AssistantText(text="Fixed: an empty line is skipped now."),
]


def _sessions(client: Client, root: Path) -> tuple[int, int]:
    """A session here (unlabelled) with a parser panic, and one on branch `other` with a panic too."""
    here = client.create_session(root, "parser panic").session.id
    client.append_events(root, here, HERE)
    other = client.create_session(root, "elsewhere", worktree="other").session.id
    client.append_events(root, other, [UserMessage(content="a panic on another branch")])
    return here, other


def test_hits_are_ranked_with_snippets_and_highlights(azs: Azs, client: Client, worktree: Path) -> None:
    here, _ = _sessions(client, worktree)
    hits = azs.json("search", "panic")
    assert {h["session"] for h in hits} == {here}  # default scope: this branch ("" outside git) + unlabelled
    assert [h["rank"] for h in hits] == sorted(h["rank"] for h in hits)  # best first, order kept
    assert {h["kind"] for h in hits} == {"UserMessage", "AssistantText", "ToolResult"}
    for hit in hits:
        assert hit["session_name"] == "parser panic" and hit["seq"] in (1, 2, 4)
        assert hit["highlights"], hit
        for start, end in hit["highlights"]:
            assert hit["snippet"][start:end].lower().startswith("panic")
    reply = client.search(worktree, "panic", worktrees=[""])
    assert [(h.session, h.seq, h.kind, h.snippet) for h in reply.hits] == [
        (h["session"], h["seq"], h["kind"], h["snippet"]) for h in hits
    ]
    assert [h["event"] for h in hits] == [json.loads(h.data) for h in reply.hits]  # objects, not strings
    assert "data" not in hits[0]
    lines = azs.ok("search", "panic").splitlines()
    assert len(lines) == len(hits)
    for line, hit in zip(lines, hits, strict=True):
        kind = {"UserMessage": "user", "AssistantText": "assistant", "ToolResult": "result"}[hit["kind"]]
        assert line.split()[:3] == [f"S{here}", str(hit["seq"]), kind]
        assert " ".join(hit["snippet"].split()) in line and line.endswith("parser panic")


def test_highlights_are_painted_on_a_terminal() -> None:
    hit = p.SearchHit(
        session=3, data="", seq=2, kind="AssistantText", snippet="the parser\npanics here",
        highlights=[(11, 17)], session_name="S3",
    )  # fmt: skip
    cells = search_row(hit, Style(color=True))
    assert [c.text for c in cells] == ["S3", "2", "assistant", "the parser panics here", "", ""]
    out = io.StringIO()
    write(console(out, {}, color=True), cells[3].paint(cells[3].text))
    assert out.getvalue() == "the parser \x1b[1;33mpanics\x1b[0m here\n"
    assert search_row(hit, Style())[3].paint("x") == "the parser panics here"
    assert highlighted("ab", [(5, 9), (0, 1)], str.upper) == "Ab"  # out-of-range ranges are ignored


def test_kind_session_and_worktree_filters(azs: Azs, client: Client, worktree: Path) -> None:
    here, other = _sessions(client, worktree)
    assert {h["kind"] for h in azs.json("search", "panic", "--kind", "user")} == {"UserMessage"}
    tools = azs.json("search", "parser", "--kind", "call", "--kind", "result")
    assert {h["kind"] for h in tools} == {"ToolCall", "ToolResult"}
    everywhere = azs.json("search", "panic", "--all-worktrees")
    assert {h["session"] for h in everywhere} == {here, other}
    assert {h["session"] for h in azs.json("search", "panic", "--worktree", "other")} == {other}
    only = azs.json("search", "panic", "--all-worktrees", "--session", f"S{other}")
    assert [h["session"] for h in only] == [other]
    both = azs.json("search", "panic", "--all-worktrees", "-s", str(here), "-s", f"S{other}")
    assert {h["session"] for h in both} == {here, other}
    named = azs.json("search", "panic", "--session", f"S{other}")  # a named session, wherever it is
    assert {h["session"] for h in named} == {other}
    assert azs.json("search", "panic", "--session", f"S{other}", "--worktree", "main") == []
    assert len(azs.json("search", "panic", "--all-worktrees", "--limit", "1")) == 1


def test_fts_syntax_errors_and_plain_words(azs: Azs, client: Client, worktree: Path) -> None:
    here, _ = _sessions(client, worktree)
    for bad in ("panic AND", '"unbalanced', "unwrap()"):
        code, out, err = azs("search", "--fts", bad)
        assert (code, out) == (1, ""), bad
        assert err.startswith("azs: cannot search for ") and err.count("\n") == 1, err
        code, out, err = azs("--json", "search", "-e", bad)
        assert (code, err) == (1, "") and json.loads(out)["error"]["code"] == "bad_request"
    hits = azs.json("search", "--words", "unwrap()")  # the old flag still works: plain text is the default
    assert [(h["session"], h["seq"]) for h in hits] == [(here, 1)]
    assert azs.json("search", "parser unwrap() nowhere-else") == []  # every word must match
    assert [h["seq"] for h in azs.json("search", "--fts", '"empty line"')] == [5]  # a phrase
    assert azs("search", "x", "--kind", "thought")[0] == 2  # an unknown kind is a usage error
    code, out, err = azs("search", "()")
    assert (code, out) == (1, "") and "at least one word with a letter or a digit" in err


def test_search_is_plain_text_as_people_type_it(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `claude-clean` was "no such column: clean", `main.go` and `unwrap()` syntax errors."""
    sid = client.create_session(worktree, "typing").session.id
    texts = ["run claude-clean first", "claude: clean", "open MAIN.go", "calls unwrap() here"]
    client.append_events(worktree, sid, [AssistantText(text=t) for t in texts])
    for query, seq in (("claude-clean", 1), ("main.go", 3), ("unwrap()", 4), ("Unwrap() HERE", 4)):
        code, out, err = azs("search", query)
        assert (code, err) == (0, ""), query
        assert [line.split()[:2] for line in out.splitlines()] == [[f"S{sid}", str(seq)]], query
    assert [h["seq"] for h in azs.json("search", "-n", "1", "claude")] in ([1], [2])


def test_hits_on_other_branches_are_counted(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: a search whose hits are all on another branch printed nothing, exit 0, no hint."""
    _, other = _sessions(client, worktree)
    code, out, err = azs("search", "another")
    assert (code, out) == (0, "")
    assert err == "azs: 1 more hit on other branches: --all-branches\n"
    assert [h["session"] for h in azs.json("search", "another", "--all-branches")] == [other]
    assert [h["session"] for h in azs.json("search", "another", "--all-worktrees")] == [other]  # old name
    code, out, err = azs("search", "panic")
    assert out and err == "azs: 1 more hit on other branches: --all-branches\n"
    assert azs("search", "panic", "--branch", "")[2] == ""  # a branch named outright: nothing to add


def test_fork_copies_are_one_hit_and_context(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: forks repeated every hit (S1, S13, S36, S37 for one event)."""
    here, _ = _sessions(client, worktree)
    forks = [client.fork_session(worktree, here, 5).session.id for _ in range(2)]
    lines = azs.ok("search", "skipped now").splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"also in S{forks[0]}, S{forks[1]}"), lines
    [hit] = azs.json("search", "skipped now")
    assert (hit["session"], hit["seq"], hit["also_in"]) == (here, 5, forks)
    out = azs.ok("search", "-C", "1", "skipped now")
    assert out.splitlines() == [
        f"S{here} · parser panic · seq 5 also in S{forks[0]}, S{forks[1]}",
        "    4     ✗ parser_empty FAILED (panic)",
        ">   5   Fixed: an empty line is skipped now.",
    ]
    [with_context] = azs.json("search", "-C", "2", "skipped now")
    assert [e["seq"] for e in with_context["context"]] == [3, 4, 5]


def test_doctor_checks_and_reindexes(azs: Azs, client: Client, worktree: Path) -> None:
    out = azs.ok("doctor")
    assert out.splitlines()[0].startswith("✓ daemon: azsd ")
    assert f"✓ store: no store at {worktree}/.azureal/sessions.azs yet" in out
    _sessions(client, worktree)
    lines = azs.ok("doctor", "--reindex").splitlines()
    assert lines[1] == f"✓ store: {worktree}/.azureal/sessions.azs: 2 sessions"
    assert lines[2] == "✓ permissions: only you can read the store"
    assert lines[3].startswith("✓ git: ")
    assert lines[4] == "✓ search: the index answers"
    assert lines[5] == "✓ index: no entries of deleted rows"
    assert lines[6] == "✓ full record: none kept yet; up to date"  # (sessions made here, no agent's file)
    assert lines[7] == "✓ reindex: search index rebuilt: 6 events"  # 5 indexed here (all searchable), 1 there
    found = azs.json("doctor", "--reindex")
    checks = ["daemon", "store", "permissions", "git", "search", "index", "full record", "reindex"]
    assert [f["check"] for f in found] == checks
    assert all(f["ok"] for f in found) and found[7]["detail"] == "search index rebuilt: 6 events"
    assert len(azs.json("search", "panic")) == 3  # the rebuilt index answers as before


def test_doctor_reports_index_entries_of_deleted_rows_until_they_are_removed(
    azs: Azs, client: Client, worktree: Path
) -> None:
    """AZUREAL deleted a session: its index entries stayed and skewed the ranking, and `azs doctor`
    said the index answers. It counts them; the daemon removes them in the background."""
    _, other = _sessions(client, worktree)
    assert len(azs.json("search", "panic")) == 3  # all indexed
    conn = sqlite3.connect(worktree / ".azureal" / "sessions.azs", timeout=5.0, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM sessions WHERE id = ?", (other,))  # AZUREAL's delete_session
        conn.execute("BEGIN IMMEDIATE")  # holding its lock: the daemon cannot clean up yet
        code, out, _ = azs("doctor")
        assert code == 1 and "✗ index: 1 index entry of rows another program deleted" in out, out
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    deadline = time.monotonic() + 30
    while client.index_status(worktree, stale=True).stale:
        assert time.monotonic() < deadline, "the stale entries were not removed"
        time.sleep(0.1)
    assert "✓ index: no entries of deleted rows" in azs.ok("doctor")


def test_doctor_without_a_daemon(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_dir = short_tmpdir()
    try:
        code, out, _ = run_main(capsys, "--runtime-dir", str(runtime_dir), "--timeout", "0.3", "doctor")
    finally:
        shutil.rmtree(runtime_dir)
    assert code == 1 and out.startswith("✗ daemon: azsd is not running")
