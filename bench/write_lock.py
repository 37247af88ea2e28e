"""The longest wait for the store's write lock while a big file is ingested (issue 2/7).

Probes on connections of their own do ``BEGIN IMMEDIATE; ROLLBACK`` in a loop every few ms and
record their longest wait, while the real daemon ingests a ~100 MB Claude stream-json file
(`--quick`: ~10 MB) with `azs ingest`: `max_write_lock_ms` (target ≤ 250 ms) from a probe that
tries again every millisecond, so its wait is the longest hold of the lock; `max_busy_wait_ms` from
one that waits in SQLite's default busy handler as AZUREAL does (its 5 s must never run out: the
pacing of :mod:`azsd.store.chunks` bounds it to about 1.25 s). The baseline of both is the first
probe's longest wait while the same file is ingested in-process in one transaction, as azsd did
before it committed long writes in chunks.

`ingest_chunked` compares the throughput of the two in-process ingests (events/s, chunked against
one transaction): what the pauses between chunks cost.

`catch_up_*` (issue 2/7): the same two probes while the daemon catches up, in the background, the
search index, context blocks and summaries of 300 000 rows (`--quick`: 60 000) that AZUREAL wrote
while it was away: `catch_up_max_write_lock_ms` (target ≤ 250 ms) and `catch_up_max_busy_wait_ms`
(AZUREAL's wait; target ≤ 1.5 s), each against the same catch-up run as azsd ran it before the
store kept one pacer for its life (a pacer made afresh for each chunk, so the pause owed after each
second of holding never came: AZUREAL failed after 5 s).
Run alone: `python -m bench.write_lock [--quick]`.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import zstandard

from azsd.ingest.file import ingest_file
from azsd.store import Store, store_path
from azsd.store.schema import CONTEXT_HWM_KEY, SEARCH_HWM_KEY, SUMMARY_HWM_KEY
from azsd_client import Client
from bench.common import daemon_config, installed_env, report, running_daemon, write_stream_json
from bench.ingest import azs_ingest


class Probe:
    """`BEGIN IMMEDIATE; ROLLBACK` on a connection of its own, in a thread, until stopped.

    With `busy_handler`, it waits as AZUREAL does, in SQLite's default busy handler (which sleeps up
    to 100 ms between tries, so it can sleep through a short free moment); without, it tries again
    every millisecond, so its longest wait is the longest time the lock was held.
    """

    def __init__(self, db: Path, *, busy_handler: bool) -> None:
        self.db = db
        self.busy_handler = busy_handler
        self.longest_s = 0.0
        self.tries = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = sqlite3.connect(self.db, timeout=600 if self.busy_handler else 0, isolation_level=None)
        while not self._stop.is_set():
            started = time.perf_counter()
            while True:
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError:
                    if self.busy_handler:
                        raise
                    time.sleep(0.001)
            self.longest_s = max(self.longest_s, time.perf_counter() - started)
            conn.execute("ROLLBACK")
            self.tries += 1
            time.sleep(0.003)
        conn.close()

    @contextmanager
    def running(self) -> Iterator[Probe]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()


def in_process(root: Path, source: Path, ingest: Callable[[Store, int], int]) -> tuple[float, float]:
    """`ingest(store, session)` in a new store of `root` beside a probe: (longest wait s, events/s)."""
    root.mkdir()
    with Store.open(root) as store:
        sid = store.create_session(worktree="bench").id
        with Probe(store_path(root), busy_handler=False).running() as probe:
            start = time.perf_counter()
            appended = ingest(store, sid)
            elapsed = time.perf_counter() - start
    return probe.longest_s, appended / elapsed


def one_transaction(source: Path) -> Callable[[Store, int], int]:
    def run(store: Store, sid: int) -> int:
        with store.atomic():  # what every ingest was: the whole file in one transaction
            return ingest_file(store, sid, source).appended

    return run


def chunked(source: Path) -> Callable[[Store, int], int]:
    def run(store: Store, sid: int) -> int:
        return ingest_file(store, sid, source, on_stored=lambda events: None).appended

    return run


#: The catch-up as azsd ran it before each store kept one pacer: a new one for every chunk.
_OLD_CATCH_UP = """
import sys
from pathlib import Path
from azsd.store import Store
from azsd.store.pacing import Pacer
store = Store.open(Path(sys.argv[1]))
while True:
    store.pacer = Pacer()
    if not store.catch_up_some():
        break
"""


def foreign_store(root: Path, rows: int) -> None:
    """A store azsd made, then `rows` events AZUREAL wrote (its own connection, no side table)."""
    root.mkdir()
    with Store.open(root) as store:
        store.create_session(worktree="bench")
    frame = zstandard.ZstdCompressor(level=3)
    words = ("parse", "store", "event", "line", "seq", "lock", "chunk", "index")
    conn = sqlite3.connect(store_path(root), isolation_level=None)
    conn.execute("BEGIN")
    for start in range(0, rows, 5000):
        sid = conn.execute("INSERT INTO sessions (worktree) VALUES ('azureal')").lastrowid
        data = []
        for i in range(min(5000, rows - start)):
            text = " ".join(words[(i * k + start) % len(words)] + str((i * k) % 991) for k in range(1, 12))
            json = b'{"AssistantText":{"text":"%s"}}' % text.encode()
            writer = frame.compressobj()
            data.append((sid, i + 1, "AssistantText", writer.compress(json) + writer.flush(), len(text)))
        conn.executemany(
            "INSERT INTO events (session_id, seq, kind, data, char_len) VALUES (?, ?, ?, ?, ?)", data
        )
    conn.execute("COMMIT")
    conn.close()


def caught_up(root: Path) -> bool:
    conn = sqlite3.connect(store_path(root), timeout=30)
    try:
        top = conn.execute("SELECT MAX(id) FROM events").fetchone()[0]
        marks = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    finally:
        conn.close()
    return all(int(marks.get(key, 0)) >= top for key in (SEARCH_HWM_KEY, CONTEXT_HWM_KEY, SUMMARY_HWM_KEY))


def catch_up_waits(base: Path, rows: int) -> tuple[Probe, Probe, Probe, Probe, float]:
    """The probes beside the daemon's background catch-up of `rows` foreign rows, those beside the
    old way of it, and the daemon's time."""
    template = base / "foreign"
    foreign_store(template, rows)
    daemon_root, old_root = base / "daemon-root", base / "old-root"
    shutil.copytree(template, daemon_root)
    shutil.copytree(template, old_root)
    with (
        running_daemon(base / "run-catch-up"),
        Client(daemon_config(base / "run-catch-up")) as client,
        Probe(store_path(daemon_root), busy_handler=False).running() as daemon_hold,
        Probe(store_path(daemon_root), busy_handler=True).running() as daemon_wait,
    ):
        start = time.perf_counter()
        client.list_sessions(daemon_root)  # opens the store: the background catch-up starts
        while not caught_up(daemon_root):
            time.sleep(0.2)
        elapsed = time.perf_counter() - start
    with (
        Probe(store_path(old_root), busy_handler=False).running() as old_hold,
        Probe(store_path(old_root), busy_handler=True).running() as old_wait,
    ):
        argv = [sys.executable, "-c", _OLD_CATCH_UP, str(old_root)]
        subprocess.run(argv, env=installed_env({}), check=True, timeout=3600)
    return daemon_hold, daemon_wait, old_hold, old_wait, elapsed


def main(*, quick: bool = False) -> None:
    size = 10_000_000 if quick else 100_000_000
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        source = base / "agent.jsonl"
        source_bytes = write_stream_json(source, size)
        root = base / "wt"
        root.mkdir()
        with running_daemon(base / "run"), Client(daemon_config(base / "run")) as client:
            sid = client.create_session(root, "ingest").session.id
            with (
                Probe(store_path(root), busy_handler=False).running() as daemon_probe,
                Probe(store_path(root), busy_handler=True).running() as azureal_probe,
            ):
                elapsed, appended = azs_ingest(base / "run", root, sid, source)
        single_wait, single_rate = in_process(base / "single", source, one_transaction(source))
        _, chunked_rate = in_process(base / "chunked", source, chunked(source))
        print(
            f"# write_lock: {source_bytes / 1e6:.0f} MB stream-json, {appended} events in {elapsed:.1f} s "
            f"through the daemon; the probe tried {daemon_probe.tries} times"
        )
    report("max_write_lock_ms", daemon_probe.longest_s * 1000, "ms", single_wait * 1000)
    report("max_busy_wait_ms", azureal_probe.longest_s * 1000, "ms", single_wait * 1000)
    report("ingest_chunked", chunked_rate, "events/s", single_rate)
    rows = 60_000 if quick else 300_000
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        hold, wait, old_hold, old_wait, elapsed = catch_up_waits(Path(tmp), rows)
    print(f"# write_lock: the daemon caught up {rows} foreign rows in {elapsed:.1f} s")
    report("catch_up_max_write_lock_ms", hold.longest_s * 1000, "ms", old_hold.longest_s * 1000)
    report("catch_up_max_busy_wait_ms", wait.longest_s * 1000, "ms", old_wait.longest_s * 1000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
