"""What the sync tests share: machines (daemons with homes of their own), and the rows to compare.

Each daemon plays a machine: a runtime, state and config dir of its own, its own `sync-identity`.
Every comparison is of the rows themselves: the remote rows of a store equal its local rows (seq,
kind, the stored bytes, char_len), one for one.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from azsd.events import AssistantText, ToolCall, ToolResult, UserMessage
from azsd.ipc import protocol as p
from azsd.store import Store, store_path
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon

Rows = dict[tuple[str, int], tuple[str, bytes, int]]


def wait_until(what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Machine:
    """A daemon with a home of its own (runtime, state, config) and sync set to `url`."""

    def __init__(self, url: str | None, identity: str) -> None:
        self.base = short_tmpdir()
        (self.base / "run").mkdir(mode=0o700)
        config = self.base / "config" / "azsd"
        config.mkdir(parents=True)
        text = f'sync-identity = "{identity}"\n'
        if url is not None:
            text += f'sync-url = "{url}"\n'
        (config / "config.toml").write_text(text)
        os.chmod(config / "config.toml", 0o600)  # it may hold a password
        self.identity = identity
        self.daemon: DaemonProc = start_daemon(self.base / "run")

    def root(self, name: str = "wt", origin: str | None = None) -> Path:
        root = self.base / name
        root.mkdir(exist_ok=True)
        if origin is not None:
            subprocess.run(["git", "init", "-q", str(root)], check=True)
            subprocess.run(["git", "-C", str(root), "remote", "add", "origin", origin], check=True)
        return root.resolve()

    def restart(self) -> None:
        self.daemon.close()
        self.daemon = start_daemon(self.base / "run")

    def kill9(self) -> None:
        self.daemon.proc.send_signal(signal.SIGKILL)
        self.daemon.proc.wait()
        self.daemon.close()

    def request(self, message: p._Msg, timeout_ms: int = 20_000) -> Any:
        reply = self.daemon.request(message, timeout_ms)
        assert not isinstance(reply, p.ErrorReply), reply
        return reply

    def close(self) -> None:
        self.daemon.close()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def machines() -> Iterator[Callable[[str | None, str], Machine]]:
    made: list[Machine] = []

    def make(url: str | None, identity: str) -> Machine:
        made.append(Machine(url, identity))
        return made[-1]

    yield make
    for machine in made:
        machine.close()


def local_rows(root: Path) -> Rows:
    with sqlite3.connect(store_path(root)) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'azsd_sync_sessions'").fetchone():
            return {}  # not prepared for sync yet
        rows = conn.execute(
            "SELECT u.uuid, e.seq, e.kind, e.data, e.char_len FROM events e "
            "LEFT JOIN azsd_sync_sessions u ON u.session_id = e.session_id"
        ).fetchall()
    return {(u, seq): (kind, bytes(data), n) for u, seq, kind, data, n in rows}


def remote_rows(url: str, root: Path) -> Rows:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT e.session_uuid::text, e.seq, e.kind, e.data, e.char_len FROM azsd.events e "
            "JOIN azsd.sessions s USING (session_uuid) JOIN azsd.stores st USING (store_uuid) "
            "WHERE st.root = %s",
            (str(root),),
        ).fetchall()
    return {(u, seq): (kind, bytes(data), n) for u, seq, kind, data, n in rows}


def mirrored(url: str, root: Path) -> bool:
    local = local_rows(root)
    return bool(local) and local == remote_rows(url, root)


def turn(i: int) -> list[Any]:
    return [
        UserMessage(content=f"prompt {i}: why does the tokenizer panic on empty input"),
        ToolCall(tool_use_id=f"t{i}", tool_name="Bash", file_path=None, input={"command": f"cargo test {i}"}),
        ToolResult(tool_use_id=f"t{i}", tool_name="Bash", file_path=None, content="ok", is_error=False),
        AssistantText(text=f"answer {i}: an unwrap on None in the lexer"),
    ]


def uuid_of(root: Path, session: int) -> str:
    with sqlite3.connect(store_path(root)) as conn:
        return str(
            conn.execute("SELECT uuid FROM azsd_sync_sessions WHERE session_id = ?", (session,)).fetchone()[0]
        )


def remote_session(url: str, uuid: str) -> dict[str, Any]:
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
        row = conn.execute("SELECT * FROM azsd.sessions WHERE session_uuid = %s", (uuid,)).fetchone()
    assert row is not None
    return row


def fill(root: Path, sessions: int, turns: int) -> None:
    """`sessions` sessions of `turns` turns (4 events each), written directly (no daemon)."""
    with Store.open(root) as store:
        for s in range(sessions):
            sid = store.create_session(f"bulk {s}", "main").id
            store.append_events(sid, [e for i in range(turns) for e in turn(i)])


def remote_count(url: str, root: Path) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM azsd.events e JOIN azsd.sessions s USING (session_uuid) "
            "JOIN azsd.stores st USING (store_uuid) WHERE st.root = %s",
            (str(root),),
        ).fetchone()
    return int(row[0]) if row else 0


def azs(capsys: pytest.CaptureFixture[str], machine: Machine, root: Path, *argv: str) -> tuple[int, str, str]:
    """Run `azs` in this process against `machine`'s daemon: its exit code, stdout and stderr."""
    from azsd_client.cli import main

    try:
        main(["--runtime-dir", str(machine.base / "run"), "--root", str(root), *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
