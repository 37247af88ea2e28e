"""Session summaries (azsd_summaries) give the listing the counts that counting every row gives,
whoever wrote the rows: azsd's appends, AZUREAL's own connection, a fork's copy, deletions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import zstandard

from azsd.events import AssistantText, Complete, Event, UserMessage
from azsd.model import SessionInfo
from azsd.store import Store, store_path
from azsd.store.schema import SUMMARY_HWM_KEY

_COUNTED = """
    SELECT s.id, COALESCE(e.n, 0), COALESCE(e.msgs, 0) FROM sessions AS s LEFT JOIN (
        SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) AS msgs,
               MAX(id) AS last_id
        FROM events GROUP BY session_id
    ) AS e ON e.session_id = s.id
    ORDER BY COALESCE(e.last_id, 0) DESC, s.id DESC
"""


def counted(root: Path) -> list[tuple[int, int, int]]:
    """The listing's order and counts, by counting every event row (as before the summaries)."""
    with sqlite3.connect(store_path(root)) as conn:
        return [tuple(row) for row in conn.execute(_COUNTED)]


def listed(root: Path) -> list[tuple[int, int, int]]:
    with Store.open(root) as fresh:
        return [(s.id, s.event_count, s.message_count) for s in fresh.list_sessions()]


def azureal(root: Path) -> sqlite3.Connection:
    """AZUREAL's connection: its own, foreign keys on (spec §1.2)."""
    conn = sqlite3.connect(store_path(root), isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def azureal_append(conn: sqlite3.Connection, sid: int, n: int) -> None:
    frame = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(
        b'{"AssistantText":{"text":"theirs"}}'
    )
    next_seq = "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?"
    seq = conn.execute(next_seq, (sid,)).fetchone()[0]
    conn.execute("BEGIN")
    for i in range(n):
        conn.execute(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, 'AssistantText', ?, 6)",
            (sid, seq + i, frame),
        )
    conn.execute("COMMIT")


def test_summaries_follow_every_writer(root: Path) -> None:
    with Store.open(root) as store:
        a = store.create_session("a").id
        b = store.create_session("b").id
        store.append_events(a, [UserMessage(content="hi"), AssistantText(text="yo")])
        store.append_events(b, [UserMessage(content="x"), Complete(success=True, duration_ms=1, cost_usd=0)])
        assert listed(root) == counted(root)
        conn = azureal(root)
        azureal_append(conn, a, 3)  # AZUREAL appends: above the mark, added in when read
        assert listed(root) == counted(root)
        assert store.list_sessions()[0].id == a and store.list_sessions()[0].event_count == 5
        conn.execute("INSERT INTO sessions (worktree) VALUES ('main')")
        c = conn.execute("SELECT MAX(id) FROM sessions").fetchone()[0]
        azureal_append(conn, c, 2)
        assert listed(root) == counted(root)
        store.append_events(b, [UserMessage(content="again")])  # catches up AZUREAL's rows too
        with sqlite3.connect(store_path(root)) as plain:
            hwm = plain.execute("SELECT value FROM meta WHERE key = ?", (SUMMARY_HWM_KEY,)).fetchone()
            hwm = hwm[0]
            assert int(hwm) == plain.execute("SELECT MAX(id) FROM events").fetchone()[0]
            kept = plain.execute("SELECT session_id, events, messages FROM azsd_summaries").fetchall()
        assert sorted(kept) == sorted(row for row in counted(root) if row[1])
        conn.execute("DELETE FROM sessions WHERE id = ?", (c,))  # AZUREAL deletes the newest session
        conn.execute("INSERT INTO sessions (worktree) VALUES ('main')")  # and its number is used again
        azureal_append(conn, c, 1)
        assert listed(root) == counted(root)
        store.fork_session(a, 2)
        assert listed(root) == counted(root)
        store.delete_session(b)
        store.append_events(a, [AssistantText(text="more")])
        assert listed(root) == counted(root)
        with Store.open(root) as fresh:
            assert store.list_sessions() == fresh.list_sessions()
        conn.close()


def test_a_store_without_summaries_gets_them_counted_on_open(root: Path) -> None:
    with Store.open(root) as store:
        sid = store.create_session("a").id
        store.append_events(sid, [UserMessage(content="hi"), AssistantText(text="yo")])
    with sqlite3.connect(store_path(root)) as conn:  # as a store azsd wrote before the summaries
        conn.execute("DROP TABLE azsd_summaries")
        conn.execute("DELETE FROM meta WHERE key = ?", (SUMMARY_HWM_KEY,))
    assert listed(root) == counted(root) == [(sid, 2, 2)]


def test_counting_the_rows_above_the_mark_reads_only_those(root: Path) -> None:
    """Each append counts the rows above the mark: by a range of `events.id`, never a walk of the
    session index (which grouping by session tempted SQLite into: 40 ms an append at 1 M events)."""
    from azsd.store.summaries import STATS_ABOVE

    with Store.open(root) as store:
        sid = store.create_session("s").id
        store.append_events(sid, [UserMessage(content="hi"), AssistantText(text="hello")])
    with sqlite3.connect(store_path(root)) as conn:
        plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + STATS_ABOVE, (1,)))
    assert "INTEGER PRIMARY KEY" in plan and "SCAN" not in plan, plan


_JOINED = """
    SELECT s.id, s.name, s.worktree, s.created, s.completed, s.duration_ms, s.cost_usd,
           a.session_id IS NOT NULL, l.parent_id, l.fork_seq, COALESCE(e.n, 0), COALESCE(e.msgs, 0)
    FROM sessions AS s LEFT JOIN azsd_archive AS a ON a.session_id = s.id
    LEFT JOIN azsd_lineage AS l ON l.session_id = s.id AND l.parent_id IS NOT NULL
    LEFT JOIN (
        SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) AS msgs,
               MAX(id) AS last_id
        FROM events GROUP BY session_id
    ) AS e ON e.session_id = s.id
    ORDER BY COALESCE(e.last_id, 0) DESC, s.id DESC
"""


def test_a_cold_listing_is_the_sessions_joined_with_their_side_tables(root: Path) -> None:
    """The index built on open (the sessions' own columns and counts, the archive marks and the
    lineage read on their own) lists what joining them all gives, field by field: archived ones,
    forks, a fork whose parent is gone, sessions without events, AZUREAL's rows above the mark."""
    with Store.open(root) as store:
        ids = [
            store.create_session(f"s{i}" if i % 2 else None, "main" if i % 3 else "feat").id for i in range(8)
        ]
        for i, sid in enumerate(ids[:6]):
            turn: list[Event] = [UserMessage(content=f"p{i}"), AssistantText(text="a")]
            store.append_events(
                sid, [*turn, Complete(success=i % 2 == 0, duration_ms=7 + i, cost_usd=0.1 + 0.2)]
            )
        fork = store.fork_session(ids[0], 2, "fork").id
        orphan = store.fork_session(ids[1], 1, "orphan").id
        store.delete_session(ids[1])
        store.set_archived(ids[2], True)
        store.set_archived(fork, True)
    conn = azureal(root)
    azureal_append(conn, ids[3], 2)
    azureal_append(conn, ids[7], 1)
    conn.close()
    with sqlite3.connect(store_path(root)) as conn:
        rows = conn.execute(_JOINED).fetchall()
    expected = [
        SessionInfo(
            sid, name, worktree, created, n, msgs, None if done is None else bool(done), ms, cost,
            bool(archived), parent, fork_seq if parent is not None else None,
        )
        for sid, name, worktree, created, done, ms, cost, archived, parent, fork_seq, n, msgs in rows
    ]  # fmt: skip
    with Store.open(root) as fresh:
        assert fresh.list_sessions() == expected
        assert fresh.list_sessions(archived="only") == [i for i in expected if i.archived]
    assert {i.id for i in expected if i.parent is not None} == {fork} and orphan in {i.id for i in expected}
