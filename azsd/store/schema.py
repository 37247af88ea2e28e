"""The AZUREAL v3 schema text (spec §1.3) and azsd's own side tables (DESIGN.md decision 5).

Only strings live here; :mod:`azsd.store` runs them.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AZSD_DDL",
    "AZUREAL_DDL",
    "CONTEXT_DDL",
    "CONTEXT_HWM_KEY",
    "DELETED_ROWS",
    "DROPPED_COLUMNS",
    "HWM_KEY",
    "LEGACY_KEY_TABLES",
    "OBSOLETE_DDL",
    "OBSOLETE_OBJECTS",
    "REQUIRED_OBJECTS",
    "SCHEMA_VERSION",
    "SEARCH_DDL",
    "SEARCH_HWM_KEY",
    "SUMMARY_DDL",
    "SUMMARY_HWM_KEY",
    "USAGE_DDL",
    "USAGE_V1_COPY",
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

#: The usage of each run (`source`), in parts: one row per model and time slot (`slot`, the start in
#: Unix seconds of the quarter hour its turns fall in; `first_at` and `last_at` the times of its first
#: and last turn). Stores from before models were recorded had one row per run, keyed by
#: (session_id, source): their rows are copied into this shape (model '', timed when last updated).
USAGE_DDL: Final = """\
CREATE TABLE IF NOT EXISTS {name} (
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
    model       TEXT NOT NULL DEFAULT '',
    slot        INTEGER NOT NULL DEFAULT 0,
    first_at    REAL NOT NULL DEFAULT 0,
    last_at     REAL NOT NULL DEFAULT 0,
    turns       INTEGER,
    PRIMARY KEY (session_id, source, model, slot)
);
"""

#: The search index (contentless FTS5, keyed by `events.id`; see AZSD_DDL).
SEARCH_DDL: Final = """\
CREATE VIRTUAL TABLE IF NOT EXISTS azsd_search USING fts5(
    text, content='', tokenize='unicode61 remove_diacritics 2'
);
"""

#: The API messages each run counted (the first run to record one owns it), so that a message copied
#: into other files (a `--resume`) is counted once in the store: `key` is the message id's
#: :func:`~azsd.store.side_rows.key_digest` (the row's id), `run` its run's
#: :func:`~azsd.store.side_rows.run_digest`.
USAGE_KEYS_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_usage_claims (
    key        INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    run        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS azsd_usage_claims_run ON azsd_usage_claims(session_id, run);
"""

#: The ledger: the usage rows of sessions azsd removed (`azs rm`), with the name each had, so that
#: reports by period still count what was spent, and the message ids they counted
#: (`azsd_usage_removed_claims`, as digests), so that a copy of them imported later is not counted
#: again. Their rows outlive their session, so they have no foreign key (like `azsd_requests`);
#: AZUREAL ignores them.
USAGE_REMOVED_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_usage_removed (
    session_id  INTEGER NOT NULL,
    name        TEXT NOT NULL DEFAULT '',
    worktree    TEXT NOT NULL DEFAULT '',
    removed     REAL NOT NULL,
    source      TEXT NOT NULL,
    model       TEXT NOT NULL DEFAULT '',
    slot        INTEGER NOT NULL DEFAULT 0,
    first_at    REAL NOT NULL DEFAULT 0,
    last_at     REAL NOT NULL DEFAULT 0,
    input       INTEGER NOT NULL DEFAULT 0,
    output      INTEGER NOT NULL DEFAULT 0,
    cache_read  INTEGER NOT NULL DEFAULT 0,
    cache_write INTEGER NOT NULL DEFAULT 0,
    reasoning   INTEGER NOT NULL DEFAULT 0,
    cost_usd    REAL,
    cost_source TEXT,
    turns       INTEGER
);
CREATE INDEX IF NOT EXISTS azsd_usage_removed_slot ON azsd_usage_removed(slot);
CREATE TABLE IF NOT EXISTS azsd_usage_removed_claims (
    key        INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL
);
"""

#: The tables of message ids an earlier azsd kept as text (with the source's path beside each), made
#: digests when the writer opens the file (:func:`azsd.store.migration.migrate`).
LEGACY_KEY_TABLES: Final = frozenset({"azsd_usage_keys", "azsd_usage_removed_keys"})

#: Copies the rows of a `azsd_usage_v1` (one per run) into the new `azsd_usage`.
USAGE_V1_COPY: Final = """\
INSERT INTO azsd_usage (session_id, source, input, output, cache_read, cache_write, reasoning, cost_usd,
    updated, cost_source, model, slot, first_at, last_at)
SELECT session_id, source, input, output, cache_read, cache_write, reasoning, cost_usd, updated,
    cost_source, '', CAST(strftime('%s', updated) AS INTEGER) / 900 * 900,
    CAST(strftime('%s', updated) AS REAL), CAST(strftime('%s', updated) AS REAL)
FROM azsd_usage_v1
"""

#: azsd's side tables. Each references `sessions(id)` with ON DELETE CASCADE; AZUREAL ignores them.
#: The exception is the search index `azsd_search`, an FTS5 table (which cannot hold a foreign key):
#: contentless (it stores the index, not the text, which stays compressed in `events`) and keyed by
#: `events.id`. AUTOINCREMENT never reuses an id, so an entry whose event AZUREAL deleted matches no
#: row of `events` and is never returned; azsd takes its own deletes out, and a reindex drops the rest.
#: The other is `azsd_requests`, which is about requests, not sessions: the keys of recent mutating
#: requests (`request_key`), a digest of each request and its encoded reply, so that a retry is answered
#: instead of carried out twice (see azsd.server.idempotency). Rows older than the retention are pruned.
AZSD_DDL: Final = (
    USAGE_DDL.format(name="azsd_usage")
    + USAGE_KEYS_DDL
    + USAGE_REMOVED_DDL
    + """\
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
    model         TEXT NOT NULL DEFAULT '',
    idle          INTEGER NOT NULL DEFAULT 0,
    usage_from    INTEGER NOT NULL DEFAULT 0,
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
"""
    + SEARCH_DDL
)

#: What an earlier azsd added that decision 5 does not allow, dropped when the writer opens the file:
#: the first version of sync kept a trigger on AZUREAL's `sessions` (deletes are now found by
#: difference, see azsd.store.sync_state) and the table it filled.
OBSOLETE_DDL: Final = """\
DROP TRIGGER IF EXISTS azsd_sync_tombstone;
DROP TABLE IF EXISTS azsd_sync_tombstones;
"""
OBSOLETE_OBJECTS: Final = frozenset({"azsd_sync_tombstone", "azsd_sync_tombstones"})

#: `meta` key of the highest `events.id` the search index has seen (rows above it wait to be indexed).
#: Its name carries the version of :func:`azsd.search.search_text`: a store indexed by another version
#: is indexed again.
SEARCH_HWM_KEY: Final = "azsd_search_hwm_v1"
#: How many event rows were ever deleted: AUTOINCREMENT hands out ids 1, 2, 3, … and keeps the
#: highest in `sqlite_sequence` (a rolled-back insert gives its id back), so the ids handed out less
#: the rows left. It grows with every delete, whoever makes it, and with nothing else.
DELETED_ROWS: Final = (
    "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), MAX(id), 0) - COUNT(*) "
    "FROM events"
)
#: `meta` key of the highest `events.id` the index being built to replace it holds (azsd.store.fts_stale).
SEARCH_NEXT_HWM_KEY: Final = "azsd_search_next_hwm"
#: `meta` key of how many event rows had ever been deleted when the index was last swept for entries
#: of deleted rows (azsd.store.fts_stale).
SEARCH_SWEPT_KEY: Final = "azsd_search_swept"

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
        "azsd_usage_claims",
        "azsd_usage_claims_run",
        "azsd_usage_removed",
        "azsd_usage_removed_slot",
        "azsd_usage_removed_claims",
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
        "azsd_context",
        "azsd_context_session",
        "azsd_full",
        "azsd_full_session",
        "azsd_full_sources",
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

#: The rendered context blocks (azsd.store.rendered), in groups: each row holds a run of a session's
#: events (`first_seq` to `last_seq`), their blocks of the next turn's transcript
#: (:func:`azsd.context.render_event`) joined as the transcript joins them, in one zstd frame (`text`,
#: `size` bytes before compression), and its `layout` (msgpack: each event's seq, its
#: :func:`azsd.context.strip_flag` and its block's length in bytes, -1 for an event not shown);
#: `injected` counts the prompts that may hold injected context. Kept in the append transaction;
#: rows above :data:`CONTEXT_HWM_KEY` (AZUREAL's, a fork's copy) are rendered when read and caught
#: up later.
CONTEXT_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_context (
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    injected   INTEGER NOT NULL DEFAULT 0,
    layout     BLOB NOT NULL,
    text       BLOB NOT NULL,
    size       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS azsd_context_session ON azsd_context(session_id, first_seq);
"""

#: `meta` key of the highest `events.id` the rendered blocks cover (every readable row at or below it
#: has its block). Its name carries the version of the rendering: blocks rendered by another version
#: are rendered again.
CONTEXT_HWM_KEY: Final = "azsd_context_hwm_v1"

#: The full record (azsd.store.full_record): what each agent wrote, in zstd chunks of a session's
#: sources (`start`, `size` bytes of `source`), each linked to the events its bytes made; and how much
#: of each source is kept (`covered`) or dropped (`dropped`: 1 pruned, 2 gone before it was read), and
#: for a file no import record names (`azs ingest`), whose agent's it is and how much to keep.
FULL_DDL: Final = """\
CREATE TABLE IF NOT EXISTS azsd_full (
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    source     TEXT NOT NULL,
    start      INTEGER NOT NULL,
    size       INTEGER NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    stored     TEXT NOT NULL DEFAULT (datetime('now')),
    data       BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS azsd_full_session ON azsd_full(session_id, id);
CREATE TABLE IF NOT EXISTS azsd_full_sources (
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    source     TEXT NOT NULL,
    covered    INTEGER NOT NULL DEFAULT 0,
    dropped    INTEGER NOT NULL DEFAULT 0,
    agent      TEXT NOT NULL DEFAULT '',
    size       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, source)
);
"""
