"""`azs` starts quickly: a run imports its own command's code and what that needs, nothing more (7/7).

Before, every run imported every command module (the agent runner, compaction, sync, the editor
bridge) and with them the events' types, the price list's loader and the whole client: `azs
--version` took as long as a search. Each case below runs the real `azs` in a fresh interpreter and
lists the modules it imported; `python -m bench startup` measures what that is worth.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.events import UserMessage
from azsd_client import Client
from azsd_client.commands import COMMANDS, Either, Lazy
from tests.daemon_fixture import DaemonProc
from tests.test_client import daemon, worktree

__all__ = ["daemon", "worktree"]  # the fixtures, re-exported for pytest

#: Runs `azs` with the arguments after the output path, then writes the modules it imported there.
PROBE = """
import json, sys
from azsd_client.cli import main
out, sys.argv[1:] = sys.argv[1], sys.argv[2:]
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""

#: What no run of `ls`, `show` or `search` needs: other commands' code, the agents' and sync code.
OTHER_COMMANDS = (
    "azsd_client.commands.agent",
    "azsd_client.commands.bridge",
    "azsd_client.commands.compaction",
    "azsd_client.commands.imports",
    "azsd_client.commands.live",
    "azsd_client.commands.remote",
    "azsd_client.commands.turn",
    "azsd_client.aio",
    "azsd_client.bridge",
    "azsd_client.commands.web",
    "azsd_client.web",
    "aiohttp",
    "jinja2",
    "azsd.sync",
    "asyncio",
    "importlib.resources",
)


def imported(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    """(exit status, modules imported) of one real `azs argv…` run in a fresh interpreter."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *argv], capture_output=True, text=True, timeout=60
    )
    assert out.exists(), done.stderr
    found = json.loads(out.read_text())
    return int(found["code"] or 0), set(found["modules"])


def test_every_command_names_a_function_that_exists() -> None:
    refs: list[Lazy] = []
    for command in COMMANDS:
        run = command.run
        refs += [run.local, run.remote] if isinstance(run, Either) else [run]  # type: ignore[list-item]
    assert all(isinstance(ref, Lazy) for ref in refs)
    for ref in refs:
        assert callable(ref.resolve()), f"{command.name}: {ref.module}.{ref.name}"


#: The modules of the command table itself (no command's own code).
_TABLE = {f"azsd_client.commands.{m}" for m in ("arguments", "descriptions", "table", "parser")}


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["ls", "--no-such-option"]])
def test_version_help_and_usage_errors_load_no_client(tmp_path: Path, argv: list[str]) -> None:
    code, modules = imported(tmp_path, *argv)
    assert code == (2 if "--no-such-option" in argv else 0)
    assert "zmq" not in modules and "azsd_client.client" not in modules
    assert not any(m.startswith("azsd_client.commands.") and m not in _TABLE
                   for m in modules), sorted(m for m in modules if m.startswith("azsd_client"))  # fmt: skip


@pytest.fixture
def stored(daemon: DaemonProc, worktree: Path) -> Iterator[DaemonProc]:
    with Client(daemon.config, timeout=10) as client:
        sid = client.create_session(worktree, "probe").session.id
        client.append_events(worktree, sid, [UserMessage(content="a probe of the parser")])
    yield daemon


@pytest.mark.parametrize("argv", [["ls"], ["show", "S1"], ["search", "--words", "probe"], ["status"]])
def test_a_command_loads_its_own_code_only(stored: DaemonProc, worktree: Path, tmp_path: Path,
                                           argv: list[str]) -> None:  # fmt: skip
    base = ["--runtime-dir", str(stored.runtime_dir), "--root", str(worktree), "--timeout", "10"]
    code, modules = imported(tmp_path, *base, *argv)
    assert code == 0
    loaded = sorted(m for m in modules if m in OTHER_COMMANDS or m.startswith(OTHER_COMMANDS))
    assert loaded == [], f"azs {argv[0]} imported {loaded}"
    assert "zmq" in modules, "the probe ran the command (it talked to the daemon)"
