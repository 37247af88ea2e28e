"""The bare chain `bench.ingest` compares `azs ingest` with, as a script of its own with no azsd code.

`python -m bench.bare_ingest SOURCE DB [TEXTS]`: read SOURCE line by line, msgspec-decode each line,
compress it with zstd (level 3) and insert it into a new AZUREAL-schema DB with sqlite3 in
DELETE-journal transactions of 1000 rows; with TEXTS (JSON `{"lines": SOURCE's lines, "texts": the
search text of each event azsd makes of SOURCE}`, made beforehand), also put those texts into an
FTS5 index of the store's own definition, spread over the same transactions, and keep the full
record as azsd does: SOURCE
in chunks of whole lines of at most 1 MiB, each compressed with zstd at the full record's level and
inserted, a transaction per 4 MiB. Prints the rows inserted.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import msgspec
import zstandard

from azsd.store.schema import AZUREAL_DDL, SEARCH_DDL  # a module of strings only

BATCH = 1000
#: The full record's chunk, step and zstd level (azsd.store.full_record, azsd.ingest.full_record).
CHUNK_BYTES = 1 << 20
STEP_BYTES = 4 << 20
FULL_LEVEL = 12


class Texts(msgspec.Struct):
    lines: int
    texts: list[str]


def bare_chain(source: Path, db: Path, given: Texts | None = None) -> int:
    """read + msgspec decode + zstd(3) + batched sqlite3 inserts (+ the search index and the full
    record, given `texts`); returns the rows inserted."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.executescript(AZUREAL_DDL + SEARCH_DDL)
    conn.execute("CREATE TABLE full (session_id INTEGER, start INTEGER, size INTEGER, data BLOB)")
    conn.execute("INSERT INTO sessions (id) VALUES (1)")
    decoder = msgspec.json.Decoder()
    cctx = zstandard.ZstdCompressor(level=3)
    rows: list[tuple[int, int, str, bytes, int]] = []
    texts = None if given is None else given.texts
    per_batch = 0 if given is None else -(-len(given.texts) * BATCH // max(given.lines, 1))  # a batch's
    indexed = 0
    seq = 0

    def flush() -> None:
        nonlocal indexed
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?,?,?,?,?)",
                         rows)  # fmt: skip
        if texts is not None:
            part = texts[indexed : indexed + per_batch] if len(rows) == BATCH else texts[indexed:]
            conn.executemany(
                "INSERT INTO azsd_search (rowid, text) VALUES (?, ?)",
                [(indexed + i + 1, text) for i, text in enumerate(part)],
            )
            indexed += len(part)
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
    if texts is not None:
        _full_record(conn, source)
    conn.close()
    return seq


def _full_record(conn: sqlite3.Connection, source: Path) -> None:
    cctx = zstandard.ZstdCompressor(level=FULL_LEVEL)
    data = source.read_bytes()
    at = 0
    while at < len(data):
        step: list[tuple[int, int, int, bytes]] = []
        stop = min(len(data), at + STEP_BYTES)
        while at < stop:
            end = min(len(data), at + CHUNK_BYTES)
            if end < len(data):
                end = data.rfind(b"\n", at, end) + 1 or end
            step.append((1, at, end - at, cctx.compress(data[at:end])))
            at = end
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO full (session_id, start, size, data) VALUES (?, ?, ?, ?)", step)
        conn.execute("COMMIT")


if __name__ == "__main__":
    given = msgspec.json.decode(Path(sys.argv[3]).read_bytes(), type=Texts) if len(sys.argv) > 3 else None
    print(bare_chain(Path(sys.argv[1]), Path(sys.argv[2]), given))
