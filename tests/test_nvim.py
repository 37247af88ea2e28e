"""The Neovim plugin (client/nvim) in a real headless Neovim, against the real daemon through `azs bridge`.

client/nvim/tests/e2e.lua drives the plugin as a user would (:Azs, a live append by another process,
:AzsSearch, :AzsRename, :AzsFork, :AzsNew, :AzsRun with the fake agent) and writes what Neovim then
shows: buffer lines, quickfix items, the statusline. This test prepares the store and checks those.
Without `nvim` it skips, except in CI (CI=true), where it fails: .ci/run installs Debian's neovim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from azsd.events import AssistantText, UserMessage
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir

NVIM_DIR = Path(__file__).resolve().parent.parent / "client" / "nvim"
FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"
NVIM = shutil.which("nvim")

if NVIM is None and os.environ.get("CI") == "true":
    raise RuntimeError("nvim is not installed, and CI must run the Neovim tests (.ci/run installs neovim)")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install neovim)")

#: What the fake agent replays for :AzsRun: a Claude stream-json turn, as `claude -p` writes it.
TURN = [
    {"type": "system", "subtype": "init", "cwd": "/w", "session_id": "s1", "model": "claude-test"},
    {
        "type": "assistant",
        "session_id": "s1",
        "message": {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "the fake agent answers"}],
        },
    },
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1200,
        "num_turns": 1,
        "result": "the fake agent answers",
        "session_id": "s1",
        "total_cost_usd": 0.0012,
        "usage": {"input_tokens": 3, "output_tokens": 5},
    },
]

APPEND = """
import sys
from azsd.events import AssistantText
from tests.daemon_fixture import config_for
from azsd_client import Client
with Client(config_for(sys.argv[1]), timeout=10) as client:
    client.append_events(sys.argv[2], int(sys.argv[3]), [AssistantText(text="appended live\\nwith a needle")])
print("appended")
"""


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d


def run_nvim(daemon: DaemonProc, tmp_path: Path, root: Path, session: int) -> dict[str, Any]:
    replay = tmp_path / "turn.jsonl"
    replay.write_text("".join(json.dumps(line) + "\n" for line in TURN))
    config = tmp_path / "azsd.toml"
    fake = [sys.executable, str(FAKE_AGENT), "--replay", str(replay), "--delay", "0.05"]
    config.write_text(f"claude-command = {json.dumps(fake)}\n")
    azs = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir)]
    append = [sys.executable, "-c", APPEND, str(daemon.runtime_dir), str(root), str(session)]
    out = tmp_path / "nvim-out.json"
    env = dict(daemon.env)
    env.update(
        AZSD_CONFIG=str(config),
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
        AZS_TEST_CMD=json.dumps(azs),
        AZS_TEST_APPEND=json.dumps(append),
        AZS_TEST_ROOT=str(root),
        AZS_TEST_SESSION="demo",
        AZS_TEST_OUT=str(out),
    )
    argv = [
        str(NVIM), "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp^={NVIM_DIR}",
        "-c", "runtime plugin/azs.lua", "-c", f"luafile {NVIM_DIR / 'tests' / 'e2e.lua'}",
    ]  # fmt: skip
    done = subprocess.run(
        argv, env=env, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, timeout=90, check=False
    )
    assert out.exists(), f"nvim wrote no results (exit {done.returncode}): {done.stderr.decode()[-2000:]}"
    result: dict[str, Any] = msgspec.json.decode(out.read_bytes())
    assert done.returncode == 0, f"{result.get('failed') or result.get('error')}: {result}"
    return result


def test_the_plugin_in_a_real_neovim(daemon: DaemonProc, tmp_path: Path) -> None:
    root = (tmp_path / "worktree").resolve()
    root.mkdir()
    with daemon.client() as client:
        client.create_session(root, "other")
        session = client.create_session(root, "demo").session.id
        client.append_events(
            root, session, [UserMessage(content="hello from python"), AssistantText(text="a needle here")]
        )
    got = run_nvim(daemon, tmp_path, root, session)

    assert got["offered"] == ["S2 ○ demo", "S1 new other"]
    assert got["bufname"] == f"azs://{root}/S{session}"
    assert got["before"] == ["", "» hello from python", "  a needle here"]
    assert got["append_output"].strip() == "appended"
    assert got["after"] == [*got["before"], "  appended live", "  with a needle"]
    assert got["statusline"].startswith("S2 ○ demo · ctx ")

    by_line = {item["line"]: item for item in got["quickfix"]}
    assert set(by_line) == {"  a needle here", "  appended live"}
    assert by_line["  a needle here"]["text"].startswith(f"S{session} seq 2: a ")
    assert by_line["  appended live"]["text"].startswith(f"S{session} seq 3: ")
    assert all(item["bufname"] == got["bufname"] for item in got["quickfix"])
    assert got["jump"]["bufname"] == got["bufname"] and got["jump"]["line"] in by_line

    assert got["renamed"].startswith(f"S{session} ○ renamed in nvim")
    assert got["fork"]["bufname"] == f"azs://{root}/S3"
    assert got["fork"]["lines"] == got["before"][: len(got["fork"]["lines"])]
    assert got["new"]["bufname"] == f"azs://{root}/S4"
    assert got["new"]["statusline"].startswith("S4 new made in nvim")

    assert got["terminal"] == "terminal"
    assert got["run"]["exit"] == 0
    assert "  the fake agent answers" in got["run"]["lines"]
    assert got["run"]["lines"][:2] == ["", "» say something"]
    assert got["run"]["statusline"].startswith("S4 ✓ made in nvim")
