"""The sync database's schema: versioned SQL files shipped in ``azsd/sync/sql/``, applied in order.

``NNN_name.sql`` is version NNN. :func:`migrate` (what `azsd sync init` runs) applies each file
newer than the database's ``azsd.schema_version`` in a transaction of its own, holding an advisory
lock so that two inits cannot race; :func:`check` tells a pusher whether the database is ready.
Files are never edited once shipped: a change is a new file.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import TYPE_CHECKING, Final, NamedTuple

from azsd.errors import SyncError

if TYPE_CHECKING:
    import psycopg

__all__ = ["Migration", "check", "current_version", "init_database", "migrate", "migrations"]

_FILE: Final = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
#: pg_advisory_xact_lock key of `azsd sync init` ("azsd" in ASCII).
_LOCK_KEY: Final = 0x617A7364


class Migration(NamedTuple):
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """The shipped SQL files, in version order."""
    found = []
    for entry in resources.files("azsd.sync").joinpath("sql").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def latest_version() -> int:
    return migrations()[-1].version


def current_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The database's schema version (0: never initialized)."""
    row = conn.execute("SELECT to_regclass('azsd.schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    got = conn.execute("SELECT COALESCE(MAX(version), 0) FROM azsd.schema_version").fetchone()
    return int(got[0]) if got else 0  # type: ignore[call-overload]


def migrate(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """Apply every shipped file newer than the database; the names of those applied."""
    applied: list[str] = []
    for migration in migrations():
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute("CREATE SCHEMA IF NOT EXISTS azsd")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS azsd.schema_version (version integer PRIMARY KEY, "
                "name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())"
            )
            if current_version(conn) >= migration.version:
                continue
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO azsd.schema_version (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied.append(migration.name)
    return applied


def check(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The database's version, when this azsd can push to it; else :class:`SyncError` says why."""
    version = current_version(conn)
    if version == 0:
        raise SyncError("the sync database has no azsd schema yet: run `azsd sync init`")
    if version < latest_version():
        raise SyncError(
            f"the sync database has schema version {version}, older than {latest_version()}: "
            "run `azsd sync init` to migrate it"
        )
    return version


def init_database(url: str) -> tuple[list[str], int]:
    """`azsd sync init`: migrate the database at `url`; the files applied, and its version now."""
    import psycopg

    from azsd.pgurl import redact_url
    from azsd.sync.connection import connect, reason

    conn = connect(url)
    try:  # a migration may take long, and wait for pushers' locks: no bound (a person runs it)
        conn.execute("SET statement_timeout = 0")
        conn.execute("SET lock_timeout = 0")
        return migrate(conn), current_version(conn)
    except psycopg.Error as exc:
        raise SyncError(f"{redact_url(url)}: {reason(exc)}") from None
    finally:
        conn.close()
