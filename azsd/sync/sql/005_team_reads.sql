-- azsd sync schema, version 5: the team's usage, and a repository's sessions listed at a cost that
-- does not grow with the rows a role may not read. Applied by `azsd sync init` in one transaction;
-- never edited once shipped.

-- 1. Usage as each store records it (its side table azsd_usage): one row per session, run (`source`),
--    model and quarter-hour `slot` (Unix seconds), with the first and last turn's time. A session's
--    rows are replaced whenever its usage changes (in the push that sends the session's row).
CREATE TABLE azsd.usage (
    session_uuid uuid NOT NULL REFERENCES azsd.sessions ON DELETE CASCADE,
    source       text NOT NULL,
    model        text NOT NULL,
    slot         bigint NOT NULL,
    owner        name NOT NULL DEFAULT current_user,
    repository   text NOT NULL,
    first_at     double precision NOT NULL,
    last_at      double precision NOT NULL,
    input        bigint NOT NULL DEFAULT 0,
    output       bigint NOT NULL DEFAULT 0,
    cache_read   bigint NOT NULL DEFAULT 0,
    cache_write  bigint NOT NULL DEFAULT 0,
    reasoning    bigint NOT NULL DEFAULT 0,
    cost_usd     double precision,
    estimated    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (session_uuid, source, model, slot)
);
CREATE INDEX usage_repository ON azsd.usage (repository, first_at);

-- The rules of 002: a role reads its own rows and those of the repositories granted to it; it
-- writes only rows of its own sessions, under the session's repository.
ALTER TABLE azsd.usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY usage_read ON azsd.usage FOR SELECT USING (azsd.may_read(repository, owner, current_user));
CREATE POLICY usage_insert ON azsd.usage FOR INSERT WITH CHECK (
    owner = current_user
    AND (session_uuid, repository) IN (
        SELECT s.session_uuid, s.repository FROM azsd.sessions s WHERE s.owner = current_user));
CREATE POLICY usage_delete ON azsd.usage FOR DELETE USING (owner = current_user);

-- Whoever may push sessions may push their usage: the roles granted INSERT on azsd.sessions get
-- SELECT, INSERT and DELETE on azsd.usage (docs/sync.md's team grants name it from now on).
DO $$
DECLARE who oid;
BEGIN
    FOR who IN
        SELECT DISTINCT a.grantee FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
        WHERE c.oid = 'azsd.sessions'::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner
    LOOP
        IF who = 0 THEN
            GRANT SELECT, INSERT, DELETE ON azsd.usage TO PUBLIC;
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, DELETE ON azsd.usage TO %I',
                           (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid = who));
        END IF;
    END LOOP;
END $$;

-- Whether the role that logged in may read every row of `repo` (a grant, or it sees all): then the
-- rule need not be checked row by row; else it reads its own rows only.
CREATE FUNCTION azsd.reads_repository(repo text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT azsd.sees_all(session_user) OR COALESCE(azsd.may_read(repo, NULL, session_user), false)
$$;

-- The team's usage, summed in the database: per group (`by`: day, week or month of local time in
-- zone `tz`; model; person, the role that pushed; repository), and per model too with `by_model`,
-- of the turns between `since` and `until` (Unix seconds, NULL: unbounded). `repo` NULL: every
-- repository the role may read. `first_at`/`last_at` of each group are Unix seconds. The rows are
-- summed per time bucket (or key) and model first, and only those sums are labelled and grouped.
CREATE FUNCTION azsd.usage_groups(
    repo text, by text, tz text, since double precision, until double precision, by_model boolean
) RETURNS TABLE (
    label text, model text, first_at double precision, last_at double precision, models text[],
    input bigint, output bigint, cache_read bigint, cache_write bigint, reasoning bigint,
    cost_usd double precision, estimated boolean
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    WITH readable AS MATERIALIZED (
        SELECT r.repository, azsd.reads_repository(r.repository) AS all_rows
        FROM (SELECT DISTINCT u.repository FROM azsd.usage u WHERE repo IS NULL OR u.repository = repo) r
    ), sums AS (
        SELECT CASE WHEN by IN ('day', 'week', 'month')
                    THEN date_trunc(by, to_timestamp(u.first_at) AT TIME ZONE tz) END AS bucket,
               CASE by WHEN 'model' THEN u.model WHEN 'person' THEN u.owner::text
                       WHEN 'repository' THEN u.repository END AS key,
               u.model, MIN(u.first_at) AS f, MAX(u.last_at) AS l, SUM(u.input) AS i, SUM(u.output) AS o,
               SUM(u.cache_read) AS cr, SUM(u.cache_write) AS cw, SUM(u.reasoning) AS r,
               COALESCE(SUM(u.cost_usd), 0) AS c, bool_or(u.estimated) AS e
        FROM azsd.usage u JOIN readable rd ON rd.repository = u.repository
        WHERE (rd.all_rows OR u.owner = session_user)
          AND (since IS NULL OR u.first_at >= since) AND (until IS NULL OR u.first_at < until)
        GROUP BY 1, 2, 3
    )
    SELECT COALESCE(to_char(bucket, CASE by WHEN 'day' THEN 'YYYY-MM-DD' WHEN 'week' THEN 'IYYY-"W"IW'
                                            ELSE 'YYYY-MM' END), key) AS label,
           CASE WHEN by_model THEN sums.model END, MIN(f), MAX(l), array_agg(sums.model ORDER BY sums.model),
           SUM(i)::bigint, SUM(o)::bigint, SUM(cr)::bigint, SUM(cw)::bigint, SUM(r)::bigint, SUM(c),
           bool_or(e)
    FROM sums
    GROUP BY bucket, key, CASE WHEN by_model THEN sums.model END
    ORDER BY MIN(f), 1
$$;

-- 2. `azs ls --remote`. Under the policies, counting a repository's sessions checked the read rule of
--    each of them (350 ms for 100 000 sessions as a team member). These check it once: the page of a
--    repository's sessions this role may read, newest first, and how many there are.
CREATE FUNCTION azsd.session_page(
    repo text, worktrees text[], with_deleted boolean, max_rows integer, skip integer
) RETURNS TABLE (session_uuid uuid)
LANGUAGE sql STABLE SECURITY DEFINER ROWS 100 SET search_path = pg_catalog, pg_temp AS $$
    SELECT s.session_uuid FROM azsd.sessions s
    WHERE s.repository = repo AND (with_deleted OR s.deleted IS NULL)
      AND (worktrees IS NULL OR s.worktree = ANY(worktrees))
      AND ((SELECT azsd.reads_repository(repo)) OR s.owner = session_user)
    ORDER BY s.updated DESC, s.created DESC, s.local_id DESC, s.session_uuid
    LIMIT max_rows OFFSET skip
$$;

CREATE FUNCTION azsd.session_total(repo text, worktrees text[], with_deleted boolean) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT COUNT(*) FROM azsd.sessions s
    WHERE s.repository = repo AND (with_deleted OR s.deleted IS NULL)
      AND (worktrees IS NULL OR s.worktree = ANY(worktrees))
      AND ((SELECT azsd.reads_repository(repo)) OR s.owner = session_user)
$$;
