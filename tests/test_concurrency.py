"""Two processes append to one store at once: azsd, and a foreign writer doing what AZUREAL does."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import zstandard

from azsd.events import AssistantText, UserMessage, decode_event
from azsd.store import Store

BATCHES = 300

AZSD_WRITER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path
    from azsd.events import AssistantText, UserMessage
    from azsd.store import Store

    root, batches, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    while not go.exists():
        pass
    with Store.open(root) as store:
        for i in range(batches):
            store.append_events(1, [UserMessage(content=f"azsd {i}"), AssistantText(text=f"azsd {i} reply")])
            time.sleep(0.001)
    """
)

# AZUREAL's append (spec §2.5, §8): seq read *before* a deferred transaction; on a UNIQUE collision
# Rust gives up the batch. This writer retries instead, so that "nothing lost" is checkable.
FOREIGN_WRITER = textwrap.dedent(
    """
    import os, sqlite3, sys, time
    import zstandard

    path, batches, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    while not os.path.exists(go):
        pass
    cctx = zstandard.ZstdCompressor(level=3, write_content_size=False)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    collisions = 0
    for i in range(batches):
        payload = ('{"UserMessage":{"content":"foreign %d"}}' % i).encode()
        while True:
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = 1").fetchone()[0]
            try:
                conn.execute("BEGIN")
                conn.execute(
                    "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (1, ?, ?, ?, ?)",
                    (seq, "UserMessage", cctx.compress(payload), len(payload)))
                conn.execute("COMMIT")
                time.sleep(0.001)
                break
            except sqlite3.IntegrityError:
                conn.execute("ROLLBACK")
                collisions += 1
            except sqlite3.OperationalError:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
    print(collisions)
    """
)


def test_azsd_and_a_foreign_writer_never_collide_and_lose_nothing(root: Path) -> None:
    with Store.open(root) as store:
        store.create_session(worktree="main")
    path = root / ".azureal" / "sessions.azs"
    go = root / "go"
    ours = subprocess.Popen(
        [sys.executable, "-c", AZSD_WRITER, str(root), str(BATCHES), str(go)],
        stderr=subprocess.PIPE,
        text=True,
    )
    theirs = subprocess.Popen(
        [sys.executable, "-c", FOREIGN_WRITER, str(path), str(BATCHES), str(go)],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)  # both interpreters are up and spinning on the start barrier
    go.touch()
    _, our_errors = ours.communicate(timeout=60)
    theirs.communicate(timeout=60)
    assert ours.returncode == 0, our_errors  # azsd never hit a UNIQUE(session_id, seq) collision
    assert theirs.returncode == 0

    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT seq, data FROM events WHERE session_id = 1 ORDER BY seq").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert [seq for seq, _ in rows] == list(range(1, 3 * BATCHES + 1))
    dctx = zstandard.ZstdDecompressor()
    events = [decode_event(dctx.decompressobj().decompress(data)) for _, data in rows]
    mine = [e for e in events if not (isinstance(e, UserMessage) and e.content.startswith("foreign"))]
    foreign = [e for e in events if isinstance(e, UserMessage) and e.content.startswith("foreign")]
    expected_mine: list[UserMessage | AssistantText] = []
    for i in range(BATCHES):
        expected_mine += [UserMessage(content=f"azsd {i}"), AssistantText(text=f"azsd {i} reply")]
    assert mine == expected_mine
    assert foreign == [UserMessage(content=f"foreign {i}") for i in range(BATCHES)]
    # Each azsd batch is one transaction: its two rows are adjacent.
    for i, event in enumerate(events):
        if isinstance(event, UserMessage) and event.content.startswith("azsd"):
            assert events[i + 1] == AssistantText(text=f"{event.content} reply")
    # The two really ran at the same time: foreign rows sit between azsd rows.
    kinds = ["f" if e in foreign else "a" for e in events]
    assert "afa" in "".join(kinds) or "faf" in "".join(kinds)
