"""The bare chain `bench.ingest` compares `azs ingest` with, as a script of its own with no azsd code.

`python -m bench.bare_ingest SOURCE DB`: read SOURCE line by line, msgspec-decode each line, compress
it with zstd (level 3) and insert it into a new AZUREAL-schema DB with sqlite3 in DELETE-journal
transactions of 1000 rows; prints the rows inserted.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import msgspec
import zstandard

from azsd.store.schema import AZUREAL_DDL  # a module of strings only

BATCH = 1000


def bare_chain(source: Path, db: Path) -> int:
    """read + msgspec decode + zstd(3) + batched sqlite3 inserts; returns the rows inserted."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(AZUREAL_DDL)
    conn.execute("INSERT INTO sessions (id) VALUES (1)")
    decoder = msgspec.json.Decoder()
    cctx = zstandard.ZstdCompressor(level=3)
    rows: list[tuple[int, int, str, bytes, int]] = []
    seq = 0

    def flush() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?,?,?,?,?)",
                         rows)  # fmt: skip
        conn.execute("COMMIT")
        rows.clear()

    with open(source, "rb") as stream:
        for line in stream:
            obj = decoder.decode(line)
            seq += 1
            rows.append((1, seq, str(obj.get("type")), cctx.compress(line), len(line)))
            if len(rows) >= BATCH:
                flush()
    if rows:
        flush()
    conn.close()
    return seq


if __name__ == "__main__":
    print(bare_chain(Path(sys.argv[1]), Path(sys.argv[2])))
