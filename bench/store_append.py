"""Store append throughput: `Store.append_events` vs the bare chain it is built on.

Baseline: the same events, already compact, through msgspec encode + zstd (level 3) + sqlite3
`executemany` in DELETE-journal transactions of the same size, with no azsd code at all.
Run alone: `python -m bench.store_append [--quick]`.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

import msgspec
import zstandard

from azsd.compact import prepare_for_store
from azsd.events import encode_event, event_kind
from azsd.store import Store
from azsd.store.schema import AZUREAL_DDL
from bench.common import best_of, corpus_like_events, report

BATCH = 100


def main(*, quick: bool = False) -> None:
    n = 5_000 if quick else 50_000
    events = corpus_like_events(n)
    compacted = prepare_for_store(events)
    batches = [events[i : i + BATCH] for i in range(0, n, BATCH)]

    def azsd_run() -> None:
        with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp)) as store:
            sid = store.create_session().id
            for batch in batches:
                store.append_events(sid, batch)

    def bare_run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            conn = sqlite3.connect(Path(tmp) / "bare.db", isolation_level=None)
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(AZUREAL_DDL)
            conn.execute("INSERT INTO sessions (id) VALUES (1)")
            cctx = zstandard.ZstdCompressor(level=3)
            enc = msgspec.json.Encoder()
            for start in range(0, n, BATCH):
                rows = [
                    (1, start + i + 1, event_kind(e), cctx.compress(b"{" + enc.encode(e) + b"}"), 0)
                    for i, e in enumerate(compacted[start : start + BATCH])
                ]
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?,?,?,?,?)", rows
                )
                conn.execute("COMMIT")
            conn.close()

    assert encode_event(compacted[0])  # the bare chain encodes the same Structs
    runs = 2 if quick else 3
    azsd_s = best_of(runs, azsd_run)
    bare_s = best_of(runs, bare_run)
    report("store_append", n / azsd_s, "events/s", n / bare_s)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
