"""`azs statusline`'s fast path (:mod:`azsd_client.statusfile`): a run prints the line from the
figures the last full run left, without loading ZeroMQ or msgspec, for as long as they hold; the
store's change, a file of the wrong shape or one from elsewhere send it back to the daemon.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import date, datetime
from pathlib import Path

import pytest

from azsd_client import Client, statusfile
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree
from tests.test_usage_counted import prompt, reply
from tests.test_usage_live import SESSION, live, stamp
from tests.test_usage_prices import write

__all__ = ["azs", "client", "daemon", "live", "worktree"]  # the fixtures, re-exported for pytest


def statusline(azs: Azs, xdg: Path, stdin: bytes = b"", *args: str) -> tuple[str, set[str]]:
    """One real `azs statusline` run (as the `azs` script starts it): its line and the modules it loaded."""
    env = {**azs.daemon.env, "XDG_RUNTIME_DIR": str(xdg)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "azsd_client", *azs.argv(*args, "statusline")],
        input=stdin, capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    loaded = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line}
    return done.stdout.decode().rstrip("\n"), loaded


@pytest.fixture
def xdg(tmp_path: Path) -> Path:
    path = tmp_path / "xdg"
    path.mkdir(mode=0o700)
    return path


def _minutes_left(line: str) -> str:
    """`line` with the block's time left blurred: it is worked out at each run."""
    return re.sub(r"\d+h \d+m left", "…left", line)


def the_file(xdg: Path) -> Path:
    (found,) = (xdg / "azs-statusline").iterdir()
    return found


def test_the_next_run_prints_the_same_line_without_the_client(
    azs: Azs, live: tuple[float, float, Path], xdg: Path
) -> None:
    store = azs.root / ".azureal" / "sessions.azs"
    os.utime(store, (time.time() - 60, time.time() - 60))  # written a while ago: its stat tells
    first, asked = statusline(azs, xdg)
    assert "zmq" in asked and "msgspec" in asked  # the first run asks the daemon
    midnight = datetime.combine(date.today(), datetime.min.time()).timestamp()  # (local, as "today")
    today = "$0 today" if live[1] < midnight else "~$"  # just after midnight the turns were yesterday
    assert first.startswith(today) and " · block ~$" in first and " chars (" in first
    second, loaded = statusline(azs, xdg)
    assert _minutes_left(second) == _minutes_left(first)  # (a minute may pass between the two runs)
    assert not {"zmq", "msgspec", "argparse", "azsd", "azsd_client.cli"} & loaded, sorted(loaded)
    _, _, path = live
    hook = {"session_id": SESSION, "transcript_path": str(path), "model": {"id": "claude-sonnet-4-5"}}
    hooked, loaded = statusline(azs, xdg, json.dumps(hook).encode())
    assert "zmq" not in loaded
    assert _minutes_left(hooked) == _minutes_left(first.rsplit(" · ", 1)[0] + f" · ctx {2000 + 4000:,} (3%)")


def test_a_changed_store_is_asked_about_again(
    azs: Azs, live: tuple[float, float, Path], xdg: Path, client: Client, worktree: Path, tmp_path: Path
) -> None:
    before, _ = statusline(azs, xdg)
    now = time.time()
    turn = [prompt(SESSION, "c", stamp(now - 65)), reply(SESSION, 33, stamp(now - 60), 500_000)]
    more = write(tmp_path / "more.jsonl", turn)
    client.ingest_file(worktree, client.create_session(worktree, "more").session.id, more)
    file = the_file(xdg)
    record = json.loads(file.read_text())
    file.write_text(json.dumps({**record, "made": record["made"] - 10}))  # as if made 10 s ago
    after, loaded = statusline(azs, xdg)
    assert "zmq" in loaded and after != before
    assert float(after.split(" today")[0].lstrip("~$")) > float(before.split(" today")[0].lstrip("~$"))


@pytest.mark.parametrize(
    "change",
    [
        {"today": [1.0, "\x1b]0;owned\x07", 0]},  # text where a cost kind goes
        {"block": [1.0, "estimated", "\x1b[2J", 9e9]},
        {"meter": ["\x1b[31m", 5, 10]},
        {"made": 0},  # too old
        {"key": '["/elsewhere"]'},  # another place's
        {"v": 0},
    ],
)
def test_a_file_of_another_shape_is_not_shown(
    azs: Azs, live: tuple[float, float, Path], xdg: Path, change: dict[str, object]
) -> None:
    first, _ = statusline(azs, xdg)
    file = the_file(xdg)
    file.write_text(json.dumps({**json.loads(file.read_text()), **change}))
    again, loaded = statusline(azs, xdg)
    assert _minutes_left(again) == _minutes_left(first) and "zmq" in loaded and "\x1b" not in again


def test_a_directory_others_can_enter_is_not_used(
    azs: Azs, live: tuple[float, float, Path], xdg: Path
) -> None:
    first, _ = statusline(azs, xdg)
    os.chmod(xdg / "azs-statusline", 0o755)
    again, loaded = statusline(azs, xdg)
    assert _minutes_left(again) == _minutes_left(first) and "zmq" in loaded


def test_other_options_go_to_the_full_command(azs: Azs, live: tuple[float, float, Path], xdg: Path) -> None:
    statusline(azs, xdg)
    shown, loaded = statusline(azs, xdg, b"", "--json")
    assert "msgspec" in loaded and json.loads(shown)["line"].endswith(" chars (0%)")


def test_a_store_changed_a_moment_ago_keeps_the_file_only_a_few_seconds(tmp_path: Path) -> None:
    store = tmp_path / ".azureal" / "sessions.azs"
    store.parent.mkdir()
    store.write_bytes(b"before")
    os.utime(store, (time.time() - 60, time.time() - 60))  # written a minute ago
    environ = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    name, now = statusfile.key(str(tmp_path), None, environ), time.time()
    record = {"key": name, "made": now, "day": time.strftime("%Y-%m-%d"), "root": str(tmp_path)}
    record |= {"config": None, "store": statusfile._store_state(str(tmp_path))}
    assert statusfile._holds(record, name, environ, now + 30)
    store.write_bytes(b"after, longer")
    assert statusfile._holds(record, name, environ, now + statusfile.GRACE_S / 2)
    assert not statusfile._holds(record, name, environ, now + statusfile.GRACE_S + 1)
    assert not statusfile._holds(record, "another place", environ, now)
    store.write_bytes(b"before")  # same size, written just before the daemon was asked: may be racy
    record["store"] = statusfile._store_state(str(tmp_path))
    assert statusfile._holds(record, name, environ, now + statusfile.GRACE_S / 2)
    assert not statusfile._holds(record, name, environ, now + statusfile.GRACE_S + 1)
