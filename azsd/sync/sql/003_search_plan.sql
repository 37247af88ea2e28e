-- azsd sync schema, version 3: a search whose plan does not depend on the table's statistics.
-- Applied by `azsd sync init` in one transaction; never edited once shipped.
--
-- azsd.search_hits (002) joined events and sessions in one query. Without fresh statistics (right
-- after a catch-up, or on a server whose autovacuum is off or behind) the planner took each of
-- the repository's sessions in turn and scanned the GIN index once per session, then ANDed it with
-- the session's primary-key range: 160 ms for a word in 250 of 1 M events, where one scan of the
-- index takes 3 ms. And the read rule (azsd.may_read) was checked once per matching event, where
-- once per session is enough.
--
-- The new body fixes the plan's shape instead of hoping for it:
--   1. `readable`: the repository's live sessions this role may read (worktree filter, read rule:
--      once per session; whether the role sees all, once per query);
--   2. `matches`: one scan of the GIN index (and the kind filter), with the stored tsvector;
--   3. the two hash-joined (no nested loop: the estimates cannot be trusted), then the newest
--      10 000 matches by push time are ranked. A word in more events than that (a common
--      one: "the", "test") ranks the newest ones instead of reading and ranking every match
--      (ts_rank costs some microseconds an event: 700 000 matches took 5 s, now under 1 s);
--   4. ts_rank on those only, and the page (LIMIT max_hits). ts_headline stays in the caller, on
--      the page's rows only.
-- Same signature and result as 002's, so a daemon of version 2 gets the new plan too.
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
