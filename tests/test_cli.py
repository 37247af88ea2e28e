"""The `azs` command: parsing, usage errors, exit codes, no daemon, git roots and branches; and the
harness of the end-to-end tests (:class:`Azs`, :class:`Lines`), which tests/test_cli_*.py use.

In-process runs call :func:`azsd_client.cli.main`.
"""

from __future__ import annotations

import io
import json
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from azsd.ipc import protocol as p
from azsd_client.cli import main, session_id
from azsd_client.commands.invocation import git_branch, git_root
from tests.daemon_fixture import DaemonProc, short_tmpdir
from tests.test_client import REPO, client, daemon, worktree

__all__ = ["client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

Run = tuple[int, str, str]


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    """`azs argv…` in this process: (exit status, stdout, stderr)."""
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


# -- parsing and usage errors -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "number"), [("S3", 3), ("s3", 3), ("3", 3), ("S12", 12), (" 7 ", 7)])
def test_session_ids(text: str, number: int) -> None:
    assert session_id(text) == number


@pytest.mark.parametrize("bad", ["S", "x3", "0", "S0", "S-1", "-1", "3.5", "S3x", "", str(2**63)])
def test_bad_session_ids_are_usage_errors(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    code, out, err = run_main(capsys, "show", bad)
    assert code == 2 and out == ""
    assert "not a session" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["rename", "S3"],
        ["ingest"],
        ["ingest", "file.jsonl", "--format", "nope"],
        ["context", "S3", "p", "--backend", "gpt"],
        ["ls", "--worktree", "a", "--all-worktrees"],
        ["--timeout", "0", "status"],
        ["tail", "-n", "0", "S1"],
        ["import", "opencode", "--all"],
        ["import", "claude", "--all", "--data-dir", "/x"],
        ["usage", "--by", "person"],
        ["usage", "--remote", "--all"],
        ["usage", "--remote", "--active"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert run_main(capsys, *argv)[0] == 2


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and out.startswith("azs ") and f"(protocol {p.PROTOCOL_VERSION})" in out


def test_global_options_go_before_or_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--json", "protocol"], ["protocol", "--json"]):
        code, out, _ = run_main(capsys, *argv)
        assert (code, json_lines(out)) == (0, [{"protocol": p.PROTOCOL_VERSION}])


def test_rm_refuses_without_a_terminal_or_yes(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    runtime_dir = short_tmpdir()
    try:
        code, out, err = run_main(capsys, "--runtime-dir", str(runtime_dir), "rm", "S3")
    finally:
        shutil.rmtree(runtime_dir)
    assert (code, out) == (2, "")
    assert err == "azs: not deleting S3 without confirmation: stdin is not a terminal (add -y)\n"


# -- no daemon --------------------------------------------------------------------------------------


def test_no_daemon_is_one_friendly_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    runtime_dir = short_tmpdir()
    try:
        started = time.monotonic()
        code, out, err = run_main(capsys, "--runtime-dir", str(runtime_dir), "--timeout", "0.3", "ls")
        elapsed = time.monotonic() - started
    finally:
        shutil.rmtree(runtime_dir)
    assert (code, out) == (1, "")
    assert err.startswith(
        "azs: azsd is not running — start it with `systemctl --user start azsd` or `azsd run`"
    )
    assert err.count("\n") == 1 and f"no socket file: {runtime_dir}/rpc" in err
    assert elapsed < 1.0


def _view(**fields: Any) -> p.SessionView:
    name, sid, count = fields["name"], fields["id"], fields["event_count"]
    return p.SessionView(display_name=name or f"S{sid}", created="", message_count=count, **fields)


# -- git: which root, which branch ------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "sub" / "dir").mkdir(parents=True)
    _git(path, "init", "-q", "-b", "feat-x")
    return path


@needs_git
def test_root_is_the_git_top_level_else_the_directory(repo: Path, tmp_path: Path) -> None:
    assert git_root(str(repo / "sub" / "dir")) == str(repo.resolve())
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_root(str(outside)) == str(outside)


@needs_git
def test_branch_unborn_committed_detached_and_outside(repo: Path, tmp_path: Path) -> None:
    assert git_branch(str(repo)) == "feat-x"  # no commit yet
    _git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    assert git_branch(str(repo)) == "feat-x"
    _git(repo, "checkout", "-q", "--detach")
    assert git_branch(str(repo)) == ""
    assert git_branch(str(tmp_path)) == ""


# -- end to end: the real daemon --------------------------------------------------------------------


class Azs:
    """`azs` against the test daemon and one worktree, in this process or as a subprocess."""

    def __init__(self, daemon: DaemonProc, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.daemon, self.root, self.capsys = daemon, root, capsys

    def argv(self, *args: str) -> list[str]:
        runtime_dir = str(self.daemon.runtime_dir)
        return ["--runtime-dir", runtime_dir, "--root", str(self.root), "--timeout", "10", *args]

    def __call__(self, *args: str) -> Run:
        return run_main(self.capsys, *self.argv(*args))

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, err
        return out

    def json(self, *args: str) -> list[dict[str, Any]]:
        return json_lines(self.ok("--json", *args))

    def spawn(self, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "azsd_client.cli", *self.argv(*args)]
        return subprocess.Popen(
            command,
            cwd=cwd or REPO,
            env=self.daemon.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture
def azs(daemon: DaemonProc, worktree: Path, capsys: pytest.CaptureFixture[str]) -> Azs:
    return Azs(daemon, worktree, capsys)


class Lines:
    """A subprocess's stdout, read line by line in a thread, waited on with a timeout."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: typing.IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, wanted: Callable[[str], bool], timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if wanted(line):
                return line
        stderr = self.process.stderr.read() if self.process.poll() is not None and self.process.stderr else ""
        pytest.fail(f"no such line within {timeout} s; seen: {self.seen!r}; stderr: {stderr!r}")

    def drain(self) -> list[str]:
        """The lines that have arrived so far (waiting a moment for the first)."""
        got: list[str] = []
        while True:
            try:
                line = self._queue.get(timeout=0.05)
            except queue.Empty:
                return got
            if line is None:
                return got
            self.seen.append(line)
            got.append(line)

    def json_for(self, wanted: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        line = self.wait_for(lambda text: wanted(json.loads(text)), timeout)
        found: dict[str, Any] = json.loads(line)
        return found

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
