"""A verified copy of the store, taken with SQLite's online backup API.

:class:`Backup` owns :meth:`~Backup.backup`: one consistent snapshot written beside its destination
under a temporary name, checked with ``PRAGMA integrity_check``, and given its name only then, never
over an existing file. It needs nothing of the store but the open connection.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from azsd.errors import StoreError
from azsd.model import BackupInfo
from azsd.store.core import StoreCore, _translate

__all__ = ["Backup"]


class Backup(StoreCore):
    """Copying the store to a verified backup file."""

    def backup(self, dest: Path) -> BackupInfo:
        """Copy the store to `dest` with SQLite's online backup API, then verify the copy.

        The copy is one consistent snapshot (taken in one step, so writes wait for it rather than
        restart it), written beside `dest` under a temporary name and renamed into place only once
        `PRAGMA integrity_check` says ok. An existing `dest` is never overwritten.
        """
        conn = self._conn
        if conn is None:
            raise StoreError(f"{self.path} does not exist yet: there is nothing to back up")
        dest = Path(dest)
        if dest.exists():
            raise StoreError(f"{dest} already exists (a backup never overwrites a file)")
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        except OSError as exc:
            raise StoreError(f"cannot write a backup to {dest.parent}: {exc.strerror or exc}") from None
        os.close(handle)
        part = Path(name)
        try:
            with _translate(dest):
                target = sqlite3.connect(part, isolation_level=None)
            try:
                with _translate(self.path):
                    conn.backup(target)
                with _translate(dest):
                    check = [row[0] for row in target.execute("PRAGMA integrity_check")]
                    sessions = target.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
                    events = target.execute("SELECT COUNT(*) FROM events").fetchone()[0]
            finally:
                target.close()
            if check != ["ok"]:
                raise StoreError(f"the copy of {self.path} failed its integrity check: {'; '.join(check)}")
            _place(part, dest)
        finally:
            part.unlink(missing_ok=True)
        return BackupInfo(
            path=str(dest), bytes=dest.stat().st_size, sessions=sessions, events=events, integrity="ok"
        )


def _place(part: Path, dest: Path) -> None:
    """Give the finished copy `part` its name `dest`, never replacing a file that took it meanwhile."""
    try:
        os.link(part, dest)  # fails when dest exists, unlike a rename
    except FileExistsError:
        raise StoreError(f"{dest} already exists (a backup never overwrites a file)") from None
    except OSError:  # a file system without hard links
        if dest.exists():
            raise StoreError(f"{dest} already exists (a backup never overwrites a file)") from None
        part.replace(dest)
