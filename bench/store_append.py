"""Store append throughput: `Store.append_events` vs the bare chain it is built on.

Baseline (`store_append`): the bare chain doing the same work with no azsd code at all: the same
events, already compact, through msgspec encode + zstd (level 3) + sqlite3 `executemany` in
DELETE-journal transactions of the same size, each also putting the events' search text (the same
text azsd indexes, made beforehand as the compaction is) into an FTS5 index of the store's own
definition, as azsd keeps its search index in the transaction of the append.
`store_append_events_only`: the same against the chain without the search index (the baseline of
the rounds before 7/7), which leaves out work azsd does.
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
from azsd.search import search_text
from azsd.store import Store
from azsd.store.schema import AZUREAL_DDL, SEARCH_DDL
from bench.common import best_of, corpus_like_events, report

BATCH = 100


def main(*, quick: bool = False) -> None:
    n = 5_000 if quick else 50_000
    events = corpus_like_events(n)
    compacted = prepare_for_store(events)
    texts = [search_text(event) for event in compacted]
    batches = [events[i : i + BATCH] for i in range(0, n, BATCH)]

    def azsd_run() -> None:
        with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp)) as store:
            sid = store.create_session().id
            for batch in batches:
                store.append_events(sid, batch)

    def bare_run(*, search: bool) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            conn = sqlite3.connect(Path(tmp) / "bare.db", isolation_level=None)
            conn.execute("PRAGMA journal_mode = DELETE")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(AZUREAL_DDL + SEARCH_DDL)
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
                if search:  # (a fresh file: the rows' ids are their seqs)
                    conn.executemany(
                        "INSERT INTO azsd_search (rowid, text) VALUES (?, ?)",
                        [
                            (start + i + 1, text)
                            for i, text in enumerate(texts[start : start + BATCH])
                            if text is not None
                        ],
                    )
                conn.execute("COMMIT")
            conn.close()

    assert encode_event(compacted[0])  # the bare chain encodes the same Structs
    runs = 3 if quick else 5
    best = {"azsd": float("inf"), "bare": float("inf"), "events_only": float("inf")}
    for _ in range(runs):  # in turn, so that each sees the same neighbours on a shared machine
        best["azsd"] = min(best["azsd"], best_of(1, azsd_run))
        best["bare"] = min(best["bare"], best_of(1, lambda: bare_run(search=True)))
        best["events_only"] = min(best["events_only"], best_of(1, lambda: bare_run(search=False)))
    azsd_s, bare_s, events_only_s = best["azsd"], best["bare"], best["events_only"]
    report("store_append", n / azsd_s, "events/s", n / bare_s)
    report("store_append_events_only", n / azsd_s, "events/s", n / events_only_s)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
