-- azsd sync schema, version 1: the stores, sessions, events and compactions every machine pushes.
-- Applied by `azsd sync init` (azsd/sync/schema.py) in one transaction; never edited once shipped:
-- a change is a new file (002_...sql).
CREATE SCHEMA IF NOT EXISTS azsd;

-- One row per pushed store (a worktree's .azureal/sessions.azs on one machine). The push cursors
-- live here, written in the same transaction as the rows they cover.
CREATE TABLE azsd.stores (
    store_uuid           uuid PRIMARY KEY,
    identity             text NOT NULL,
    owner                name NOT NULL DEFAULT current_user,
    repository           text NOT NULL,
    root                 text NOT NULL,
    pushed_event_id      bigint NOT NULL DEFAULT 0,
    pushed_compaction_id bigint NOT NULL DEFAULT 0,
    updated              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stores_repository ON azsd.stores (repository);

-- A session as its store last said: name, branch, badge, archive, lineage, size, usage.
-- `deleted` is set (and its events removed) when the session is deleted at its origin: a tombstone.
CREATE TABLE azsd.sessions (
    session_uuid  uuid PRIMARY KEY,
    store_uuid    uuid NOT NULL REFERENCES azsd.stores ON DELETE CASCADE,
    owner         name NOT NULL DEFAULT current_user,
    identity      text NOT NULL,
    repository    text NOT NULL,
    local_id      bigint NOT NULL,
    name          text NOT NULL DEFAULT '',
    worktree      text NOT NULL DEFAULT '',
    created       text NOT NULL DEFAULT '',
    state         text NOT NULL DEFAULT 'new',
    completed     boolean,
    duration_ms   bigint,
    cost_usd      double precision,
    archived      boolean NOT NULL DEFAULT false,
    parent_uuid   uuid,
    fork_seq      integer,
    pulled_from   uuid,
    event_count   integer NOT NULL DEFAULT 0,
    message_count integer NOT NULL DEFAULT 0,
    char_total    bigint NOT NULL DEFAULT 0,
    usage_input       bigint NOT NULL DEFAULT 0,
    usage_output      bigint NOT NULL DEFAULT 0,
    usage_cache_read  bigint NOT NULL DEFAULT 0,
    usage_cache_write bigint NOT NULL DEFAULT 0,
    usage_reasoning   bigint NOT NULL DEFAULT 0,
    usage_cost_usd    double precision NOT NULL DEFAULT 0,
    usage_turns       integer NOT NULL DEFAULT 0,
    cost_source       text NOT NULL DEFAULT 'reported',
    updated       timestamptz NOT NULL DEFAULT now(),
    deleted       timestamptz
);
CREATE INDEX sessions_repository ON azsd.sessions (repository, updated DESC);
CREATE INDEX sessions_store ON azsd.sessions (store_uuid);

-- Events exactly as stored (the zstd frame, kind, seq, char_len), plus the clean text search sees.
CREATE TABLE azsd.events (
    session_uuid uuid NOT NULL REFERENCES azsd.sessions ON DELETE CASCADE,
    seq          integer NOT NULL,
    kind         text NOT NULL,
    data         bytea NOT NULL,
    char_len     integer NOT NULL,
    local_id     bigint NOT NULL,
    owner        name NOT NULL DEFAULT current_user,
    body         text,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(body, ''))) STORED,
    pushed       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_uuid, seq)
);
CREATE INDEX events_tsv ON azsd.events USING gin (tsv);

CREATE TABLE azsd.compactions (
    store_uuid   uuid NOT NULL,
    local_id     bigint NOT NULL,
    session_uuid uuid NOT NULL REFERENCES azsd.sessions ON DELETE CASCADE,
    owner        name NOT NULL DEFAULT current_user,
    after_seq    integer NOT NULL,
    summary      text NOT NULL,
    created      text NOT NULL,
    PRIMARY KEY (store_uuid, local_id)
);
CREATE INDEX compactions_session ON azsd.compactions (session_uuid, after_seq);
