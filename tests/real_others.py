"""The harness of the real OpenCode and Aider tests: the real daemon, a git worktree, `azs`, and the
pinned programs (tests/real_agents.py) run headless against the fake model's Chat Completions
(tests/fake_chat.py), as a user runs them.

OpenCode keeps its sessions in ``<home>/.local/share/opencode/opencode.db``; Aider its history in
the worktree (``.aider.chat.history.md``). What the programs themselves say of their usage is the
truth the tests hold azsd to: OpenCode's own ``session``/``message`` columns (read with the real
``sqlite3`` program when it is there, else Python's), Aider's ``Tokens:`` lines.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_fixture import DaemonProc
from tests.fake_model import FakeModel
from tests.real_agents import agent_bin, aider_argv, aider_env, opencode_env
from tests.real_world import model
from tests.test_run import World

__all__ = ["AgentWorld", "agent_world", "aider_tokens", "model"]

#: Aider's own account of a message: ``Tokens: 2.4k sent, 12 received. Cost: $0.0075 message, …``.
_TOKENS = re.compile(r"Tokens: ([\d.,]+k?) sent, ([\d.,]+k?) received\. Cost: \$([\d.]+) message")


def _count(text: str) -> float:
    return float(text[:-1].replace(",", "")) * 1000 if text.endswith("k") else float(text.replace(",", ""))


def aider_tokens(history: str) -> list[tuple[float, float, float]]:
    """Each ``Tokens:`` line Aider wrote into its history: (sent, received, cost of the message)."""
    return [(_count(a), _count(b), float(c)) for a, b, c in _TOKENS.findall(history)]


class AgentWorld(World):
    """:class:`tests.test_run.World` with OpenCode and Aider beside it, both talking to `model`."""

    def __init__(self, daemon: DaemonProc, tmp: Path, model: FakeModel) -> None:
        self.model = model
        self.home = tmp / "home"
        super().__init__(daemon, tmp)

    # -- OpenCode ------------------------------------------------------------------------------

    @property
    def opencode_dir(self) -> Path:
        """OpenCode's data directory (`azs import opencode --data-dir`)."""
        return self.home / ".local" / "share" / "opencode"

    def opencode(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`opencode ARGS` in the worktree (`run PROMPT`, `run --continue PROMPT`, …)."""
        return subprocess.run(
            [str(agent_bin("opencode")), *args], cwd=self.root, env=opencode_env(self.home, self.model.url),
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip

    def opencode_rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of OpenCode's own database (read-only)."""
        uri = f"file:{self.opencode_dir / 'opencode.db'}?mode=ro"
        with sqlite3.connect(uri, uri=True) as db:
            return db.execute(sql, params).fetchall()

    def opencode_sessions(self) -> list[str]:
        """OpenCode's session ids, oldest first."""
        return [row[0] for row in self.opencode_rows("SELECT id FROM session ORDER BY time_created, id")]

    def opencode_totals(self, session: str) -> tuple[int, int, int, float]:
        """What OpenCode recorded of a session's assistant messages: input, output, cache read, cost."""
        total = [0, 0, 0, 0.0]
        for (data,) in self.opencode_rows("SELECT data FROM message WHERE session_id = ?", session):
            message = json.loads(data)
            if message.get("role") != "assistant":
                continue
            tokens = message.get("tokens") or {}
            total[0] += tokens.get("input", 0)
            total[1] += tokens.get("output", 0)
            total[2] += (tokens.get("cache") or {}).get("read", 0)
            total[3] += message.get("cost", 0.0)
        return int(total[0]), int(total[1]), int(total[2]), total[3]

    # -- Aider ---------------------------------------------------------------------------------

    @property
    def aider_history(self) -> Path:
        return self.root / ".aider.chat.history.md"

    def aider(self, message: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`aider --message MESSAGE ARGS` in the worktree: one run, its prompt answered, then it exits."""
        return subprocess.run(
            aider_argv(self.home, self.model.url, *args, "--message", message), cwd=self.root,
            env=aider_env(self.home), capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip

    def import_json(self, agent: str, *args: str) -> list[dict[str, Any]]:
        """`azs import AGENT --json ARGS`: its lines (one per source, then the summary)."""
        done = self.azs("--timeout", "60", "--json", "import", agent, *args)
        assert done.returncode == 0, self.explain(done)
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture
def agent_world(daemon: DaemonProc, tmp_path: Path, model: FakeModel) -> Iterator[AgentWorld]:
    world = AgentWorld(daemon, tmp_path, model)
    try:
        yield world
    finally:
        world.client.close()
