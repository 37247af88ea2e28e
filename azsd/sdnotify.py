"""systemd readiness and watchdog notification, without libsystemd.

Under ``Type=notify`` systemd passes ``$NOTIFY_SOCKET``, an ``AF_UNIX``/``SOCK_DGRAM`` address (a
filesystem path, or an abstract-namespace name written with a leading ``@``). The daemon sends one
datagram of newline-separated ``KEY=VALUE`` assignments, the protocol of ``sd_notify(3)``:

* ``READY=1\\nSTATUS=serving`` once the lock is held and the sockets are bound,
* ``WATCHDOG=1`` every :func:`watchdog_interval` seconds while the event loop is healthy,
* ``STOPPING=1`` when shutdown begins.

Outside systemd (no ``$NOTIFY_SOCKET``) every call is a cheap no-op that returns ``False``. A failed
send is logged and reported as ``False``, never raised: readiness is advisory, and the daemon must
keep serving its clients whatever happens to the notification socket.

>>> notify("READY=1", environ={})
False
>>> watchdog_interval({"WATCHDOG_USEC": "30000000"}, pid=1234)
15.0
"""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Mapping
from typing import Final

__all__ = ["notify", "watchdog_interval"]

logger = logging.getLogger("azsd.sdnotify")

#: How long one send may block when systemd's receive queue is full. Short, because the caller is
#: usually the event loop; a ping that cannot be delivered in this time is dropped and logged.
_SEND_TIMEOUT_S: Final = 1.0

#: ``sd_watchdog_enabled`` rejects 0 and ``USEC_INFINITY`` (2**64 - 1).
_USEC_INFINITY: Final = 2**64 - 1

_DIGITS: Final = re.compile(r"[0-9]+")


def notify(state: str, environ: Mapping[str, str]) -> bool:
    """Send one notification datagram to the service manager.

    Args:
        state: newline-separated assignments, e.g. ``"READY=1\\nSTATUS=serving"``, ``"WATCHDOG=1"``
            or ``"STOPPING=1"``; sent as UTF-8, unchanged.
        environ: the process environment; only ``NOTIFY_SOCKET`` is read.

    Returns:
        ``True`` when the datagram was sent; ``False`` when ``NOTIFY_SOCKET`` is unset or empty, names
        an address this module cannot use, or the send failed (the failure is logged as a warning).

    >>> notify("STOPPING=1", environ={"PATH": "/usr/bin"})
    False
    """
    raw = environ.get("NOTIFY_SOCKET", "")
    if not raw:
        return False
    address = _socket_address(raw)
    if address is None:
        logger.warning("NOTIFY_SOCKET=%r is neither an absolute path nor an @abstract name; ignored", raw)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.settimeout(_SEND_TIMEOUT_S)
            sock.sendto(state.encode("utf-8"), address)
    except OSError as exc:
        logger.warning("cannot notify systemd at %r (%s): %s", raw, _first_line(state), exc)
        return False
    return True


def watchdog_interval(environ: Mapping[str, str], pid: int) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings, or ``None`` when the watchdog is not asked of this process.

    The interval is half of ``$WATCHDOG_USEC``, as ``sd_watchdog_enabled(3)`` recommends. When
    ``$WATCHDOG_PID`` is set it must equal ``pid``; otherwise the variables were inherited from a
    parent and are meant for it. Malformed values (not a decimal integer, zero, out of range) mean no
    watchdog, with a warning.

    Args:
        environ: the process environment; ``WATCHDOG_USEC`` and ``WATCHDOG_PID`` are read.
        pid: this process's id, normally ``os.getpid()``.

    >>> watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, pid=7)
    15.0
    >>> watchdog_interval({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, pid=8) is None
    True
    """
    raw_usec = environ.get("WATCHDOG_USEC")
    if raw_usec is None:
        return None
    raw_pid = environ.get("WATCHDOG_PID")
    if raw_pid is not None:
        if not _DIGITS.fullmatch(raw_pid):
            logger.warning("WATCHDOG_PID=%r is not a process id; watchdog disabled", raw_pid)
            return None
        if int(raw_pid) != pid:
            return None
    if not _DIGITS.fullmatch(raw_usec) or not 0 < int(raw_usec) < _USEC_INFINITY:
        logger.warning(
            "WATCHDOG_USEC=%r is not a positive number of microseconds; watchdog disabled", raw_usec
        )
        return None
    return int(raw_usec) / 2 / 1e6


def _socket_address(raw: str) -> bytes | None:
    """The ``sendto`` address for a ``$NOTIFY_SOCKET`` value (``@name`` → abstract ``\\0name``)."""
    if raw.startswith("@"):
        return b"\0" + os.fsencode(raw[1:])
    if raw.startswith("/"):
        return os.fsencode(raw)
    return None  # e.g. systemd's "vsock:CID:PORT" (v253+), which a user service never receives


def _first_line(state: str) -> str:
    return state.split("\n", 1)[0]
