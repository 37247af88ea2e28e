"""The `azs` command: parsing, output, exit codes; then end to end against the real daemon.

In-process runs call :func:`azsd_client.cli.main`; the concurrency tests run `azs` as separate
processes (``python -m azsd_client.cli``), next to an :class:`~azsd_client.AsyncClient`.
"""

from __future__ import annotations

import asyncio
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    Filtered,
    Hook,
    Init,
    MayBeCompacting,
    ModelSwitch,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_event,
    encode_event,
    event_kind,
)
from azsd.ipc import protocol as p
from azsd_client import AsyncClient, Client
from azsd_client.cli import main, session_id
from azsd_client.commands.invocation import git_branch, git_root
from azsd_client.render.events import event_lines, key_param, notification_line
from azsd_client.render.sessions import badge
from azsd_client.render.term import console, plain_lines, write
from azsd_client.render.text import Cell, Style, table
from tests.conftest import corpus_files, requires_corpus
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


# -- protocol --schema ------------------------------------------------------------------------------

MESSAGES = [
    *(cls for union in (p.Request, p.Reply, p.Notification) for cls in typing.get_args(union)),
    p.SyncCaughtUp,
]


def _schema(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    code, out, _ = run_main(capsys, *flags, "protocol", "--schema")
    assert code == 0
    schema: dict[str, Any] = json.loads(out)
    return schema


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_schema_names_every_message_with_its_op(capsys: pytest.CaptureFixture[str]) -> None:
    schema = _schema(capsys)
    defs = schema["$defs"]
    assert len(MESSAGES) == 71  # 37 requests, 30 replies, 3 notifications, 1 sync notification
    for cls in MESSAGES:
        name, op = cls.__name__, cls.__name__.lower()
        assert defs[name]["properties"]["op"] == {"enum": [op]}, name
        assert "op" in defs[name]["required"], name
        assert schema["discriminator"]["mapping"][op] == f"#/$defs/{name}"
    assert {r["$ref"] for r in schema["anyOf"]} == {f"#/$defs/{cls.__name__}" for cls in MESSAGES}
    for ref in _refs(schema):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in defs, ref


def test_schema_with_json_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "--json", "protocol", "--schema")
    assert code == 0 and out.count("\n") == 1
    assert json.loads(out) == _schema(capsys)


def test_schema_validates_real_messages(capsys: pytest.CaptureFixture[str]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema(capsys)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    view = _view(id=1, name="", worktree="", event_count=0, state="new")
    samples: list[Any] = [p.Status(), p.CreateSession(root="/r"), p.SessionReply(session=view)]
    for message in samples:
        validator.validate(json.loads(msgspec.json.encode(message)))
    assert not validator.is_valid({"op": "status", "extra": 1})


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


# -- rendering --------------------------------------------------------------------------------------

ALL_EVENTS: list[Event] = [
    Init(cwd="/src", model="opus"),
    Hook(name="SessionStart", output="ok"),
    UserMessage(content="fix the parser\nplease"),
    Command(name="/compact"),
    Compacting(),
    Compacted(),
    MayBeCompacting(),
    Plan(name="plan-1", content="step 1\nstep 2"),
    AssistantText(text="on it"),
    ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "cargo test"}),
    ToolResult(
        tool_use_id="t1", tool_name="Bash", content="\n".join(f"l{i}" for i in range(9)), is_error=False
    ),
    ToolResult(tool_use_id="t2", tool_name="Read", content="denied", is_error=True),
    Complete(success=True, duration_ms=1500, cost_usd=0.25),
    Complete(success=False, duration_ms=90_000, cost_usd=0.0),
    ModelSwitch(model="sonnet"),
    Filtered(),
]
EXPECTED_FIRST_LINES = [
    "  · session started: model opus, cwd /src",
    "  · hook SessionStart",
    "",
    "  ▸ /compact",
    "  · compacting…",
    "  · compacted",
    "  · may be compacting",
    "  ▤ plan plan-1",
    "  on it",
    "  ⚙ Bash cargo test",
    "    ↳ l0",
    "    ✗ denied",
    "✓ completed in 1.5s · $0.2500",
    "✗ failed after 1m30s",
    "  · model → sonnet",
    "  · filtered",
]


def _shown(event: p.WireEvent) -> list[str]:
    """An event as `show` prints it, less its seq's margin (`    1 `)."""
    lines = plain_lines(event_lines(event, Style()))
    assert all(line[:6].strip() in ("", str(event.seq)) for line in lines), lines
    return [line[6:] for line in lines]


def test_every_event_kind_renders_for_humans() -> None:
    assert {type(e) for e in ALL_EVENTS} == set(typing.get_args(Event))
    for event, first in zip(ALL_EVENTS, EXPECTED_FIRST_LINES, strict=True):
        wire = p.WireEvent(seq=1, kind=event_kind(event), data=encode_event(event).decode())
        assert _shown(wire)[0] == first, event
    prompt = p.WireEvent(seq=1, kind="UserMessage", data=encode_event(ALL_EVENTS[2]).decode())
    assert _shown(prompt) == ["", "» fix the parser", "  please"]
    assert plain_lines(event_lines(prompt, Style()))[1] == "    1 » fix the parser"  # the seq, in a margin
    result = p.WireEvent(seq=1, kind="ToolResult", data=encode_event(ALL_EVENTS[10]).decode())
    assert _shown(result)[1:] == ["      l1", "      l2", "      … (+6 more lines)"]
    one_more = ToolResult(tool_use_id="t", tool_name="Bash", content="a\nb\nc\nd", is_error=False)
    wire = p.WireEvent(seq=2, kind="ToolResult", data=encode_event(one_more).decode())
    assert _shown(wire)[-1] == "      … (+1 more line)"
    broken = p.WireEvent(seq=4, kind="Mystery", data='{"Mystery":{}}')
    assert _shown(broken)[0].startswith("  ? Mystery (unreadable")


def test_key_params() -> None:
    def call(name: str, data: Any, path: str | None = None) -> str:
        return key_param(ToolCall(tool_use_id="t", tool_name=name, input=data, file_path=path))

    assert call("grep", {"pattern": "x+", "path": "/a"}) == "x+"
    assert call("WebFetch", {"url": "https://e"}) == "https://e"
    assert call("Task", {"description": "look"}) == "look"
    assert call("Read", {"path": "/p"}) == "/p"
    assert call("mcp:tool", None, "/fp") == "/fp"
    assert call("Edit", {"file_path": 3}) == ""


def test_badges_and_colour() -> None:
    states = ("succeeded", "failed", "running", "ended", "new")
    assert [badge(s, Style()).text for s in states] == ["✓", "✗", "●", "○", "new"]
    assert badge("failed", Style()).paint("✗") == "✗"  # no colour: plain text, rich not needed
    rows = [[badge("failed", Style(color=True)), Cell("S1")]]
    out = io.StringIO()
    write(console(out, {}, color=True), table(rows)[0])
    assert out.getvalue() == "\x1b[31m✗\x1b[0m  S1\n"
    assert plain_lines(table(rows)) == ["✗  S1"]


def test_table_aligns_wide_characters() -> None:
    lines = plain_lines(table([[Cell("修正"), Cell("a")], [Cell("abc"), Cell("b")]]))
    assert lines == ["修正  a", "abc   b"]


def test_notification_lines() -> None:
    view = _view(id=4, name="x", worktree="main", event_count=1, state="failed")
    style = Style()
    assert notification_line(p.SessionCreated(root="/r", seq=1, session=view), style) == (
        "+ S4 created: x (branch main)"
    )
    changed = p.SessionChanged(root="/r", seq=2, session_id=4, change="renamed", session=view)
    assert notification_line(changed, style) == "~ S4 renamed to x"
    done = p.SessionChanged(root="/r", seq=3, session_id=4, change="completed", session=view)
    assert notification_line(done, style) == "✗ S4 completed (failed)"
    gone = p.SessionChanged(root="/r", seq=4, session_id=4, change="deleted")
    assert notification_line(gone, style) == "- S4 deleted"
    wire = [p.WireEvent(seq=1, kind="UserMessage", data=""), p.WireEvent(seq=2, kind="UserMessage", data="")]
    appended = p.EventsAppended(root="/r", seq=5, session_id=4, events=wire)
    assert notification_line(appended, style) == "· S4 +2 events: UserMessage"


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


def test_status(azs: Azs, daemon: DaemonProc) -> None:
    out = azs.ok("status")
    assert out.startswith("azsd ") and f"endpoint ipc://{daemon.runtime_dir}/rpc" in out
    (status,) = azs.json("status")
    assert status["running"] is True and status["pid"] == daemon.proc.pid
    assert "op" not in status and "protocol" not in status


def test_new_ls_rename_show_rm(azs: Azs, client: Client, worktree: Path) -> None:
    (created,) = azs.json("new", "fix parser", "--worktree", "")
    sid = created["id"]
    assert created["name"] == "fix parser" and created["state"] == "new"
    assert azs.ok("new").startswith("created S")
    assert [v["id"] for v in azs.json("ls")] == [sid + 1, sid]  # latest first
    assert azs.ok("ls").splitlines()[1].split()[:6] == ["new", f"S{sid}", "fix", "parser", "0", "events"]
    assert azs.json("rename", f"S{sid}", "better name")[0]["name"] == "better name"
    client.append_events(
        worktree,
        sid,
        [
            UserMessage(content="why does it panic"),
            ToolCall(tool_use_id="t", tool_name="Read", input={"file_path": "/src/parser.rs"}),
            ToolResult(tool_use_id="t", tool_name="Read", content="fn main() {}", is_error=False),
            AssistantText(text="found it"),
            Complete(success=True, duration_ms=2000, cost_usd=0.1),
        ],
    )
    shown = azs.ok("show", str(sid)).splitlines()
    assert shown[0] == f"✓ S{sid}  better name"
    chars = client.context_meter(worktree, sid).chars
    assert chars > 0
    assert shown[2:] == [
        f"context: {chars} of 400,000 chars (0%)",
        "",
        "    1 » why does it panic",
        "    2   ⚙ Read /src/parser.rs",
        "    3     ↳ fn main() {}",
        "    4   found it",
        "    5 ✓ completed in 2.0s · $0.1000",
    ]
    (shown_json,) = azs.json("show", f"S{sid}")
    assert shown_json["session"]["state"] == "succeeded"
    assert shown_json["session"]["context_chars"] == chars
    events = shown_json["events"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    assert events[0] == {
        "seq": 1,
        "kind": "UserMessage",
        "event": {"UserMessage": {"content": "why does it panic"}},
    }
    listed = azs.ok("ls").splitlines()  # one without events yet first: its making is its latest activity
    assert [line.split()[:3] for line in listed] == [["new", f"S{sid + 1}", "0"], ["✓", f"S{sid}", "better"]]
    assert azs.ok("rm", "-y", f"S{sid}") == f"deleted S{sid}\n"
    code, _, err = azs("show", f"S{sid}")
    assert code == 1 and err == f"azs: no session S{sid} in this store\n"
    code, out, err = azs("--json", "show", f"S{sid}")
    assert (code, err) == (1, "")
    assert json_lines(out) == [
        {"error": {"code": "not_found", "message": f"no session S{sid} in this store"}}
    ]


def test_rm_asks_on_a_terminal(azs: Azs, client: Client, worktree: Path, monkeypatch: Any) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    sid = client.create_session(worktree, "keep me").session.id
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, _, err = azs("rm", f"S{sid}")
    assert code == 1 and err.endswith(f"[y/N] azs: S{sid} was not deleted\n")
    assert f"delete S{sid} “keep me” and its 0 events?" in err
    assert client.get_session(worktree, sid).session.name == "keep me"
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert azs("rm", f"S{sid}")[0] == 0
    assert client.list_sessions(worktree).total == 0


@needs_git
def test_ls_default_is_this_branch_and_unlabelled(daemon: DaemonProc, client: Client, repo: Path) -> None:
    mine = client.create_session(repo, "mine", worktree="feat-x").session.id
    loose = client.create_session(repo, "loose", worktree="").session.id
    other = client.create_session(repo, "other", worktree="other").session.id
    base = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir), "--json"]

    def ids(*args: str) -> list[int]:
        done = subprocess.run(
            [*base, *args],
            cwd=repo / "sub" / "dir",
            env=daemon.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        return [v["id"] for v in json_lines(done.stdout)]

    assert ids("ls") == [other, loose, mine][1:]  # no --root: the git top level around the cwd, branch feat-x
    assert ids("ls", "--worktree", "other") == [other]
    assert ids("ls", "--all-worktrees") == [other, loose, mine]
    (made,) = ids("new", "labelled")
    assert client.get_session(repo, made).session.worktree == "feat-x"


def test_context_prints_the_exact_prompt(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    assert azs.ok("context", f"S{sid}", "first prompt") == "first prompt\n"  # no transcript yet: the prompt
    client.append_events(worktree, sid, [UserMessage(content="earlier"), AssistantText(text="reply")])
    expected = client.build_context(worktree, sid, "next\n", backend="codex").prompt
    assert expected.endswith("next\n")
    assert azs.ok("context", str(sid), "next\n", "--backend", "codex") == expected  # no second newline
    (reply,) = azs.json("context", str(sid), "x")
    assert reply["prompt"].endswith("</azureal-session-context>\n\nx")  # to the byte
    assert (reply["session"], reply["backend"]) == (sid, "claude") and "op" not in reply


@requires_corpus
def test_ingest_then_search(azs: Azs, client: Client, worktree: Path, monkeypatch: Any) -> None:
    source = corpus_files("claude-session")[0]
    sid = client.create_session(worktree).session.id
    monkeypatch.chdir(source.parent)  # a relative path: azs makes it absolute for the daemon
    (reply,) = azs.json("ingest", source.name, "-s", f"S{sid}")
    assert "op" not in reply and reply["session"] == sid
    assert reply["format"] == "claude-session" and reply["appended"] > 0
    assert client.get_session(worktree, sid).session.event_count == reply["appended"]
    out = azs.ok("ingest", source.name, "-s", str(sid))
    assert out.startswith(f"S{sid}: claude-session: ") and ", 0 stored, " in out
    code, _, err = azs("ingest", "no-such-file.jsonl", "-s", str(sid))
    assert code == 1 and err == "azs: no such file: no-such-file.jsonl\n"
    code, _, err = azs("ingest", ".", "-s", str(sid))  # it said "no such file"
    assert code == 1 and err.startswith("azs: . is a directory: give one agent JSONL file"), err
    empty = worktree / "empty.jsonl"  # (never written beside the corpus)
    empty.write_bytes(b"")
    code, _, err = azs("ingest", str(empty), "-s", str(sid))  # it said "not a JSONL file of any …"
    assert code == 1 and f"{empty} is empty: nothing to ingest" in err, err
    prompt = next(decode_event(e.data) for e in client.get_events(worktree, sid) if e.kind == "UserMessage")
    assert isinstance(prompt, UserMessage)
    word = max(prompt.content.split(), key=len)
    hits = azs.json("search", "--words", word)  # taken literally, not as FTS5 syntax
    assert hits and all(h["session"] == sid for h in hits)
    texts = [decode_event(json.dumps(h["event"])) for h in hits]
    assert any(word in t.content for t in texts if isinstance(t, UserMessage))
    assert azs.ok("search", "--words", word).splitlines()[0].startswith(f"S{sid}  ")
    wrong = worktree / "claude.jsonl"
    shutil.copy(source, wrong)  # it said "0 events parsed … skipped: unknown_type 41" and exited 0
    code, _, err = azs("ingest", str(wrong), "-s", str(sid), "--format", "codex-rollout")
    assert code == 1 and "it looks like claude-session: give `--format claude-session`" in err, err
    assert azs.json("search", "no such text anywhere 9f8e7d") == []


def test_tail_follows_an_append_by_another_client(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    client.append_events(worktree, sid, [UserMessage(content="first prompt")])
    tail = Lines(azs.spawn("tail", "-f", f"S{sid}"))
    try:
        tail.wait_for(lambda line: line == "    1 » first prompt")
        time.sleep(1.0)  # past the start-up re-read: what comes now comes through a notification
        client.append_events(worktree, sid, [AssistantText(text="appended later")])
        tail.wait_for(
            lambda line: line == "    2   appended later", timeout=1.5
        )  # before the 3 s idle re-read
        client.append_events(worktree, sid, [Complete(success=True, duration_ms=500, cost_usd=0.0)])
        tail.wait_for(lambda line: line == "    3 ✓ completed in 0.5s")
    finally:
        assert tail.stop() == 0  # Ctrl-C is the way out of `tail -f`


def test_tail_without_follow_and_last_n(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree).session.id
    client.append_events(worktree, sid, [AssistantText(text=f"t{i}") for i in range(1, 6)])
    assert azs.ok("tail", f"S{sid}").split() == ["1", "t1", "2", "t2", "3", "t3", "4", "t4", "5", "t5"]
    assert azs.ok("tail", "-n", "2", f"S{sid}").split() == ["4", "t4", "5", "t5"]
    assert [e["seq"] for e in azs.json("tail", "-n", "3", f"S{sid}")] == [3, 4, 5]


def test_two_cli_processes_and_an_async_client_see_each_other(azs: Azs, worktree: Path) -> None:
    asyncio.run(_three_way(azs, worktree))


async def _three_way(azs: Azs, worktree: Path) -> None:
    async with AsyncClient(azs.daemon.config, timeout=10) as aclient:
        sid = (await aclient.create_session(worktree, "shared")).session.id
        watch = Lines(azs.spawn("watch", "--json"))
        tail = Lines(azs.spawn("tail", "-f", "--json", f"S{sid}"))
        try:
            async with aclient.subscribe(worktree) as subscription:
                await _all_joined(aclient, worktree, sid, subscription, [watch, tail])
                await _async_changes_reach_the_cli(aclient, worktree, sid, watch, tail)
                own = await subscription.recv(5)  # the asyncio client hears its own append too
                assert isinstance(own, p.EventsAppended) and own.session_id == sid
                await _cli_changes_reach_the_others(azs, sid, subscription, watch, tail)
        finally:
            assert watch.stop() == 0
            assert tail.stop() == 0


async def _all_joined(
    aclient: AsyncClient, root: Path, sid: int, subscription: Any, readers: list[Lines]
) -> None:
    """Rename until every subscriber has seen a rename (PUB drops what comes before a SUB joins)."""
    seen: set[int] = set()
    for attempt in range(40):
        await aclient.rename_session(root, sid, f"join {attempt}")
        while (note := await subscription.recv(0.1)) is not None:
            if isinstance(note, p.SessionChanged):
                seen.add(-1)
        for i, reader in enumerate(readers):
            if any('"renamed"' in line for line in reader.drain()):
                seen.add(i)
        if seen >= {-1, *range(len(readers))}:
            return
    pytest.fail(f"not every subscriber joined: {seen}")


async def _async_changes_reach_the_cli(
    aclient: AsyncClient, root: Path, sid: int, watch: Lines, tail: Lines
) -> None:
    await aclient.append_events(root, sid, [UserMessage(content="from asyncio")])
    data = encode_event(UserMessage(content="from asyncio")).decode()
    note = await asyncio.to_thread(watch.json_for, lambda n: n["type"] == "appended")
    stored = json.loads(data)
    assert note["session_id"] == sid and [e["event"] for e in note["events"]] == [stored]
    event = await asyncio.to_thread(tail.json_for, lambda n: n.get("event") == stored)
    assert event["kind"] == "UserMessage"


async def _cli_changes_reach_the_others(
    azs: Azs, sid: int, subscription: Any, watch: Lines, tail: Lines
) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "azsd_client.cli", *azs.argv("--json", "new", "from another azs")],
        env=azs.daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert made.returncode == 0, made.stderr
    new_id = json.loads(made.stdout)["id"]
    note = await subscription.recv(5)
    assert isinstance(note, p.SessionCreated) and note.session.id == new_id
    seen = await asyncio.to_thread(watch.json_for, lambda n: n["type"] == "created")
    assert seen["session"]["name"] == "from another azs"
    removed = subprocess.run(
        [sys.executable, "-m", "azsd_client.cli", *azs.argv("rm", "-y", f"S{sid}")],
        env=azs.daemon.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert removed.returncode == 0, removed.stderr
    gone = await subscription.recv(5)
    assert isinstance(gone, p.SessionChanged) and (gone.session_id, gone.change) == (sid, "deleted")
    await asyncio.to_thread(watch.json_for, lambda n: n.get("change") == "deleted")
    await asyncio.to_thread(tail.json_for, lambda n: n.get("change") == "deleted")
    assert await asyncio.to_thread(tail.process.wait, 10) == 0  # `tail -f` ends with its session


@needs_git
def test_a_store_is_made_outside_a_worktree_only_when_root_names_it(
    daemon: DaemonProc,
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = ["--runtime-dir", str(daemon.runtime_dir), "--timeout", "10"]
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    for command in (["new"], ["run", "hello"], ["import", "claude"]):
        code, out, err = run_main(capsys, *base, *command)
        assert code == 2, (command, out, err)
        assert "not inside a git worktree" in err and "--root" in err
    assert not (plain / ".azureal").exists()
    code, out, err = run_main(capsys, *base, "ls")  # it creates nothing, and says why there is nothing
    assert (code, out) == (2, "") and "is not inside a git worktree, and holds no sessions" in err, err
    assert not (plain / ".azureal").exists()
    assert run_main(capsys, *base, "--root", str(plain), "new")[0] == 0
    assert (plain / ".azureal" / "sessions.azs").is_file()
    monkeypatch.chdir(repo / "sub" / "dir")
    assert run_main(capsys, *base, "new")[0] == 0
    assert (repo / ".azureal" / "sessions.azs").is_file()


def test_ingest_formats_are_the_daemons() -> None:
    """`azs ingest --format` takes every format the daemon parses, and OpenCode's sessions."""
    from azsd.ingest.parsers import FORMATS
    from azsd_client.commands.arguments import INGEST_FORMATS

    assert set(INGEST_FORMATS) == {*FORMATS, "opencode"}
