"""An AZUREAL-style writer, run as a process of its own beside the daemon (spec §8).

It writes the way AZUREAL does: its own connection with a 5 s busy timeout (rusqlite's default),
DELETE journal, and no retry. Each round creates a session (an autocommitted INSERT of the worktree
alone, SQLite picking the id), reads the next seq outside any transaction, then appends a few events
in a deferred transaction (INSERT each row, reset the badge, COMMIT), as `append_events` does.

Run: ``python tests/reliability/azureal_writer.py STORE STOP_FILE [PAUSE_S]``. It loops until
STOP_FILE exists, then prints one JSON object: the rounds done, each failure (the sqlite3 error and
how long the statement waited), the ids of the sessions it committed, the events per session, and
its longest wait for a statement. It imports nothing of azsd.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

import zstandard

EVENTS = [
    ("UserMessage", b'{"UserMessage":{"content":"azureal prompt %d"}}'),
    ("AssistantText", b'{"AssistantText":{"text":"azureal reply %d"}}'),
    ("AssistantText", b'{"AssistantText":{"text":"azureal more %d"}}'),
]


def main(store: str, stop_file: str, pause_s: float) -> None:
    conn = sqlite3.connect(store, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    zstd = zstandard.ZstdCompressor(level=3)
    rounds = 0
    sessions: list[int] = []
    failures: list[dict[str, object]] = []
    longest = 0.0
    while not os.path.exists(stop_file):
        rounds += 1
        step = "create"
        started = time.monotonic()
        try:
            sid = conn.execute("INSERT INTO sessions (worktree) VALUES ('azureal')").lastrowid
            assert sid is not None
            longest = max(longest, time.monotonic() - started)
            step, started = "next_seq", time.monotonic()
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (sid,)
            ).fetchone()[0]
            longest = max(longest, time.monotonic() - started)
            step, started = "append", time.monotonic()
            conn.execute("BEGIN")
            try:
                for i, (kind, data) in enumerate(EVENTS):
                    payload = zstd.compress(data % rounds)
                    conn.execute(
                        "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)",
                        (sid, seq + i, kind, payload, len(data)),
                    )
                conn.execute(
                    "UPDATE sessions SET completed = NULL, duration_ms = NULL, cost_usd = NULL WHERE id = ?",
                    (sid,),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            longest = max(longest, time.monotonic() - started)
            sessions.append(sid)
        except sqlite3.Error as exc:
            failures.append(
                {"round": rounds, "step": step, "error": str(exc), "waited_s": time.monotonic() - started}
            )
        time.sleep(pause_s)
    conn.close()
    print(
        json.dumps(
            {
                "rounds": rounds,
                "failures": failures,
                "sessions": sessions,
                "events_per_session": len(EVENTS),
                "longest_wait_s": longest,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 0.02)
