"""Bringing a store's schema up to date: AZUREAL's v3 migration (spec §1.3, §1.4) and azsd's side tables.

Run by the store's writer when it opens the file (:meth:`azsd.store.core.StoreCore._connect`), in one
transaction: an interrupted migration leaves the file as it was. AZUREAL's tables are only ever
changed the way AZUREAL itself changes them; azsd's own tables may be rebuilt, never losing a row.
"""

from __future__ import annotations

import sqlite3

from azsd.store.schema import (
    AZSD_DDL,
    AZUREAL_DDL,
    CONTEXT_DDL,
    CONTEXT_HWM_KEY,
    DELETED_ROWS,
    DROPPED_COLUMNS,
    FULL_DDL,
    LEGACY_KEY_TABLES,
    OBSOLETE_DDL,
    OBSOLETE_OBJECTS,
    REQUIRED_OBJECTS,
    SCHEMA_VERSION,
    SEARCH_HWM_KEY,
    SEARCH_SWEPT_KEY,
    SUMMARY_DDL,
    SUMMARY_HWM_KEY,
    USAGE_DDL,
    USAGE_V1_COPY,
)
from azsd.store.side_rows import key_digest, run_digest

__all__ = ["migrate", "read_schema_version", "split_statements"]


def migrate(conn: sqlite3.Connection) -> None:
    """Run AZUREAL's DDL and v3 migration (spec §1.4) when the file is not already v3, and bring
    azsd's side tables up to date."""
    if _is_current(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        had_index = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'azsd_search'").fetchone()
        had_summaries = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'azsd_summaries'").fetchone()
        had_context = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'azsd_context'").fetchone()
        for statement in split_statements(
            OBSOLETE_DDL + AZUREAL_DDL + AZSD_DDL + SUMMARY_DDL + CONTEXT_DDL + FULL_DDL
        ):
            conn.execute(statement)
        if not had_summaries:  # new and empty: counted in chunks later (listings count meanwhile)
            conn.execute("DELETE FROM meta WHERE key = ?", (SUMMARY_HWM_KEY,))
        if not had_context:  # new and empty: rendered in chunks later (a big store takes seconds)
            conn.execute("DELETE FROM meta WHERE key = ?", (CONTEXT_HWM_KEY,))
        if not had_index:  # a new, empty index: whatever mark a meta row holds is not about it,
            conn.execute("DELETE FROM meta WHERE key = ?", (SEARCH_HWM_KEY,))
            # and it holds no entry of a row deleted before: swept already (azsd.store.fts_stale)
            conn.execute(
                f"INSERT OR REPLACE INTO meta (key, value) VALUES (?, ({DELETED_ROWS}))", (SEARCH_SWEPT_KEY,)
            )
        columns = _columns(conn, "sessions")
        if "last_claude_uuid" not in columns:
            conn.execute("ALTER TABLE sessions ADD COLUMN last_claude_uuid TEXT NOT NULL DEFAULT ''")
        _migrate_side_tables(conn)
        for column in DROPPED_COLUMNS:
            if column in columns:
                conn.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def read_schema_version(conn: sqlite3.Connection) -> int | None:
    """The file's `schema_version`, or None for a file without AZUREAL's tables yet."""
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if not has_meta:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise sqlite3.DatabaseError(f"schema_version {row[0]!r} is not a number") from None


def _is_current(conn: sqlite3.Connection) -> bool:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if not REQUIRED_OBJECTS <= tables or (OBSOLETE_OBJECTS | LEGACY_KEY_TABLES) & tables:
        return False
    columns = _columns(conn, "sessions")
    if "last_claude_uuid" not in columns or columns & set(DROPPED_COLUMNS):
        return False
    if not {"cost_source", "model", "turns"} <= _columns(conn, "azsd_usage"):
        return False
    if not {"model", "idle", "usage_from"} <= _columns(conn, "azsd_follows"):
        return False
    return read_schema_version(conn) == SCHEMA_VERSION


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _migrate_side_tables(conn: sqlite3.Connection) -> None:
    """azsd's own tables of an older store, made current (inside the migration's transaction).

        `azsd_usage` from before costs had sources gains the column (NULL: not known); from before
        models and times were recorded (one row per run, keyed by its source), it is rebuilt with every
        row kept (see :data:`~azsd.store.schema.USAGE_V1_COPY`); from before turns were counted, it gains
    `turns` (NULL: the run counts as one turn). `azsd_follows` gains `model`, then `idle`, then
    `usage_from`. The message ids kept as text become digests (:func:`_migrate_key_tables`)."""
    if "cost_source" not in _columns(conn, "azsd_usage"):
        conn.execute("ALTER TABLE azsd_usage ADD COLUMN cost_source TEXT")  # NULL: not known
    if "model" not in _columns(conn, "azsd_usage"):
        conn.execute("ALTER TABLE azsd_usage RENAME TO azsd_usage_v1")
        conn.execute(USAGE_DDL.format(name="azsd_usage"))
        conn.execute(USAGE_V1_COPY)
        conn.execute("DROP TABLE azsd_usage_v1")
    if "model" not in _columns(conn, "azsd_follows"):
        conn.execute("ALTER TABLE azsd_follows ADD COLUMN model TEXT NOT NULL DEFAULT ''")
    if "idle" not in _columns(conn, "azsd_follows"):
        conn.execute("ALTER TABLE azsd_follows ADD COLUMN idle INTEGER NOT NULL DEFAULT 0")
    if "usage_from" not in _columns(conn, "azsd_follows"):
        conn.execute("ALTER TABLE azsd_follows ADD COLUMN usage_from INTEGER NOT NULL DEFAULT 0")
    if "turns" not in _columns(conn, "azsd_usage"):
        conn.execute("ALTER TABLE azsd_usage ADD COLUMN turns INTEGER")  # NULL: a run of one turn
    _migrate_key_tables(conn)


def _migrate_key_tables(conn: sqlite3.Connection) -> None:
    """The message ids an earlier azsd kept as text, as digests (every claim kept: the first of two
    ids that share a digest keeps it), and its tables dropped."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not LEGACY_KEY_TABLES & tables:
        return
    conn.create_function("azsd_key_digest", 1, key_digest, deterministic=True)
    conn.create_function("azsd_run_digest", 1, run_digest, deterministic=True)
    if "azsd_usage_keys" in tables:
        conn.execute(
            "INSERT OR IGNORE INTO azsd_usage_claims (key, session_id, run) "
            "SELECT azsd_key_digest(key), session_id, azsd_run_digest(source) FROM azsd_usage_keys "
            "WHERE session_id IN (SELECT id FROM sessions)"
        )
        conn.execute("DROP TABLE azsd_usage_keys")
    if "azsd_usage_removed_keys" in tables:
        conn.execute(
            "INSERT OR IGNORE INTO azsd_usage_removed_claims (key, session_id) "
            "SELECT azsd_key_digest(key), session_id FROM azsd_usage_removed_keys"
        )
        conn.execute("DROP TABLE azsd_usage_removed_keys")


def split_statements(script: str) -> list[str]:
    """The statements of an SQL script (a trigger's body keeps its own semicolons)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    return statements
