"""Bytes on disk per byte of source JSONL (write-time truncation + one zstd frame per row), and of the
full record kept beside the events (`storage_full_*`: what the agent wrote, in zstd chunks; the
`storage_*_data` figures leave it out, as they leave out the search index and context blocks).

Two figures: every file of the real corpus (`../shared/corpus`, each into its own session of one
store; skipped with a note when the corpus is absent), and the generated Claude stream-json file
of `bench.ingest` (~100 MB; `--quick`: ~10 MB), each ingested with `ingest_file`, the code the
daemon runs for `azs ingest`. The value is the store file's size over the source bytes; the
baseline is 1 (the source itself), so the ratio is the value. The `*_data` figures leave out what is
derived from the events (the search index, the rendered context blocks); `storage_context_*` is the
bytes of the rendered context blocks (`azsd_context` and its indexes) against those of the `events`
table and its index (needs SQLite's `dbstat`).
Run alone: `python -m bench.storage [--quick]`.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from azsd.errors import IngestError
from azsd.ingest.file import ingest_file
from azsd.ingest.full_record import keep_full_some
from azsd.store import Store, store_path
from bench.common import report, write_stream_json

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def _ingested_size(root: Path, files: list[Path]) -> tuple[int, int, int]:
    """Ingest each file into a session of its own, and keep its full record as the daemon's upkeep
    does; returns (source bytes ingested, store bytes, bytes of the full record's chunks)."""
    source = 0
    with Store.open(root) as store:
        for path in files:
            sid = store.create_session(path.stem[:40]).id
            try:
                report = ingest_file(store, sid, path)
            except IngestError as exc:
                print(f"# storage: skipped {path.name}: {exc}")
                store.delete_session(sid)
                continue
            size = path.stat().st_size
            store.want_full(sid, str(path), report.parse.format.split("-", 1)[0], size)
            source += size
        while keep_full_some(store):
            pass
        full = store.full_cost().stored_bytes
    return source, store_path(root).stat().st_size, full


def _breakdown(what: str, root: Path, source: int) -> tuple[int, int, int]:
    """Where the bytes go: the events' zstd frames, the search index, the rendered context blocks and
    the pages of objects smaller than a page. Returns the bytes of the search index, of the context
    blocks and of the events table (0, 0, 0 when SQLite has no `dbstat` to say)."""
    conn = sqlite3.connect(f"file:{store_path(root)}?mode=ro", uri=True)
    frames = conn.execute("SELECT COALESCE(SUM(length(data)), 0) FROM events").fetchone()[0]
    page, pages = (
        conn.execute("PRAGMA page_size").fetchone()[0],
        conn.execute("PRAGMA page_count").fetchone()[0],
    )

    def pages_of(like: str) -> int:
        return int(
            conn.execute("SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE ?", (like,)).fetchone()[
                0
            ]
        )

    try:
        small = conn.execute(
            "SELECT COUNT(*) FROM (SELECT name FROM dbstat GROUP BY name HAVING COUNT(*) = 1)"
        )
        fixed = f", {small.fetchone()[0]} of them single-page tables and indexes (the schema's fixed cost)"
        index_bytes, context_bytes = pages_of("azsd_search%"), pages_of("azsd_context%")
        events_bytes = pages_of("events") + pages_of("idx_events_session")
    except sqlite3.OperationalError:  # no dbstat in this SQLite
        fixed, index_bytes, context_bytes, events_bytes = "", 0, 0, 0
    conn.close()
    print(f"# storage: {what}: zstd frames {frames} B ({frames / source:.3f} of the source); "
          f"{pages} pages of {page} B{fixed}; the search index {index_bytes} B "
          f"({index_bytes / source:.3f} of the source); the context blocks {context_bytes} B "
          f"({context_bytes / source:.3f} of the source, {context_bytes / max(events_bytes, 1):.2f} of "
          f"the events table's {events_bytes} B)")  # fmt: skip
    return index_bytes, context_bytes, events_bytes


def main(*, quick: bool = False) -> None:
    size = 10_000_000 if quick else 100_000_000
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        files = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())
        corpus: tuple[int, int, int] | None = None
        corpus_index = corpus_context = corpus_events = 0
        if files:
            (base / "corpus").mkdir()
            corpus = _ingested_size(base / "corpus", files)
            print(f"# storage: corpus {len(files)} files, {corpus[0]} B -> {corpus[1]} B")
            corpus_index, corpus_context, corpus_events = _breakdown("corpus", base / "corpus", corpus[0])
        else:
            print(f"# storage: no corpus at {CORPUS}: storage_corpus skipped")
        source = base / "agent.jsonl"
        write_stream_json(source, size)
        (base / "gen").mkdir()
        generated = _ingested_size(base / "gen", [source])
        print(f"# storage: generated {generated[0]} B -> {generated[1]} B")
        generated_index, generated_context, generated_events = _breakdown(
            "generated", base / "gen", generated[0]
        )
    if corpus is not None:
        report("storage_corpus", corpus[1] / corpus[0], "bytes/source-byte", 1.0)
        report("storage_full_corpus", corpus[2] / corpus[0], "bytes/source-byte", 1.0)
        corpus_data = corpus[1] - corpus_index - corpus_context - corpus[2]
        report("storage_corpus_data", corpus_data / corpus[0], "bytes/source-byte", 1.0)
        if corpus_events:
            report("storage_context_corpus", corpus_context, "bytes", corpus_events)
    report("storage_generated", generated[1] / generated[0], "bytes/source-byte", 1.0)
    report("storage_full_generated", generated[2] / generated[0], "bytes/source-byte", 1.0)
    # The DESIGN target (truncation + zstd) is about the data; the search index and the context blocks,
    # derived from it, are their own cost.
    generated_data = generated[1] - generated_index - generated_context - generated[2]
    report("storage_generated_data", generated_data / generated[0], "bytes/source-byte", 1.0)
    if generated_events:
        report("storage_context_generated", generated_context, "bytes", generated_events)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
