"""`azs show`, `tail` and `log` at any size (issue 25): ranges, tail's last ten, the pager, turns; on
pipes and under a real pseudo-terminal at 80 and 200 columns, against the real daemon."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from azsd.events import AssistantText, Complete, Event, ToolCall, UserMessage
from azsd_client import Client
from tests.test_cli import Azs, Lines, azs
from tests.test_cli_terminal import on_terminal
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest


def _numbered(client: Client, root: Path, n: int = 30) -> int:
    """A session of `n` answers, the k-th saying `answer k`."""
    sid = client.create_session(root, "numbered").session.id
    client.append_events(root, sid, [AssistantText(text=f"answer {k}") for k in range(1, n + 1)])
    return sid


def _seqs(out: str) -> list[int]:
    return [int(line.split()[0]) for line in out.splitlines() if "answer" in line]


def test_show_takes_last_from_and_to(azs: Azs, client: Client, worktree: Path) -> None:
    sid = _numbered(client, worktree)
    assert _seqs(azs.ok("show", str(sid))) == list(range(1, 31))
    assert _seqs(azs.ok("show", str(sid), "--last", "3")) == [28, 29, 30]
    assert _seqs(azs.ok("show", str(sid), "--from", "5", "--to", "7")) == [5, 6, 7]
    assert _seqs(azs.ok("show", str(sid), "--last", "2", "--to", "10")) == [9, 10]
    assert "… 27 earlier events (`--from 1` shows them)" in azs.ok("show", str(sid), "--last", "3")
    [shown] = azs.json("show", str(sid), "--from", "29")
    assert [e["seq"] for e in shown["events"]] == [29, 30] and shown["session"]["id"] == sid
    code, out, err = azs("show", str(sid), "--from", "9", "--to", "3")
    assert (code, out) == (2, "") and "--from 9 is after --to 3" in err


def test_tail_starts_with_the_last_ten_like_tail(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `azs tail -f` started at the first event (49 000 lines before live output)."""
    sid = _numbered(client, worktree)
    assert _seqs(azs.ok("tail", str(sid))) == list(range(21, 31))
    assert _seqs(azs.ok("tail", str(sid), "-n", "2")) == [29, 30]
    assert _seqs(azs.ok("tail", str(sid), "--from", "27")) == [27, 28, 29, 30]
    lines = Lines(azs.spawn("tail", "-f", str(sid)))
    try:
        first = lines.wait_for(lambda line: "answer" in line)
        assert first.split()[0] == "21"
        client.append_events(worktree, sid, [AssistantText(text="answer live")])
        assert lines.wait_for(lambda line: "answer live" in line).split()[0] == "31"
    finally:
        lines.stop()


def test_agent_text_cannot_drive_the_terminal(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "hostile").session.id
    hostile = "look \x1b]0;pwned\x07\x1b[2J here\r\nnext\x9b31m"
    client.append_events(worktree, sid, [AssistantText(text=hostile), ToolCall(
        tool_use_id="t", tool_name="Bash\x1b[31m", input={"command": "echo \x1b[5m"})])  # fmt: skip
    for out in (azs.ok("show", str(sid)), azs.ok("tail", str(sid))):
        assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\x9b" not in out
        assert "look ␛]0;pwned␇␛[2J here" in out and "next\ufffd31m" in out
        assert "Bash␛[31m echo ␛[5m" in out
    lines = on_terminal(azs, 80, "show", str(sid))
    assert any("look ␛]0;pwned␇␛[2J here" in line for line in lines)


_TURNS: list[Event] = [
    UserMessage(content="fix the parser\nplease"),
    AssistantText(text="done"),
    Complete(success=True, duration_ms=2500, cost_usd=0.5),
    UserMessage(content="now the lexer"),
    AssistantText(text="Error: the agent exited (exit status 1) without finishing the turn\nboom"),
    Complete(success=False, duration_ms=1000, cost_usd=0.0),
    UserMessage(content="and the tests"),
    AssistantText(text="working"),
]


def test_log_is_one_line_per_turn(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "turns").session.id
    client.append_events(worktree, sid, _TURNS)
    turns = azs.json("log", str(sid))
    assert [(t["first_seq"], t["last_seq"], t["prompt"], t["outcome"]) for t in turns] == [
        (1, 3, "fix the parser", "succeeded"),
        (4, 6, "now the lexer", "failed"),
        (7, 8, "and the tests", "none"),
    ]
    assert turns[0]["duration_ms"] == 2500 and turns[0]["cost_usd"] == 0.5 and turns[0]["error"] == ""
    assert turns[1]["error"] == "the agent exited (exit status 1) without finishing the turn"
    lines = azs.ok("log", str(sid)).splitlines()
    assert lines[0].split()[:3] == ["✓", "1-3", "fix"] and "2.5s" in lines[0] and "$0.5000" in lines[0]
    assert lines[1].split()[:5] == ["✗", "4-6", "now", "the", "lexer"]
    assert "the agent exited (exit status 1) without finishing the turn" in lines[1]
    assert lines[2].split()[:2] == ["○", "7-8"] and lines[2].endswith("no result")
    assert [t["first_seq"] for t in azs.json("log", str(sid), "--last", "1")] == [7]


@pytest.mark.parametrize("columns", [80, 200])
def test_show_and_log_on_a_terminal(azs: Azs, client: Client, worktree: Path, columns: int) -> None:
    sid = client.create_session(worktree, "turns").session.id
    client.append_events(worktree, sid, [*_TURNS, AssistantText(text="a long answer " * 40)])
    shown = on_terminal(azs, columns, "show", str(sid))
    assert all(len(line) <= columns for line in shown), shown
    long = next(i for i, line in enumerate(shown) if line.startswith("    9   a long answer"))
    assert shown[long + 1].startswith(" " * 6 + "  ") or shown[long + 1].startswith(" " * 6)  # beside the seq
    logged = on_terminal(azs, columns, "log", str(sid))
    assert logged[0].split()[:2] == ["seqs", "prompt"] and all(len(line) <= columns for line in logged)
    assert "now the lexer" in logged[2]


def test_the_pager_on_a_terminal(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: no pager; now `$AZS_PAGER`, else `$PAGER`, else less, as git; never on a pipe."""
    sid = _numbered(client, worktree, 5)
    paged = on_terminal(azs, 80, "show", str(sid), env={"TERM": "xterm", "AZS_PAGER": "sed s/^/PAGED:/"})
    assert paged[0].startswith("PAGED:") and any(line.startswith("PAGED:    5") for line in paged)
    by_pager = on_terminal(azs, 80, "log", str(sid), env={"TERM": "xterm", "PAGER": "sed s/^/P:/"})
    assert all(line.startswith("P:") for line in by_pager)
    plain = on_terminal(
        azs, 80, "show", str(sid), "--no-pager", env={"TERM": "xterm", "AZS_PAGER": "sed s/^/PAGED:/"}
    )
    assert not any("PAGED:" in line for line in plain) and any(line.startswith("    5") for line in plain)
    less_env = {"TERM": "xterm", "LESS": "FRX --no-keypad"}
    less = on_terminal(azs, 80, "show", str(sid), env=less_env)  # it fits one screen: less quits at once
    assert any("answer 5" in line for line in less)
    assert "PAGED" not in azs.ok("show", str(sid))  # a pipe: never


def test_show_json_is_unchanged_by_ranges_and_pager(azs: Azs, client: Client, worktree: Path) -> None:
    sid = _numbered(client, worktree, 3)
    code, out, _ = azs("--json", "show", str(sid), "--no-pager")
    assert code == 0 and [e["seq"] for e in json.loads(out)["events"]] == [1, 2, 3]


@pytest.mark.parametrize("columns", [80, 200])
def test_the_column_a_row_is_about_stays(azs: Azs, client: Client, worktree: Path, columns: int) -> None:
    """Issue 25: at 80 columns search cut the match to 13 characters to keep the session name, and ls
    cut names to 15 characters to keep `8 min ago` and the fork's lineage."""
    name = "a session name that goes on for quite a while about the parser " * 2
    sid = client.create_session(worktree, name).session.id
    match = "the tokenizer panics when a line ends without a newline in the middle of a heredoc"
    done = Complete(success=True, duration_ms=1500, cost_usd=0.25)
    client.append_events(worktree, sid, [UserMessage(content="why"), AssistantText(text=match), done])
    client.fork_session(worktree, sid, 2)
    [row] = [line for line in on_terminal(azs, columns, "search", "heredoc") if "heredoc" in line]
    shown = row.split("assistant", 1)[1].strip()
    assert len(shown) >= min(len(match), columns // 2 - 2), row  # at least half the width for the match
    assert all(len(line) <= columns for line in on_terminal(azs, columns, "search", "heredoc"))
    listed = on_terminal(azs, columns, "ls")
    rows = [line for line in listed if line.split()[1:2] == [f"S{sid}"]]
    assert rows and all(len(line) <= columns for line in listed)
    kept = rows[0].split(f"S{sid}", 1)[1].strip().split("  ")[0]
    assert len(kept) >= min(len(name.strip()), columns // 2 - 2), rows[0]


def test_search_as_you_type_opens_the_pick_in_show(azs: Azs, client: Client, worktree: Path) -> None:
    """Issue 25: `azs search -i` on a terminal: type, choose, and the hit opens in `show` at its seq."""
    sid = _numbered(client, worktree, 30)
    client.append_events(worktree, sid, [AssistantText(text="the heredoc needle is here")])
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 20, 100, 0, 0))
    env = {**{k: v for k, v in azs.daemon.env.items() if k not in ("COLUMNS", "NO_COLOR")}, "TERM": "xterm"}
    env["AZS_PAGER"] = "cat"
    command = [sys.executable, "-m", "azsd_client.cli", *azs.argv("search", "-i")]
    process = subprocess.Popen(command, env=env, stdin=child, stdout=child, stderr=child)
    os.close(child)
    seen = b""

    def until(wanted: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 30
        while wanted not in seen and time.monotonic() < deadline:
            if select.select([parent], [], [], 1)[0]:
                try:
                    seen += os.read(parent, 65536)
                except OSError:
                    break
        assert wanted in seen, seen[-2000:]

    try:
        until(b"type to search")
        os.write(parent, b"heredoc nee")  # half a word already finds it
        until(b"the heredoc needle is here")
        os.write(parent, b"\r")
        with contextlib.suppress(AssertionError):
            until(b"\x00")  # to the end of what it writes
        assert process.wait(30) == 0
    finally:
        os.close(parent)
        if process.poll() is None:
            process.kill()
            process.wait()
    shown = re.sub(r"\x1b\[[0-9;]*m", "", seen.split(b"\x1b[?1049l", 1)[1].decode())
    assert "… 28 earlier events" in shown and "   31   the heredoc needle is here" in shown
    assert "answer 28" not in shown and "answer 29" in shown
    code, out, err = azs("search", "-i")  # not a terminal
    assert (code, out) == (2, "") and "search -i picks on a terminal" in err
