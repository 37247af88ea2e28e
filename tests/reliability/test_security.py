"""Security: a private runtime dir, sockets only its owner can reach, and no TCP endpoint at all."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def tcp_inodes() -> set[int]:
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        out |= {int(line.split()[9]) for line in lines if len(line.split()) > 9}
    return out


def test_runtime_dir_and_sockets_are_private_and_nothing_listens_on_tcp() -> None:
    base = short_tmpdir()
    d = start_daemon(base / "run")
    try:
        assert isinstance(d.request(p.Status()), p.StatusReply)
        assert stat.S_IMODE(d.runtime_dir.stat().st_mode) == 0o700
        for name in ("rpc", "pub", "azsd.json", "azsd.lock"):
            info = (d.runtime_dir / name).stat()
            assert info.st_uid == os.getuid()
        assert stat.S_IMODE((d.runtime_dir / "azsd.json").stat().st_mode) & 0o077 == 0
        ours = socket_inodes(d.proc.pid)
        assert ours, "the daemon has sockets"
        assert ours & tcp_inodes() == set(), "the daemon has a TCP or UDP socket"
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)


def test_a_loose_runtime_dir_is_tightened() -> None:
    base = short_tmpdir()
    run = base / "run"
    run.mkdir(mode=0o755)
    os.chmod(run, 0o755)
    d = start_daemon(run)
    try:
        assert stat.S_IMODE(run.stat().st_mode) == 0o700
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the directory to another user")
def test_a_runtime_dir_owned_by_someone_else_is_refused() -> None:
    base = short_tmpdir()
    run = base / "run"
    run.mkdir(mode=0o700)
    os.chown(run, 65534, 65534)
    d: DaemonProc = start_daemon(run, wait=False)
    try:
        assert d.proc.wait(10) == 1
        assert "belongs to uid 65534" in d.log_text()
        assert not (run / "rpc").exists()
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("unsafe", ["mode 0755", "a symlink"])
def test_the_client_refuses_a_runtime_dir_that_is_not_private(unsafe: str) -> None:
    """Someone who pre-creates the runtime dir (e.g. /tmp/azsd-<uid>) could answer as azsd: the
    client lstats it and refuses unless it is a real directory of the user's, mode 0700."""
    from azsd.errors import ConfigError
    from azsd_client import Client
    from tests.daemon_fixture import config_for

    base = short_tmpdir()
    try:
        real = base / "real"
        real.mkdir(mode=0o700)
        if unsafe == "mode 0755":
            runtime = real
            os.chmod(runtime, 0o755)
        else:
            runtime = base / "link"
            runtime.symlink_to(real)
        with Client(config_for(runtime), timeout=1.0) as client, pytest.raises(ConfigError) as info:
            client.status()
        message = str(info.value)
        assert "refusing" in message and ("0755" in message or "symbolic link" in message), message
    finally:
        shutil.rmtree(base, ignore_errors=True)
