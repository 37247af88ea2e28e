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
