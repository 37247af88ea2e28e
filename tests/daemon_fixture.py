"""Run the real daemon as a subprocess on a private runtime dir, and talk to it with raw sockets."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pytest
import zmq

from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer, connect_sub, recv_notification, recv_reply, send_request


def short_tmpdir() -> Path:
    """A directory short enough for ipc:// socket paths (pytest's tmp_path can be too long)."""
    return Path(tempfile.mkdtemp(prefix="azsd-t-", dir="/tmp"))


@dataclass
class DaemonProc:
    runtime_dir: Path
    proc: subprocess.Popen[bytes]
    env: dict[str, str]
    log_path: Path
    ctx: zmq.Context[zmq.Socket[bytes]] = field(default_factory=zmq.Context)
    subs: list[zmq.Socket[bytes]] = field(default_factory=list)
    _next_id: int = 0

    @property
    def rpc(self) -> str:
        return f"ipc://{self.runtime_dir / 'rpc'}"

    @property
    def pub(self) -> str:
        return f"ipc://{self.runtime_dir / 'pub'}"

    def request(self, message: p._Msg, timeout_ms: int = 5000) -> p.Reply:
        sock = connect_dealer(self.ctx, self.rpc)
        try:
            self._next_id += 1
            rid = str(self._next_id).encode()
            send_request(sock, rid, p.encode(message))
            assert sock.poll(timeout_ms), f"no reply to {message!r}"
            got, payload = recv_reply(sock)
            assert got == rid
            return p.decode_reply(payload)
        finally:
            sock.close(linger=0)

    def subscribe(self, prefix: bytes = b"") -> zmq.Socket[bytes]:
        sock = connect_sub(self.ctx, self.pub, [prefix])
        self.subs.append(sock)
        time.sleep(0.2)  # let the subscription reach the PUB socket before anything is published
        return sock

    def next_note(self, sock: zmq.Socket[bytes], timeout_ms: int = 5000) -> tuple[bytes, p.Notification]:
        assert sock.poll(timeout_ms), "no notification"
        topic, payload = recv_notification(sock)
        return topic, p.decode_notification(payload)

    def log_text(self) -> str:
        """What the daemon wrote to stderr so far."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        for sock in self.subs:
            sock.close(linger=0)
        self.subs.clear()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def close(self) -> None:
        """Stop the daemon and release this side's sockets."""
        self.stop()
        if not self.ctx.closed:
            self.ctx.destroy(linger=0)


def start_daemon(runtime_dir: Path, env: dict[str, str] | None = None, wait: bool = True) -> DaemonProc:
    full_env = dict(os.environ)
    for inherited in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "AZSD_RUNTIME_DIR", "AZSD_CONFIG"):
        full_env.pop(inherited, None)
    full_env["XDG_STATE_HOME"] = str(runtime_dir.parent / "state")
    full_env.update(env or {})
    log_path = runtime_dir.parent / f"daemon-{time.monotonic_ns()}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "azsd", "run", "--runtime-dir", str(runtime_dir)],
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    daemon = DaemonProc(runtime_dir, proc, full_env, log_path)
    if wait:
        deadline = time.monotonic() + 10
        while not _ready(runtime_dir, proc.pid):
            if proc.poll() is not None:
                raise AssertionError(f"daemon exited {proc.returncode}: {daemon.log_text()}")
            assert time.monotonic() < deadline, "daemon did not become ready"
            time.sleep(0.02)
    return daemon


def _ready(runtime_dir: Path, pid: int) -> bool:
    """The discovery file names this process (a killed daemon's stale file does not count)."""
    try:
        return bool(msgspec.json.decode((runtime_dir / "azsd.json").read_bytes())["pid"] == pid)
    except (FileNotFoundError, msgspec.DecodeError, KeyError, TypeError):
        return False


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    base = short_tmpdir()
    (base / "run").mkdir(mode=0o700)
    d = start_daemon(base / "run")
    try:
        yield d
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
