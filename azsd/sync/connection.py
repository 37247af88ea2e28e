"""A connection to the sync database, and the identity of a store file the database binds a push
cursor to. Every sync connection (the pusher's, the readers', `azsd sync init`'s) is made here, with
bounded waits.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path
from typing import Any, Final

import psycopg

from azsd.errors import SyncError
from azsd.pgurl import redact_url
from azsd.store import store_path

__all__ = ["LOCK_TIMEOUT_MS", "STATEMENT_TIMEOUT_MS", "connect", "file_id", "reason"]

#: The longest any statement of a sync connection may run (a catch-up batch takes about 1 s).
STATEMENT_TIMEOUT_MS: Final = 60_000
#: The longest a statement of a sync connection waits for a lock (another role may hold one: a
#: ``LOCK TABLE`` by anyone with the pushers' grants would otherwise stop every push and read);
#: shorter than a client's default wait (5 s), so that the person is told it was a lock.
LOCK_TIMEOUT_MS: Final = 3_000


def _timeout_ms(name: str, default: int) -> int:
    text = os.environ.get(name, "")
    return int(text) if text.strip().isdigit() and int(text) > 0 else default


def connect(url: str, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    """A connection to the sync database, with bounded waits (:data:`STATEMENT_TIMEOUT_MS`,
    :data:`LOCK_TIMEOUT_MS`; ``AZSD_SYNC_STATEMENT_TIMEOUT_MS`` and ``AZSD_SYNC_LOCK_TIMEOUT_MS`` in
    the environment set others); :class:`SyncError` (with no password in it) when refused."""
    statement = _timeout_ms("AZSD_SYNC_STATEMENT_TIMEOUT_MS", STATEMENT_TIMEOUT_MS)
    lock = _timeout_ms("AZSD_SYNC_LOCK_TIMEOUT_MS", LOCK_TIMEOUT_MS)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5, application_name="azsd")
    except psycopg.Error as exc:
        raise SyncError(f"cannot connect to the sync database {redact_url(url)}: {reason(exc)}") from None
    try:
        conn.execute(f"SET statement_timeout = {statement}")
        conn.execute(f"SET lock_timeout = {lock}")
        conn.autocommit = autocommit
    except psycopg.Error as exc:
        conn.close()
        raise SyncError(f"the sync database {redact_url(url)} failed: {reason(exc)}") from None
    return conn


@functools.cache
def _machine() -> str:
    """This machine: its systemd/D-Bus machine id (stable across renames and networks), else its
    host name."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text:
            return text
    return socket.gethostname()


def file_id(root: str) -> str:
    """The store file of `root` as the database binds a cursor to it: ``machine:inode`` ("" when there
    is no file). A copy, a file put back with `mv`, or one on another machine differs. (Not the
    device number: some file systems hand out another one at each mount.)"""
    try:
        info = os.stat(store_path(Path(root)))
    except OSError:
        return ""
    return f"{_machine()}:{info.st_ino}"


def reason(exc: BaseException) -> str:
    """The first line of an error's message (a driver's error can run to several); a lock wait that
    ran out says so, and what may hold it."""
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return (
            f"waited {_timeout_ms('AZSD_SYNC_LOCK_TIMEOUT_MS', LOCK_TIMEOUT_MS) / 1000:g} s for a lock "
            "another session of the sync database holds (a LOCK TABLE by a teammate or an admin?)"
        )
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
