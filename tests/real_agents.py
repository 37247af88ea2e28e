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
import sys
from pathlib import Path
from typing import Final

import pytest

__all__ = [
    "VERSIONS",
    "agent_bin",
    "aider_argv",
    "aider_env",
    "claude_env",
    "codex_env",
    "npm_packages",
    "opencode_env",
    "unavailable",
]

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
    """The pinned program `name` (``claude``, ``codex``, ``opencode`` from npm; ``aider`` from PyPI,
    into a virtual environment of its own), installed into the cache when missing."""
    pin = VERSIONS[name]
    prefix = cache_dir() / f"{name}-{pin['version']}"
    pypi = pin.get("registry") == "pypi"
    program = prefix / "bin" / pin["bin"] if pypi else prefix / "node_modules" / ".bin" / pin["bin"]
    if program.exists():
        return program
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if program.exists():
            return program
        done = _pip_install(prefix, pin) if pypi else _npm_install(prefix, pin)
        if done.returncode != 0 or not program.exists():
            shutil.rmtree(prefix, ignore_errors=True)  # a half-made install is made again next time
            unavailable(f"installing {pin['package']}=={pin['version']} failed: {done.stderr.strip()[-400:]}")
    return program


def npm_packages(pin: dict[str, str]) -> list[str]:
    """What npm installs for `pin`: its package, and the one of its native program for this machine
    (named, as an npm that leaves optional packages out would not install it)."""
    packages = [f"{pin['package']}@{pin['version']}"]
    if "platform" in pin:
        arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
            os.uname().machine, os.uname().machine
        )
        packages.append(f"{pin['platform'].format(platform=f'linux-{arch}')}@{pin['version']}")
    return packages


def _npm_install(prefix: Path, pin: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if not shutil.which("node"):
        unavailable("node is not installed")
    npm = shutil.which("npm") or ""
    if not npm:
        unavailable(f"npm is not installed ({pin['package']} comes from the npm registry)")
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(prefix)]
    return _install([*command, *npm_packages(pin)], pin)


def _pip_install(prefix: Path, pin: dict[str, str]) -> subprocess.CompletedProcess[str]:
    python = shutil.which("python3") or sys.executable
    made = _install([python, "-m", "venv", str(prefix)], pin)
    if made.returncode != 0:
        return made
    pip = [str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    return _install([*pip, f"{pin['package']}=={pin['version']}"], pin)


def _install(argv: list[str], pin: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        unavailable(f"installing {pin['package']} took over {INSTALL_TIMEOUT_S} s")
        raise


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


#: What the fake model charges on Aider's and OpenCode's side (USD per million tokens): prices of
#: our own, so that a cost azsd figures can only match theirs when both read them from the config.
FAKE_PRICES: Final = {"input": 3.0, "output": 15.0, "cache_read": 0.3}
#: The fake model's name as both programs are given it.
FAKE_MODEL: Final = "fake-model"


def opencode_env(home: Path, base_url: str) -> dict[str, str]:
    """OpenCode's environment: a private home whose one provider is the fake model (an
    ``@ai-sdk/openai-compatible`` provider, with prices), nothing fetched from elsewhere. The
    provider's npm package is installed by OpenCode on first use, into a cache kept across tests."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "opencode.json"
    model = {
        "name": "Fake model", "cost": FAKE_PRICES, "limit": {"context": 200_000, "output": 8192},
    }  # fmt: skip
    provider = {
        "npm": "@ai-sdk/openai-compatible", "name": "Fake",
        "options": {"baseURL": f"{base_url}/v1", "apiKey": DUMMY_KEY}, "models": {FAKE_MODEL: model},
    }  # fmt: skip
    settings = {
        "autoupdate": False, "share": "disabled", "model": f"fake/{FAKE_MODEL}",
        "provider": {"fake": provider},
    }  # fmt: skip
    config.write_text(json.dumps(settings))
    env = _base_env(home)
    env.update(
        OPENCODE_CONFIG=str(config), OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
        XDG_CACHE_HOME=str(cache_dir() / "opencode-cache"),  # the provider package, installed once
    )  # fmt: skip
    return env


def aider_argv(home: Path, base_url: str, *args: str) -> list[str]:
    """`aider` headless against the fake model (`openai/fake-model`, its prices in a model metadata
    file), asking nothing, checking for nothing, committing nothing."""
    metadata = home / "aider-models.json"
    if not metadata.exists():
        home.mkdir(parents=True, exist_ok=True)
        price = {
            "max_tokens": 8192, "max_input_tokens": 200_000, "max_output_tokens": 8192, "mode": "chat",
            "input_cost_per_token": FAKE_PRICES["input"] / 1e6,
            "output_cost_per_token": FAKE_PRICES["output"] / 1e6, "litellm_provider": "openai",
        }  # fmt: skip
        metadata.write_text(json.dumps({f"openai/{FAKE_MODEL}": price}))
    return [
        str(agent_bin("aider")), "--openai-api-base", f"{base_url}/v1", "--model", f"openai/{FAKE_MODEL}",
        "--model-metadata-file", str(metadata), "--no-check-update", "--analytics-disable",
        "--no-show-release-notes", "--yes-always", "--no-pretty", "--no-auto-commits", "--no-gitignore",
        "--no-show-model-warnings", "--no-fancy-input", *args,
    ]  # fmt: skip


def aider_env(home: Path) -> dict[str, str]:
    """Aider's environment: a private home, the dummy key, litellm's prices from its own package."""
    home.mkdir(parents=True, exist_ok=True)
    env = _base_env(home)
    env.update(
        OPENAI_API_KEY=DUMMY_KEY,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return env


if __name__ == "__main__":  # `python -m tests.real_agents`: install every pinned program (.ci/run does)
    for pinned in VERSIONS:
        print(f"{pinned}: {agent_bin(pinned)}")
