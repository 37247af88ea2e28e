-- azsd sync schema, version 3: reads whose cost does not grow with the database.
-- Applied by `azsd sync init` in one transaction; never edited once shipped.

-- 1. Search. azsd.search_hits (002) joined events and sessions in one query. Without fresh
--    statistics (right after a catch-up, or on a server whose autovacuum is off or behind) the
--    planner took each of the repository's sessions in turn and scanned the GIN index once per
--    session, ANDed with the session's primary-key range: 160 ms for a word in 250 of 1 M events,
--    where one scan of the index takes 3 ms. And the read rule was checked once per matching
--    event, where once per session is enough. The new body fixes the plan's shape:
--    a. `readable`: the repository's live sessions this role may read (worktree filter; the read
--       rule once per session, whether the role sees all once per query);
--    b. `matches`: one scan of the GIN index (and the kind filter), with the stored tsvector;
--    c. the two hash-joined (no nested loop: the estimates cannot be trusted), and of those the
--       newest 10 000 by push time are ranked. A word in more events than that (a common one)
--       ranks the newest ones rather than every match: ts_rank costs microseconds an event, and
--       700 000 matches took 5 s (now about 1 s, most of it reading the matches);
--    d. ts_rank on those only, and the page (LIMIT max_hits); ts_headline on the page only.
--    Same signature and result as 002's: a daemon of version 2 gets the new plan too.
CREATE OR REPLACE FUNCTION azsd.search_hits(
    repo text, query tsquery, kinds text[], worktrees text[], max_hits integer
) RETURNS TABLE (session_uuid uuid, seq integer, rank real)
LANGUAGE sql STABLE SECURITY DEFINER ROWS 50
SET search_path = pg_catalog, pg_temp
SET enable_nestloop = off
SET jit = off AS $$
    WITH readable AS MATERIALIZED (
        SELECT s.session_uuid FROM azsd.sessions s
        WHERE s.repository = repo AND s.deleted IS NULL
          AND (worktrees IS NULL OR s.worktree = ANY(worktrees))
          AND ((SELECT azsd.sees_all(session_user)) OR azsd.may_read(s.repository, s.owner, session_user))
    ), matches AS MATERIALIZED (
        SELECT e.session_uuid, e.seq, e.pushed, e.tsv FROM azsd.events e
        WHERE e.tsv @@ query AND (kinds IS NULL OR e.kind = ANY(kinds))
    ), candidates AS MATERIALIZED (
        SELECT m.session_uuid, m.seq, m.tsv FROM matches m JOIN readable r USING (session_uuid)
        ORDER BY m.pushed DESC, m.session_uuid, m.seq
        LIMIT 10000
    )
    SELECT c.session_uuid, c.seq, ts_rank(c.tsv, query) AS rank
    FROM candidates c
    ORDER BY rank DESC, c.session_uuid, c.seq
    LIMIT max_hits
$$;

-- 2. Reading a session, and a search's page, with the read rule checked once. Under the policies
--    of 002, reading a session's events checks `session_uuid IN (SELECT … FROM azsd.sessions)`:
--    the rule of every session of the database, each time (a pull of 10 000 events took 370 ms
--    more with 100 000 sessions in the database, a search 1 s). These functions run as the tables'
--    owner and apply the same rule as azsd.search_hits, for the role that logged in, once: they
--    return nothing of a session that role may not read. The policies stay as they are for
--    every other read.
CREATE FUNCTION azsd.may_read_session(session uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (
        SELECT 1 FROM azsd.sessions s
        WHERE s.session_uuid = session
          AND (azsd.sees_all(session_user) OR azsd.may_read(s.repository, s.owner, session_user))
    )
$$;

-- A session's events from `from_seq` on, at most `max_rows` of them (NULL: all), in seq order.
CREATE FUNCTION azsd.session_events(session uuid, from_seq integer, max_rows integer)
RETURNS TABLE (seq integer, kind text, data bytea, char_len integer)
LANGUAGE sql STABLE SECURITY DEFINER ROWS 1000 SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.seq, e.kind, e.data, e.char_len FROM azsd.events e
    WHERE e.session_uuid = session AND e.seq >= from_seq AND azsd.may_read_session(session)
    ORDER BY e.seq
    LIMIT max_rows
$$;

-- A session's compactions, in the order they were made.
CREATE FUNCTION azsd.session_compactions(session uuid)
RETURNS TABLE (after_seq integer, summary text, created text)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT c.after_seq, c.summary, c.created FROM azsd.compactions c
    WHERE c.session_uuid = session AND azsd.may_read_session(session)
    ORDER BY c.local_id
$$;

-- A page of search hits with what `azs search --remote` shows of each (ts_headline: on the page's
-- rows only).
CREATE FUNCTION azsd.search_page(
    repo text, query tsquery, kinds text[], worktrees text[], max_hits integer, headline text
) RETURNS TABLE (
    session_uuid uuid, identity text, name text, local_id bigint, worktree text, seq integer,
    kind text, data bytea, rank real, snippet text
)
LANGUAGE sql STABLE SECURITY DEFINER ROWS 50
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT h.session_uuid, s.identity, s.name, s.local_id, s.worktree, h.seq, e.kind, e.data, h.rank,
           ts_headline('simple', e.body, query, headline)
    FROM azsd.search_hits(repo, query, kinds, worktrees, max_hits) h
    JOIN azsd.events e ON e.session_uuid = h.session_uuid AND e.seq = h.seq
    JOIN azsd.sessions s ON s.session_uuid = h.session_uuid
    ORDER BY h.rank DESC, h.session_uuid, h.seq
$$;
