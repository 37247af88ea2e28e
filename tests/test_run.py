"""`azs run` end to end, and the harness of tests/test_run_*.py.

The real daemon runs as a subprocess (tests/daemon_fixture.py), `azs` runs as a subprocess too, and
tests/fake_agent.py stands in for `claude` and `codex`: the agent commands reach `azs` through a
config file named by ``AZSD_CONFIG`` (the daemon needs none). The fake agent replays a corpus file,
so what the daemon stores live can be compared with a one-shot parse of the same file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest

from azsd.compact import prepare_for_store
from azsd.events import AssistantText, Complete, Event, Init, UserMessage, decode_event, encode_event
from azsd.ingest.file import parse_file
from azsd.ipc import protocol as p
from azsd_client._shared import Backend
from azsd_client.commands.turn import session_name
from tests.conftest import corpus_files, requires_corpus
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir

FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"
FORMATS = {"claude": "claude-stream-json", "codex": "codex-exec-json"}
HAS_GIT = shutil.which("git") is not None
BRANCH = "feat-run" if HAS_GIT else ""
TIMEOUT_S = 60.0

pytestmark = [pytest.mark.corpus, requires_corpus]

_T = TypeVar("_T")


# -- the corpus -------------------------------------------------------------------------------------


def parsed(path: Path, fmt: str) -> list[Event]:
    """What a one-shot parse of `path` stores: its events, compacted (durations aside, see `timeless`)."""
    events, _report = parse_file(path, fmt)
    return timeless(prepare_for_store(events))


def timeless(events: list[Event]) -> list[Event]:
    """The events with every `Complete`'s duration set to 0.

    A live follow gives a turn that reports no duration (Codex) its wall time, which no one-shot
    parse can know; durations are compared where they are known (test_follow, test_corpus).
    """
    return [msgspec.structs.replace(e, duration_ms=0) if isinstance(e, Complete) else e for e in events]


def outcome(events: list[Event]) -> bool | None:
    """The success of the turn's last `Complete`, or None when it has none."""
    completes = [e for e in events if isinstance(e, Complete)]
    return completes[-1].success if completes else None


def pick(backend: str, success: bool) -> Path | None:
    """The corpus file of the backend's format with the most events whose turn ends as `success`."""
    fmt = FORMATS[backend]
    parses = ((f, parsed(f, fmt)) for f in corpus_files(fmt))
    fitting = {f: len(events) for f, events in parses if outcome(events) is success}
    return max(fitting, key=lambda f: (fitting[f], f.name), default=None)


LIVE_FILES = [(backend, f) for backend, fmt in FORMATS.items() for f in corpus_files(fmt)]
CLAUDE = pick("claude", True)
CODEX = pick("codex", True)


def corpus(path: Path | None) -> Path:
    if path is None:
        pytest.skip("the corpus has no file that fits this test")
    return path


# -- the daemon, a worktree, and `azs` ---------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d


class World:
    """One worktree (a git repo on branch `feat-run`), the fake agents' config, and `azs` runs."""

    def __init__(self, daemon: DaemonProc, tmp: Path) -> None:
        self.daemon = daemon
        self.root = (tmp / "worktree").resolve()
        self.root.mkdir()
        if HAS_GIT:
            subprocess.run(["git", "init", "-q", str(self.root)], check=True)
            subprocess.run(
                ["git", "-C", str(self.root), "symbolic-ref", "HEAD", f"refs/heads/{BRANCH}"], check=True
            )
        self.config = tmp / "azsd.toml"
        self.record = tmp / "agent-record.jsonl"
        self.client = daemon.client(timeout=10)
        self.configure()

    def configure(
        self,
        *,
        claude: list[str] | None = None,
        codex: list[str] | None = None,
        replay: Path | None = None,
        options: tuple[str, ...] = (),
        settings: dict[str, object] | None = None,
    ) -> None:
        """Both agents replay `replay` (codex reading its stdin first), unless given a whole command;
        `settings` are more config keys (`compaction-threshold`, …)."""
        default_claude, default_codex = self.agent_commands(replay, options)
        commands: dict[str, object] = {
            "claude-command": claude or default_claude,
            "codex-command": codex or default_codex,
            **(settings or {}),
        }
        self.config.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in commands.items()))

    def agent_commands(self, replay: Path | None, options: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """The commands `claude` and `codex` run as when a test names none: the fake agent."""
        fake = [sys.executable, str(FAKE_AGENT), "--record", str(self.record), *options]
        if replay is not None:
            fake += ["--replay", str(replay)]
        return fake, [*fake[:2], "--read-stdin", *fake[2:]]

    @property
    def env(self) -> dict[str, str]:
        env = dict(self.daemon.env)
        env["AZSD_CONFIG"] = str(self.config)
        env["NOTIFY_SOCKET"] = "/nonexistent/notify"  # what a service would have: the agent must not see it
        env["WATCHDOG_USEC"] = "1000000"
        env.pop("NO_COLOR", None)
        return env

    def argv(self, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "azsd_client.cli",
            "--runtime-dir",
            str(self.daemon.runtime_dir),
            "--root",
            str(self.root),
            "--timeout",
            "10",
            *args,
        ]

    def azs(
        self, *args: str, cwd: Path | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            cwd=cwd or self.root,
            env=self.env,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            cwd=self.root,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def events(self, session: int = 1) -> list[Event]:
        return timeless(self.raw_events(session))

    def raw_events(self, session: int = 1) -> list[Event]:
        return [decode_event(e.data) for e in self.client.get_events(self.root, session)]

    def view(self, session: int = 1) -> p.SessionView:
        return self.client.get_session(self.root, session).session

    def records(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def turn_files(self, session: int) -> list[Path]:
        """The agent output files of this worktree's session left in the runtime dir's turns/."""
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:12]
        return sorted((self.daemon.runtime_dir / "turns").glob(f"{digest}-S{session}-*.jsonl"))

    def follows(self) -> list[p.FollowView]:
        return [v for v in self.client.status().follows if v.root == str(self.root) and v.active]

    def explain(self, done: subprocess.CompletedProcess[str]) -> str:
        log = self.daemon.log_text()[-3000:]
        return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}\ndaemon log:\n{log}"


@pytest.fixture
def world(daemon: DaemonProc, tmp_path: Path) -> Iterator[World]:
    w = World(daemon, tmp_path)
    try:
        yield w
    finally:
        w.client.close()


def wait_for(condition: Callable[[], _T], what: str, timeout: float = 20.0) -> _T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.05)


# -- azs run ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("torn", [False, True], ids=["whole-lines", "torn-writes"])
@pytest.mark.parametrize("backend", ["claude", "codex"])
def test_run_stores_the_turn_as_a_one_shot_parse_does(world: World, backend: str, torn: bool) -> None:
    source = corpus(CLAUDE if backend == "claude" else CODEX)
    world.configure(replay=source, options=("--delay", "0.01", *(("--torn",) if torn else ())))
    prompt = f"Look at the parser ({backend}) and tell me what is wrong with it\nsecond line"

    done = world.azs("run", "--backend", backend, prompt)

    assert done.returncode == 0, world.explain(done)
    assert world.events() == [UserMessage(content=prompt), *parsed(source, FORMATS[backend])]
    (complete,) = [e for e in world.raw_events() if isinstance(e, Complete)]
    want_duration = next(
        e for e in prepare_for_store(parse_file(source)[0]) if isinstance(e, Complete)
    ).duration_ms
    # Claude reports its duration; Codex reports 0, and the turn's wall time is stored instead.
    assert complete.duration_ms == want_duration if want_duration else complete.duration_ms > 0
    view = world.view()
    assert (view.name, view.worktree, view.state) == (session_name(prompt), BRANCH, "succeeded")
    assert view.name.startswith("Look at the parser") and len(view.name) <= 40
    [record] = world.records()
    if backend == "claude":
        assert record["argv"][-4:] == ["-p", "--verbose", "--output-format", "stream-json"]
        assert prompt in record["stdin"], "claude -p reads its prompt from stdin"
        assert not any(prompt in arg for arg in record["argv"])
    else:
        assert record["argv"][-3:] == ["exec", "--json", "-"]
        assert prompt in record["stdin"]
    assert record["env"] == {}, "NOTIFY_SOCKET / WATCHDOG_* leaked into the agent"
    assert Path(record["cwd"]).resolve() == world.root
    assert f"» {prompt.splitlines()[0]}" in done.stdout and "✓ completed" in done.stdout
    assert world.turn_files(1) == [], "a turn that was stored whole leaves no file behind"
    assert world.follows() == []


def big_context(world: World, size: int) -> int:
    """A session whose context is about `size` bytes: turns of prompts and answers (with multi-byte
    characters, quotes and newlines), each answer ending in a Complete. Its id."""
    sid = world.client.create_session(world.root, "long").session.id
    chunk = 'ünïcødé "quoted" 💥 and a line\n' * 1000  # ~36 KB of text, ~40 KB of UTF-8
    turns = -(-size // (2 * len(chunk.encode())))  # rounded up
    for turn in range(turns):
        world.client.append_events(
            world.root,
            sid,
            [
                UserMessage(content=f"question {turn}\n{chunk}"),
                AssistantText(text=f"answer {turn}\n{chunk}"),
                Complete(success=True, duration_ms=5, cost_usd=0.0),
            ],
        )
    return sid


@pytest.mark.parametrize("size", [140 * 1024, 1024 * 1024], ids=["over-128KiB", "1MB"])
@pytest.mark.parametrize("backend", ["claude", "codex"])
def test_a_prompt_of_any_size_reaches_the_agent_whole(world: World, backend: Backend, size: int) -> None:
    source = corpus(CLAUDE if backend == "claude" else CODEX)
    world.configure(replay=source)
    sid = big_context(world, size)
    prompt = "and now, after all that, the next step"
    expected = world.client.build_context(world.root, sid, prompt, backend=backend).prompt.encode()
    if backend == "claude":
        assert len(expected) > size * 0.9, "the context is smaller than the test means it to be"
    else:
        assert len(expected) <= 180_000, "Codex's prompt budget (spec §5.3) is kept"
    before = len(world.raw_events(sid))

    done = world.azs("run", "-s", f"S{sid}", "--backend", backend, "--no-compact", prompt)

    assert done.returncode == 0, world.explain(done)
    [record] = world.records()
    assert (record["stdin_bytes"], record["stdin_sha256"]) == (
        len(expected),
        hashlib.sha256(expected).hexdigest(),
    ), "the agent did not receive the exact prompt bytes"
    assert max(len(os.fsencode(arg)) for arg in record["argv"]) < 4096, "the prompt went into argv"
    events = world.events(sid)
    assert events[before:] == [UserMessage(content=prompt), *parsed(source, FORMATS[backend])]
    assert world.view(sid).state == "succeeded"


def test_the_prompt_from_stdin_or_a_file(world: World, tmp_path: Path) -> None:
    """Issue 25: `azs run -` stored the literal prompt "-", and there was no way to give a file."""
    world.configure(replay=corpus(CLAUDE))
    prompt = "fix the parser\n\nit drops the last line -- see main.go\n"
    done = world.azs("run", "-", stdin=prompt)
    assert done.returncode == 0, world.explain(done)
    assert world.events()[0] == UserMessage(content=prompt)
    given = tmp_path / "prompt.md"
    given.write_text("from a file")
    done = world.azs("run", "-s", "1", "--file", str(given))
    assert done.returncode == 0, world.explain(done)
    assert UserMessage(content="from a file") in world.events()
    done = world.azs("run", "-", stdin="  \n")
    assert done.returncode == 2 and "the prompt is empty (stdin)" in done.stderr
    done = world.azs("run", "--file", str(tmp_path / "missing.md"))
    assert done.returncode == 2 and "cannot read the prompt from" in done.stderr


def test_run_json_prints_each_stored_event(world: World) -> None:
    source = corpus(CLAUDE)
    world.configure(replay=source)

    done = world.azs("--json", "run", "fix it")

    assert done.returncode == 0, world.explain(done)
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    stored = [
        {"seq": e.seq, "kind": e.kind, "event": json.loads(e.data)}
        for e in world.client.get_events(world.root, 1)
    ]
    assert printed == stored
    assert len(stored) == 1 + len(parsed(source, "claude-stream-json"))


def test_second_turn_gets_the_first_as_context_and_stores_the_clean_prompt(world: World) -> None:
    first_source, second_source = corpus(CLAUDE), corpus(CODEX)
    world.configure(replay=first_source)
    first = world.azs("run", "--backend", "claude", "what does this project do?")
    assert first.returncode == 0, world.explain(first)
    turn1 = world.events()
    world.configure(replay=second_source)
    prompt = "now make the parser faster"

    second = world.azs("run", "-s", "S1", "--backend", "codex", "--model", "gpt-test", prompt)

    assert second.returncode == 0, world.explain(second)
    claude, codex = world.records()
    assert "--model" not in claude["argv"]
    assert codex["argv"][-5:] == ["exec", "--json", "--model", "gpt-test", "-"]
    injected = codex["stdin"]
    assert "<azureal-session-context>" in injected and "what does this project do?" in injected
    said = next(e.text for e in turn1 if isinstance(e, AssistantText) and e.text.strip())
    assert said.splitlines()[0][:40] in injected, "the first turn's answer is not in the context"
    assert injected.rstrip().endswith(prompt)
    events = world.events()
    assert events[: len(turn1)] == turn1
    # `--model` is passed to the follow too: Codex's `exec --json` never names its model, so the
    # turn's Init (and its usage estimate) carry the one asked for
    told = [
        msgspec.structs.replace(e, model="gpt-test") if isinstance(e, Init) and not e.model else e
        for e in parsed(second_source, "codex-exec-json")
    ]
    assert events[len(turn1) :] == [UserMessage(content=prompt), *told]
    stored_prompt = world.client.get_events_page(world.root, 1, from_seq=len(turn1) + 1, limit=1).events[0]
    assert stored_prompt.data == encode_event(UserMessage(content=prompt)).decode()
    assert world.view().state == "succeeded"
    assert [v.id for v in world.client.list_sessions(world.root).sessions] == [1]


@pytest.mark.parametrize(("backend", "source"), LIVE_FILES, ids=[f"{b}-{f.stem}" for b, f in LIVE_FILES])
def test_every_live_corpus_file_goes_through_azs_run(world: World, backend: str, source: Path) -> None:
    world.configure(replay=source)
    expected = parsed(source, FORMATS[backend])
    success = outcome(expected)

    done = world.azs("run", "--backend", backend, "go")

    assert done.returncode == (0 if success else 1), world.explain(done)
    said = [  # issue 25: a turn without its end says so where it ended
        AssistantText(text="Error: the agent printed no result (exit status 0)"),
        Complete(success=False, duration_ms=0, cost_usd=0.0),
    ]
    assert world.events() == [UserMessage(content="go"), *expected, *(said if success is None else [])]
    assert world.view().state == ("succeeded" if success else "failed")
    assert world.follows() == []
