"""Per-session summaries (``azsd_summaries``): what a cold listing reads instead of every event row.

Each session's event count, prompt-and-reply count and latest `events.id` are counted into the side
table up to a mark, the highest `events.id` counted (`meta` key :data:`SUMMARY_HWM_KEY`). azsd's
appends count their rows in their own transaction (:func:`catch_up`); rows AZUREAL (or a fork's
copy) added since are above the mark, and a reader adds them in (:data:`STATS_ABOVE`), so the
summaries are never wrong, only sometimes behind. The mark moves by at most :data:`STEP_ROWS` ids at
a time (an append does one step, the background catch-up the rest, in short chunks): counting the
250 000 rows AZUREAL wrote while azsd was away in one statement held the write lock for seconds.
An append that finds the mark just below its rows counts them as it knows them
(:func:`count_appended`), without reading them back.
AUTOINCREMENT ids only grow, so the rows above
the mark are exactly the ones not counted; a deleted session takes its summary with it (ON DELETE
CASCADE), and rows are never deleted otherwise (spec §2.5).
"""

from __future__ import annotations

import sqlite3
from typing import Final

from azsd.store.schema import SUMMARY_HWM_KEY

__all__ = ["STATS_ABOVE", "STEP_ROWS", "catch_up", "count_appended", "summary_hwm"]

#: The most event ids one step of the catch-up counts (a few ms).
STEP_ROWS: Final = 5000

#: Each session's counts and latest event id among the rows above a mark. The rows are read by a
#: range of `events.id`; grouping by ``+session_id`` keeps SQLite from walking the whole session
#: index instead to have them in group order (40 ms an append at 1 M events, 0.2 ms now).
STATS_ABOVE: Final = (
    "SELECT session_id, COUNT(*), SUM(kind IN ('UserMessage', 'AssistantText')), MAX(id) "
    "FROM events WHERE id > ? GROUP BY +session_id"
)


def summary_hwm(conn: sqlite3.Connection) -> int | None:
    """The summaries' mark, or None when they were never counted."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SUMMARY_HWM_KEY,)).fetchone()
    return None if row is None else int(row[0])


def catch_up(conn: sqlite3.Connection) -> bool:
    """Count the next :data:`STEP_ROWS` ids above the mark into the summaries and move the mark past
    them (inside a write transaction); whether any were above it. Without a mark, the summaries
    are counted afresh from the first row."""
    hwm = summary_hwm(conn)
    top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
    if hwm is not None and hwm >= top:
        return False
    if hwm is None:
        conn.execute("DELETE FROM azsd_summaries")
    upto = min(top, (hwm or 0) + STEP_ROWS)
    conn.execute(
        "INSERT INTO azsd_summaries (session_id, events, messages, last_id) "
        + STATS_ABOVE.replace("WHERE id > ?", "WHERE id > ? AND id <= ?")
        + " ON CONFLICT (session_id) DO UPDATE SET events = events + excluded.events, "
        "messages = messages + excluded.messages, last_id = MAX(last_id, excluded.last_id)",
        (hwm or 0, upto),
    )
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
        "SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
        (SUMMARY_HWM_KEY, str(upto)),
    )
    return True


def count_appended(
    conn: sqlite3.Connection, session_id: int, first_id: int, last_id: int, messages: int
) -> None:
    """Count the rows `first_id` to `last_id` of `session_id` an append just inserted (`messages` of
    them prompts and replies), inside its transaction: as they are, when the mark is just below them
    (nothing else waits to be counted), else by one step of :func:`catch_up`."""
    if summary_hwm(conn) != first_id - 1:
        catch_up(conn)
        return
    conn.execute(
        "INSERT INTO azsd_summaries (session_id, events, messages, last_id) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET events = events + excluded.events, "
        "messages = messages + excluded.messages, last_id = MAX(last_id, excluded.last_id)",
        (session_id, last_id - first_id + 1, messages, last_id),
    )
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = ? AND CAST(value AS INTEGER) < ?",
        (str(last_id), SUMMARY_HWM_KEY, last_id),
    )
