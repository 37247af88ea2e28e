"""Run the real daemon as a subprocess on a private runtime dir, and talk to it with raw sockets.

The one harness of the suite: a test that needs `python -m azsd run` starts it with
:func:`start_daemon` (or the :func:`daemon` fixture); :meth:`DaemonProc.client` gives the typed
client on the same runtime dir.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest
import zmq

from azsd.config import ResolvedConfig, resolve_config
from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer, connect_sub, recv_notification, recv_reply, send_request

if TYPE_CHECKING:
    from azsd_client import Client


def short_tmpdir() -> Path:
    """A directory short enough for ipc:// socket paths (pytest's tmp_path can be too long)."""
    return Path(tempfile.mkdtemp(prefix="azsd-t-", dir="/tmp"))


def config_for(runtime_dir: str | os.PathLike[str]) -> ResolvedConfig:
    """A client's configuration for the daemon on `runtime_dir`: no environment, no config file."""
    return resolve_config(environ={}, config_file=None, runtime_dir=os.fspath(runtime_dir))


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

    @property
    def config(self) -> ResolvedConfig:
        """What a client needs to reach this daemon."""
        return config_for(self.runtime_dir)

    def client(self, timeout: float = 10.0) -> Client:
        """The typed sync client on this daemon (the caller closes it)."""
        from azsd_client import Client

        return Client(self.config, timeout=timeout)

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

    def peak_rss_kb(self) -> int:
        """The daemon's peak resident set size so far (VmHWM), in kB."""
        for row in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1])
        raise AssertionError("no VmHWM in /proc/<pid>/status")

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


def start_daemon(
    runtime_dir: Path, env: dict[str, str] | None = None, wait: bool = True, log_level: str | None = None
) -> DaemonProc:
    """`python -m azsd run --runtime-dir runtime_dir`, its state and config dirs beside `runtime_dir`.

    The config dir is empty (no developer's config reaches the daemon, or the `azs` run with
    :attr:`DaemonProc.env`); `env` adds to or overrides the environment. With `wait`, returns once
    the discovery file names the new process.
    """
    full_env = dict(os.environ)
    for inherited in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "AZSD_RUNTIME_DIR", "AZSD_CONFIG"):
        full_env.pop(inherited, None)
    full_env["XDG_STATE_HOME"] = str(runtime_dir.parent / "state")
    full_env["XDG_CONFIG_HOME"] = str(runtime_dir.parent / "config")
    # the machine's own agent histories are not the tests' (tests/test_watch_homes.py watches its own)
    full_env["AZSD_WATCH_AGENTS"] = "0"
    full_env.update(env or {})
    argv = [sys.executable, "-m", "azsd", "run", "--runtime-dir", str(runtime_dir)]
    if log_level is not None:
        argv += ["--log-level", log_level]
    log_path = runtime_dir.parent / f"daemon-{time.monotonic_ns()}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv,
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


@contextmanager
def daemon_in_tmpdir(
    env: dict[str, str] | None = None, *, log_level: str | None = None
) -> Iterator[DaemonProc]:
    """A daemon on `<short tmpdir>/run`, closed and its tmpdir (`runtime_dir.parent`) removed after."""
    base = short_tmpdir()
    (base / "run").mkdir(mode=0o700)
    d = start_daemon(base / "run", env, log_level=log_level)
    try:
        yield d
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    with daemon_in_tmpdir() as d:
        yield d
