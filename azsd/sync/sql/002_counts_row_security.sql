-- azsd sync schema, version 2.
-- Applied by `azsd sync init` in one transaction; never edited once shipped.

-- 1. The database counts a session's events itself (each push adds what it inserted), so a pusher
--    never scans a store's events to count them: bring the counts of rows pushed before up to date.
UPDATE azsd.sessions s SET
    event_count = COALESCE(t.events, 0),
    message_count = COALESCE(t.messages, 0),
    char_total = COALESCE(t.chars, 0)
FROM azsd.sessions s2 LEFT JOIN (
    SELECT session_uuid, COUNT(*) AS events,
           COUNT(*) FILTER (WHERE kind IN ('UserMessage', 'AssistantText')) AS messages,
           SUM(char_len) AS chars
    FROM azsd.events GROUP BY session_uuid
) t USING (session_uuid)
WHERE s.session_uuid = s2.session_uuid;

-- 2. Row-level security: each person connects as a role of their own. A role inserts and changes
--    only rows it owns (`owner`, the role that pushed them: current_user by default), and reads its
--    own rows and those of the repositories granted to it in azsd.readers. The owner of the tables
--    (the role that ran `azsd sync init`) and superusers are not bound by the policies.
--    docs/sync.md "Setting it up for a team" has the GRANTs that go with it.

-- Who may read which repository: `repository` is a repository identity (as `azs ls --remote` shows)
-- or '*' for all; `grantee` is a role (its members too) or 'public' for every role.
CREATE TABLE azsd.readers (
    repository text NOT NULL,
    grantee    name NOT NULL,
    granted    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, grantee)
);

-- Whether `who` may read rows of `repo` owned by `owner`.
CREATE FUNCTION azsd.may_read(repo text, owner name, who name) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT owner = who OR EXISTS (
        SELECT 1 FROM azsd.readers r
        WHERE r.repository IN (repo, '*')
          AND (r.grantee = 'public' OR EXISTS (
              SELECT 1 FROM pg_catalog.pg_roles g
              WHERE g.rolname = r.grantee AND pg_catalog.pg_has_role(who, g.oid, 'MEMBER')))
    )
$$;

ALTER TABLE azsd.stores ENABLE ROW LEVEL SECURITY;
CREATE POLICY stores_read ON azsd.stores FOR SELECT
    USING (azsd.may_read(repository, owner, current_user));
CREATE POLICY stores_insert ON azsd.stores FOR INSERT WITH CHECK (owner = current_user);
CREATE POLICY stores_update ON azsd.stores FOR UPDATE
    USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY stores_delete ON azsd.stores FOR DELETE USING (owner = current_user);

ALTER TABLE azsd.sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY sessions_read ON azsd.sessions FOR SELECT
    USING (azsd.may_read(repository, owner, current_user));
CREATE POLICY sessions_insert ON azsd.sessions FOR INSERT WITH CHECK (
    owner = current_user
    AND store_uuid IN (SELECT store_uuid FROM azsd.stores WHERE owner = current_user));
CREATE POLICY sessions_update ON azsd.sessions FOR UPDATE USING (owner = current_user) WITH CHECK (
    owner = current_user
    AND store_uuid IN (SELECT store_uuid FROM azsd.stores WHERE owner = current_user));
CREATE POLICY sessions_delete ON azsd.sessions FOR DELETE USING (owner = current_user);

-- Events and compactions: readable with their session (the subquery sees only readable sessions),
-- written only into the role's own sessions. Never updated.
ALTER TABLE azsd.events ENABLE ROW LEVEL SECURITY;
CREATE POLICY events_read ON azsd.events FOR SELECT
    USING (owner = current_user OR session_uuid IN (SELECT session_uuid FROM azsd.sessions));
CREATE POLICY events_insert ON azsd.events FOR INSERT WITH CHECK (
    owner = current_user
    AND session_uuid IN (SELECT session_uuid FROM azsd.sessions WHERE owner = current_user));
CREATE POLICY events_delete ON azsd.events FOR DELETE USING (owner = current_user);

ALTER TABLE azsd.compactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY compactions_read ON azsd.compactions FOR SELECT
    USING (owner = current_user OR session_uuid IN (SELECT session_uuid FROM azsd.sessions));
CREATE POLICY compactions_insert ON azsd.compactions FOR INSERT WITH CHECK (
    owner = current_user
    AND session_uuid IN (SELECT session_uuid FROM azsd.sessions WHERE owner = current_user));
CREATE POLICY compactions_delete ON azsd.compactions FOR DELETE USING (owner = current_user);

-- Search. A policy's condition is checked before any condition of the query that is not leakproof,
-- and `@@` is not: under the policies, a search would read every event instead of using the GIN
-- index. This function runs as the tables' owner (SECURITY DEFINER, so the index serves it) and
-- applies the same rule itself, for the role that logged in (session_user): it returns only the
-- hits that role may read. Superusers, roles that bypass RLS and members of the owner see all.
CREATE FUNCTION azsd.sees_all(who name) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT rolsuper OR rolbypassrls FROM pg_catalog.pg_roles WHERE rolname = who), false)
        OR pg_catalog.pg_has_role(who, (SELECT relowner FROM pg_catalog.pg_class
                                        WHERE oid = 'azsd.events'::regclass), 'MEMBER')
$$;

CREATE FUNCTION azsd.search_hits(
    repo text, query tsquery, kinds text[], worktrees text[], max_hits integer
) RETURNS TABLE (session_uuid uuid, seq integer, rank real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.session_uuid, e.seq, ts_rank(e.tsv, query) AS rank
    FROM azsd.events e JOIN azsd.sessions s ON s.session_uuid = e.session_uuid
    WHERE e.tsv @@ query AND s.repository = repo AND s.deleted IS NULL
      AND (kinds IS NULL OR e.kind = ANY(kinds))
      AND (worktrees IS NULL OR s.worktree = ANY(worktrees))
      AND (azsd.may_read(s.repository, s.owner, session_user) OR azsd.sees_all(session_user))
    ORDER BY rank DESC, e.session_uuid, e.seq
    LIMIT max_hits
$$;
