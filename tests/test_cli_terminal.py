"""`azs` as people use it: under a real pseudo-terminal at 60, 80 and 120 columns, with the real daemon;
a daemon that goes away (answered at once, said by `watch`), and the commands that changed with issue 14.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.events import AssistantText, Complete, ToolCall, ToolResult, UserMessage
from azsd_client import Client
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, start_daemon
from tests.test_cli import Azs, Lines, azs, json_lines, run_main
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_LONG = "a session whose name goes on and on about the parser and its panics " * 2


def on_terminal(
    azs: Azs, columns: int, *args: str, env: dict[str, str] | None = None, raw: bool = False
) -> list[str]:
    """`azs args…` with stdout and stderr on a pseudo-terminal `columns` wide: its lines, colour removed
    (kept with `raw`). `env`: variables to set (no ``TERM`` by default, so no pager)."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    unset = ("COLUMNS", "NO_COLOR", "TERM", "PAGER", "AZS_PAGER")
    env = {**{k: v for k, v in azs.daemon.env.items() if k not in unset}, **(env or {})}
    command = [sys.executable, "-m", "azsd_client.cli", *azs.argv(*args)]
    process = subprocess.Popen(command, env=env, stdin=child, stdout=child, stderr=child)
    os.close(child)
    out = b""
    try:
        while select.select([parent], [], [], 30)[0]:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # EIO: the child side is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(parent)
        assert process.wait(30) == 0, out
    text = out.decode() if raw else _ANSI.sub("", out.decode())
    assert raw or "\x1b" not in text
    return text.replace("\r\n", "\n").rstrip("\n").split("\n")


def _fill(client: Client, root: Path) -> list[int]:
    """Sessions with long names, usage-free events, a failed tool, a completion."""
    ids = []
    for n in range(3):
        sid = client.create_session(root, f"{n} {_LONG}").session.id
        ids.append(sid)
    client.append_events(
        root,
        ids[0],
        [
            UserMessage(content="why does the parser panic " * 12),
            ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "cargo test --all " * 10}),
            ToolResult(tool_use_id="t", tool_name="Bash", content="panic " * 50, is_error=True),
            AssistantText(text="found the panic in the parser " * 10),
            Complete(success=True, duration_ms=2000, cost_usd=0.25),
        ],
    )
    return ids


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_every_table_fits_the_terminal(azs: Azs, client: Client, worktree: Path, columns: int) -> None:
    first, *_ = _fill(client, worktree)
    for args in (
        ("ls",),
        ("ls", "--all-worktrees", "--all"),
        ("search", "panic"),
        ("status",),
        ("usage",),
        ("show", f"S{first}"),
        ("tail", f"S{first}"),
    ):
        lines = on_terminal(azs, columns, *args)
        wide = [line for line in lines if len(line) > columns]
        assert not wide, (args, wide)
        assert len(lines) > 1, (args, lines)
    listed = on_terminal(azs, columns, "ls")
    assert listed[0].split()[:2] == ["id", "name"]  # a header on a terminal
    assert all("…" in line for line in listed[1:4])  # the long names are cut with an ellipsis
    shown = on_terminal(azs, columns, "show", f"S{first}")
    at = shown.index(next(line for line in shown if line.startswith("    1 » ")))  # the seq, in the margin
    assert shown[at + 1].startswith(" " * 6) and "panic" in shown[at + 1]  # wrapped beside it, not under


def test_a_pipe_gets_whole_lines_and_no_colour(azs: Azs, client: Client, worktree: Path) -> None:
    _fill(client, worktree)
    out = azs.ok("ls")
    assert "\x1b" not in out and _LONG.strip() in out  # nothing cut for a pipe
    assert out.splitlines()[0].split()[:2] == ["new", "S3"]  # no header: rows only, newest first


@pytest.fixture
def own(worktree: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Azs]:
    """`azs` on a daemon of this test's own, which it may stop."""
    with daemon_in_tmpdir() as mine:
        yield Azs(mine, worktree, capsys)


def test_a_stopped_daemon_is_answered_at_once(own: Azs) -> None:
    azs, daemon = own, own.daemon
    daemon.proc.send_signal(signal.SIGKILL)  # its socket file stays, nothing listens on it
    daemon.proc.wait()
    assert (daemon.runtime_dir / "rpc").exists()
    started = time.monotonic()
    code, _, err = azs("ls")
    took = time.monotonic() - started
    assert code == 1 and "azsd is not running" in err and "systemctl --user start azsd" in err, err
    assert took < 0.5, took  # the bound (it waited the whole 5 s timeout)
    code, out, err = azs("--json", "status")  # it printed nothing on stdout
    assert (code, err) == (3, "")
    (down,) = json_lines(out)
    assert down["running"] is False and down["endpoint"] == f"ipc://{daemon.runtime_dir}/rpc"
    assert "start" in down and "not running" in down["reason"]
    code, out, err = azs("--json", "ls")
    assert (code, err) == (1, "") and json_lines(out)[0]["error"]["code"] == "not_running"


def test_watch_says_when_the_daemon_goes_and_comes_back(own: Azs) -> None:
    azs, daemon = own, own.daemon
    watch = Lines(azs.spawn("watch"))
    try:
        time.sleep(0.5)
        daemon.stop()
        assert watch.process.stderr is not None
        said = watch.process.stderr.readline()
        assert said.startswith("azs: azsd went away: waiting for it to come back"), said
        again = start_daemon(daemon.runtime_dir)
        try:
            assert watch.process.stderr.readline() == "azs: azsd is back: following again\n"
        finally:
            again.close()
    finally:
        assert watch.stop() == 0


def test_fork_at_a_count_from_the_end(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "long").session.id
    client.append_events(worktree, sid, [AssistantText(text=f"t{i}") for i in range(1, 6)])
    (fork,) = azs.json("fork", f"S{sid}", "--at", "-2")  # all but the last two
    assert fork["fork_seq"] == 3 and fork["event_count"] == 3
    code, _, err = azs("fork", f"S{sid}", "--at", "-5")
    assert code == 1 and "has 5 events: --at -5 leaves none to copy" in err, err


def test_new_in_a_git_worktree_keeps_the_store_out_of_git_by_itself(
    daemon: DaemonProc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    base = ["--runtime-dir", str(daemon.runtime_dir), "--root", str(repo)]
    code, _, err = run_main(capsys, *base, "new", "first")
    assert (code, err) == (0, "")  # nothing to do: .azureal/.gitignore keeps it out of git
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""
    (repo / ".azureal" / ".gitignore").write_text("")  # the user emptied it: then they are told how
    (repo / ".azureal" / "sessions.azs").unlink()
    code, _, err = run_main(capsys, *base, "new", "second")
    assert code == 0 and "git does not ignore .azureal/" in err and "info/exclude" in err, err


def test_usage_errors_with_json_are_json(azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # not in a git worktree, no --root: `new` refuses to make .azureal/ here
    code, out, err = run_main(azs.capsys, "--runtime-dir", str(azs.daemon.runtime_dir), "--json", "new")
    assert (code, err) == (2, "")
    (got,) = json_lines(out)
    assert got["error"]["code"] == "usage" and "--root DIR" in got["error"]["message"]
    assert not (tmp_path / ".azureal").exists()


def test_context_ends_with_a_newline(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    assert azs.ok("context", f"S{sid}", "no newline here") == "no newline here\n"
    assert json.loads(azs.ok("--json", "context", f"S{sid}", "x"))["prompt"] == "x"
