"""sd_notify over a real AF_UNIX datagram socket, and the watchdog interval rules."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.sdnotify import notify, watchdog_interval

SUN_PATH_MAX = 107


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket standing in for systemd's notify socket, and its path."""
    path = str(tmp_path / "notify")
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        pytest.skip(f"tmp_path is too long for an AF_UNIX address: {path}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(5)
        yield sock, path


def assert_nothing_more(sock: socket.socket) -> None:
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):
        sock.recv(4096)


@pytest.mark.parametrize(
    "state",
    ["READY=1\nSTATUS=serving", "WATCHDOG=1", "STOPPING=1", "STATUS=following 3 files — ü"],
)
def test_sends_exactly_the_state_as_one_datagram(listener: tuple[socket.socket, str], state: str) -> None:
    sock, path = listener
    assert notify(state, {"NOTIFY_SOCKET": path}) is True
    assert sock.recv(4096) == state.encode("utf-8")
    assert_nothing_more(sock)


def test_abstract_namespace_address() -> None:
    name = f"azsd-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        sock.settimeout(5)
        assert notify("READY=1\nSTATUS=serving", {"NOTIFY_SOCKET": f"@{name}"}) is True
        assert sock.recv(4096) == b"READY=1\nSTATUS=serving"
        assert_nothing_more(sock)


@pytest.mark.parametrize("environ", [{}, {"NOTIFY_SOCKET": ""}, {"WATCHDOG_USEC": "30000000"}])
def test_no_notify_socket_is_a_quiet_no_op(environ: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="azsd.sdnotify"):
        assert notify("READY=1", environ) is False
    assert caplog.records == []


def test_path_nobody_listens_on(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="azsd.sdnotify"):
        assert notify("READY=1\nSTATUS=serving", {"NOTIFY_SOCKET": str(tmp_path / "absent")}) is False
    assert [r.name for r in caplog.records] == ["azsd.sdnotify"]
    assert "READY=1" in caplog.text


def test_socket_file_left_by_a_dead_listener(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = str(tmp_path / "stale")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
    assert Path(path).exists()
    with caplog.at_level(logging.WARNING, logger="azsd.sdnotify"):
        assert notify("WATCHDOG=1", {"NOTIFY_SOCKET": path}) is False
    assert len(caplog.records) == 1


def test_unusable_addresses_return_false(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    too_long = "/" + "x" * 200
    with caplog.at_level(logging.WARNING, logger="azsd.sdnotify"):
        assert notify("READY=1", {"NOTIFY_SOCKET": "relative/notify"}) is False
        assert notify("READY=1", {"NOTIFY_SOCKET": "vsock:2:1234"}) is False
        assert notify("READY=1", {"NOTIFY_SOCKET": too_long}) is False
    assert len(caplog.records) == 3


def test_relative_address_is_not_resolved_against_the_cwd(
    listener: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, path = listener
    monkeypatch.chdir(os.path.dirname(path))
    assert notify("READY=1", {"NOTIFY_SOCKET": os.path.basename(path)}) is False
    assert_nothing_more(sock)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "1"}, 0.0000005),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4243"}, None),
        ({"WATCHDOG_PID": "4242"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": ""}, None),
        ({"WATCHDOG_USEC": "-30000000"}, None),
        ({"WATCHDOG_USEC": "+30000000"}, None),
        ({"WATCHDOG_USEC": " 30000000"}, None),
        ({"WATCHDOG_USEC": "30_000_000"}, None),
        ({"WATCHDOG_USEC": "3e7"}, None),
        ({"WATCHDOG_USEC": "abc"}, None),
        ({"WATCHDOG_USEC": str(2**64 - 1)}, None),
        ({"WATCHDOG_USEC": str(2**64 - 2)}, (2**64 - 2) / 2 / 1e6),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": ""}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "x"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "-4242"}, None),
    ],
)
def test_watchdog_interval(environ: dict[str, str], expected: float | None) -> None:
    assert watchdog_interval(environ, pid=4242) == expected


def test_watchdog_interval_matches_the_unit() -> None:
    """WatchdogSec=30 in the unit: systemd sets WATCHDOG_USEC=30000000, the daemon pings every 15 s."""
    assert (
        watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, os.getpid()) == 15
    )
