"""The AZUREAL v3 schema text (spec §1.3) and azsd's own side tables (DESIGN.md decision 5).

Only strings live here; :mod:`azsd.store` runs them.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AZSD_DDL",
    "AZUREAL_DDL",
    "DROPPED_COLUMNS",
    "HWM_KEY",
    "REQUIRED_OBJECTS",
    "SCHEMA_VERSION",
    "SEARCH_HWM_KEY",
    "SUMMARY_DDL",
    "SUMMARY_HWM_KEY",
]

#: The `schema_version` AZUREAL writes and azsd understands.
SCHEMA_VERSION: Final = 3

#: Exactly the script AZUREAL runs on every open.
AZUREAL_DDL: Final = """\
CREATE TABLE IF NOT EXISTS sessions (
    id               INTEGER PRIMARY KEY,
    name             TEXT NOT NULL DEFAULT '',
    worktree         TEXT NOT NULL DEFAULT '',
    created          TEXT NOT NULL DEFAULT (datetime('now')),
    completed        INTEGER,
    duration_ms      INTEGER,
    cost_usd         REAL,
    last_claude_uuid TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL,
    char_len   INTEGER NOT NULL DEFAULT 0,
    UNIQUE(session_id, seq)
);
CREATE INDEX IF NOT EXISTS idx_events_session ON events(session_id, seq);
CREATE TABLE IF NOT EXISTS compactions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    after_seq  INTEGER NOT NULL,
    summary    TEXT NOT NULL,
    created    TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE INDEX IF NOT EXISTS idx_compactions_session ON compactions(session_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '3');
"""

#: Columns some v2 builds had, which the v3 migration drops.
DROPPED_COLUMNS: Final = ("context_tokens", "output_tokens", "context_window")

#: `meta` key of the session-number high-water mark: numbers at or below it are never handed out.
HWM_KEY: Final = "azsd_session_hwm"

#: azsd's side tables. Each references `sessions(id)` with ON DELETE CASCADE; AZUREAL ignores them.
#: The exception is the search index `azsd_search`, an FTS5 table (which cannot hold a foreign key):
#: contentless (it stores the index, not the text, which stays compressed in `events`) and keyed by
#: `events.id`. AUTOINCREMENT never reuses an id, so an entry whose event AZUREAL deleted matches no
#: row of `events` and is never returned; azsd takes its own deletes out, and a reindex drops the rest.
#: The other is `azsd_requests`, which is about requests, not sessions: the keys of recent mutating
#: requests (`request_key`), a digest of each request and its encoded reply, so that a retry is answered
#: instead of carried out twice (see azsd.server.idempotency). Rows older than the retention are pruned.
AZSD_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_usage (
    session_id  INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    source      TEXT NOT NULL,
    input       INTEGER NOT NULL DEFAULT 0,
    output      INTEGER NOT NULL DEFAULT 0,
    cache_read  INTEGER NOT NULL DEFAULT 0,
    cache_write INTEGER NOT NULL DEFAULT 0,
    reasoning   INTEGER NOT NULL DEFAULT 0,
    cost_usd    REAL,
    updated     TEXT NOT NULL DEFAULT (datetime('now')),
    cost_source TEXT,
    PRIMARY KEY (session_id, source)
);
CREATE TABLE IF NOT EXISTS azsd_follows (
    session_id    INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    path          TEXT NOT NULL,
    format        TEXT NOT NULL,
    offset        INTEGER NOT NULL DEFAULT 0,
    inode         INTEGER NOT NULL DEFAULT 0,
    lines         INTEGER NOT NULL DEFAULT 0,
    skipped       INTEGER NOT NULL DEFAULT 0,
    active        INTEGER NOT NULL DEFAULT 1,
    writer_pid    INTEGER,
    started       TEXT NOT NULL DEFAULT (datetime('now')),
    last_activity TEXT NOT NULL DEFAULT (datetime('now')),
    ended         TEXT,
    PRIMARY KEY (session_id, path)
);
CREATE TABLE IF NOT EXISTS azsd_lineage (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    parent_id  INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
    fork_seq   INTEGER NOT NULL,
    created    TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE INDEX IF NOT EXISTS azsd_lineage_parent ON azsd_lineage(parent_id);
CREATE TABLE IF NOT EXISTS azsd_archive (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    archived   TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS azsd_imports (
    source     TEXT PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    agent      TEXT NOT NULL,
    size       INTEGER NOT NULL DEFAULT 0,
    last_seq   INTEGER NOT NULL DEFAULT 0,
    imported   TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE INDEX IF NOT EXISTS azsd_imports_session ON azsd_imports(session_id);
CREATE TABLE IF NOT EXISTS azsd_requests (
    key     TEXT PRIMARY KEY,
    digest  BLOB NOT NULL,
    reply   BLOB NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS azsd_requests_created ON azsd_requests(created);
CREATE VIRTUAL TABLE IF NOT EXISTS azsd_search USING fts5(
    text, content='', tokenize='unicode61 remove_diacritics 2'
);
"""

#: `meta` key of the highest `events.id` the search index has seen (rows above it wait to be indexed).
#: Its name carries the version of :func:`azsd.search.search_text`: a store indexed by another version
#: is indexed again.
SEARCH_HWM_KEY: Final = "azsd_search_hwm_v1"

#: Tables and indexes an up-to-date store has (AZUREAL's and azsd's).
REQUIRED_OBJECTS: Final = frozenset(
    {
        "sessions",
        "events",
        "compactions",
        "meta",
        "idx_events_session",
        "idx_compactions_session",
        "azsd_usage",
        "azsd_follows",
        "azsd_lineage",
        "azsd_lineage_parent",
        "azsd_archive",
        "azsd_imports",
        "azsd_imports_session",
        "azsd_requests",
        "azsd_requests_created",
        "azsd_search",
        "azsd_summaries",
    }
)

#: Per-session summaries behind a cold listing (azsd.store.listing): each session's event count,
#: prompt-and-reply count and latest `events.id`, kept in the append transaction and brought up to
#: date by the rows above :data:`SUMMARY_HWM_KEY` (those AZUREAL or a copy added since).
SUMMARY_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_summaries (
    session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    events     INTEGER NOT NULL DEFAULT 0,
    messages   INTEGER NOT NULL DEFAULT 0,
    last_id    INTEGER NOT NULL DEFAULT 0
);
"""

#: `meta` key of the highest `events.id` the summaries count (rows above it are added when read).
SUMMARY_HWM_KEY: Final = "azsd_summary_hwm_v1"
