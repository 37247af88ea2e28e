"""A foreign bulk writer, run as a process of its own beside the daemon (issue 2/7).

It writes as a program importing a big history would: its own connection with a 5 s busy timeout
(rusqlite's default) and no retry, `ROWS` rows a transaction (a new session each, AZUREAL's rows,
compressed), a pause between transactions. Run: ``python tests/reliability/bulk_writer.py STORE
STOP_FILE [ROWS] [PAUSE_S]``; it loops until STOP_FILE exists, then prints one JSON object: the
transactions done, each failure (the sqlite3 error and how long it waited), the rows committed and
its longest wait for the write lock (``BEGIN IMMEDIATE``) and for its commit. It imports nothing of azsd.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

import zstandard


def main(store: str, stop_file: str, rows: int, pause_s: float) -> None:
    conn = sqlite3.connect(store, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    zstd = zstandard.ZstdCompressor(level=3)
    payloads = [
        zstd.compress(b'{"AssistantText":{"text":"bulk row %d of an imported history"}}' % i)
        for i in range(97)
    ]
    done = committed = 0
    failures: list[dict[str, object]] = []
    longest = longest_commit = 0.0
    while not os.path.exists(stop_file):
        started = time.monotonic()
        try:
            conn.execute("BEGIN IMMEDIATE")  # the wait for the write lock, measured alone
            longest = max(longest, time.monotonic() - started)
            sid = conn.execute("INSERT INTO sessions (worktree) VALUES ('bulk')").lastrowid
            conn.executemany(
                "INSERT INTO events (session_id, seq, kind, data, char_len) "
                "VALUES (?, ?, 'AssistantText', ?, 30)",
                [(sid, seq, payloads[seq % len(payloads)]) for seq in range(1, rows + 1)],
            )
            committing = time.monotonic()
            conn.execute("COMMIT")  # (waits for readers to finish)
            longest_commit = max(longest_commit, time.monotonic() - committing)
            done += 1
            committed += rows
        except sqlite3.Error as exc:
            failures.append(
                {"transaction": done + 1, "error": str(exc), "waited_s": time.monotonic() - started}
            )
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        time.sleep(pause_s)
    conn.close()
    print(
        json.dumps(
            {
                "transactions": done,
                "failures": failures,
                "rows": committed,
                "longest_wait_s": longest,
                "longest_commit_s": longest_commit,
            }
        )
    )


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]) if len(sys.argv) > 3 else 10_000,
        float(sys.argv[4]) if len(sys.argv) > 4 else 0.5,
    )
