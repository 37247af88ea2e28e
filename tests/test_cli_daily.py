"""The small things of issue 25 that make `azs` a daily driver: nothing hidden without a word, dates
and durations that are true, prompts from stdin or a file, one exit-code scheme, the shell's habits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from azsd.events import Complete, UserMessage
from azsd_client import Client
from tests.daemon_fixture import DaemonProc
from tests.test_cli import Azs, _git, azs, json_lines, repo
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
