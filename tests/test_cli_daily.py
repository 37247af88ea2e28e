"""The small things of issue 25 that make `azs` a daily driver: nothing hidden without a word, dates
and durations that are true, prompts from stdin or a file, one exit-code scheme, the shell's habits."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from azsd.events import AssistantText, Complete, UserMessage
from azsd_client import Client
from tests.daemon_fixture import DaemonProc
from tests.test_cli import Azs, Lines, _git, azs, json_lines, repo, run_main
from tests.test_cli_terminal import on_terminal
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "repo", "worktree"]  # the fixtures, re-exported for pytest


def _in(daemon: DaemonProc, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`azs args…` run in `cwd` (no --root: the git worktree around it), stdout a pipe."""
    command = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir), *args]
    return subprocess.run(command, cwd=cwd, env=daemon.env, capture_output=True, text=True, timeout=60)


def test_a_new_branch_does_not_hide_sessions_silently(daemon: DaemonProc, client: Client, repo: Path) -> None:
    """Issue 25: after `git checkout -b other`, `azs ls` showed 2 of 48 sessions, `azs search golang`
    printed nothing with exit 0, and neither said why."""
    for n in range(3):
        sid = client.create_session(repo, f"golang {n}", worktree="feat-x").session.id
        client.append_events(repo, sid, [UserMessage(content=f"port it to golang {n}")])
    _git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    _git(repo, "checkout", "-q", "-b", "other")
    listed = _in(daemon, repo, "ls")
    assert (listed.returncode, listed.stdout) == (0, "")
    assert listed.stderr == "azs: 3 more on other branches: `azs ls --all-branches`\n"
    found = _in(daemon, repo, "search", "golang")
    assert (found.returncode, found.stdout) == (0, "")
    assert found.stderr == "azs: 3 more hits on other branches: --all-branches\n"
    assert len(_in(daemon, repo, "ls", "--all-branches").stdout.splitlines()) == 3
    assert len(json_lines(_in(daemon, repo, "--json", "search", "golang", "--all-branches").stdout)) == 3
    assert len(_in(daemon, repo, "ls", "--branch", "feat-x").stdout.splitlines()) == 3


def test_outside_a_worktree_ls_says_why_it_lists_nothing(daemon: DaemonProc, tmp_path: Path) -> None:
    """Issue 25: outside a git worktree `azs ls` printed nothing with exit 0."""
    plain = tmp_path / "plain"
    plain.mkdir()
    done = _in(daemon, plain, "ls")
    assert (done.returncode, done.stdout) == (2, "")
    assert "is not inside a git worktree, and holds no sessions" in done.stderr and "--root" in done.stderr


def test_ls_dates_are_the_latest_turn_and_durations_true(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: imported sessions all showed "just now" (creation), and `codex exec --json` ones 0.0s."""
    old = worktree / "old.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "old prompt"}, "uuid": "u1",
         "parentUuid": None, "timestamp": "2024-03-01T10:00:00.000Z", "sessionId": "s"},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
         "content": [{"type": "text", "text": "old answer"}],
         "usage": {"input_tokens": 10, "output_tokens": 5}},
         "uuid": "a1", "parentUuid": "u1", "timestamp": "2024-03-01T10:05:00.000Z", "sessionId": "s"},
    ]  # fmt: skip
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    sid = client.create_session(worktree, "imported").session.id
    azs.ok("ingest", str(old), "-s", str(sid))
    codex = client.create_session(worktree, "codex").session.id
    client.append_events(
        worktree, codex, [UserMessage(content="go"), Complete(success=True, duration_ms=0, cost_usd=0.0)]
    )
    [view] = [v for v in azs.json("ls") if v["id"] == sid]
    assert view["last_activity"] == "2024-03-01 10:05:00"
    rows = {line.split()[1]: line for line in azs.ok("ls").splitlines()}
    assert rows[f"S{sid}"].endswith("2024-03-01 10:05")
    assert "0.0s" not in rows[f"S{codex}"]
    assert "active 2024-03-01 10:05" in azs.ok("show", str(sid))
    assert "0.0s" not in azs.ok("show", str(codex)).splitlines()[1]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["ingest", "f.jsonl", "--format", "foo"], "invalid choice: 'foo'"),  # it was 1, from the daemon
        (["follow", "f.jsonl", "-s", "1", "--format", "foo"], "invalid choice: 'foo'"),
        (["usage", "--since", "2025-13-01"], "not a day: '2025-13-01'"),  # it was 1, from the daemon
        (["usage", "--until", "yesterday"], "not a day: 'yesterday'"),
        (["show", "@abc"], "the first 4 or more characters of its UUID"),  # the minimum, said
        (["run"], "give a prompt: azs run PROMPT, azs run - (from stdin) or azs run --file F"),
        (["run", "x", "--file", "f"], "not allowed with argument"),
        (["rename", "S1", ""], "the new name is empty"),  # it renamed S1 to "S1"
        (["rename", "S1", "  "], "the new name is empty"),
        (["search", "x", "-n", "0"], "not a positive number"),
        (["search", "x", "--remote", "-C", "2"], "-i, -C and --since are for this store's sessions"),
    ],
)
def test_every_usage_error_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    """Issue 25: `--format foo` and `--since 2025-13-01` exited 1 where other usage errors exit 2."""
    code, out, err = run_main(capsys, "--runtime-dir", "/nonexistent/azsd", *argv)
    assert (code, out) == (2, ""), err
    assert said in err, err


def test_help_documents_every_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25: `azs --help` left out exit 3 (`azs status`: not running)."""
    code, out, _ = run_main(capsys, "--help")
    text = " ".join(out.split())
    assert code == 0
    for status in ("0 ok", "1 error", "2 usage error", "3 `azs status`: azsd is not running", "128+N"):
        assert status in text, status


def test_ingest_without_a_session_makes_one(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `azs ingest` always needed `-s`."""
    source = worktree / "fix-the-parser.jsonl"
    line = {"type": "user", "message": {"role": "user", "content": "fix it"}, "uuid": "u1",
            "parentUuid": None, "timestamp": "2024-03-01T10:00:00.000Z", "sessionId": "s"}  # fmt: skip
    source.write_text(json.dumps(line) + "\n")
    [reply] = azs.json("ingest", str(source))
    view = client.get_session(worktree, reply["session"]).session
    assert (view.name, view.event_count) == ("fix-the-parser", 1)
    out = azs.ok("ingest", str(source))
    assert out.startswith(f"made S{view.id + 1} “fix-the-parser” for fix-the-parser.jsonl\n")
    empty = worktree / "nothing.jsonl"
    empty.write_text("not json\n")
    before = len(client.list_sessions(worktree).sessions)
    assert azs("ingest", str(empty))[0] == 1
    assert len(client.list_sessions(worktree).sessions) == before  # the session made for it is gone


def test_watch_json_names_its_counter(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `watch --json`'s top-level `seq` counts notifications, beside events' own `seq`."""
    client.create_session(worktree, "x")
    watching = Lines(azs.spawn("--json", "watch"))
    try:
        time.sleep(0.5)
        sid = client.create_session(worktree, "y").session.id
        client.append_events(worktree, sid, [AssistantText(text="hi")])
        note = watching.json_for(lambda n: n.get("type") == "appended")
        assert note["notification_seq"] == note["seq"] and note["events"][0]["seq"] == 1
    finally:
        watching.stop()


def test_ls_and_search_take_limit_and_since(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `-n/--limit` and `--since`, as people give them to other tools."""
    old = worktree / "old.jsonl"
    line = {"type": "assistant", "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "the needle, long ago"}],
            "usage": {"input_tokens": 10, "output_tokens": 5}},
            "uuid": "a1", "parentUuid": None, "timestamp": "2024-03-01T10:05:00.000Z",
            "sessionId": "s"}  # fmt: skip
    old.write_text(json.dumps(line) + "\n")
    [reply] = azs.json("ingest", str(old))
    long_ago = reply["session"]
    ids = []
    for n in range(3):
        sid = client.create_session(worktree, f"new {n}").session.id
        client.append_events(worktree, sid, [AssistantText(text=f"the needle {n}")])
        ids.append(sid)
    assert len(azs.json("ls")) == 4
    assert len(azs.json("ls", "-n", "2")) == len(azs.json("ls", "--limit", "2")) == 2
    assert {v["id"] for v in azs.json("ls", "--since", "2025-01-01")} == set(ids)
    assert {v["id"] for v in azs.json("ls", "--since", "20240301")} == {*ids, long_ago}
    assert {h["session"] for h in azs.json("search", "needle")} == {*ids, long_ago}
    assert {h["session"] for h in azs.json("search", "needle", "--since", "2025-01-01")} == set(ids)
    assert len(azs.json("search", "needle", "-n", "1")) == 1


def test_color_always_never_and_no_color(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `NO_COLOR` and `--color=always|never|auto`."""
    sid = client.create_session(worktree, "colours").session.id
    client.append_events(worktree, sid, [UserMessage(content="hi"), AssistantText(text="Error: it broke")])
    assert "\x1b[" not in azs.ok("show", str(sid))  # auto, on a pipe
    painted = azs.ok("--color", "always", "show", str(sid))
    assert "\x1b[31m✗ Error: it broke\x1b[0m" in painted and "\x1b[1m» hi\x1b[0m" in painted
    assert "\x1b[" not in azs.ok("show", str(sid), "--color=never")
    lines = on_terminal(azs, 80, "--color", "never", "show", str(sid), raw=True)
    assert not any("\x1b[" in line for line in lines)
    lines = on_terminal(azs, 80, "show", str(sid), raw=True, env={"NO_COLOR": "1"})
    assert not any("\x1b[" in line for line in lines)
    lines = on_terminal(azs, 80, "show", str(sid), raw=True)
    assert any("\x1b[31m" in line for line in lines)


def test_ingest_shows_progress_from_the_start_on_a_terminal(azs: Azs, worktree: Path) -> None:
    """Issue 25: `azs ingest` showed nothing for its first seconds."""
    source = worktree / "big-run.jsonl"
    line = {"type": "user", "message": {"role": "user", "content": "go"}, "uuid": "u1",
            "parentUuid": None, "timestamp": "2024-03-01T10:00:00.000Z", "sessionId": "s"}  # fmt: skip
    source.write_text(json.dumps(line) + "\n")
    out = "\n".join(on_terminal(azs, 80, "ingest", str(source)))
    assert "made S1 “big-run” for big-run.jsonl" in out
    assert "ingesting big-run.jsonl (" in out and "B) into S1…" in out
    assert "S1: claude-session: 1 line" in out
