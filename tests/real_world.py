"""The harness of the real-agent tests: the real daemon, a git worktree, `azs`, and the real Claude Code
and Codex (tests/real_agents.py) talking to a fake model (tests/fake_model.py).

:class:`RealWorld` is tests/test_run.py's :class:`World` with the agent commands set to the pinned
programs and the environment of `azs` (and so of the agents it starts) given a private home whose
agents reach only the fake model. The agents' own files land under that home: Claude's transcripts
in ``<home>/.claude/projects/<slug>/``, Codex's rollouts in ``<home>/codex-home/sessions/``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.errors import AzsdError
from azsd.events import Event
from azsd.ingest.importer import claude_slug
from azsd.ipc import protocol as p
from azsd.model import Usage
from tests.daemon_fixture import DaemonProc
from tests.fake_model import FakeModel, fake_model
from tests.real_agents import agent_bin, claude_env, codex_env
from tests.test_run import World

__all__ = ["RealWorld", "model", "real_world", "sent_usage", "usage_of"]


def sent_usage(model: FakeModel) -> Usage:
    """What the fake model's completed replies used, in azsd's terms (fresh input apart from cache;
    an OpenAI reply's `input_tokens` holds its cached part)."""
    total = Usage()
    for sent in model.sent:
        r = sent.reply
        fresh = r.input_tokens - r.cache_read if sent.api == "openai" else r.input_tokens
        reasoning = r.reasoning_tokens if sent.api == "openai" else 0
        total += Usage(
            input=fresh, output=r.output_tokens, cache_read=r.cache_read, cache_write=r.cache_write,
            reasoning=reasoning,
        )  # fmt: skip
    return total


def usage_of(view: p.SessionView) -> Usage:
    """A session's stored usage (its tokens only)."""
    u = view.usage
    if u is None:
        return Usage()
    return Usage(input=u.input, output=u.output, cache_read=u.cache_read, cache_write=u.cache_write,
                 reasoning=u.reasoning)  # fmt: skip


class RealWorld(World):
    def __init__(self, daemon: DaemonProc, tmp: Path, model: FakeModel) -> None:
        self.model = model
        self.home = tmp / "home"
        self.agent_env = {**claude_env(self.home, model.url), **codex_env(self.home, model.url)}
        super().__init__(daemon, tmp)

    def agent_commands(self, replay: Path | None, options: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """The real programs (`replay` and `options` are the fake agent's, and mean nothing here)."""
        return [str(agent_bin("claude")), "--dangerously-skip-permissions"], [str(agent_bin("codex"))]

    @property
    def env(self) -> dict[str, str]:
        env = super().env
        env.update(self.agent_env)
        return env

    # -- the agents run directly, as a user runs them --------------------------------------------

    @staticmethod
    def claude_argv(*args: str) -> list[str]:
        """`claude -p … --output-format stream-json --verbose`, the prompt to come on stdin."""
        argv = [str(agent_bin("claude")), "--dangerously-skip-permissions", "-p", *args]
        return [*argv, "--output-format", "stream-json", "--verbose"]

    def claude(self, *args: str, prompt: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Claude Code run headless in the worktree, as a user runs it."""
        return subprocess.run(
            self.claude_argv(*args), cwd=self.root, env=self.agent_env, input=prompt, capture_output=True,
            text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def events_so_far(self, session: int = 1) -> list[Event]:
        """The session's events, or none while it does not exist yet."""
        try:
            return self.raw_events(session)
        except AzsdError:
            return []

    @staticmethod
    def codex_argv(*args: str) -> list[str]:
        """`codex exec --json … -`, the prompt to come on stdin."""
        return [str(agent_bin("codex")), "exec", "--json", *args, "-"]

    def codex(self, *args: str, prompt: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Codex run headless in the worktree, as a user runs it."""
        return subprocess.run(
            self.codex_argv(*args), cwd=self.root, env=self.agent_env, input=prompt, capture_output=True,
            text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def codex_resume(
        self, thread: str, *, prompt: str, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """`codex exec resume THREAD --json -`: the thread's next turn."""
        argv = [str(agent_bin("codex")), "exec", "resume", thread, "--json", "-"]
        return subprocess.run(
            argv, cwd=self.root, env=self.agent_env, input=prompt, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip

    @property
    def claude_dir(self) -> Path:
        """Where Claude Code writes this worktree's transcripts."""
        return self.home / ".claude" / "projects" / claude_slug(str(self.root))

    @property
    def codex_home(self) -> Path:
        return self.home / "codex-home"

    def claude_transcripts(self) -> list[Path]:
        return sorted(self.claude_dir.glob("*.jsonl"))

    def codex_rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl"))


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake_model() as server:
        yield server


@pytest.fixture
def real_world(daemon: DaemonProc, tmp_path: Path, model: FakeModel) -> Iterator[RealWorld]:
    world = RealWorld(daemon, tmp_path, model)
    try:
        yield world
    finally:
        world.client.close()
