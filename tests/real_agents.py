"""The real agent programs, pinned, installed into a cache directory, run headless against a fake model.

The versions are in tests/agent_versions.json (`python -m tests.bump_agents` moves them to the
newest and re-runs their tests). Each program is installed with npm into
``$AZSD_AGENTS_DIR/<name>-<version>`` (default ``~/.cache/azsd/agents``; `.ci/run` fills it first),
once per machine: an install runs under a file lock, so parallel test workers wait for one another.
Without node or npm the tests that need a program are skipped with the reason, except under
``CI=true``, where they fail.

:func:`claude_env` and :func:`codex_env` give each run a private home (Claude's ``~/.claude``, a
``CODEX_HOME`` with a ``model_providers`` entry) that talks to a :class:`tests.fake_model.FakeModel`
and nothing else.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

__all__ = ["VERSIONS", "agent_bin", "claude_env", "codex_env", "unavailable"]

VERSIONS_FILE: Final = Path(__file__).resolve().parent / "agent_versions.json"
VERSIONS: Final[dict[str, dict[str, str]]] = json.loads(VERSIONS_FILE.read_text())
INSTALL_TIMEOUT_S: Final = 600
#: The API key the agents are given: the fake model accepts anything, and no real key is ever used.
DUMMY_KEY: Final = "sk-azsd-tests-dummy"


def unavailable(reason: str) -> None:
    """Skip, or under CI=true fail: CI must run the real programs."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real agent programs are needed in CI: {reason}")
    pytest.skip(reason)


def cache_dir() -> Path:
    return Path(os.environ.get("AZSD_AGENTS_DIR") or Path.home() / ".cache" / "azsd" / "agents")


def agent_bin(name: str) -> Path:
    """The pinned program `name` (``claude``, ``codex``), installed into the cache when missing."""
    pin = VERSIONS[name]
    prefix = cache_dir() / f"{name}-{pin['version']}"
    program = prefix / "node_modules" / ".bin" / pin["bin"]
    if program.exists():
        return program
    if not shutil.which("node"):
        unavailable("node is not installed")
    npm = shutil.which("npm") or ""
    if not npm:
        unavailable(f"npm is not installed ({pin['package']} comes from the npm registry)")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if program.exists():
            return program
        command = [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(prefix)]
        try:
            done = subprocess.run(
                [*command, f"{pin['package']}@{pin['version']}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            unavailable(f"npm install {pin['package']} took over {INSTALL_TIMEOUT_S} s")
        if done.returncode != 0 or not program.exists():
            unavailable(f"npm install {pin['package']}@{pin['version']} failed: {done.stderr.strip()[-400:]}")
    return program


def claude_env(home: Path, base_url: str) -> dict[str, str]:
    """Claude Code's environment: a private home, the fake model, no traffic elsewhere.

    As root Claude Code refuses ``--dangerously-skip-permissions`` unless told it is sandboxed.
    """
    home.mkdir(parents=True, exist_ok=True)
    env = _base_env(home)
    env.update(
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=DUMMY_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        IS_SANDBOX="1",
        # A failed request is retried once, not ten times with backoff: tests of failures stay short.
        CLAUDE_CODE_MAX_RETRIES="1",
    )
    return env


def codex_env(home: Path, base_url: str, model: str = "gpt-5.5") -> dict[str, str]:
    """Codex's environment: a private ``CODEX_HOME`` whose one provider is the fake model."""
    codex_home = home / "codex-home"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "fake"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{base_url}/v1"\n'
        'env_key = "AZSD_FAKE_MODEL_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 1\n"
    )
    env = _base_env(home)
    env.update(CODEX_HOME=str(codex_home), AZSD_FAKE_MODEL_KEY=DUMMY_KEY)
    return env


def _base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"))
    env.update(XDG_DATA_HOME=str(home / ".local" / "share"), XDG_STATE_HOME=str(home / ".local" / "state"))
    return env
