"""The search index and the context blocks catch up with what AZUREAL writes, in the background, and
`azs search` shows that progress while it waits (issue 17), end to end against the real daemon."""

from __future__ import annotations

import queue
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import IO

import zstandard

from azsd.events import AssistantText, UserMessage, encode_event
from azsd.store import store_path
from azsd.store.schema import CONTEXT_HWM_KEY, SEARCH_HWM_KEY
from azsd_client import Client
from azsd_client.commands.store import SHOW_INDEXING_FROM
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

ROWS = 4 * SHOW_INDEXING_FROM


def azureal(root: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(store_path(root), timeout=5.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def append_as_azureal(conn: sqlite3.Connection, session: int, rows: int) -> None:
    """Rows as AZUREAL writes them (streaming zstd frames), committed in one transaction; the caller
    may hold the write lock again right after (BEGIN IMMEDIATE), before azsd indexes them."""
    frame = zstandard.ZstdCompressor(level=3)
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session,)
    ).fetchone()[0]
    data = []
    for i in range(rows):
        event = UserMessage(content=f"needle {i}") if i % 2 == 0 else AssistantText(text=f"reply {i}")
        writer = frame.compressobj()
        data.append(
            (session, seq + i, type(event).__name__, writer.compress(encode_event(event)) + writer.flush())
        )
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, 0)", data
    )
    conn.execute("COMMIT")


def marks(root: Path) -> tuple[int, int | None, int | None]:
    """The top event id, and the search index's and the context blocks' marks."""
    with sqlite3.connect(store_path(root)) as conn:
        top = conn.execute("SELECT MAX(id) FROM events").fetchone()[0]
        found = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    search, context = found.get(SEARCH_HWM_KEY), found.get(CONTEXT_HWM_KEY)
    return top, None if search is None else int(search), None if context is None else int(context)


def lines_of(stream: IO[str]) -> queue.Queue[str | None]:
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            out.put(line.rstrip("\n"))
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def test_the_index_catches_up_in_the_background(client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "s").session.id
    client.append_events(worktree, sid, [UserMessage(content="first")])
    append_as_azureal(azureal(worktree), sid, ROWS)
    deadline = time.monotonic() + 60
    while client.index_status(worktree).pending and time.monotonic() < deadline:  # no search asks
        time.sleep(0.1)
    assert client.index_status(worktree).pending == 0
    while marks(worktree)[2] != marks(worktree)[0] and time.monotonic() < deadline:  # then the blocks
        time.sleep(0.1)
    top, search_mark, context_mark = marks(worktree)
    assert search_mark == context_mark == top
    hits = client.search(worktree, "needle", limit=5).hits
    assert len(hits) == 5


def test_a_search_that_waits_shows_the_indexing(azs: Azs, client: Client, worktree: Path) -> None:
    sid = client.create_session(worktree, "s").session.id
    client.append_events(worktree, sid, [UserMessage(content="first")])
    holder = azureal(worktree)
    append_as_azureal(holder, sid, ROWS)
    holder.execute("BEGIN IMMEDIATE")  # nothing can be indexed while AZUREAL holds the write lock
    try:
        assert client.index_status(worktree).pending > SHOW_INDEXING_FROM
        search = azs.spawn("search", "needle", "--limit", "3")
        assert search.stderr is not None
        said = lines_of(search.stderr)
        first = said.get(timeout=30)
        assert first is not None and re.fullmatch(r"indexing [\d,]+ of [\d,]+ new events…", first), first
    finally:
        holder.execute("ROLLBACK")  # the daemon indexes now; the search goes on
    assert search.stdout is not None
    out = search.stdout.read()  # (communicate would read stderr too)
    search.wait(timeout=60)
    rest = []
    while (line := said.get(timeout=10)) is not None:
        rest.append(line)
    search.stdout.close()
    search.stderr.close()
    assert search.returncode == 0, rest
    assert re.fullmatch(r"indexing [\d,]+ of [\d,]+ new events: searching", rest[-1]), rest
    assert len(out.splitlines()) == 3 and "needle" in out
    holder.close()
