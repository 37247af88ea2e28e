-- azsd sync schema, version 6: a teammate's hostile usage rows hurt nobody. Applied by `azsd sync init`
-- in one transaction; never edited once shipped.

-- 1. Counts and costs within what any real usage holds: a row of more than 10^12 tokens of a kind
--    (one session, run, model and quarter-hour), a negative count, or a cost that is negative, not a
--    number or over 10^9 dollars is refused from now on (NOT VALID: the rows already there are not
--    checked here; the sums below leave such rows out).
ALTER TABLE azsd.usage ADD CONSTRAINT usage_counts CHECK (
    input BETWEEN 0 AND 1000000000000 AND output BETWEEN 0 AND 1000000000000
    AND cache_read BETWEEN 0 AND 1000000000000 AND cache_write BETWEEN 0 AND 1000000000000
    AND reasoning BETWEEN 0 AND 1000000000000) NOT VALID;
ALTER TABLE azsd.usage ADD CONSTRAINT usage_cost CHECK (
    cost_usd IS NULL OR (cost_usd >= 0 AND cost_usd < 1000000000)) NOT VALID;  -- (NaN is over every number)
ALTER TABLE azsd.usage ADD CONSTRAINT usage_times CHECK (
    first_at BETWEEN 0 AND 32503680000 AND last_at BETWEEN 0 AND 32503680000) NOT VALID;

-- 2. The team's usage as 005 sums it, but of the rows within those bounds only (a row written before
--    them, or by a role the checks do not bind, counts for nothing), summed as numeric: no sum of
--    rows fails with "bigint out of range", and no cost sums to NaN.
CREATE OR REPLACE FUNCTION azsd.usage_groups(
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
               u.model, MIN(u.first_at) AS f, MAX(u.last_at) AS l, SUM(u.input::numeric) AS i,
               SUM(u.output::numeric) AS o, SUM(u.cache_read::numeric) AS cr,
               SUM(u.cache_write::numeric) AS cw, SUM(u.reasoning::numeric) AS r,
               COALESCE(SUM(u.cost_usd::numeric), 0) AS c, bool_or(u.estimated) AS e
        FROM azsd.usage u JOIN readable rd ON rd.repository = u.repository
        WHERE (rd.all_rows OR u.owner = session_user)
          AND (since IS NULL OR u.first_at >= since) AND (until IS NULL OR u.first_at < until)
          AND u.input BETWEEN 0 AND 1000000000000 AND u.output BETWEEN 0 AND 1000000000000
          AND u.cache_read BETWEEN 0 AND 1000000000000 AND u.cache_write BETWEEN 0 AND 1000000000000
          AND u.reasoning BETWEEN 0 AND 1000000000000
          AND (u.cost_usd IS NULL OR (u.cost_usd >= 0 AND u.cost_usd < 1000000000))
          AND u.first_at BETWEEN 0 AND 32503680000 AND u.last_at BETWEEN 0 AND 32503680000
        GROUP BY 1, 2, 3
    )
    SELECT COALESCE(to_char(bucket, CASE by WHEN 'day' THEN 'YYYY-MM-DD' WHEN 'week' THEN 'IYYY-"W"IW'
                                            ELSE 'YYYY-MM' END), key) AS label,
           CASE WHEN by_model THEN sums.model END, MIN(f), MAX(l), array_agg(sums.model ORDER BY sums.model),
           LEAST(SUM(i), 9223372036854775807)::bigint, LEAST(SUM(o), 9223372036854775807)::bigint,
           LEAST(SUM(cr), 9223372036854775807)::bigint, LEAST(SUM(cw), 9223372036854775807)::bigint,
           LEAST(SUM(r), 9223372036854775807)::bigint, SUM(c)::double precision, bool_or(e)
    FROM sums
    GROUP BY bucket, key, CASE WHEN by_model THEN sums.model END
    ORDER BY MIN(f), 1
$$;

-- 3. Every row is owned by the role that logged in. A member of a group role (the team grants
--    docs/sync.md shows may be given to one) can `SET ROLE` to it: the rows it then wrote were the
--    group's, and every member could change them. These restrictive policies (ANDed with the others)
--    take only rows whose owner is the session's own login role.
CREATE POLICY stores_login_owner ON azsd.stores AS RESTRICTIVE FOR INSERT WITH CHECK (owner = session_user);
CREATE POLICY stores_login_update ON azsd.stores AS RESTRICTIVE FOR UPDATE WITH CHECK (owner = session_user);
CREATE POLICY sessions_login_owner ON azsd.sessions AS RESTRICTIVE FOR INSERT WITH CHECK (owner = session_user);
CREATE POLICY sessions_login_update ON azsd.sessions AS RESTRICTIVE FOR UPDATE
    WITH CHECK (owner = session_user);
CREATE POLICY events_login_owner ON azsd.events AS RESTRICTIVE FOR INSERT WITH CHECK (owner = session_user);
CREATE POLICY compactions_login_owner ON azsd.compactions AS RESTRICTIVE FOR INSERT
    WITH CHECK (owner = session_user);
CREATE POLICY usage_login_owner ON azsd.usage AS RESTRICTIVE FOR INSERT WITH CHECK (owner = session_user);
